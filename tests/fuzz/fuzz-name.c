/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A transfer's name, as a cage sends it (any bytes but NUL), through what
 * the mediator and the delivery do with it: utf8_name_check() says the
 * first code point a name may not hold, and only such a one (every code
 * point before it is taken); deliver_sanitize_name() gives a name of
 * valid UTF-8 with none of them, no '/' or '\', no leading '.', '-' or
 * space, no trailing '.' or space, within its bound and never empty.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "base/utf8.h"
#include "transfer/transfer-internal.h"

/* Whether @s (@n bytes) is valid UTF-8 with no code point a name may not hold. */
static bool
clean(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t k = utf8_decode(s + i, n - i, &c);

		if (k == 0 || utf8_name_refusal(c) || c == '/' || c == '\\')
			return false;
		i += k;
	}
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[4096 + 1], out[DELIVER_NAME_MAX + 1];
	size_t n = strnlen((const char *)data, size < 4096 ? size : 4096), at = 0, o;
	const char *why;
	uint32_t c = 0;

	memcpy(name, data, n);
	name[n] = '\0';
	why = utf8_name_check(name, n, &c, &at);
	for (size_t i = 0; i < (why ? at : n);) {
		uint32_t d;
		size_t k = utf8_decode(name + i, n - i, &d);

		if (k && utf8_name_refusal(d))
			abort(); /* a refused code point was passed over */
		i += k ? k : 1;
	}
	if (why) {
		uint32_t d;

		if (at >= n || utf8_decode(name + at, n - at, &d) == 0 || d != c ||
		    utf8_name_refusal(c) != why)
			abort();
	}

	deliver_sanitize_name(name, out);
	o = strlen(out);
	if (o == 0 || o > DELIVER_NAME_MAX - 8 || !clean(out, o) || strchr(".- ", out[0]) ||
	    strchr(". ", out[o - 1]))
		abort();
	return 0;
}
