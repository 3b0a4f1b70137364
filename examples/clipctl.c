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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <clip/clip.h>

#define EXIT_INVALID 1
#define EXIT_USAGE 2
#define NAMES_FILE_MAX (1024 * 1024)

struct options {
	const char *state_dir;
	const char *names_path;
	unsigned label_flags;
	int verbose;
};

static struct clip_level_names *names;

static void
log_to_stderr(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	fprintf(stderr, "clipctl: %s\n", message);
}

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
	      "\n"
	      "Options:\n"
	      "  --state-dir DIR   state directory (default $CLIP_STATE_DIR, then /var/lib/clip)\n"
	      "  --rootless        use the user.clip.label attribute\n"
	      "  --names FILE      level names (setrans.conf style)\n"
	      "  -v, --verbose     log what the library does\n"
	      "  -h, --help        this text\n"
	      "      --version     the library's version\n",
	      f);
}

static int __attribute__((format(printf, 1, 2))) fail_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("clipctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'clipctl --help'.\n", stderr);
	return EXIT_USAGE;
}

static int
fail_error(const char *what, int r, struct clip_error *error)
{
	fprintf(stderr, "clipctl: %s: %s\n", what,
		error ? clip_error_get_message(error) : strerror(-r));
	clip_error_free(error);
	return EXIT_INVALID;
}

/* A parser's message, then the input with a caret under the culprit. */
static int
fail_level(const char *text, struct clip_error *error)
{
	int offset = clip_error_get_offset(error);

	fprintf(stderr, "clipctl: %s\n", clip_error_get_message(error));
	if (offset >= 0 && (size_t)offset <= strlen(text) && strlen(text) < 200) {
		fprintf(stderr, "  ");
		for (const char *p = text; *p; p++)
			fputc((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f ? '?' : *p,
			      stderr);
		fprintf(stderr, "\n  %*s^\n", offset, "");
	}
	clip_error_free(error);
	return EXIT_USAGE;
}

static int
load_names(const char *path)
{
	struct clip_error *error = NULL;
	char *buf;
	size_t n = 0;
	ssize_t k;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		fprintf(stderr, "clipctl: cannot open %s: %s\n", path, strerror(errno));
		return EXIT_INVALID;
	}
	buf = malloc(NAMES_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return EXIT_INVALID;
	}
	while (n <= NAMES_FILE_MAX && (k = read(fd, buf + n, NAMES_FILE_MAX + 1 - n)) > 0)
		n += (size_t)k;
	close(fd);
	r = clip_level_names_parse(&names, buf, n, &error);
	free(buf);
	if (r < 0) {
		fprintf(stderr, "clipctl: %s: %s\n", path, clip_error_get_message(error));
		clip_error_free(error);
		return EXIT_USAGE;
	}
	return 0;
}

static int
parse_level(const char *text, struct clip_level **ret)
{
	struct clip_error *error = NULL;

	if (clip_level_parse_name(ret, names, text, &error) < 0)
		return fail_level(text, error);
	return 0;
}

static int
print_level(const struct clip_level *level, const char *suffix)
{
	char *text = NULL;

	if (clip_level_format_name(level, names, &text) < 0)
		return EXIT_INVALID;
	printf("%s%s", text, suffix);
	free(text);
	return 0;
}

static int
cmd_level_check(int argc, char **argv)
{
	struct clip_level *a = NULL, *b = NULL;
	static const char *const words[] = {
		[CLIP_LEVEL_EQUAL] = "equal",
		[CLIP_LEVEL_DOMINATES] = "dominates",
		[CLIP_LEVEL_DOMINATED] = "dominates",
		[CLIP_LEVEL_INCOMPARABLE] = "incomparable",
	};
	int r, c;

	if (argc != 2)
		return fail_usage("level check takes two levels");
	r = parse_level(argv[0], &a);
	if (r == 0)
		r = parse_level(argv[1], &b);
	if (r == 0) {
		c = clip_level_compare(a, b);
		/* The dominating level is written first. */
		r = print_level(c == CLIP_LEVEL_DOMINATED ? b : a, " ");
		printf("%s ", words[c]);
		if (r == 0)
			r = print_level(c == CLIP_LEVEL_DOMINATED ? a : b, "\n");
	}
	clip_level_unref(a);
	clip_level_unref(b);
	return r;
}

static int
cmd_level_format(int argc, char **argv)
{
	struct clip_level *level = NULL;
	int r;

	if (argc != 1)
		return fail_usage("level format takes one level");
	r = parse_level(argv[0], &level);
	if (r == 0)
		r = print_level(level, "\n");
	clip_level_unref(level);
	return r;
}

static int
open_file(const char *path, int *ret)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		fprintf(stderr, "clipctl: cannot open %s: %s\n", path, strerror(errno));
		return EXIT_INVALID;
	}
	*ret = fd;
	return 0;
}

static int
cmd_label(struct clip_ctx *ctx, const struct options *o, const char *verb, int argc, char **argv)
{
	struct clip_level *level = NULL;
	struct clip_error *error = NULL;
	int fd = -1, r;

	if (strcmp(verb, "set") == 0 ? argc != 2 : argc != 1)
		return fail_usage("wrong number of arguments for label %s", verb);
	if (strcmp(verb, "set") == 0) {
		r = parse_level(argv[1], &level);
		if (r != 0)
			return r;
	}
	r = open_file(argv[0], &fd);
	if (r != 0)
		goto out;

	if (strcmp(verb, "set") == 0)
		r = clip_label_set(ctx, fd, level, o->label_flags, &error);
	else if (strcmp(verb, "remove") == 0)
		r = clip_label_remove(ctx, fd, o->label_flags, &error);
	else
		r = clip_label_get(ctx, fd, o->label_flags, &level, &error);
	if (r < 0) {
		r = fail_error(argv[0], r, error);
		goto out;
	}
	if (strcmp(verb, "get") == 0)
		r = print_level(level, "\n");
	else if (strcmp(verb, "verify") == 0) {
		printf("%s: valid (", argv[0]);
		r = print_level(level, ")\n");
	}
out:
	if (fd >= 0)
		close(fd);
	clip_level_unref(level);
	return r;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, 'd' },
		{ "rootless", no_argument, NULL, 'r' },
		{ "names", required_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct options o = { 0 };
	struct clip_ctx *ctx = NULL;
	const char *group, *verb;
	int c, r;

	while ((c = getopt_long(argc, argv, "+vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.state_dir = optarg;
			break;
		case 'r':
			o.label_flags |= CLIP_LABEL_ROOTLESS;
			break;
		case 'n':
			o.names_path = optarg;
			break;
		case 'v':
			o.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("clipctl (libclip) %s\n", clip_version());
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	group = argv[optind];
	verb = argv[optind + 1];
	argc -= optind + 2;
	argv += optind + 2;

	if (o.names_path) {
		r = load_names(o.names_path);
		if (r != 0)
			return r;
	}

	if (strcmp(group, "level") == 0) {
		if (strcmp(verb, "check") == 0)
			r = cmd_level_check(argc, argv);
		else if (strcmp(verb, "format") == 0)
			r = cmd_level_format(argc, argv);
		else
			r = fail_usage("unknown command 'level %s'", verb);
	} else if (strcmp(group, "label") == 0) {
		if (strcmp(verb, "set") && strcmp(verb, "get") && strcmp(verb, "verify") &&
		    strcmp(verb, "remove")) {
			r = fail_usage("unknown command 'label %s'", verb);
			goto out;
		}
		r = clip_ctx_new(&ctx);
		if (r < 0) {
			r = fail_error("cannot create a context", r, NULL);
			goto out;
		}
		clip_ctx_set_log_fn(ctx, log_to_stderr, NULL);
		clip_ctx_set_log_priority(ctx, o.verbose ? LOG_DEBUG : LOG_ERR);
		if (o.state_dir) {
			r = clip_ctx_set_state_dir(ctx, o.state_dir);
			if (r < 0) {
				r = fail_usage("bad state directory '%s' (an absolute path)",
					       o.state_dir);
				goto out;
			}
		}
		r = cmd_label(ctx, &o, verb, argc, argv);
	} else
		r = fail_usage("unknown command '%s'", group);
out:
	clip_ctx_unref(ctx);
	clip_level_names_unref(names);
	if (fflush(stdout) != 0 && r == 0)
		r = EXIT_INVALID;
	return r;
}
