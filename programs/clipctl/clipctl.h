/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the clipctl commands share. Each group of commands (level, label,
 * and one per later module) lives in its own clipctl-GROUP.c and is one
 * entry of the table in clipctl.c.
 */
#pragma once

#include <stdio.h>

#include <clip/clip.h>

#define EXIT_INVALID 1
#define EXIT_USAGE 2

struct clipctl {
	const char *state_dir;
	const char *key_provider;
	const char *names_path;
	unsigned label_flags;
	int verbose;
	struct clip_level_names *names;
};

/*
 * @s, a name or text from a file, a cage or the library, on @f escaped for
 * a terminal (utf8_put_escaped(): no control character, no bidirectional
 * or invisible one, ever raw). Test hook "clipctl-escape" (off: raw).
 */
void put_name(FILE *f, const char *s);

/* printf() to @f, the whole line escaped as put_name() does, then "\n". */
void say(FILE *f, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* "clipctl: MESSAGE" (escaped) and a hint on stderr; returns EXIT_USAGE. */
int fail_usage(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* "clipctl: WHAT: REASON" on stderr, frees @error; returns EXIT_INVALID. */
int fail_error(const char *what, int r, struct clip_error *error);

/* A context as the options say, logging to stderr; NULL after a message. */
struct clip_ctx *clipctl_ctx(const struct clipctl *c);

/* Parse a level or a name of --names; EXIT_USAGE with a caret on failure. */
int parse_level(const struct clipctl *c, const char *text, struct clip_level **ret);

/* Print a level (its name with --names) followed by @suffix. */
int print_level(const struct clipctl *c, const struct clip_level *level, const char *suffix);

/*
 * How a command opens the file it is given. OPEN_FOLLOW: as an interpreter
 * would (exec-check answers for what would run: a symbolic link is
 * followed, and the check is made on the descriptor opened). OPEN_REGULAR:
 * open_regular() (tpm measure: no link, no FIFO or device). OPEN_REGULAR_OR_DIR:
 * the same, or a directory (a label is on a file or a directory).
 */
enum open_how {
	OPEN_FOLLOW,
	OPEN_REGULAR,
	OPEN_REGULAR_OR_DIR,
};

/* Open @path as @how says: EXIT_INVALID with a message on failure. */
int open_file(const char *path, enum open_how how, int *ret);

/* The command groups: argv[0] is the verb. */
int clipctl_level(struct clipctl *c, int argc, char **argv);
int clipctl_label(struct clipctl *c, int argc, char **argv);
int clipctl_cage(struct clipctl *c, int argc, char **argv);
int clipctl_exec_check(struct clipctl *c, int argc, char **argv);
int clipctl_exec_policy(struct clipctl *c, int argc, char **argv);
int clipctl_exec_allow_tree(struct clipctl *c, int argc, char **argv);
int clipctl_tpm(struct clipctl *c, int argc, char **argv);
int clipctl_lsm(struct clipctl *c, int argc, char **argv);
int clipctl_transfer(struct clipctl *c, int argc, char **argv);
int clipctl_audit(struct clipctl *c, int argc, char **argv);
int clipctl_session(struct clipctl *c, int argc, char **argv);
/* clipctl watch, and session watch (clipctl-session.c). */
int clipctl_watch(struct clipctl *c, int argc, char **argv);
/* session exec, with the other ways to run a command in a cage (clipctl-cage.c). */
int clipctl_session_exec(struct clipctl *c, int argc, char **argv);
