/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit log's writer for the shell tests of the trail, as clipd
 * writes it (clip_audit_open() on the state directory's log, then
 * clip_audit_append()), without a mediator around it:
 *
 *   audit-append STATE_DIR KEY_PROVIDER N [syslog] [export=FILE]
 *
 * appends N records to STATE_DIR/audit.log with the key provider
 * KEY_PROVIDER ("file", "tpm": the TPM of $CLIP_TPM_TCTI), also to syslog
 * with "syslog" (CLIP_AUDIT_SYSLOG), then writes the trail stream to FILE
 * with "export=FILE" (clip_audit_export()). Exit 0, or 1 with the
 * library's message.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	const char *export_path = NULL;
	unsigned flags = 0;
	int n, r = 0;

	if (argc < 4) {
		fprintf(stderr,
			"usage: audit-append STATE_DIR KEY_PROVIDER N [syslog] [export=FILE]\n");
		return 2;
	}
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "syslog") == 0)
			flags |= CLIP_AUDIT_SYSLOG;
		else if (strncmp(argv[i], "export=", 7) == 0)
			export_path = argv[i] + 7;
		else {
			fprintf(stderr, "audit-append: unknown option '%s'\n", argv[i]);
			return 2;
		}
	}
	n = atoi(argv[3]);
	if (clip_ctx_new(&ctx) < 0 || clip_ctx_set_state_dir(ctx, argv[1]) < 0 ||
	    clip_ctx_set_key_provider(ctx, argv[2]) < 0)
		return fail("bad context", NULL);
	if (clip_audit_open(&a, ctx, -1, NULL, flags, &e) < 0)
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
	if (r == 0 && export_path) {
		int fd = open(export_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (fd < 0 || clip_audit_export(a, fd, &e) < 0)
			r = fail("export", e);
		if (fd >= 0)
			close(fd);
	}
	clip_audit_unref(a);
	clip_ctx_unref(ctx);
	return r;
}
