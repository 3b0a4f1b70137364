/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit log's writer for the shell tests of the trail, as clipd
 * writes it (clip_audit_open() on the state directory's log, then
 * clip_audit_append()), without a mediator around it:
 *
 *   audit-append STATE_DIR KEY_PROVIDER N
 *
 * appends N records to STATE_DIR/audit.log with the key provider
 * KEY_PROVIDER ("file", "tpm": the TPM of $CLIP_TPM_TCTI). Exit 0, or 1
 * with the library's message.
 */
#include <stdio.h>
#include <stdlib.h>

#include <clip/clip.h>

static int
fail(const char *what, struct clip_error *e)
{
	fprintf(stderr, "audit-append: %s: %s\n", what, e ? clip_error_get_message(e) : "failed");
	clip_error_free(e);
	return 1;
}

int
main(int argc, char **argv)
{
	struct clip_error *e = NULL;
	struct clip_audit *a = NULL;
	struct clip_ctx *ctx = NULL;
	int n, r = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: audit-append STATE_DIR KEY_PROVIDER N\n");
		return 2;
	}
	n = atoi(argv[3]);
	if (clip_ctx_new(&ctx) < 0 || clip_ctx_set_state_dir(ctx, argv[1]) < 0 ||
	    clip_ctx_set_key_provider(ctx, argv[2]) < 0)
		return fail("bad context", NULL);
	if (clip_audit_open(&a, ctx, -1, NULL, 0, &e) < 0)
		r = fail("open", e);
	for (int i = 0; r == 0 && i < n; i++) {
		char name[32];
		struct clip_audit_entry entry = { .size = sizeof(entry),
						  .event = "request",
						  .source = "low",
						  .target = "high",
						  .name = name,
						  .decision = "allow" };

		snprintf(name, sizeof(name), "doc-%d", i);
		if (clip_audit_append(a, &entry, &e) < 0)
			r = fail("append", e);
	}
	clip_audit_unref(a);
	clip_ctx_unref(ctx);
	return r;
}
