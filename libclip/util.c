/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include <openssl/crypto.h>

#include "util.h"

void
hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
hex_decode(const char *in, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit(in[2 * i]), lo;

		if (hi < 0)
			return -EINVAL;
		lo = hex_digit(in[2 * i + 1]);
		if (lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int
fd_is_opath(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -errno;
	return !!(flags & O_PATH);
}

void
buf_put(struct buf *b, const void *p, size_t n)
{
	if (b->overflow || n > b->max - b->size) {
		b->overflow = true;
		return;
	}
	memcpy(b->data + b->size, p, n);
	b->size += n;
}

void
buf_put_u8(struct buf *b, uint8_t v)
{
	buf_put(b, &v, 1);
}

void
buf_put_u32(struct buf *b, uint32_t v)
{
	uint8_t le[4];

	for (int i = 0; i < 4; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	buf_put(b, le, sizeof(le));
}

void
buf_put_u64(struct buf *b, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	buf_put(b, le, sizeof(le));
}

void
secure_wipe(void *p, size_t n)
{
	OPENSSL_cleanse(p, n);
}
