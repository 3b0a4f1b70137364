/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sealed-key blob parser on arbitrary bytes: it never reads out of
 * bounds, refuses with -EBADMSG and a message, and what it accepts it
 * marshals again byte for byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tpm/tpm-internal.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clip_error *err = NULL;
	uint8_t out[TPM_BLOB_MAX];
	struct tpm_blob blob;
	size_t n = 0;
	int r;

	r = tpm_blob_parse(data, size, &blob, &err);
	if (r < 0) {
		if (r != -EBADMSG || !err)
			abort();
		clip_error_free(err);
		return 0;
	}
	if (tpm_blob_marshal(&blob, out, &n) < 0 || n != size || memcmp(out, data, size) != 0)
		abort();
	return 0;
}
