/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The label value decoder on arbitrary bytes: what it accepts, the
 * encoder reproduces byte for byte (there is one encoding of each value).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <clip/ctx.h>
#include <clip/level.h>

#include "fuzz.h"
#include "label/label-internal.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clip_level *level = NULL;
	struct clip_error *err = NULL;
	uint8_t mac[LABEL_MAC_SIZE];
	char out[LABEL_VALUE_MAX];
	int r, n;

	r = label_value_parse((const char *)data, size, &level, mac, &err);
	if (r == -ENOMEM)
		return 0;
	if (r < 0) {
		if (r != -EBADMSG || !err)
			abort();
		clip_error_free(err);
		return 0;
	}
	n = label_value_format(level, mac, out);
	if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
		abort();
	clip_level_unref(level);
	return 0;
}
