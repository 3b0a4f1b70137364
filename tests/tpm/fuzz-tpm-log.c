/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event log parser on arbitrary bytes: it never reads out of bounds,
 * and what it accepts, formatted again from the events it reports, is the
 * input byte for byte (one encoding per log, so no two logs replay alike
 * unless they are the same text).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tpm/tpm-internal.h"
#include "base/util.h"

struct out {
	char *text;
	size_t size, max;
};

static void
format_event(unsigned pcr, const char *what, const uint8_t digest[32], void *userdata)
{
	struct out *o = userdata;
	char hex[65];
	int n;

	hex_encode(digest, 32, hex);
	n = snprintf(o->text + o->size, o->max - o->size, "%u %s %s\n", pcr, hex, what);
	if (n < 0 || (size_t)n >= o->max - o->size)
		abort();
	o->size += (size_t)n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char header[] = "libclip-tpm-events v1\n";
	uint8_t values[TPM_PCR_COUNT][TPM_SHA256_SIZE];
	struct clip_error *err = NULL;
	struct out o = { .max = size + sizeof(header) + 1 };
	uint32_t used = 0;
	int n;

	o.text = malloc(o.max);
	if (!o.text)
		return 0;
	memcpy(o.text, header, sizeof(header) - 1);
	o.size = sizeof(header) - 1;
	n = tpm_log_replay_buffer((const char *)data, size, values, &used, format_event, &o, &err);
	if (n < 0) {
		if (n != -EBADMSG || !err)
			abort();
		clip_error_free(err);
	} else if (size == 0 ? n != 0 : o.size != size || memcmp(o.text, data, size) != 0)
		abort();
	free(o.text);
	return 0;
}
