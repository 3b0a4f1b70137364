/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "utf8.h"

size_t
utf8_decode(const char *s, size_t n, uint32_t *ret)
{
	const uint8_t *p = (const uint8_t *)s;
	uint32_t c, min;
	size_t len;

	if (n == 0)
		return 0;
	if (p[0] < 0x80) {
		*ret = p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2, c = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3, c = p[0] & 0x0f, min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4, c = p[0] & 0x07, min = 0x10000;
	} else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*ret = c;
	return len;
}

bool
utf8_is_dangerous(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200b ||
	       (c >= 0x200e && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
	       (c >= 0x2060 && c <= 0x2069) || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb);
}

bool
utf8_is_printable(const char *s, size_t n, bool allow_tab)
{
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t k = utf8_decode(s + i, n - i, &c);

		if (k == 0)
			return false;
		if (utf8_is_dangerous(c) && !(allow_tab && c == '\t'))
			return false;
		i += k;
	}
	return true;
}
