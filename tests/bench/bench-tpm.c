/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The TPM module, measured through the shared library as a user links it,
 * against the TPM of $CLIP_TPM_TCTI (tests/tpm/with-swtpm starts one).
 * Each figure is the median over several timed runs of the mean latency
 * of one operation, printed beside its baseline:
 *   - context start with the "tpm" key provider (connect, create the
 *     primary key, load, policy session, unseal) and a label verified
 *     with the key, vs the same with the "file" provider (read mac.key);
 *   - clip_tpm_measure() (lock, log replay, PCR read, extend in every
 *     bank, append, fdatasync) vs a bare Esys_PCR_Extend of the SHA-256
 *     bank on a connection kept open (the floor of any measurement).
 *
 * Usage: bench-tpm [--runs N] [--duration-ms MS] [--dir DIR]
 * Exit 77 when no TPM is given ($CLIP_TPM_TCTI unset).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tss2/tss2_esys.h>
#include <tss2/tss2_tctildr.h>

#include <clip/clip.h>

#include "bench.h"

static int runs = 7;
static long duration_ms = 300;

/* Microseconds per operation: the median over the runs of each run's mean. */
static double
measure(const struct bench *b)
{
	double us[64];

	for (int r = 0; r < runs; r++) {
		double start = now(), end = start + (double)duration_ms / 1000.0, t;
		long n = 0;

		do {
			if (b->fn(b->data) < 0) {
				fprintf(stderr, "bench-tpm: %s failed\n", b->name);
				exit(1);
			}
			n++;
			t = now();
		} while (t < end || n < 3);
		us[r] = (t - start) * 1e6 / (double)n;
	}
	return median(us, runs);
}

struct start_data {
	const char *state;
	const char *provider;
	int fd;
};

static int
do_start(void *p)
{
	struct start_data *d = p;
	struct clip_ctx *ctx = NULL;
	int r;

	r = clip_ctx_new(&ctx);
	if (r == 0)
		r = clip_ctx_set_state_dir(ctx, d->state);
	if (r == 0)
		r = clip_ctx_set_key_provider(ctx, d->provider);
	if (r == 0)
		r = clip_label_verify(ctx, d->fd, CLIP_LABEL_ROOTLESS, NULL);
	clip_ctx_unref(ctx);
	return r;
}

struct measure_data {
	struct clip_ctx *ctx;
	ESYS_CONTEXT *esys;
	unsigned pcr;
	int i;
};

static int
do_measure(void *p)
{
	struct measure_data *d = p;

	d->i++;
	return clip_tpm_measure(d->ctx, "bench:profile", &d->i, sizeof(d->i), NULL);
}

static int
do_extend(void *p)
{
	struct measure_data *d = p;
	TPML_DIGEST_VALUES v = { .count = 1, .digests[0].hashAlg = TPM2_ALG_SHA256 };

	memset(v.digests[0].digest.sha256, ++d->i & 0xff, 32);
	return Esys_PCR_Extend(d->esys, ESYS_TR_PCR0 + d->pcr, ESYS_TR_PASSWORD, ESYS_TR_NONE,
			       ESYS_TR_NONE, &v) == TSS2_RC_SUCCESS
		       ? 0
		       : -EIO;
}

static void
row(const char *what, const struct bench *ours, const struct bench *peer)
{
	double a = measure(ours), b = measure(peer);

	printf("| %-36s | %10.0f | %-30s | %10.0f | %6.2f |\n", what, a, peer->name, b, a / b);
}

/* A labelled file, and the key its provider creates for it. */
static int
prepare(const char *state, const char *provider, const char *file)
{
	struct clip_level *level = NULL;
	struct clip_error *e = NULL;
	struct clip_ctx *ctx = NULL;
	int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600), r;

	if (fd < 0 || clip_ctx_new(&ctx) < 0 || clip_ctx_set_state_dir(ctx, state) < 0 ||
	    clip_ctx_set_key_provider(ctx, provider) < 0 ||
	    clip_level_parse(&level, "s2:c1", NULL) < 0)
		return -1;
	r = clip_label_set(ctx, fd, level, CLIP_LABEL_ROOTLESS, &e);
	if (r < 0) {
		fprintf(stderr, "bench-tpm: cannot label %s with the %s key: %s\n", file, provider,
			clip_error_get_message(e));
		clip_error_free(e);
		close(fd);
		fd = -1;
	}
	clip_level_unref(level);
	clip_ctx_unref(ctx);
	return fd;
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/var/tmp/clip-bench-tpm-XXXXXX", path[4][600];
	struct start_data tpm = { .provider = "tpm" }, file = { .provider = "file" };
	struct clip_tpm_opts o = { .size = sizeof(o) };
	struct measure_data md = { 0 };
	TSS2_TCTI_CONTEXT *tcti = NULL;
	const char *dir = NULL;

	if (bench_options(argc, argv, &runs, &duration_ms, &dir) != 0)
		return 2;
	if (!getenv("CLIP_TPM_TCTI")) {
		printf("no TPM: set $CLIP_TPM_TCTI, or run under tests/tpm/with-swtpm\n");
		return 77;
	}
	if (!dir && !(dir = mkdtemp(tmpl))) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path[0], sizeof(path[0]), "%s/state-tpm", dir);
	snprintf(path[1], sizeof(path[1]), "%s/state-file", dir);
	snprintf(path[2], sizeof(path[2]), "%s/doc-tpm", dir);
	snprintf(path[3], sizeof(path[3]), "%s/doc-file", dir);
	tpm.state = path[0];
	file.state = path[1];
	tpm.fd = prepare(tpm.state, "tpm", path[2]);
	file.fd = prepare(file.state, "file", path[3]);
	if (tpm.fd < 0 || file.fd < 0)
		return 1;

	if (clip_ctx_new(&md.ctx) < 0 || clip_ctx_set_state_dir(md.ctx, tpm.state) < 0 ||
	    clip_ctx_get_tpm_options(md.ctx, &o) < 0)
		return 1;
	md.pcr = o.measure_pcr;
	if (Tss2_TctiLdr_Initialize(o.tcti, &tcti) != TSS2_RC_SUCCESS ||
	    Esys_Initialize(&md.esys, tcti, NULL) != TSS2_RC_SUCCESS) {
		fprintf(stderr, "bench-tpm: cannot open the TPM at %s\n", o.tcti);
		return 1;
	}

	printf("libclip %s, TPM at %s, %d runs of %ld ms each, medians of the mean latency\n\n",
	       clip_version(), o.tcti, runs, duration_ms);
	printf("| %-36s | %10s | %-30s | %10s | %6s |\n", "libclip operation", "us/op", "baseline",
	       "us/op", "ratio");
	printf("|%.38s|%.12s|%.32s|%.12s|%.8s|\n", "--------------------------------------",
	       "------------", "--------------------------------", "------------", "--------");
	row("context start + verify, tpm provider",
	    &(struct bench){ .name = "tpm start", .fn = do_start, .data = &tpm },
	    &(struct bench){ .name = "same, file provider", .fn = do_start, .data = &file });
	/* The connection of the baseline is not open while clip_tpm_measure() runs. */
	Esys_Finalize(&md.esys);
	Tss2_TctiLdr_Finalize(&tcti);
	{
		double a = measure(
			       &(struct bench){ .name = "measure", .fn = do_measure, .data = &md }),
		       b;

		if (Tss2_TctiLdr_Initialize(o.tcti, &tcti) != TSS2_RC_SUCCESS ||
		    Esys_Initialize(&md.esys, tcti, NULL) != TSS2_RC_SUCCESS)
			return 1;
		b = measure(&(struct bench){ .name = "extend", .fn = do_extend, .data = &md });
		printf("| %-36s | %10.0f | %-30s | %10.0f | %6.2f |\n",
		       "clip_tpm_measure (PCR 23, log)", a, "bare Esys_PCR_Extend, SHA-256", b,
		       a / b);
	}
	printf("\nratio = libclip latency / baseline latency (how many times slower)\n");

	Esys_Finalize(&md.esys);
	Tss2_TctiLdr_Finalize(&tcti);
	clip_ctx_unref(md.ctx);
	close(tpm.fd);
	close(file.fd);
	if (dir == tmpl) {
		static const char *const files[] = { "state-tpm/mac.key.tpm",
						     "state-tpm/tpm-events.log",
						     "state-tpm/tpm-events.log.old",
						     "state-file/mac.key",
						     "doc-tpm",
						     "doc-file",
						     "state-tpm",
						     "state-file" };
		char p[700];

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
			(void)remove(p);
		}
		rmdir(dir);
	}
	return 0;
}
