/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* clipctl tpm: the TPM's state, sealing the key, measuring and replaying. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clipctl.h"

/* What clipctl tpm measure reads at most. */
#define MEASURE_MAX (16 * 1024 * 1024)

struct tpm_args {
	struct clip_tpm_opts opts;
	bool opts_set;
	unsigned seal_flags;
};

static void
hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static const char *
pcr_list(uint32_t mask, char buf[80])
{
	size_t n = 0;

	buf[0] = '\0';
	/* All 24: 61 bytes. */
	for (unsigned pcr = 0; pcr < 24 && n < 80; pcr++)
		if (mask & (1u << pcr))
			n += (size_t)snprintf(buf + n, 80 - n, "%s%u", n ? "," : "", pcr);
	return buf;
}

/* "7" or "7,11": a set of PCRs 0 to 23. */
static int
parse_pcrs(const char *text, uint32_t *ret)
{
	uint32_t mask = 0;
	const char *p = text;

	do {
		char *end;
		unsigned long pcr = strtoul(p, &end, 10);

		if (end == p || pcr > 23 || (*end && *end != ','))
			return fail_usage(
				"bad PCR list '%s' (numbers 0 to 23, separated by commas)", text);
		mask |= UINT32_C(1) << pcr;
		p = *end ? end + 1 : end;
	} while (*p);
	*ret = mask;
	return 0;
}

static int
parse_options(int argc, char **argv, struct tpm_args *a)
{
	static const struct option longopts[] = {
		{ "tcti", required_argument, NULL, 't' },
		{ "pcrs", required_argument, NULL, 'p' },
		{ "measure-pcr", required_argument, NULL, 'm' },
		{ "from-key-file", no_argument, NULL, 'f' },
		{ "new", no_argument, NULL, 'n' },
		{ 0 },
	};
	int opt;

	a->opts.size = sizeof(a->opts);
	optind = 0;
	while ((opt = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		char *end;
		int r;

		switch (opt) {
		case 't':
			a->opts.tcti = optarg;
			break;
		case 'p':
			r = parse_pcrs(optarg, &a->opts.seal_pcrs);
			if (r != 0)
				return r;
			break;
		case 'm':
			a->opts.measure_pcr = (uint32_t)strtoul(optarg, &end, 10);
			if (end == optarg || *end)
				return fail_usage("bad PCR '%s'", optarg);
			break;
		case 'f':
			a->seal_flags |= CLIP_TPM_SEAL_FROM_KEY_FILE;
			break;
		case 'n':
			a->seal_flags |= CLIP_TPM_SEAL_NEW;
			break;
		default:
			return fail_usage("bad option for 'tpm %s'", argv[0]);
		}
		a->opts_set |= opt == 't' || opt == 'p' || opt == 'm';
	}
	if (a->seal_flags == (CLIP_TPM_SEAL_FROM_KEY_FILE | CLIP_TPM_SEAL_NEW))
		return fail_usage("--from-key-file and --new exclude each other");
	if (a->seal_flags && strcmp(argv[0], "seal-key") != 0)
		return fail_usage("--from-key-file and --new are options of 'tpm seal-key'");
	return 0;
}

static void
print_pcr(struct clip_ctx *ctx, const char *label, unsigned pcr)
{
	struct clip_error *error = NULL;
	uint8_t value[32];
	char text[65];

	if (clip_tpm_pcr_read(ctx, pcr, value, &error) < 0) {
		say(stdout, "%s %u: %s", label, pcr, clip_error_get_message(error));
		clip_error_free(error);
		return;
	}
	hex(value, sizeof(value), text);
	say(stdout, "%s %u: %s", label, pcr, text);
}

static int
status(struct clip_ctx *ctx)
{
	struct clip_tpm_opts o = { .size = sizeof(o) };
	struct clip_error *error = NULL;
	char *info = NULL, a[80], b[80];
	uint32_t sealed = 0, pcrs;
	int r;

	clip_ctx_get_tpm_options(ctx, &o);
	say(stdout, "tcti: %s", o.tcti);
	r = clip_tpm_get_info(ctx, &info, &error);
	if (r < 0)
		return fail_error("tpm status", r, error);
	say(stdout, "tpm: %s", info);
	free(info);

	r = clip_tpm_check_key(ctx, &sealed, &error);
	if (r == 0)
		say(stdout, "sealed key: %s/mac.key.tpm, sealed to PCR %s: unseals",
		    clip_ctx_get_state_dir(ctx), pcr_list(sealed, a));
	else
		say(stdout, "sealed key: %s", clip_error_get_message(error));
	error = clip_error_free(error);
	say(stdout, "seal PCRs (configured): %s", pcr_list(o.seal_pcrs, b));
	pcrs = o.seal_pcrs | sealed;
	for (unsigned pcr = 0; pcr < 24; pcr++)
		if (pcrs & (1u << pcr))
			print_pcr(ctx, "PCR", pcr);
	print_pcr(ctx, "measurement PCR", o.measure_pcr);
	r = clip_tpm_replay(ctx, NULL, NULL, &error);
	if (r >= 0)
		say(stdout, "event log: %d event%s, matches the TPM", r, r == 1 ? "" : "s");
	else
		say(stdout, "event log: %s", clip_error_get_message(error));
	clip_error_free(error);
	return 0;
}

static void
print_event(unsigned pcr, const char *what, const uint8_t digest[32], void *userdata)
{
	char text[65];

	hex(digest, 32, text);
	say(stdout, "%2u %s %s", pcr, text, what);
	(*(int *)userdata)++;
}

static int
replay(struct clip_ctx *ctx)
{
	struct clip_error *error = NULL;
	int n = 0, r;

	r = clip_tpm_replay(ctx, print_event, &n, &error);
	if (r < 0)
		return fail_error("the event log does not match the TPM", r, error);
	say(stdout, "event log: %d event%s, matches the TPM", r, r == 1 ? "" : "s");
	return 0;
}

static int
measure(struct clip_ctx *ctx, const char *path, const char *what)
{
	struct clip_error *error = NULL;
	char *buf, name[300];
	size_t n = 0;
	ssize_t k;
	int fd, r;

	if (!what) {
		snprintf(name, sizeof(name), "file:%s", path);
		what = name;
	}
	r = open_file(path, OPEN_REGULAR, &fd);
	if (r != 0)
		return r;
	buf = malloc(MEASURE_MAX + 1);
	if (!buf) {
		close(fd);
		return EXIT_INVALID;
	}
	while (n <= MEASURE_MAX && (k = read(fd, buf + n, MEASURE_MAX + 1 - n)) > 0)
		n += (size_t)k;
	close(fd);
	if (n > MEASURE_MAX) {
		free(buf);
		say(stderr, "clipctl: %s: larger than %d bytes", path, MEASURE_MAX);
		return EXIT_INVALID;
	}
	r = clip_tpm_measure(ctx, what, buf, n, &error);
	free(buf);
	if (r == -EINVAL) {
		clip_error_free(error);
		return fail_usage("bad event name '%.64s' (1 to 255 printable ASCII characters)",
				  what);
	}
	if (r < 0)
		return fail_error(path, r, error);
	say(stdout, "measured %s as '%s'", path, what);
	return 0;
}

static int
seal(struct clip_ctx *ctx, unsigned flags)
{
	struct clip_tpm_opts o = { .size = sizeof(o) };
	struct clip_error *error = NULL;
	char list[80];
	int r;

	r = clip_tpm_seal_key(ctx, flags, &error);
	if (r < 0)
		return fail_error("cannot seal the key", r, error);
	clip_ctx_get_tpm_options(ctx, &o);
	say(stdout, "sealed the %s key to PCR %s in %s/mac.key.tpm",
	    flags & CLIP_TPM_SEAL_NEW             ? "new"
	    : flags & CLIP_TPM_SEAL_FROM_KEY_FILE ? "key file's"
						  : "context's",
	    pcr_list(o.seal_pcrs, list), clip_ctx_get_state_dir(ctx));
	return 0;
}

int
clipctl_tpm(struct clipctl *c, int argc, char **argv)
{
	static const char *const verbs[] = { "status", "seal-key", "replay", "measure" };
	const char *verb = argv[0];
	struct tpm_args a = { 0 };
	struct clip_ctx *ctx;
	bool known = false;
	int nargs, r;

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		known |= strcmp(verb, verbs[i]) == 0;
	if (!known)
		return fail_usage("unknown command 'tpm %s'", verb);
	r = parse_options(argc, argv, &a);
	if (r != 0)
		return r;
	nargs = argc - optind;
	if (strcmp(verb, "measure") == 0 ? nargs < 1 || nargs > 2 : nargs != 0)
		return fail_usage("wrong number of arguments for tpm %s", verb);
	ctx = clipctl_ctx(c);
	if (!ctx)
		return EXIT_USAGE;
	r = a.opts_set ? clip_ctx_set_tpm_options(ctx, &a.opts) : 0;
	if (r == -EOPNOTSUPP) {
		/* The library said why in the log: built without the TPM. */
		clip_ctx_unref(ctx);
		return EXIT_FAILURE;
	}
	if (r < 0) {
		clip_ctx_unref(ctx);
		/* The library said which option and why, in the log. */
		return fail_usage("bad TPM options");
	}
	if (strcmp(verb, "status") == 0)
		r = status(ctx);
	else if (strcmp(verb, "seal-key") == 0)
		r = seal(ctx, a.seal_flags);
	else if (strcmp(verb, "replay") == 0)
		r = replay(ctx);
	else
		r = measure(ctx, argv[optind], nargs == 2 ? argv[optind + 1] : NULL);
	clip_ctx_unref(ctx);
	return r;
}
