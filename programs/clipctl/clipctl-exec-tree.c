/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clipctl exec-policy allow-tree: make interpreters' library trees pass
 * the exec check (clip_exec_allow_tree()), the trees named or asked of
 * the interpreters themselves (sys.path, @INC). Run once, and again after
 * each upgrade (examples/apt/99clip-exec).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "clipctl.h"

#define TREES_MAX 64
#define INTERPRETERS_MAX 8
/* sys.path or @INC, NUL-separated: a few hundred bytes in practice. */
#define PATHS_OUTPUT_MAX (64 * 1024)

struct tree {
	char *path; /* as named, or as the interpreter said */
	char *real; /* resolved, to find trees inside trees */
	const char *from; /* the interpreter that named it, or NULL */
};

struct trees {
	struct tree t[TREES_MAX];
	size_t n;
	bool cross_mounts;
	/* Skip what does not exist: a package hook, after a removal. */
	bool ignore_missing;
};

static void
usage(FILE *f)
{
	fputs("Usage: clipctl exec-policy allow-tree [OPTIONS] [DIR...]\n"
	      "\n"
	      "Give every file of each tree the x bit of each class that may read it,\n"
	      "so that it passes the exec check under restrict-file. Files that others\n"
	      "could write are left as they are and reported.\n"
	      "\n"
	      "  --interpreter PROG  also the library directories of PROG, a Python\n"
	      "                      (sys.path) or a Perl (@INC); may be repeated\n"
	      "  --check             change nothing: exit 0 when every tree passes\n"
	      "  --list              print the trees and exit\n"
	      "  --cross-mounts      also walk the file systems mounted in the trees\n"
	      "  --ignore-missing    skip a DIR or PROG that does not exist\n"
	      "  -h, --help          this text\n"
	      "\n"
	      "Exit status: 0 every tree passes, 1 one does not or an error, 2 usage.\n",
	      f);
}

/* The command that makes PROG print its library directories, NUL-separated. */
static int
paths_command(const char *prog, const char **argv)
{
	const char *base = strrchr(prog, '/');

	base = base ? base + 1 : prog;
	argv[0] = prog;
	if (strstr(base, "python")) {
		/* -I: no PYTHONPATH, no user site-packages, no script directory. */
		argv[1] = "-I";
		argv[2] = "-c";
		argv[3] = "import sys; sys.stdout.write('\\0'.join(sys.path))";
	} else if (strstr(base, "perl")) {
		argv[1] = "-e";
		argv[2] = "print join(qq(\\0), @INC)";
		argv[3] = NULL;
	} else
		return -EINVAL;
	argv[4] = NULL;
	return 0;
}

/*
 * In a child: the environment, less every variable that moves an
 * interpreter's search path (PYTHON*, PERL*: PYTHONPATH, PERL5LIB,
 * PERL5OPT...), in the C locale. The rest stays: what the interpreter
 * prints is its own default @INC or sys.path, as a package upgrade sees it.
 */
static void
environment_for_query(void)
{
	for (size_t i = 0; environ[i];) {
		char name[256];
		size_t n = strcspn(environ[i], "=");

		if ((strncmp(environ[i], "PYTHON", 6) == 0 ||
		     strncmp(environ[i], "PERL", 4) == 0) &&
		    n < sizeof(name)) {
			memcpy(name, environ[i], n);
			name[n] = '\0';
			unsetenv(name); /* environ[i] is now the next one */
		} else
			i++;
	}
	setenv("LC_ALL", "C", 1);
}

/* Run @argv without the variables that move its search path, and read its output. */
static int
run_for_output(const char **argv, char *buf, size_t size, size_t *ret_len)
{
	size_t len = 0;
	int p[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		environment_for_query();
		execvp(argv[0], (char *const *)argv);
		/* As a shell says it: 127 not found, 126 found but not run. */
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(p[1]);
	while (len < size && (n = read(p[0], buf + len, size - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (len == size)
		return -E2BIG;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return -ENOENT;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
		return -EACCES;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -ECHILD;
	*ret_len = len;
	return 0;
}

static int
add_tree(struct trees *trees, const char *path, const char *from)
{
	struct tree *t;
	char *real;

	real = realpath(path, NULL);
	if (!real) {
		/* An interpreter lists directories that may not exist (yet). */
		if ((from || trees->ignore_missing) && (errno == ENOENT || errno == ENOTDIR))
			return 0;
		say(stderr, "clipctl: %s: %s", path, strerror(errno));
		return EXIT_INVALID;
	}
	if (from) {
		struct stat st;

		/* python311.zip, a file: not a tree. */
		if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
			free(real);
			return 0;
		}
	}
	if (trees->n == TREES_MAX) {
		free(real);
		return fail_usage("more than %d trees", TREES_MAX);
	}
	t = &trees->t[trees->n++];
	t->path = strdup(path);
	t->real = real;
	t->from = from;
	return t->path ? 0 : EXIT_INVALID;
}

static int
add_interpreter(struct trees *trees, const char *prog)
{
	const char *argv[5];
	char *buf;
	size_t len = 0;
	int r;

	if (paths_command(prog, argv) < 0)
		return fail_usage("cannot tell how to ask '%s' for its library directories: "
				  "a python or a perl, or name the directories",
				  prog);
	buf = malloc(PATHS_OUTPUT_MAX + 1);
	if (!buf)
		return EXIT_INVALID;
	r = run_for_output(argv, buf, PATHS_OUTPUT_MAX, &len);
	if (r == -ENOENT && trees->ignore_missing) {
		free(buf);
		return 0;
	}
	if (r < 0) {
		say(stderr, "clipctl: cannot ask %s for its library directories: %s", prog,
		    r == -ECHILD ? "it failed" : strerror(-r));
		free(buf);
		return EXIT_INVALID;
	}
	buf[len] = '\0';
	/* Relative entries ('' or '.') and hooks (perl's CODE(0x...)) are not trees. */
	for (size_t i = 0; i < len && r == 0; i += strlen(buf + i) + 1)
		if (buf[i] == '/')
			r = add_tree(trees, buf + i, prog);
	free(buf);
	return r;
}

static bool
inside(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(dir, path, n) == 0 && path[n] == '/';
}

static bool
same_mount(const char *a, const char *b)
{
	struct statx sa, sb;

	if (statx(AT_FDCWD, a, 0, STATX_MNT_ID, &sa) < 0 ||
	    statx(AT_FDCWD, b, 0, STATX_MNT_ID, &sb) < 0)
		return false;
	if (sa.stx_mask & sb.stx_mask & STATX_MNT_ID)
		return sa.stx_mnt_id == sb.stx_mnt_id;
	return sa.stx_dev_major == sb.stx_dev_major && sa.stx_dev_minor == sb.stx_dev_minor;
}

/*
 * Whether tree @i is walked already as part of another: the same
 * directory named earlier, or a directory inside another on the same
 * mount (/usr/lib/python3.11/lib-dynload).
 */
static bool
covered(const struct trees *trees, size_t i)
{
	const char *real = trees->t[i].real;

	for (size_t j = 0; j < trees->n; j++) {
		const char *other = trees->t[j].real;

		if (j == i)
			continue;
		if (strcmp(other, real) == 0) {
			if (j < i)
				return true;
		} else if (inside(other, real) && (trees->cross_mounts || same_mount(other, real)))
			return true;
	}
	return false;
}

static void
print_stats(const struct tree *t, const struct clip_exec_tree_stats *st, bool check, int r)
{
	put_name(stdout, t->path);
	printf(": %llu file%s, %llu %s", (unsigned long long)st->files, st->files == 1 ? "" : "s",
	       (unsigned long long)st->changed, check ? "to change" : "changed");
	if (st->unsafe)
		printf(", %llu unsafe", (unsigned long long)st->unsafe);
	if (st->noexec)
		printf(", %llu on a noexec mount", (unsigned long long)st->noexec);
	if (st->mounts)
		printf(", %llu mount point%s not crossed", (unsigned long long)st->mounts,
		       st->mounts == 1 ? "" : "s");
	say(stdout, ": %s", r == 0 ? "passes" : "fails");
}

static int
allow(struct clip_ctx *ctx, const struct trees *trees, unsigned flags)
{
	int ret = 0;

	for (size_t i = 0; i < trees->n; i++) {
		struct clip_exec_tree_stats st = { .size = sizeof(st) };
		struct clip_error *error = NULL;
		const struct tree *t = &trees->t[i];
		int r;

		if (covered(trees, i))
			continue;
		r = clip_exec_allow_tree(ctx, AT_FDCWD, t->path, flags, &st, &error);
		if (r < 0) {
			say(stderr, "clipctl: %s", clip_error_get_message(error));
			clip_error_free(error);
			ret = EXIT_INVALID;
			continue;
		}
		print_stats(t, &st, flags & CLIP_EXEC_TREE_CHECK, r);
		if (r > 0)
			ret = EXIT_INVALID;
	}
	return ret;
}

static void
free_trees(struct trees *trees)
{
	for (size_t i = 0; i < trees->n; i++) {
		free(trees->t[i].path);
		free(trees->t[i].real);
	}
}

int
clipctl_exec_allow_tree(struct clipctl *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interpreter", required_argument, NULL, 'i' },
		{ "check", no_argument, NULL, 'c' },
		{ "list", no_argument, NULL, 'l' },
		{ "cross-mounts", no_argument, NULL, 'x' },
		{ "ignore-missing", no_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *interpreters[INTERPRETERS_MAX];
	struct trees trees = { .n = 0 };
	size_t n_interpreters = 0;
	struct clip_ctx *ctx;
	unsigned flags = 0;
	bool list = false;
	int opt, r = 0;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			if (n_interpreters == INTERPRETERS_MAX)
				return fail_usage("more than %d interpreters", INTERPRETERS_MAX);
			interpreters[n_interpreters++] = optarg;
			break;
		case 'c':
			flags |= CLIP_EXEC_TREE_CHECK;
			break;
		case 'l':
			list = true;
			break;
		case 'x':
			flags |= CLIP_EXEC_TREE_CROSS_MOUNTS;
			trees.cross_mounts = true;
			break;
		case 'm':
			trees.ignore_missing = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return fail_usage("exec-policy allow-tree: bad option '%s'",
					  argv[optind - 1]);
		}
	}
	if (optind == argc && n_interpreters == 0)
		return fail_usage("exec-policy allow-tree needs a DIR or --interpreter PROG");
	for (int i = optind; i < argc && r == 0; i++)
		r = add_tree(&trees, argv[i], NULL);
	for (size_t i = 0; i < n_interpreters && r == 0; i++)
		r = add_interpreter(&trees, interpreters[i]);
	if (r != 0 || list) {
		for (size_t i = 0; r == 0 && i < trees.n; i++)
			if (!covered(&trees, i))
				say(stdout, "%s", trees.t[i].path);
		free_trees(&trees);
		return r;
	}
	ctx = clipctl_ctx(c);
	if (!ctx) {
		free_trees(&trees);
		return EXIT_USAGE;
	}
	/* What is left unsafe, and why, is the point of the command. */
	if (!c->verbose)
		clip_ctx_set_log_priority(ctx, LOG_WARNING);
	r = allow(ctx, &trees, flags);
	clip_ctx_unref(ctx);
	free_trees(&trees);
	return r;
}
