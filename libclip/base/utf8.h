/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict UTF-8 for names and text that came from a cage. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Decode one code point at @s (@n bytes left). Returns its length (1-4)
 * and stores it in @ret, or 0 for an invalid sequence (overlong,
 * surrogate, over U+10FFFF, truncated).
 */
size_t utf8_decode(const char *s, size_t n, uint32_t *ret);

/*
 * Whether a code point must never appear in a name or a prompt: C0 and C1
 * controls, DEL, and the bidirectional and invisible formatting characters
 * that make a name read differently from what it is (U+202E...).
 */
bool utf8_is_dangerous(uint32_t c);

/* Valid UTF-8 with no dangerous code point (tab allowed when @allow_tab). */
bool utf8_is_printable(const char *s, size_t n, bool allow_tab);

/*
 * Why a code point may not be in a transfer's name, or NULL when it may:
 * "a control character" (C0, C1, DEL, U+2028/U+2029), "a bidirectional
 * control", "an invisible character" (default-ignorable, format, fillers
 * and blanks), "a look-alike of a slash" or "a look-alike of a dot" (the
 * symbols Unicode's confusables.txt draws as '/', '\\' or '.'). The
 * exact classes are in doc/transfer.md.
 */
const char *utf8_name_refusal(uint32_t c);

/*
 * The first code point of @s (@n bytes) that a name may not hold: stores
 * it in @ret_c and its byte offset in @ret_offset, and returns why (as
 * utf8_name_refusal()); NULL when there is none. Invalid bytes are not
 * code points: they are skipped here (the delivery makes them '_').
 */
const char *utf8_name_check(const char *s, size_t n, uint32_t *ret_c, size_t *ret_offset);

/*
 * Untrusted text made safe for a terminal: write @s to @f (NULL: only
 * count) with every character that could act on the terminal or read as
 * something else escaped, \xNN for an invalid byte and the backslash,
 * \u{XXXX} for a control (ESC, newline...), bidirectional, invisible or
 * look-alike character (test hook "name-invisible" leaves the last three);
 * a run of spaces of any width is one space when @collapse. Stops before
 * @budget columns would be passed, counting 2 for a character that is not
 * ASCII. Returns the columns written. The one escaping of clip-confirm's
 * prompt and of what clipctl prints from files.
 */
size_t utf8_put_escaped(FILE *f, const char *s, bool collapse, size_t budget);
