/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clipctl transfer send: ask the mediator to move a document to another
 * cage. clipctl transfer open: open an envelope with the core's key.
 * clipctl audit verify|show: check and print the audit trail.
 *
 * Exit status of transfer send: 0 delivered, 1 failed, 2 usage,
 * 3 denied by policy, 4 denied by the user. Of audit verify and show: 0
 * valid, 1 not valid (or not readable), 2 usage, 3 valid with warnings.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "base/test-hooks.h"
#include "base/util.h"
#include "clipctl.h"

#define EXIT_DENIED_POLICY 3
#define EXIT_DENIED_USER 4
/* audit verify|show: the log verifies, with warnings (clip_audit_check()). */
#define EXIT_AUDIT_WARNINGS 3

static int
report(struct clip_transfer *t, const char *target)
{
	const char *why = clip_transfer_get_message(t);
	uint8_t sha[32] = { 0 };
	uint64_t size = 0;
	int encrypted = 0, err;

	switch (clip_transfer_get_status(t)) {
	case CLIP_TRANSFER_DELIVERED:
		clip_transfer_get_digest(t, &size, sha, &encrypted);
		printf("delivered to ");
		put_name(stdout, target);
		printf(" as '");
		put_name(stdout, clip_transfer_get_name(t));
		printf("' (%llu bytes%s, sha256 ", (unsigned long long)size,
		       encrypted ? ", encrypted" : "");
		for (int i = 0; i < 32; i++)
			printf("%02x", sha[i]);
		printf(")\n");
		return 0;
	case CLIP_TRANSFER_DENIED_POLICY:
		say(stderr, "clipctl: denied by policy: %s", why);
		return EXIT_DENIED_POLICY;
	case CLIP_TRANSFER_DENIED_USER:
		say(stderr, "clipctl: denied by the user: %s", why);
		return EXIT_DENIED_USER;
	default:
		err = clip_transfer_get_error(t);
		say(stderr, "clipctl: failed: %s%s%s%s", why, err ? " (" : "",
		    err ? strerror(-err) : "", err ? ")" : "");
		return EXIT_INVALID;
	}
}

static int
transfer_send(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "name", required_argument, NULL, 'n' },
		{ "note", required_argument, NULL, 'N' },
		{ "socket", required_argument, NULL, 's' },
		{ 0 },
	};
	const char *target = NULL, *name = NULL, *note = NULL, *socket_path = NULL;
	struct clip_transfer *t = NULL;
	struct clip_error *error = NULL;
	int opt, sock = -1, fd = -1, r;
	char *copy;

	optind = 0; /* 0: a full restart of getopt, permuting again */
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			target = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'N':
			note = optarg;
			break;
		case 's':
			socket_path = optarg;
			break;
		default:
			return fail_usage("bad option for transfer send");
		}
	}
	if (argc - optind != 1 || !target)
		return fail_usage("usage: transfer send FILE --to CAGE [--name NAME] [--note TEXT] "
				  "[--socket PATH]");
	fd = open(argv[optind], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		say(stderr, "clipctl: failed: cannot open %s: %m", argv[optind]);
		return EXIT_INVALID;
	}
	copy = strdup(argv[optind]);
	if (!name && copy)
		name = basename(copy);
	r = clip_transfer_connect(&sock, socket_path, &error);
	if (r == 0)
		r = clip_transfer_send(&t, sock, fd, target, name ? name : "document", note,
				       &error);
	if (r < 0)
		r = fail_error("failed", r, error);
	else
		r = report(t, target);
	clip_transfer_unref(t);
	free(copy);
	if (sock >= 0)
		close(sock);
	close(fd);
	return r;
}

/*
 * The envelope is in the target cage's inbox, where the cage writes: it
 * is opened as a regular file only (open_regular(): no symbolic link
 * followed, no FIFO waited on), and read no further than the size it
 * has. The output is an unnamed file in OUT's directory (O_TMPFILE, 0600:
 * it is plain text) that the library decrypts into, on disk rather than
 * in memory, and that gets its name only once the envelope is
 * authenticated; a refusal leaves nothing. Where O_TMPFILE is not
 * supported, OUT is created (O_EXCL) and removed on a refusal, the
 * library then holding the plain text in memory until it verifies.
 * Standard output (no -o, or -o -) gets nothing of a refused envelope
 * either.
 */
static int
open_output(const char *out_path, int *ret_dfd, bool *ret_unnamed)
{
	char *copy = strdup(out_path);
	int dfd, fd;

	*ret_unnamed = false;
	if (!copy)
		return -ENOMEM;
	dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (dfd < 0)
		return -errno;
	if (faccessat(AT_FDCWD, out_path, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		close(dfd);
		return -EEXIST;
	}
	fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0) {
		*ret_dfd = dfd;
		*ret_unnamed = true;
		return fd;
	}
	close(dfd);
	*ret_dfd = -1;
	fd = open(out_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
	return fd < 0 ? -errno : fd;
}

static int
link_output(int out, int dfd, const char *out_path)
{
	char *copy = strdup(out_path);
	char proc[64];
	int r = 0;

	if (!copy)
		return -ENOMEM;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", out);
	if (linkat(AT_FDCWD, proc, dfd, basename(copy), AT_SYMLINK_FOLLOW) < 0 || fsync(dfd) < 0)
		r = -errno;
	free(copy);
	return r;
}

static int
transfer_open(struct clipctl *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "for", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ 0 },
	};
	const char *target = NULL, *out_path = NULL;
	struct clip_error *error = NULL;
	struct clip_ctx *ctx;
	int opt, in = -1, out = STDOUT_FILENO, dfd = -1, r;
	bool unnamed = false;

	optind = 0; /* 0: a full restart of getopt, permuting again */
	while ((opt = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			target = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		default:
			return fail_usage("bad option for transfer open");
		}
	}
	if (argc - optind != 1 || !target)
		return fail_usage("usage: transfer open FILE --for CAGE [-o OUT]");
	/* "-o -": standard output, as without -o. */
	if (out_path && strcmp(out_path, "-") == 0)
		out_path = NULL;
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	in = open_regular(AT_FDCWD, argv[optind], 0, NULL, &error);
	if (in < 0) {
		clip_ctx_unref(ctx);
		if (in == -ENOENT)
			say(stderr, "clipctl: cannot open %s: %s", argv[optind], strerror(ENOENT));
		return in == -ENOENT ? EXIT_INVALID
				     : fail_error("cannot open the envelope", in, error);
	}
	if (out_path) {
		out = open_output(out_path, &dfd, &unnamed);
		if (out < 0) {
			say(stderr, "clipctl: cannot create %s: %s", out_path, strerror(-out));
			close(in);
			clip_ctx_unref(ctx);
			return EXIT_INVALID;
		}
	}
	r = clip_transfer_open_envelope(ctx, target, in, out, &error);
	if (out_path) {
		if (r == 0 && fsync(out) < 0)
			r = -errno;
		if (r == 0 && unnamed)
			r = link_output(out, dfd, out_path);
		if (r < 0 && !error)
			say(stderr, "clipctl: cannot write %s: %s", out_path, strerror(-r));
		if (close(out) < 0 && r == 0) {
			say(stderr, "clipctl: cannot write %s: %m", out_path);
			r = -EIO;
		}
		if (r < 0 && !unnamed)
			(void)unlink(out_path);
		if (dfd >= 0)
			close(dfd);
	}
	if (r < 0 && error)
		r = fail_error(argv[optind], r, error);
	else if (r < 0)
		r = EXIT_INVALID;
	close(in);
	clip_ctx_unref(ctx);
	return r;
}

int
clipctl_transfer(struct clipctl *c, int argc, char **argv)
{
	if (strcmp(argv[0], "send") == 0)
		return transfer_send(argc, argv);
	if (strcmp(argv[0], "open") == 0)
		return transfer_open(c, argc, argv);
	return fail_usage("unknown command 'transfer %s'", argv[0]);
}

static int
print_record(const char *record, void *userdata)
{
	/* Printable ASCII when verified; escaped all the same, as every name from a file. */
	put_name(stdout, record);
	putchar('\n');
	return 0;
}

/* A PEM public key of at most 4 KiB, read whole: a string, or NULL after a message. */
static char *
read_public_key(const char *path)
{
	char *text = calloc(1, 4097);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n = fd < 0 ? -1 : read(fd, text, 4096);

	if (fd >= 0)
		close(fd);
	if (!text || n < 0) {
		say(stderr, "clipctl: cannot read the public key %s: %m", path);
		free(text);
		return NULL;
	}
	return text;
}

/* audit verify --public-key KEY [--trail FILE]: a trail stream, with the public key only. */
static int
audit_verify_public(struct clipctl *c, const char *verb, const char *key_path,
		    const char *trail_path)
{
	struct clip_error *error = NULL;
	uint64_t count = 0;
	char *key = read_public_key(key_path);
	int fd = STDIN_FILENO, r;

	(void)c;
	if (!key)
		return EXIT_INVALID;
	if (trail_path && strcmp(trail_path, "-") != 0)
		fd = open(trail_path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		say(stderr, "clipctl: cannot open the trail %s: %m", trail_path);
		free(key);
		return EXIT_INVALID;
	}
	r = clip_audit_verify_public(fd, key, strcmp(verb, "show") == 0 ? print_record : NULL, NULL,
				     &count, &error);
	if (r < 0)
		r = fail_error(trail_path ? trail_path : "trail", r, error);
	else if (strcmp(verb, "verify") == 0)
		say(stdout, "%s: %llu records, valid (signed by %s)",
		    trail_path ? trail_path : "trail", (unsigned long long)count, key_path);
	if (fd != STDIN_FILENO)
		close(fd);
	free(key);
	return r;
}

/* audit export-key: the public key of this machine's trail, in PEM. */
static int
audit_export_key(struct clipctl *c, int argc)
{
	struct clip_error *error = NULL;
	struct clip_ctx *ctx;
	char *pem = NULL;
	int r;

	if (argc != 1)
		return fail_usage("usage: audit export-key");
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	r = clip_audit_get_public_key(ctx, &pem, &error);
	if (r < 0)
		r = fail_error("audit signing key", r, error);
	else
		fputs(pem, stdout);
	free(pem);
	clip_ctx_unref(ctx);
	return r;
}

int
clipctl_audit(struct clipctl *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "public-key", required_argument, NULL, 'k' },
		{ "trail", required_argument, NULL, 't' },
		{ 0 },
	};
	const char *key_path = NULL, *trail_path = NULL;
	const char *verb = argv[0], *log_path = NULL;
	struct clip_error *error = NULL;
	struct clip_ctx *ctx;
	uint64_t count = 0;
	unsigned warnings = 0;
	char *dir = NULL, *base = NULL, *name = NULL;
	int opt, dfd = -1, r;

	if (strcmp(verb, "export-key") == 0)
		return audit_export_key(c, argc);
	if (strcmp(verb, "verify") != 0 && strcmp(verb, "show") != 0)
		return fail_usage("unknown command 'audit %s'", verb);
	optind = 0; /* 0: a full restart of getopt, permuting again */
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 'l')
			log_path = optarg;
		else if (opt == 'k')
			key_path = optarg;
		else if (opt == 't')
			trail_path = optarg;
		else
			return fail_usage("usage: audit %s [--log FILE | --public-key KEY [--trail "
					  "FILE]]",
					  verb);
	}
	if (optind != argc || (log_path && key_path) || (trail_path && !key_path))
		return fail_usage("usage: audit %s [--log FILE | --public-key KEY [--trail FILE]]",
				  verb);
	if (key_path)
		return audit_verify_public(c, verb, key_path, trail_path);
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	if (log_path) {
		dir = strdup(log_path);
		base = strdup(log_path);
		if (!dir || !base) {
			r = EXIT_INVALID;
			goto out;
		}
		name = basename(base);
		/* What clip_audit_check() takes as a name (an assertion there). */
		if (!*log_path || strcmp(name, "/") == 0 || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0 || strlen(name) > 200) {
			r = fail_usage("bad --log '%.200s': give the path of a log file (a name of "
				       "1 to 200 bytes, not . or ..)",
				       log_path);
			goto out;
		}
		dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			say(stderr, "clipctl: cannot open the directory of %s: %m", log_path);
			r = EXIT_INVALID;
			goto out;
		}
	}
	/*
	 * What limits the proof (records after the anchor, a torn tail) is
	 * said without -v, and in the exit status: "valid" alone would hide
	 * that a stale anchor was put back.
	 */
	if (!c->verbose && !test_hook_disabled("audit-warn-default"))
		clip_ctx_set_log_priority(ctx, LOG_WARNING);
	r = clip_audit_check(ctx, dfd, name, strcmp(verb, "show") == 0 ? print_record : NULL, NULL,
			     &count, &warnings, &error);
	if (test_hook_disabled("audit-warn-default"))
		warnings = 0;
	if (r < 0)
		r = fail_error(log_path ? log_path : "audit log", r, error);
	else if (strcmp(verb, "verify") == 0)
		say(stdout, "%s: %llu records, valid%s", log_path ? log_path : CLIP_AUDIT_LOG_NAME,
		    (unsigned long long)count, warnings ? ", with the warnings above" : "");
	if (r == 0 && warnings)
		r = EXIT_AUDIT_WARNINGS;
out:
	if (dfd >= 0)
		close(dfd);
	free(dir);
	free(base);
	clip_ctx_unref(ctx);
	return r;
}
