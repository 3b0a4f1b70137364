/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "test-hooks.h"
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

/* Sorted, disjoint ranges of code points; a binary search finds one. */
struct range {
	uint32_t first, last;
};

static bool
in_ranges(const struct range *r, size_t n, uint32_t c)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c < r[mid].first)
			hi = mid;
		else if (c > r[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/*
 * What shows nothing, or nothing of its own: Unicode's default-ignorable
 * code points (DerivedCoreProperties.txt, Unicode 15.1), the other format
 * characters (Cf), and the blanks that are letters or symbols (Hangul
 * fillers, the blank Braille pattern). The bidirectional controls among
 * them are utf8_is_dangerous()'s, and said so first.
 */
static const struct range invisible[] = {
	{ 0x00ad, 0x00ad }, /* soft hyphen */
	{ 0x034f, 0x034f }, /* combining grapheme joiner */
	{ 0x0600, 0x0605 }, /* Arabic number signs (Cf) */
	{ 0x061c, 0x061c }, /* Arabic letter mark */
	{ 0x06dd, 0x06dd }, /* Arabic end of ayah (Cf) */
	{ 0x070f, 0x070f }, /* Syriac abbreviation mark (Cf) */
	{ 0x0890, 0x0891 }, /* Arabic pound and piastre marks above (Cf) */
	{ 0x08e2, 0x08e2 }, /* Arabic disputed end of ayah (Cf) */
	{ 0x115f, 0x1160 }, /* Hangul choseong and jungseong fillers */
	{ 0x17b4, 0x17b5 }, /* Khmer inherent vowels */
	{ 0x180b, 0x180f }, /* Mongolian variation selectors, vowel separator */
	{ 0x200b, 0x200f }, /* zero width space, non-joiner, joiner; LRM, RLM */
	{ 0x202a, 0x202e }, /* bidirectional embeddings and overrides */
	{ 0x2060, 0x206f }, /* word joiner, invisible operators, isolates... */
	{ 0x2800, 0x2800 }, /* Braille pattern blank */
	{ 0x3164, 0x3164 }, /* Hangul filler */
	{ 0xfe00, 0xfe0f }, /* variation selectors */
	{ 0xfeff, 0xfeff }, /* zero width no-break space (BOM) */
	{ 0xffa0, 0xffa0 }, /* halfwidth Hangul filler */
	{ 0xfff0, 0xfffb }, /* reserved; interlinear annotation */
	{ 0x110bd, 0x110bd }, /* Kaithi number sign (Cf) */
	{ 0x110cd, 0x110cd }, /* Kaithi number sign above (Cf) */
	{ 0x13430, 0x1343f }, /* Egyptian hieroglyph format controls */
	{ 0x1bca0, 0x1bca3 }, /* shorthand format controls */
	{ 0x1d173, 0x1d17a }, /* musical symbol format controls */
	{ 0xe0000, 0xe0fff }, /* tags, variation selectors supplement */
};

/* Symbols drawn as '/' or '\' (Unicode's confusables.txt), not letters. */
static const struct range slash_like[] = {
	{ 0x0337, 0x0338 }, /* combining short and long solidus overlay */
	{ 0x1735, 0x1735 }, /* Philippine single punctuation */
	{ 0x2044, 0x2044 }, /* fraction slash */
	{ 0x20e5, 0x20e5 }, /* combining reverse solidus overlay */
	{ 0x2215, 0x2216 }, /* division slash, set minus */
	{ 0x2571, 0x2572 }, /* box drawings light diagonals */
	{ 0x27cb, 0x27cb }, /* mathematical rising diagonal */
	{ 0x27cd, 0x27cd }, /* mathematical falling diagonal */
	{ 0x29f5, 0x29f5 }, /* reverse solidus operator */
	{ 0x29f8, 0x29f9 }, /* big solidus, big reverse solidus */
	{ 0x2f03, 0x2f03 }, /* Kangxi radical slash */
	{ 0x3033, 0x3033 }, /* vertical kana repeat mark upper half */
	{ 0x31d3, 0x31d4 }, /* CJK strokes SP and D */
	{ 0xfe68, 0xfe68 }, /* small reverse solidus */
	{ 0xff0f, 0xff0f }, /* fullwidth solidus */
	{ 0xff3c, 0xff3c }, /* fullwidth reverse solidus */
	{ 0x1d23a, 0x1d23a }, /* Greek instrumental notation symbol-47 */
};

/* Symbols drawn as '.' or '..' (confusables.txt), not letters or digits. */
static const struct range dot_like[] = {
	{ 0x0701, 0x0702 }, /* Syriac supralinear and sublinear full stops */
	{ 0x2024, 0x2025 }, /* one and two dot leaders */
	{ 0xa4f8, 0xa4f8 }, /* Lisu letter tone mya ti */
	{ 0xa60e, 0xa60e }, /* Vai full stop */
	{ 0xfe52, 0xfe52 }, /* small full stop */
	{ 0xff0e, 0xff0e }, /* fullwidth full stop */
	{ 0x10a50, 0x10a50 }, /* Kharoshthi punctuation dot */
	{ 0x1d16d, 0x1d16d }, /* musical symbol combining augmentation dot */
};

const char *
utf8_name_refusal(uint32_t c)
{
	if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029)
		return "a control character";
	if (c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
	    (c >= 0x2066 && c <= 0x2069))
		return "a bidirectional control";
	if (in_ranges(invisible, ELEMENTSOF(invisible), c))
		return "an invisible character";
	if (in_ranges(slash_like, ELEMENTSOF(slash_like), c))
		return "a look-alike of a slash";
	if (in_ranges(dot_like, ELEMENTSOF(dot_like), c))
		return "a look-alike of a dot";
	return NULL;
}

const char *
utf8_name_check(const char *s, size_t n, uint32_t *ret_c, size_t *ret_offset)
{
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t k = utf8_decode(s + i, n - i, &c);
		const char *why = k ? utf8_name_refusal(c) : NULL;

		if (why) {
			*ret_c = c;
			*ret_offset = i;
			return why;
		}
		i += k ? k : 1;
	}
	return NULL;
}

/* Spaces, of any width: a run of them is shown as one. */
static bool
is_space(uint32_t c)
{
	return c == ' ' || c == '\t' || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
	       c == 0x202f || c == 0x205f || c == 0x3000;
}

/*
 * The next unit of untrusted text at @s[*i] as it is shown, into @buf: the
 * character, or an escape (\xNN for an invalid byte and the backslash,
 * \u{XXXX} for a control, bidirectional, invisible or look-alike
 * character); a run of spaces is one space when @collapse. Returns the
 * columns it takes, counted high (2 for anything not ASCII, the most a
 * terminal gives a character), so that a line never wraps.
 */
static size_t
next_unit(const char *s, size_t n, size_t *i, bool collapse, char buf[16])
{
	uint32_t c;
	size_t k = utf8_decode(s + *i, n - *i, &c);

	if (k == 0 || c == '\\') {
		snprintf(buf, 16, "\\x%02x", (unsigned char)s[*i]);
		*i += 1;
		return 4;
	}
	*i += k;
	if (collapse && is_space(c)) {
		while (*i < n && (k = utf8_decode(s + *i, n - *i, &c)) > 0 && is_space(c))
			*i += k;
		strcpy(buf, " ");
		return 1;
	}
	if (utf8_is_dangerous(c) || (utf8_name_refusal(c) && !test_hook_disabled("name-invisible")))
		return (size_t)snprintf(buf, 16, "\\u{%04X}", (unsigned)c);
	memcpy(buf, s + *i - k, k);
	buf[k] = '\0';
	return c < 0x80 ? 1 : 2;
}

size_t
utf8_put_escaped(FILE *f, const char *s, bool collapse, size_t budget)
{
	size_t n = strlen(s), cols = 0;
	char buf[16];

	for (size_t i = 0; i < n;) {
		size_t w = next_unit(s, n, &i, collapse, buf);

		if (cols + w > budget)
			break;
		if (f)
			fputs(buf, f);
		cols += w;
	}
	return cols;
}
