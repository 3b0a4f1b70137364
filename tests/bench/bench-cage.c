/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cages, measured through the shared library as a user links it:
 *   - start-to-exit of /bin/true in a cage with the whole isolation set
 *     (clip_cage_start_spawn(), as `clipctl cage run`; and start, then
 *     clip_cage_spawn() from outside, as into a long-lived cage)
 *     (user, mount, pid, ipc, uts, cgroup and network namespaces, read-only
 *     root, /proc, /dev, /tmp, cgroup limits, capabilities, no_new_privs,
 *     Landlock, seccomp, W^X), beside
 *       unshare -Urmpnif --mount-proc /bin/true   (the floor)
 *       bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev /bin/true
 *       crun run of a minimal bundle (root only; in a private mount
 *       namespace with /sys/fs/cgroup/unified unmounted, and
 *       --cgroup-manager=disabled, since crun refuses hybrid hosts)
 *     each the median of several runs of several iterations, in turns with
 *     the order rotated every run, with the paired ratio to the floor (its
 *     spread) in wall time and in CPU time of the whole process tree;
 *   - the memory of an idle cage (its init's PSS and RSS);
 *   - the time to stop a cage of 100 processes (SIGTERM, and SIGKILL), the
 *     median of as many runs, seven at most.
 *
 * Usage: bench-cage [--runs N] [--iterations N]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>

#include "bench.h"

extern char **environ;

static int runs = 15, iterations = 20;

/* Milliseconds per call of @fn over one batch of iterations; -1 on failure. */
static double
batch(int (*fn)(void *), void *data)
{
	double start = now();

	for (int i = 0; i < iterations; i++)
		if (fn(data) != 0)
			return -1;
	return (now() - start) * 1000.0 / iterations;
}

/*
 * What is compared: measured in turns, one batch each per run, so that
 * the load of a shared machine falls on all of them alike.
 */
struct subject {
	const char *name;
	double (*batch)(struct subject *s);
	int (*fn)(void *);
	void *data;
	double per[64], cpu[64]; /* wall and CPU ms per start, per run */
	bool failed, no_cpu; /* no_cpu: its processes are not our children (crun's helper) */
};

static double
batch_of(struct subject *s)
{
	return batch(s->fn, s->data);
}

/*
 * Every subject once per run, the order rotated by one every run so that
 * none always follows the same one; the CPU time is that of the whole
 * process tree (this process and its children waited for).
 */
static void
measure_all(struct subject *s, size_t n)
{
	for (int r = 0; r < runs; r++)
		for (size_t k = 0; k < n; k++) {
			size_t i = (k + (size_t)r) % n;
			double cpu = cpu_seconds();

			if (s[i].failed)
				continue;
			s[i].per[r] = s[i].batch(&s[i]);
			s[i].cpu[r] = (cpu_seconds() - cpu) * 1000.0 / iterations;
			s[i].failed = s[i].per[r] < 0;
		}
}

static int
run_cmd(void *data)
{
	char **argv = data;
	pid_t pid;
	int status;

	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return -1;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

struct cage_data {
	struct clip_ctx *ctx;
	struct clip_cage_profile *profile;
};

static int
cage_start(struct cage_data *d, struct clip_cage **ret)
{
	struct clip_error *e = NULL;
	int r;

	*ret = NULL;
	r = clip_cage_new(ret, d->ctx, d->profile, &e);
	if (r >= 0)
		r = clip_cage_start(*ret, 0, &e);
	if (r < 0) {
		fprintf(stderr, "bench-cage: %s\n", clip_error_get_message(e));
		clip_error_free(e);
		*ret = clip_cage_unref(*ret);
	}
	return r;
}

/* /bin/true in a new cage, its first process (clipctl cage run) or spawned from outside. */
static int
cage_true_with(struct cage_data *d, bool first)
{
	static const char *const argv[] = { "/bin/true", NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_cage *c = NULL;
	int pidfd, status = -1, r;

	if (first)
		return bench_cage_first(d->ctx, d->profile, &o, "bench-cage", NULL);
	r = cage_start(d, &c);
	if (r >= 0)
		r = clip_cage_spawn(c, &o, &pidfd, NULL);
	if (r >= 0) {
		r = clip_cage_wait_process(c, pidfd, &status);
		close(pidfd);
	}
	if (c)
		clip_cage_stop(c, 0, NULL);
	clip_cage_unref(c);
	return r < 0 || status != 0 ? -1 : 0;
}

static int
cage_true(void *data)
{
	return cage_true_with(data, true);
}

static int
cage_true_spawned(void *data)
{
	return cage_true_with(data, false);
}

static int
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static const char crun_config[] =
	"{\"ociVersion\":\"1.0.2\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0},"
	"\"args\":[\"/bin/true\"],\"env\":[\"PATH=/usr/bin:/bin\"],\"cwd\":\"/\","
	"\"capabilities\":{\"bounding\":[],\"effective\":[],\"permitted\":[]},"
	"\"noNewPrivileges\":true},\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
	"\"hostname\":\"bench\",\"mounts\":["
	"{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
	"{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\","
	"\"options\":[\"nosuid\",\"mode=755\",\"size=64k\"]},"
	"{\"destination\":\"/usr\",\"type\":\"bind\",\"source\":\"/usr\","
	"\"options\":[\"rbind\",\"ro\"]}],"
	"\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},"
	"{\"type\":\"uts\"},{\"type\":\"mount\"},{\"type\":\"cgroup\"}]}}\n";

/* A bundle in @dir: the config above and a root of /usr plus links. */
static int
crun_bundle(const char *dir)
{
	static const char *const links[][2] = { { "usr/bin", "bin" },
						{ "usr/lib", "lib" },
						{ "usr/lib64", "lib64" },
						{ "usr/sbin", "sbin" } };
	char path[512];

	snprintf(path, sizeof(path), "%s/config.json", dir);
	if (write_file(path, crun_config) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/rootfs", dir);
	if (mkdir(path, 0755) < 0)
		return -1;
	for (const char *const *d = (const char *const[]){ "usr", "proc", "dev", NULL }; *d; d++) {
		snprintf(path, sizeof(path), "%s/rootfs/%s", dir, *d);
		if (mkdir(path, 0755) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(path, sizeof(path), "%s/rootfs/%s", dir, links[i][1]);
		if (symlink(links[i][0], path) < 0)
			return -1;
	}
	return 0;
}

/*
 * crun runs in a child that keeps the private mount namespace it needs
 * here, and measures one batch each time it is asked.
 */
struct crun {
	int cmd, result;
	pid_t pid;
};

static double
crun_batch(struct subject *s)
{
	struct crun *c = s->data;
	double ms = -1;

	if (write(c->cmd, "r", 1) != 1 || read(c->result, &ms, sizeof(ms)) != sizeof(ms))
		return -1;
	return ms;
}

static int
crun_start(struct crun *c, const char *crun, const char *dir)
{
	static char id[32];
	char *argv[] = {
		(char *)crun, "--cgroup-manager=disabled", "run", "--bundle", (char *)dir, id, NULL
	};
	int cmd[2], result[2];
	char x;

	snprintf(id, sizeof(id), "clip-bench-%d", (int)getpid());
	if (geteuid() != 0 || access(crun, X_OK) < 0 || crun_bundle(dir) < 0 || pipe(cmd) < 0 ||
	    pipe(result) < 0)
		return -1;
	c->pid = fork();
	if (c->pid == 0) {
		bool ok;

		close(cmd[1]);
		close(result[0]);
		ok = unshare(CLONE_NEWNS) == 0 &&
		     mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;

		(void)umount2("/sys/fs/cgroup/unified", MNT_DETACH);
		while (read(cmd[0], &x, 1) == 1) {
			double ms = ok ? batch(run_cmd, argv) : -1;

			(void)!write(result[1], &ms, sizeof(ms));
		}
		_exit(0);
	}
	close(cmd[0]);
	close(result[1]);
	c->cmd = cmd[1];
	c->result = result[0];
	return 0;
}

static void
crun_stop(struct crun *c)
{
	close(c->cmd);
	close(c->result);
	waitpid(c->pid, NULL, 0);
}

static void
row(const char *name, double ms, double floor, double paired)
{
	if (ms < 0)
		printf("%-58s %10s\n", name, "n/a");
	else if (floor > 0)
		printf("%-58s %10.3f %8.2fx %8.2fx\n", name, ms, ms / floor, paired);
	else
		printf("%-58s %10.3f\n", name, ms);
}

/*
 * The ratios of @s's times to the floor's in the same run (@cpu: CPU
 * times): the two were measured one right after the other, so a machine
 * that slows down or speeds up between runs (a shared virtual machine)
 * moves both alike.
 */
static struct spread
paired_ratio(const struct subject *s, const struct subject *floor, bool cpu)
{
	double r[64];

	for (int i = 0; i < runs; i++)
		r[i] = cpu ? s->cpu[i] / floor->cpu[i] : s->per[i] / floor->per[i];
	return spread_of(r, runs);
}

/* The idle cage's init: PSS and RSS in KiB. */
static void
idle_memory(struct cage_data *d)
{
	struct clip_cage *c;
	int *pids = NULL;
	size_t n = 0;
	char path[64], line[256];
	long pss = -1, rss = -1;
	FILE *f;

	if (cage_start(d, &c) < 0)
		return;
	if (clip_cage_get_pids(c, &pids, &n) == 0 && n > 0) {
		snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pids[0]);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			sscanf(line, "Pss: %ld kB", &pss);
			sscanf(line, "Rss: %ld kB", &rss);
		}
		if (f)
			fclose(f);
	}
	printf("%-58s %7ld KiB PSS, %ld KiB RSS\n", "idle cage: its init", pss, rss);
	free(pids);
	clip_cage_stop(c, 0, NULL);
	clip_cage_unref(c);
}

/* Milliseconds to stop a cage of @n processes with @grace_ms (0: SIGKILL at once). */
static double
stop_many(struct cage_data *d, int n, unsigned grace_ms)
{
	char script[128], buf[8];
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv, .n_fds = 2 };
	struct clip_cage *c;
	int fds[2], p[2], pidfd, status;
	double t0, ms = -1;

	snprintf(script, sizeof(script),
		 "for i in $(seq %d); do sleep 1000 & done; echo ready; wait", n - 1);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[1] = p[1];
	o.fds = fds;
	if (cage_start(d, &c) == 0) {
		if (clip_cage_spawn(c, &o, &pidfd, NULL) == 0) {
			close(p[1]);
			p[1] = -1;
			/* Readiness: the script's line, once every child is forked. */
			if (read(p[0], buf, sizeof(buf)) > 0) {
				t0 = now();
				if (clip_cage_stop(c, grace_ms, NULL) == 0)
					ms = (now() - t0) * 1000.0;
			}
			clip_cage_wait_process(c, pidfd, &status);
			close(pidfd);
		}
		clip_cage_unref(c);
	}
	close(fds[0]);
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	return ms;
}

/* The median of stop_many() over as many runs as the others, seven at most; -1 on failure. */
static double
stop_median(struct cage_data *d, int n, unsigned grace_ms)
{
	double ms[7];
	int k = runs < 7 ? runs : 7;

	for (int i = 0; i < k; i++) {
		ms[i] = stop_many(d, n, grace_ms);
		if (ms[i] < 0)
			return -1;
	}
	return median(ms, k);
}

static struct clip_cage_profile *
full_profile(bool limits)
{
	struct clip_cage_limits l = { .size = sizeof(l),
				      .memory_max = 256u << 20,
				      .tasks_max = 256,
				      .cpu_quota_percent = 100 };
	struct clip_cage_profile *p = NULL;

	if (clip_cage_profile_new(&p, "bench", NULL) < 0)
		return NULL;
	clip_cage_profile_set_network(p, CLIP_CAGE_NET_LOOPBACK, NULL, NULL);
	if (limits)
		clip_cage_profile_set_limits(p, &l, NULL);
	clip_cage_profile_set_wx(p, 1, NULL);
	return p;
}

int
main(int argc, char **argv)
{
	char *unshare_argv[] = { "/usr/bin/unshare", "-Urmpnif", "--mount-proc", "/bin/true",
				 NULL };
	char *bwrap_argv[] = {
		"/usr/bin/bwrap", "--unshare-all", "--ro-bind", "/",         "/", "--proc",
		"/proc",          "--dev",         "/dev",      "/bin/true", NULL
	};
	char dir[] = "/tmp/clip-bench-XXXXXX", cmd[64];
	struct cage_data d = { 0 }, nolimits = { 0 };
	double wall_ratio = -1, cpu_ratio = -1;
	bool failed;

	if (bench_int_options(argc, argv, (const char *const[]){ "runs", "iterations" },
			      (int *const[]){ &runs, &iterations }, 2) != 0)
		return 2;
	if (runs < 1 || runs > 64 || iterations < 1)
		return 2;
	if (clip_ctx_new(&d.ctx) < 0 || !(d.profile = full_profile(true)) ||
	    !(nolimits.profile = full_profile(false)))
		return 1;
	nolimits.ctx = d.ctx;
	if (!mkdtemp(dir))
		return 1;

	printf("start to exit of /bin/true: medians of %d runs of %d starts, the subjects in "
	       "turns, the order rotated every run; load average %.2f before\n\n",
	       runs, iterations, load_now());
	{
		struct crun cr = { .cmd = -1 };
		struct subject s[] = {
			{ .name = "unshare -Urmpnif --mount-proc /bin/true",
			  .batch = batch_of,
			  .fn = run_cmd,
			  .data = unshare_argv },
			{ .name = "libclip cage (whole isolation set)",
			  .batch = batch_of,
			  .fn = cage_true,
			  .data = &d },
			{ .name = "libclip cage (the same without cgroup limits)",
			  .batch = batch_of,
			  .fn = cage_true,
			  .data = &nolimits },
			{ .name = "libclip cage, start then spawn from outside",
			  .batch = batch_of,
			  .fn = cage_true_spawned,
			  .data = &d },
			{ .name = "bwrap --unshare-all --ro-bind / / --proc --dev",
			  .batch = batch_of,
			  .fn = run_cmd,
			  .data = bwrap_argv },
			{ .name = "crun run (minimal bundle, --cgroup-manager=disabled)",
			  .batch = crun_batch,
			  .data = &cr },
		};
		size_t n = sizeof(s) / sizeof(s[0]);

		s[4].failed = access(bwrap_argv[0], X_OK) < 0;
		s[5].failed = crun_start(&cr, "/usr/bin/crun", dir) < 0;
		s[5].no_cpu = true;
		measure_all(s, n);
		if (cr.cmd >= 0)
			crun_stop(&cr);
		printf("| %-52s | %8s | %-19s | %8s | %-19s |\n", "start to exit of /bin/true",
		       "wall ms", "wall / unshare", "CPU ms", "CPU / unshare");
		printf("|%.54s|%.10s|%.21s|%.10s|%.21s|\n",
		       "------------------------------------------------------", "----------",
		       "---------------------", "----------", "---------------------");
		for (size_t i = 0; i < n; i++) {
			char wc[48], cc[48], cms[24];
			struct spread w, c;

			if (s[i].failed || s[0].failed) {
				printf("| %-52s | %8s | %-19s | %8s | %-19s |\n", s[i].name, "n/a",
				       "", "n/a", "");
				continue;
			}
			w = paired_ratio(&s[i], &s[0], false);
			c = paired_ratio(&s[i], &s[0], true);
			if (i == 1) {
				wall_ratio = w.median;
				cpu_ratio = c.median;
			}
			snprintf(wc, sizeof(wc), "%.2f (%.2f-%.2f)", w.median, w.min, w.max);
			snprintf(cc, sizeof(cc), "%.2f (%.2f-%.2f)", c.median, c.min, c.max);
			snprintf(cms, sizeof(cms), "%.3f", spread_of(s[i].cpu, runs).median);
			printf("| %-52s | %8.3f | %-19s | %8s | %-19s |\n", s[i].name,
			       spread_of(s[i].per, runs).median, wc, s[i].no_cpu ? "n/a" : cms,
			       s[i].no_cpu ? "" : cc);
		}
		printf("\nratios: median of the ratios to unshare's time in the same run "
		       "(lowest-highest)\n");
		failed = s[1].failed;
	}
	if (failed) {
		fprintf(stderr, "bench-cage: the cage failed\n");
	} else {
		goal_line("cage-cpu-vs-unshare", cpu_ratio, "<=", 1.15);
		goal_line("cage-wall-vs-unshare", wall_ratio, "<=", 1.1);
		printf("\nmemory\n");
		idle_memory(&d);
		printf("stopping a cage of 100 processes, ms\n");
		row("SIGTERM, grace 1000 ms (they obey)", stop_median(&d, 100, 1000), 0, 0);
		row("SIGKILL at once", stop_median(&d, 100, 0), 0, 0);
	}

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	clip_cage_profile_unref(d.profile);
	clip_cage_profile_unref(nolimits.profile);
	clip_ctx_unref(d.ctx);
	return failed ? 1 : 0;
}
