/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto_decode() on arbitrary bytes. The first byte is the number of fds
 * the message came with (0-3), the rest the message. A message accepted
 * is encoded again and must give the same bytes: the format has one
 * spelling per message, so nothing can hide in a second one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "transfer/proto.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct clip_error *error = NULL;
	static uint8_t again[PROTO_MSG_MAX];
	struct proto_msg msg;
	int r, n;

	if (size < 1)
		return 0;
	r = proto_decode(data + 1, size - 1, data[0] & 3, &msg, &error);
	if (r < 0) {
		/* A refusal always says why. */
		if (r != -EBADMSG || !error || !clip_error_get_message(error)[0])
			abort();
		clip_error_free(error);
		return 0;
	}
	if (error || msg.fd != -1)
		abort();
	n = proto_encode(&msg, again);
	if (n < 0 || (size_t)n != size - 1 || memcmp(again, data + 1, (size_t)n) != 0)
		abort();
	return 0;
}
