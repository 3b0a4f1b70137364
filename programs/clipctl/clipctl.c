/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clipctl: the command line of libclip. It uses only the public API of the
 * shared library, as any outside program would. See clipctl(1).
 *
 * Exit status: 0 success, 1 the operation failed or a label is invalid,
 * 2 usage error or bad level.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "base/test-hooks.h"
#include "base/utf8.h"
#include "base/util.h"
#include "clipctl.h"

#define NAMES_FILE_MAX (1024 * 1024)

static const struct group {
	const char *name;
	int (*run)(struct clipctl *c, int argc, char **argv);
} groups[] = {
	{ "level", clipctl_level },
	{ "label", clipctl_label },
	{ "cage", clipctl_cage },
	{ "exec-check", clipctl_exec_check },
	{ "exec-policy", clipctl_exec_policy },
	{ "tpm", clipctl_tpm },
	{ "lsm", clipctl_lsm },
	{ "transfer", clipctl_transfer },
	{ "audit", clipctl_audit },
	{ "session", clipctl_session },
	{ "watch", clipctl_watch },
};

static void
usage(FILE *f)
{
	fputs("Usage: clipctl [OPTIONS] COMMAND ...\n"
	      "\n"
	      "  level check A B        compare two levels\n"
	      "  level format LEVEL     print a level in canonical form\n"
	      "  label set FILE LEVEL   label a file\n"
	      "  label get FILE         print a file's verified level\n"
	      "  label verify FILE      exit 0 when the label is valid, 1 otherwise\n"
	      "  label remove FILE      remove a file's label\n"
	      "  cage run --profile FILE [--uid N] [--gid N] [--] CMD [ARGS...]\n"
	      "                         run CMD in a new cage, exit with its status\n"
	      "  cage start --profile FILE   start a long-lived cage (registered by name)\n"
	      "  cage exec NAME [--] CMD...  run CMD in a running cage\n"
	      "  cage stop [--grace-ms MS] NAME   stop a cage (SIGTERM, then SIGKILL)\n"
	      "  cage list              the running cages: name, level, init pid, processes\n"
	      "  cage mode              how cages are made here: root or rootless\n"
	      "  session up [--log FILE] [--secret-fd N] FILE   start the session of FILE\n"
	      "                         (clip.session(5)) with its runner, clipd --session,\n"
	      "                         in the background; --secret-fd: the user secret of\n"
	      "                         the levels' data keys, read by the runner from fd N\n"
	      "  session down [--session-dir DIR] NAME   stop a session: its mediator, then\n"
	      "                         its cages; nothing is left\n"
	      "  session status [--session-dir DIR] NAME   each cage's state, level and\n"
	      "                         processes; the questions pending, the agent\n"
	      "  session restart [--session-dir DIR] NAME CAGE   stop one cage of a session\n"
	      "                         and start it again; the others run on\n"
	      "  session start [--session-dir DIR] NAME CAGE   start one cage of a session\n"
	      "                         (the admin role may, as down, status, restart, stop)\n"
	      "  session stop [--session-dir DIR] NAME CAGE   stop one cage; the others run\n"
	      "  session reload [--session-dir DIR] NAME   read the session's file again:\n"
	      "                         its rules now, its profiles at each cage's restart\n"
	      "  session trail [--session-dir DIR] NAME   the session's signed audit trail\n"
	      "                         on standard output (the audit role may)\n"
	      "  session audit-key [--session-dir DIR] NAME   the public key that signs it\n"
	      "  session exec NAME CAGE [--] CMD...   run CMD in a cage of a session\n"
	      "  watch [--session-dir DIR] NAME   what the user should see of a session, as\n"
	      "                         it comes: transfers asked, delivered, denied; cages\n"
	      "                         started, stopped, died\n"
	      "  exec-check FILE        exit 0 when FILE may run as code, 1 otherwise\n"
	      "  exec-policy [BIT... -- COMMAND [ARG...]]\n"
	      "                         print the exec securebits, or run COMMAND under more\n"
	      "  exec-policy allow-tree [--check] [--list] [--cross-mounts] [--ignore-missing]\n"
	      "                         [--interpreter PROG]... [DIR...]\n"
	      "                         make the files of interpreters' trees pass the check\n"
	      "  tpm status [TPM OPTIONS]   the TPM, the sealed key, the PCRs, the event log\n"
	      "  tpm seal-key [--from-key-file|--new] [TPM OPTIONS]\n"
	      "                         seal the key to the TPM's PCRs (default 7)\n"
	      "  tpm replay [TPM OPTIONS]   exit 0 when the event log matches the PCRs\n"
	      "  tpm measure [TPM OPTIONS] FILE [WHAT]\n"
	      "                         extend the measurement PCR with FILE\n"
	      "  lsm load               load the BPF LSM and pin it for the host (root)\n"
	      "  lsm status             exit 0 when the BPF LSM is loaded\n"
	      "  lsm unload             unpin it: running cages lose it\n"
	      "  transfer send FILE --to CAGE [--name N] [--note T] [--socket PATH]\n"
	      "                         ask the mediator to move FILE to cage CAGE\n"
	      "                         (exit 0 delivered, 1 failed, 3 denied by policy,\n"
	      "                         4 denied by the user)\n"
	      "  transfer open FILE --for CAGE [-o OUT]\n"
	      "                         open an envelope delivered to CAGE (the core's key)\n"
	      "                         into OUT, or standard output (no -o, or -o -)\n"
	      "  audit verify [--log FILE]   check the transfer audit trail\n"
	      "                         (exit 0 valid, 1 not valid, 3 valid with warnings)\n"
	      "  audit show [--log FILE]     print its records once verified\n"
	      "  audit verify --public-key KEY [--trail FILE]   the same (show too) with the\n"
	      "                         machine's public key only, of a trail stream (a\n"
	      "                         collector's copy, session trail's)\n"
	      "  audit export-key       the public key that signs the trail, in PEM\n"
	      "\n"
	      "Options:\n"
	      "  --state-dir DIR   state directory (default $CLIP_STATE_DIR, then /var/lib/clip)\n"
	      "  --key-provider NAME  where the MAC key comes from: file (default) or tpm\n"
	      "  --rootless        rootless mode: cages map the caller's ids alone,\n"
	      "                    labels use the user.clip.label attribute\n"
	      "  --names FILE      level names (setrans.conf style)\n"
	      "  -v, --verbose     log what the library does\n"
	      "  -h, --help        this text\n"
	      "      --version     the library's version\n"
	      "  TPM OPTIONS, after the tpm verb: --tcti T, --pcrs LIST, --measure-pcr N\n"
	      "\n"
	      "COMMAND... --help prints the usage of that command.\n",
	      f);
}

/*
 * The help of one command, cut out of usage(): usage() stays the one list
 * of the commands, so a new command gets its --help with its usage line.
 * Before "Options:", a line of two spaces and a word is a command line
 * ("  cage run --profile FILE ..."), a line indented deeper continues it.
 */

/* Whether the command line @line (@n bytes, without its indent) is of @prefix. */
static bool
line_is_of(const char *line, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && strncmp(line, prefix, k) == 0 && (n == k || line[k] == ' ');
}

/*
 * Print usage() to @f (when not NULL) with only the command lines of
 * @prefix ("cage", "cage run"); return how many there are. Set
 * *@runs_command when one of them runs a command line that needs no "--"
 * before it ("[--] CMD").
 */
static int
usage_of(FILE *f, const char *prefix, bool *runs_command)
{
	char *text = NULL, *line, *next;
	size_t size = 0;
	bool options = false, keep = true;
	int n = 0;
	FILE *m;

	m = open_memstream(&text, &size);
	if (!m)
		return 0;
	usage(m);
	if (fclose(m) != 0) {
		free(text);
		return 0;
	}
	for (line = text; *line; line = next) {
		size_t len = strcspn(line, "\n");

		next = line + len + (line[len] == '\n');

		options |= strncmp(line, "Options:", 8) == 0;
		if (!options && len > 2 && strncmp(line, "  ", 2) == 0 && line[2] != ' ') {
			keep = line_is_of(line + 2, len - 2, prefix);
			n += keep;
			if (keep && runs_command && memmem(line, len, "[--]", 4))
				*runs_command = true;
		} else if (options || strncmp(line, "   ", 3) != 0)
			keep = true;
		if (keep && f)
			fprintf(f, "%.*s\n", (int)len, line);
	}
	free(text);
	return n;
}

/*
 * `clipctl COMMAND... --help` (or -h): the usage of that command on
 * stdout, 0. The option is looked for up to a "--", and only right after
 * the command's words when the command runs a command line that needs no
 * "--" (what follows may be that command's own --help). -1 when it does
 * not apply.
 */
static int
command_help(int argc, char **argv)
{
	bool runs_command = false;
	char prefix[256];
	int words = 1;

	if (strlen(argv[0]) > 100 || (argc > 1 && strlen(argv[1]) > 100))
		return -1;
	if (argc > 1 && argv[1][0] != '-') {
		snprintf(prefix, sizeof(prefix), "%s %s", argv[0], argv[1]);
		if (usage_of(NULL, prefix, NULL) > 0)
			words = 2;
	}
	if (words == 1)
		snprintf(prefix, sizeof(prefix), "%s", argv[0]);
	if (usage_of(NULL, prefix, &runs_command) == 0)
		return -1;
	for (int i = words; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage_of(stdout, prefix, NULL);
			return fflush(stdout) == 0 ? 0 : EXIT_INVALID;
		}
		if (runs_command)
			break;
	}
	return -1;
}

void
put_name(FILE *f, const char *s)
{
	if (test_hook_disabled("clipctl-escape"))
		fputs(s, f);
	else
		utf8_put_escaped(f, s, false, SIZE_MAX);
}

/* @prefix, then the formatted text, escaped, and a newline. */
static void
vsay(FILE *f, const char *prefix, const char *format, va_list ap)
{
	char *text = NULL;

	if (vasprintf(&text, format, ap) < 0)
		text = NULL;
	fputs(prefix, f);
	put_name(f, text ? text : "(out of memory)");
	fputc('\n', f);
	free(text);
}

void
say(FILE *f, const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vsay(f, "", format, ap);
	va_end(ap);
}

int
fail_usage(const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vsay(stderr, "clipctl: ", format, ap);
	va_end(ap);
	fputs("Try 'clipctl --help'.\n", stderr);
	return EXIT_USAGE;
}

int
fail_error(const char *what, int r, struct clip_error *error)
{
	say(stderr, "clipctl: %s: %s", what, error ? clip_error_get_message(error) : strerror(-r));
	clip_error_free(error);
	return EXIT_INVALID;
}

static void
log_to_stderr(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	say(stderr, "clipctl: %s%s", priority == LOG_WARNING ? "warning: " : "", message);
}

struct clip_ctx *
clipctl_ctx(const struct clipctl *c)
{
	struct clip_ctx *ctx = NULL;
	int r;

	r = clip_ctx_new(&ctx);
	if (r < 0) {
		fail_error("cannot create a context", r, NULL);
		return NULL;
	}
	clip_ctx_set_log_fn(ctx, log_to_stderr, NULL);
	clip_ctx_set_log_priority(ctx, c->verbose ? LOG_DEBUG : LOG_ERR);
	/* The library takes an absolute path (an assertion): a person is told here. */
	if (c->state_dir && (c->state_dir[0] != '/' || strlen(c->state_dir) >= PATH_MAX)) {
		fail_usage("bad --state-dir '%.200s': give an absolute path (of fewer than %d "
			   "bytes)",
			   c->state_dir, PATH_MAX);
		return clip_ctx_unref(ctx);
	}
	if (c->state_dir && clip_ctx_set_state_dir(ctx, c->state_dir) < 0) {
		fail_usage("bad --state-dir '%.200s'", c->state_dir);
		return clip_ctx_unref(ctx);
	}
	if (c->key_provider && clip_ctx_set_key_provider(ctx, c->key_provider) < 0) {
		fail_usage("unknown key provider '%s'", c->key_provider);
		return clip_ctx_unref(ctx);
	}
	if (c->label_flags & CLIP_LABEL_ROOTLESS)
		(void)clip_ctx_set_cage_mode(ctx, CLIP_CAGE_MODE_ROOTLESS);
	return ctx;
}

/* A parser's message, then the input with a caret under the culprit. */
static int
fail_level(const char *text, struct clip_error *error)
{
	int offset = clip_error_get_offset(error);

	say(stderr, "clipctl: %s", clip_error_get_message(error));
	if (offset >= 0 && (size_t)offset <= strlen(text) && strlen(text) < 200) {
		fprintf(stderr, "  ");
		for (const char *p = text; *p; p++)
			fputc((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f ? '?' : *p,
			      stderr);
		say(stderr, "\n  %*s^", offset, "");
	}
	clip_error_free(error);
	return EXIT_USAGE;
}

int
parse_level(const struct clipctl *c, const char *text, struct clip_level **ret)
{
	struct clip_error *error = NULL;

	if (clip_level_parse_name(ret, c->names, text, &error) < 0)
		return fail_level(text, error);
	return 0;
}

int
print_level(const struct clipctl *c, const struct clip_level *level, const char *suffix)
{
	char *text = NULL;

	if (clip_level_format_name(level, c->names, &text) < 0)
		return EXIT_INVALID;
	put_name(stdout, text);
	fputs(suffix, stdout);
	free(text);
	return 0;
}

int
open_file(const char *path, enum open_how how, int *ret)
{
	struct clip_error *error = NULL;
	int fd;

	if (how == OPEN_FOLLOW) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0) {
			say(stderr, "clipctl: cannot open %s: %s", path, strerror(errno));
			return EXIT_INVALID;
		}
		*ret = fd;
		return 0;
	}
	fd = open_regular(AT_FDCWD, path, 0, NULL, &error);
	if (fd == -EMEDIUMTYPE && how == OPEN_REGULAR_OR_DIR) {
		/* A directory, opened again as one: a swap for a link or a FIFO fails. */
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			clip_error_free(error);
			*ret = fd;
			return 0;
		}
	}
	if (fd < 0) {
		if (error) {
			say(stderr, "clipctl: %s", clip_error_get_message(error));
			clip_error_free(error);
			return EXIT_INVALID;
		}
		say(stderr, "clipctl: cannot open %s: %s", path, strerror(-fd));
		return EXIT_INVALID;
	}
	*ret = fd;
	return 0;
}

static int
load_names(struct clipctl *c)
{
	struct clip_error *error = NULL;
	struct stat st = { 0 };
	char *buf;
	size_t n = 0;
	ssize_t k;
	int fd, r;

	/* A configuration file: a link is followed, but it must lead to a regular file. */
	fd = open(c->names_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		say(stderr, "clipctl: cannot open %s: %s", c->names_path, strerror(errno));
		return EXIT_INVALID;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		say(stderr, "clipctl: --names %s is %s, not a file of level names", c->names_path,
		    file_type_name(st.st_mode));
		close(fd);
		return EXIT_INVALID;
	}
	buf = malloc(NAMES_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return EXIT_INVALID;
	}
	/* One byte more than allowed, so that the parser sees a file too long. */
	while (n <= NAMES_FILE_MAX && (k = read(fd, buf + n, NAMES_FILE_MAX + 1 - n)) > 0)
		n += (size_t)k;
	close(fd);
	r = clip_level_names_parse(&c->names, buf, n, &error);
	free(buf);
	if (r < 0) {
		say(stderr, "clipctl: %s: %s", c->names_path, clip_error_get_message(error));
		clip_error_free(error);
		return EXIT_USAGE;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, 'd' },
		{ "key-provider", required_argument, NULL, 'k' },
		{ "rootless", no_argument, NULL, 'r' },
		{ "names", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct clipctl c = { 0 };
	int opt, r = -1;

	while ((opt = getopt_long(argc, argv, "+vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			c.state_dir = optarg;
			break;
		case 'k':
			c.key_provider = optarg;
			break;
		case 'r':
			c.label_flags |= CLIP_LABEL_ROOTLESS;
			break;
		case 'n':
			c.names_path = optarg;
			break;
		case 'v':
			c.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			say(stdout, "clipctl (libclip) %s", clip_version());
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind >= 1) {
		r = command_help(argc - optind, argv + optind);
		if (r >= 0)
			return r;
	}
	/* exec-policy is the one command of a single word. */
	if (argc - optind < 2 &&
	    !(argc - optind == 1 && strcmp(argv[optind], "exec-policy") == 0)) {
		/* A command without its verb: the usage of that command. */
		if (argc - optind == 0 || usage_of(stderr, argv[optind], NULL) == 0)
			usage(stderr);
		return EXIT_USAGE;
	}
	if (c.names_path) {
		r = load_names(&c);
		if (r != 0)
			return r;
	}
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (strcmp(groups[i].name, argv[optind]) == 0)
			r = groups[i].run(&c, argc - optind - 1, argv + optind + 1);
	if (r < 0)
		r = fail_usage("unknown command '%s'", argv[optind]);
	clip_level_names_unref(c.names);
	if (fflush(stdout) != 0 && r == 0)
		r = EXIT_INVALID;
	return r;
}
