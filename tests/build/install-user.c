/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A program built outside the tree against the installed libclip, with
 * nothing but `pkg-config --cflags --libs libclip`: what a user does.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <clip/clip.h>

int
main(void)
{
	struct clip_ctx *ctx = NULL;
	struct clip_level *low = NULL, *high = NULL, *bad = NULL;
	struct clip_error *error = NULL;
	int r, ret = 1;

	if (strcmp(clip_version(), CLIP_VERSION_STRING) != 0) {
		fprintf(stderr, "loaded libclip %s, headers %s\n", clip_version(),
			CLIP_VERSION_STRING);
		return 1;
	}
	r = clip_ctx_new(&ctx);
	if (r < 0) {
		fprintf(stderr, "clip_ctx_new: %s\n", strerror(-r));
		return 1;
	}
	r = clip_level_parse(&low, "s1:c0", &error);
	if (r < 0) {
		fprintf(stderr, "clip_level_parse(s1:c0): %s\n", clip_error_get_message(error));
		goto out;
	}
	r = clip_level_parse(&high, "s2:c0.c3", NULL);
	if (r < 0) {
		fprintf(stderr, "clip_level_parse(s2:c0.c3): %s\n", strerror(-r));
		goto out;
	}
	r = clip_level_compare(high, low);
	if (r != CLIP_LEVEL_DOMINATES) {
		fprintf(stderr, "clip_level_compare(s2:c0.c3, s1:c0) = %d, expected %d\n", r,
			CLIP_LEVEL_DOMINATES);
		goto out;
	}
	r = clip_level_parse(&bad, "s99", &error);
	if (r != -EINVAL || bad || clip_error_get_errno(error) != -EINVAL ||
	    clip_error_get_message(error)[0] == '\0') {
		fprintf(stderr, "clip_level_parse(s99) = %d, expected -EINVAL and a message\n", r);
		goto out;
	}
	printf("libclip %s: s2:c0.c3 dominates s1:c0; s99: %s\n", clip_version(),
	       clip_error_get_message(error));
	ret = 0;
out:
	clip_error_free(error);
	clip_level_unref(bad);
	clip_level_unref(high);
	clip_level_unref(low);
	clip_ctx_unref(ctx);
	return ret;
}
