/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cost of W^X for interpreters, through the shared library as a user
 * links it. Medians of several timed rounds, each alternated with its
 * baseline (the order swapped every round), paired ratios with their
 * spread, and CPU time beside wall time:
 *   - one exec check (allowed, and refused) vs the raw execveat(2) with
 *     AT_EXECVE_CHECK it makes, and vs an open(2)+close(2) of the file;
 *   - start-up plus the import of 200 standard-library modules through
 *     clip-python vs Debian's /usr/bin/python3 (goal: at most 1.05x), and
 *     where the difference comes from: 1000 one-line modules (a check per
 *     file, little code run) and a loop that imports nothing (the
 *     interpreter's own code, no check);
 *   - start-up plus 50 core modules through clip-perl vs /usr/bin/perl.
 * The interpreters run without securebits (the checks are made, logged
 * nowhere, and not enforced), so both sides load the same files.
 *
 * Usage: bench-exec [--runs N] [--duration-ms MS] [--interp-runs N]
 *                   [--python CLIP_PYTHON --stdlib LIST] [--perl CLIP_PERL --perl-modules LIST]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

#ifndef AT_EXECVE_CHECK
#define AT_EXECVE_CHECK 0x10000
#endif

static int runs = 7, interp_runs = 15;
static long duration_ms = 300;

struct check_data {
	struct clip_ctx *ctx;
	int fd;
	const char *path;
};

static int
do_check(void *p)
{
	struct check_data *d = p;

	return clip_exec_check_fd(d->ctx, d->fd, NULL);
}

static int
do_raw(void *p)
{
	struct check_data *d = p;
	char *const argv[] = { "clip-exec-check", NULL }, *const envp[] = { NULL };

	return (int)syscall(SYS_execveat, d->fd, "", argv, envp, AT_EMPTY_PATH | AT_EXECVE_CHECK);
}

static int
do_open_close(void *p)
{
	struct check_data *d = p;
	int fd = open(d->path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

static void
check_rows(const char *what, struct check_data *d)
{
	/* Refused files are timed too: failure is the expected answer there. */
	struct bench ours = { "check", do_check, d, true };
	struct bench raw = { "raw execveat", do_raw, d, true };
	struct bench oc = { "open+close", do_open_close, d, true };
	/* Each baseline alternated with the check round by round (bench.h). */
	struct pair p1 = bench_pair(&ours, &raw, runs, duration_ms);
	struct pair p2 = bench_pair(&ours, &oc, runs, duration_ms);

	printf("| %-32s | %10.0f | %8.2f | %-24s | %10.0f | %8.2f | %5.2f (%.2f-%.2f) |\n", what,
	       p1.ours.median, p1.ours_cpu, raw.name, p1.peer.median, p1.peer_cpu, p1.ratio.median,
	       p1.ratio.min, p1.ratio.max);
	printf("| %-32s | %10.0f | %8.2f | %-24s | %10.0f | %8.2f | %5.2f (%.2f-%.2f) |\n", "",
	       p2.ours.median, p2.ours_cpu, oc.name, p2.peer.median, p2.peer_cpu, p2.ratio.median,
	       p2.ratio.min, p2.ratio.max);
}

/* One run of @argv, stdout and stderr to /dev/null: seconds, or -1. */
static double
run_once(char *const argv[])
{
	double start = now();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		const char *asan = getenv("ASAN_OPTIONS");
		char opts[512];

		/* Under ASan, the embedded runtimes' memory at exit is theirs. */
		snprintf(opts, sizeof(opts), "%s%sdetect_leaks=0", asan ? asan : "",
			 asan ? ":" : "");
		setenv("ASAN_OPTIONS", opts, 1);

		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	return now() - start;
}

/*
 * Median wall time of @ours and @peer, interleaved run by run (the order
 * swapped every run), the paired ratio's spread, and the CPU time of each.
 */
static int
interp_row(const char *what, char *const ours[], char *const peer[])
{
	double a[256], b[256], ca[256], cb[256], ratio[256];
	struct spread r;

	/* A warm-up each, so that both read the same cached pages. */
	if (run_once(ours) < 0 || run_once(peer) < 0) {
		fprintf(stderr, "bench-exec: %s: %s or %s failed\n", what, ours[0], peer[0]);
		return -1;
	}
	for (int i = 0; i < interp_runs; i++) {
		for (int k = 0; k < 2; k++) {
			bool mine = (k == 0) == (i % 2 == 0);
			double cpu = cpu_seconds(), t = run_once(mine ? ours : peer);

			if (t < 0)
				return -1;
			*(mine ? &a[i] : &b[i]) = t;
			*(mine ? &ca[i] : &cb[i]) = cpu_seconds() - cpu;
		}
		ratio[i] = a[i] / b[i];
	}
	r = spread_of(ratio, interp_runs);
	if (strstr(what, "stdlib"))
		goal_line("clip-python-vs-python3", r.median, "<=", 1.05);
	printf("| %-40s | %9.1f | %8.1f | %-16s | %9.1f | %8.1f | %.3f (%.3f-%.3f) |\n", what,
	       spread_of(a, interp_runs).median * 1e3, spread_of(ca, interp_runs).median * 1e3,
	       peer[0], spread_of(b, interp_runs).median * 1e3,
	       spread_of(cb, interp_runs).median * 1e3, r.median, r.min, r.max);
	return 0;
}

static int
write_file(const char *path, const char *content, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ssize_t n = (ssize_t)strlen(content);

	if (fd < 0 || write(fd, content, (size_t)n) != n) {
		perror(path);
		return -1;
	}
	return close(fd);
}

/*
 * Where clip-python's time beside python3's goes: 1000 one-line modules
 * (each file opened and checked, little code run), then a loop that
 * imports nothing (no check: the interpreter's own code). The files are
 * made under @dir and removed.
 */
static int
python_parts(const char *python, const char *dir)
{
	static const char tiny_py[] = "import sys\nsys.path.insert(0, sys.argv[1])\n"
				      "for i in range(1000):\n    __import__('m%d' % i)\n",
			  loop_py[] = "d = {}\nfor i in range(1000000):\n    d[i & 1023] = i\n";
	char mods[700], tiny[700], loop[700], path[800], cmd[2200], text[32];
	char *ours[] = { (char *)python, tiny, mods, NULL },
	     *peer[] = { "/usr/bin/python3", tiny, mods, NULL };
	int r = 0;

	snprintf(mods, sizeof(mods), "%s/mods", dir);
	snprintf(tiny, sizeof(tiny), "%s/tiny.py", dir);
	snprintf(loop, sizeof(loop), "%s/loop.py", dir);
	if (mkdir(mods, 0755) < 0 || write_file(tiny, tiny_py, 0755) < 0 ||
	    write_file(loop, loop_py, 0755) < 0)
		r = -1;
	for (int i = 0; r == 0 && i < 1000; i++) {
		snprintf(path, sizeof(path), "%s/m%d.py", mods, i);
		snprintf(text, sizeof(text), "x = %d\n", i);
		r = write_file(path, text, 0644);
	}
	/* The first run of each (the warm-up) writes the .pyc files both then read. */
	if (r == 0)
		r = interp_row("clip-python: start + 1000 tiny modules", ours, peer);
	ours[1] = peer[1] = loop;
	ours[2] = peer[2] = NULL;
	if (r == 0)
		r = interp_row("clip-python: start + a loop, no import", ours, peer);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s' '%s'", mods, tiny, loop);
	if (system(cmd) != 0)
		r = -1;
	return r;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "duration-ms", required_argument, NULL, 'd' },
		{ "interp-runs", required_argument, NULL, 'i' },
		{ "python", required_argument, NULL, 'p' },
		{ "stdlib", required_argument, NULL, 's' },
		{ "perl", required_argument, NULL, 'P' },
		{ "perl-modules", required_argument, NULL, 'm' },
		{ 0 },
	};
	char tmpl[] = "/var/tmp/clip-bench-exec-XXXXXX", x[600], nox[600], pyscript[600],
	     plscript[600];
	const char *python = NULL, *stdlib = NULL, *perl = NULL, *perl_modules = NULL;
	struct check_data allowed = { 0 }, refused = { 0 };
	struct clip_ctx *ctx = NULL;
	cpu_set_t one;
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			runs = atoi(optarg);
			break;
		case 'd':
			duration_ms = atol(optarg);
			break;
		case 'i':
			interp_runs = atoi(optarg);
			break;
		case 'p':
			python = optarg;
			break;
		case 's':
			stdlib = optarg;
			break;
		case 'P':
			perl = optarg;
			break;
		case 'm':
			perl_modules = optarg;
			break;
		default:
			return 2;
		}
	}
	if (runs < 1 || runs > 64 || duration_ms < 1 || interp_runs < 1 || interp_runs > 256)
		return 2;
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(x, sizeof(x), "%s/x", tmpl);
	snprintf(nox, sizeof(nox), "%s/nox", tmpl);
	if (write_file(x, "#!/bin/sh\n", 0755) < 0 || write_file(nox, "#!/bin/sh\n", 0644) < 0)
		return 1;
	if (clip_ctx_new(&ctx) < 0)
		return 1;
	allowed = (struct check_data){ ctx, open(x, O_RDONLY | O_CLOEXEC), x };
	refused = (struct check_data){ ctx, open(nox, O_RDONLY | O_CLOEXEC), nox };

	printf("libclip %s, exec check %s; %d rounds of %ld ms each, alternated, medians, one "
	       "core; interpreters: %d interleaved runs, medians; load average %.2f before\n\n",
	       clip_version(),
	       clip_exec_check_support(ctx) == CLIP_EXEC_CHECK_NATIVE ? "native" : "DEGRADED", runs,
	       duration_ms, interp_runs, load_now());

	/* One core for the system-call figures, as they claim. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		perror("sched_setaffinity (continuing on any core)");
	printf("| %-32s | %10s | %8s | %-24s | %10s | %8s | %6s |\n", "libclip", "ops/s", "CPU µs",
	       "baseline", "ops/s", "CPU µs", "ratio (spread)");
	printf("|%.34s|%.12s|%.10s|%.26s|%.12s|%.10s|%.8s|\n", "----------------------------------",
	       "------------", "----------", "--------------------------", "------------",
	       "----------", "--------");
	check_rows("clip_exec_check_fd, allowed", &allowed);
	check_rows("clip_exec_check_fd, refused", &refused);
	printf("\nratio = baseline ops/s / libclip ops/s in the same round, alternated: median "
	       "(lowest-highest); CPU µs per operation\n\n");

	if (python || perl) {
		printf("| %-40s | %9s | %8s | %-16s | %9s | %8s | %s |\n", "interpreter run",
		       "wall ms", "CPU ms", "baseline", "wall ms", "CPU ms", "ratio (spread)");
		printf("|%.42s|%.11s|%.10s|%.18s|%.11s|%.10s|%.18s|\n",
		       "------------------------------------------", "-----------", "----------",
		       "------------------", "-----------", "----------", "------------------");
	}
	if (python && stdlib) {
		char *ours[] = { (char *)python, pyscript, (char *)stdlib, NULL };
		char *peer[] = { "/usr/bin/python3", pyscript, (char *)stdlib, NULL };

		snprintf(pyscript, sizeof(pyscript), "%s/imp.py", tmpl);
		if (write_file(pyscript,
			       "import sys\nfor n in open(sys.argv[1]).read().split():\n"
			       "    __import__(n)\n",
			       0755) < 0 ||
		    interp_row("clip-python: start + 200 stdlib imports", ours, peer) < 0)
			r = 1;
	}
	if (python && python_parts(python, tmpl) < 0)
		r = 1;
	if (perl && perl_modules) {
		char *ours[] = { (char *)perl, plscript, (char *)perl_modules, NULL };
		char *peer[] = { "/usr/bin/perl", plscript, (char *)perl_modules, NULL };

		snprintf(plscript, sizeof(plscript), "%s/load.pl", tmpl);
		if (write_file(plscript,
			       "open my $f, '<', $ARGV[0] or die;\n"
			       "while (my $m = <$f>) { chomp $m; (my $p = \"$m.pm\") =~ s{::}{/}g; "
			       "require $p }\n",
			       0755) < 0 ||
		    interp_row("clip-perl: start + 50 core modules", ours, peer) < 0)
			r = 1;
	}
	if (python || perl)
		printf("\nratio = clip-* wall time / baseline's in the same run (goal for Python: "
		       "<= 1.05); load average %.2f after\n",
		       load_now());

	close(allowed.fd);
	close(refused.fd);
	unlink(x);
	unlink(nox);
	if (python && stdlib)
		unlink(pyscript);
	if (perl && perl_modules)
		unlink(plscript);
	rmdir(tmpl);
	clip_ctx_unref(ctx);
	return r;
}
