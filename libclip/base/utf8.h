/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict UTF-8 for names and text that came from a cage. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
