/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libFuzzer entry point every fuzz-*.c defines; fuzz-main.c calls it
 * when the fuzzers are built as corpus replayers.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include <stdlib.h>
#include <string.h>

#include <clip/ctx.h>

/*
 * A refusal as the parsers give it: @r one of @allowed (0-terminated),
 * carried by @err with the same errno, its offset -1 (none) or within
 * the @size bytes of input, its message starting with @origin (the name
 * the text was parsed under) unless that is NULL. Frees @err; aborts
 * (a finding) otherwise.
 */
static inline void
fuzz_check_refusal(int r, struct clip_error *err, size_t size, const char *origin,
		   const int *allowed)
{
	int offset = clip_error_get_offset(err);
	size_t i;

	for (i = 0; allowed[i] && allowed[i] != r; i++)
		;
	if (!allowed[i] || clip_error_get_errno(err) != r)
		abort();
	if (offset < -1 || (offset >= 0 && (size_t)offset > size))
		abort();
	if (origin && strncmp(clip_error_get_message(err), origin, strlen(origin)) != 0)
		abort();
	clip_error_free(err);
}
