/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Confidentiality levels, ranges and the names table. Pure: no I/O.
 *
 * The parsers are total functions over bounded input: every byte is looked
 * at once, numbers stop accumulating as soon as they leave their bounds,
 * and a refusal names the offset of the offending character.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clip/level.h>

#include "base/error.h"
#include "base/macro.h"
#include "level-internal.h"

#define CATEGORY_WORDS ((CLIP_LEVEL_CATEGORY_MAX + 1) / 64)

/*
 * The longest canonical text: "s15:" and at most 6 bytes per category
 * ("c1023," for a single one, "c1022.c1023," for a run of two), plus NUL.
 */
_Static_assert(LEVEL_FORMAT_MAX <= CLIP_LEVEL_TEXT_MAX, "a formatted level must parse again");

#define NAMES_SIZE_MAX (1024 * 1024)
#define NAMES_ENTRIES_MAX 4096
#define NAME_LENGTH_MAX 64

/* How much of an input a message quotes. */
#define QUOTE_MAX 64

struct clip_level {
	unsigned n_ref;
	uint8_t sensitivity;
	uint64_t cats[CATEGORY_WORDS];
};

struct clip_range {
	unsigned n_ref;
	struct clip_level *low;
	struct clip_level *high;
};

struct level_name {
	struct clip_level *level;
	char name[NAME_LENGTH_MAX + 1];
	/* Where the entry was written, for the messages about duplicates. */
	unsigned line;
	size_t level_offset;
	size_t name_offset;
};

struct clip_level_names {
	unsigned n_ref;
	size_t n_entries, n_allocated;
	struct level_name *entries;
	/* Sorted views of @entries, for lookups in both directions. */
	struct level_name **by_level;
	struct level_name **by_name;
};

/* Where and why a text is outside the grammar. */
struct syntax_error {
	size_t offset;
	const char *reason;
};

/* Not isdigit(): the grammar must not depend on the locale. */
static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool
is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' ||
	       c == '.' || c == '-';
}

/*
 * Copy at most QUOTE_MAX bytes of @s for a message, with anything that is
 * not printable ASCII replaced by '?' so that a message never carries
 * control characters or broken UTF-8.
 */
static void
quote(char out[QUOTE_MAX + 4], const char *s, size_t len)
{
	size_t n = len < QUOTE_MAX ? len : QUOTE_MAX;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		out[i] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	if (len > QUOTE_MAX) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
}

static int
syntax_error(struct syntax_error *e, size_t offset, const char *reason)
{
	e->offset = offset;
	e->reason = reason;
	return -EINVAL;
}

static void
cat_set(struct clip_level *l, unsigned c)
{
	l->cats[c / 64] |= UINT64_C(1) << (c % 64);
}

static bool
cat_test(const struct clip_level *l, unsigned c)
{
	return l->cats[c / 64] & (UINT64_C(1) << (c % 64));
}

/*
 * A decimal number at s[*pos] of at most @max, without sign or leading
 * zero. The value is checked after each digit, so it cannot overflow.
 */
static int
parse_number(const char *s, size_t len, size_t *pos, unsigned max, const char *too_big,
	     unsigned *ret, struct syntax_error *e)
{
	size_t start = *pos, i = *pos;
	unsigned v = 0;

	if (i >= len || !is_digit(s[i]))
		return syntax_error(e, i, "expected a digit");
	if (s[i] == '0' && i + 1 < len && is_digit(s[i + 1]))
		return syntax_error(e, i, "leading zero");
	for (; i < len && is_digit(s[i]); i++) {
		v = v * 10 + (unsigned)(s[i] - '0');
		if (v > max)
			return syntax_error(e, start, too_big);
	}
	*pos = i;
	*ret = v;
	return 0;
}

/* One item "cN" or "cA.cB" at s[*pos], above @prev (-1 for the first). */
static int
parse_item(const char *s, size_t len, size_t *pos, int prev, struct clip_level *l,
	   struct syntax_error *e)
{
	const char *too_big = "category above 1023";
	size_t i = *pos, num;
	unsigned a, b;
	int r;

	if (i >= len || s[i] != 'c')
		return syntax_error(e, i, "expected 'c'");
	num = ++i;
	r = parse_number(s, len, &i, CLIP_LEVEL_CATEGORY_MAX, too_big, &a, e);
	if (r < 0)
		return r;
	if ((int)a <= prev)
		return syntax_error(e, num, "categories not in ascending order");
	b = a;
	if (i < len && s[i] == '.') {
		if (++i >= len || s[i] != 'c')
			return syntax_error(e, i, "expected 'c'");
		num = ++i;
		r = parse_number(s, len, &i, CLIP_LEVEL_CATEGORY_MAX, too_big, &b, e);
		if (r < 0)
			return r;
		if (b <= a)
			return syntax_error(e, num, "end of category range not above its start");
	}
	for (unsigned c = a; c <= b; c++)
		cat_set(l, c);
	*pos = i;
	return (int)b;
}

/* The grammar of clip_level_parse() over s[0..len), into @l (zeroed). */
static int
parse_span(const char *s, size_t len, struct clip_level *l, struct syntax_error *e)
{
	size_t i = 1;
	unsigned v;
	int r, prev = -1;

	if (len == 0 || s[0] != 's')
		return syntax_error(e, 0, "expected 's'");
	r = parse_number(s, len, &i, CLIP_LEVEL_SENSITIVITY_MAX, "sensitivity above 15", &v, e);
	if (r < 0)
		return r;
	l->sensitivity = (uint8_t)v;
	if (i == len)
		return 0;
	if (s[i] != ':')
		return syntax_error(e, i, "expected ':' or the end");
	i++;
	for (;;) {
		size_t item = i;

		prev = parse_item(s, len, &i, prev, l, e);
		if (prev < 0)
			return prev;
		if (i == len)
			return 0;
		if (s[i] != ',')
			return syntax_error(e, i,
					    memchr(s + item, '.', i - item)
						    ? "expected ',' or the end"
						    : "expected ',', '.' or the end");
		i++;
	}
}

static struct clip_level *
level_alloc(void)
{
	struct clip_level *l = calloc(1, sizeof(*l));

	if (l)
		l->n_ref = 1;
	return l;
}

/* Parse s[0..len) as a level; on -EINVAL, @e says where and why. */
static int
level_parse_span(struct clip_level **ret, const char *s, size_t len, struct syntax_error *e)
{
	struct clip_level *l;
	int r;

	l = level_alloc();
	if (!l)
		return -ENOMEM;
	r = parse_span(s, len, l, e);
	if (r < 0) {
		free(l);
		return r;
	}
	*ret = l;
	return 0;
}

/*
 * "PREFIXinvalid WHAT "QUOTED": REASON at offset N", with the offset also
 * in the error, where N counts from the start of the caller's input.
 */
static int
syntax_error_set(struct clip_error **reterr, const char *prefix, const char *what,
		 const char *quoted, size_t quoted_len, size_t offset, const char *reason)
{
	char q[QUOTE_MAX + 4];

	quote(q, quoted, quoted_len);
	return error_setf(reterr, -EINVAL, (int)offset, "%sinvalid %s \"%s\": %s at offset %zu",
			  prefix, what, q, reason, offset);
}

static int
level_parse(struct clip_level **ret, const char *text, struct clip_error **reterr)
{
	struct syntax_error e;
	size_t len = strlen(text);
	int r;

	r = level_parse_span(ret, text, len, &e);
	if (r == -EINVAL)
		return syntax_error_set(reterr, "", "level", text, len, e.offset, e.reason);
	return r;
}

/* Refuse a text longer than the grammar allows, before looking at it. */
static int
check_length(const char *text, const char *what, struct clip_error **reterr)
{
	if (strnlen(text, CLIP_LEVEL_TEXT_MAX + 1) > CLIP_LEVEL_TEXT_MAX)
		return error_setf(reterr, -EINVAL, CLIP_LEVEL_TEXT_MAX,
				  "invalid %s: too long (more than %d bytes)", what,
				  CLIP_LEVEL_TEXT_MAX);
	return 0;
}

CLIP_EXPORT int
clip_level_parse(struct clip_level **ret, const char *text, struct clip_error **reterr)
{
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_return(text, api_return(-EINVAL, reterr));

	r = check_length(text, "level", reterr);
	if (r >= 0)
		r = level_parse(ret, text, reterr);
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_level_new(struct clip_level **ret, unsigned sensitivity, const unsigned *categories,
	       size_t n_categories)
{
	struct clip_level *l;

	clip_assert_return(ret, -EINVAL);
	clip_assert_return(sensitivity <= CLIP_LEVEL_SENSITIVITY_MAX, -EINVAL);
	clip_assert_return(categories || n_categories == 0, -EINVAL);
	for (size_t i = 0; i < n_categories; i++)
		clip_assert_return(categories[i] <= CLIP_LEVEL_CATEGORY_MAX, -EINVAL);

	l = level_alloc();
	if (!l)
		return -ENOMEM;
	l->sensitivity = (uint8_t)sensitivity;
	for (size_t i = 0; i < n_categories; i++)
		cat_set(l, categories[i]);
	*ret = l;
	return 0;
}

CLIP_EXPORT struct clip_level *
clip_level_ref(struct clip_level *level)
{
	if (level)
		level->n_ref++;
	return level;
}

CLIP_EXPORT struct clip_level *
clip_level_unref(struct clip_level *level)
{
	if (!level || --level->n_ref > 0)
		return NULL;
	free(level);
	return NULL;
}

static char *
put_number(char *p, unsigned v)
{
	char digits[8];
	size_t n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	while (n > 0)
		*p++ = digits[--n];
	return p;
}

size_t
level_format_buf(const struct clip_level *l, char buf[LEVEL_FORMAT_MAX])
{
	char *p = buf;
	bool first = true;

	*p++ = 's';
	p = put_number(p, l->sensitivity);
	for (unsigned c = 0; c <= CLIP_LEVEL_CATEGORY_MAX; c++) {
		uint64_t rest = l->cats[c / 64] >> (c % 64);
		unsigned end;

		/* Straight to the next category set: a label is verified by formatting its level. */
		if (!rest) {
			c |= 63;
			continue;
		}
		c += (unsigned)__builtin_ctzll(rest);
		end = c;
		while (end < CLIP_LEVEL_CATEGORY_MAX && cat_test(l, end + 1))
			end++;
		*p++ = first ? ':' : ',';
		first = false;
		*p++ = 'c';
		p = put_number(p, c);
		if (end > c) {
			*p++ = '.';
			*p++ = 'c';
			p = put_number(p, end);
		}
		c = end;
	}
	*p = '\0';
	return (size_t)(p - buf);
}

CLIP_EXPORT int
clip_level_format(const struct clip_level *level, char **ret)
{
	char buf[LEVEL_FORMAT_MAX];
	char *s;

	clip_assert_return(level, -EINVAL);
	clip_assert_return(ret, -EINVAL);

	level_format_buf(level, buf);
	s = strdup(buf);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

CLIP_EXPORT int
clip_level_get_sensitivity(const struct clip_level *level)
{
	clip_assert_return(level, -EINVAL);
	return level->sensitivity;
}

CLIP_EXPORT int
clip_level_has_category(const struct clip_level *level, unsigned category)
{
	clip_assert_return(level, -EINVAL);
	clip_assert_return(category <= CLIP_LEVEL_CATEGORY_MAX, -EINVAL);
	return cat_test(level, category);
}

static bool
level_dominates(const struct clip_level *a, const struct clip_level *b)
{
	if (a->sensitivity < b->sensitivity)
		return false;
	for (size_t i = 0; i < CATEGORY_WORDS; i++)
		if (b->cats[i] & ~a->cats[i])
			return false;
	return true;
}

static bool
level_equal(const struct clip_level *a, const struct clip_level *b)
{
	return a->sensitivity == b->sensitivity && memcmp(a->cats, b->cats, sizeof(a->cats)) == 0;
}

CLIP_EXPORT int
clip_level_compare(const struct clip_level *a, const struct clip_level *b)
{
	bool ab, ba;

	clip_assert_return(a, -EINVAL);
	clip_assert_return(b, -EINVAL);

	ab = level_dominates(a, b);
	ba = level_dominates(b, a);
	if (ab && ba)
		return CLIP_LEVEL_EQUAL;
	if (ab)
		return CLIP_LEVEL_DOMINATES;
	if (ba)
		return CLIP_LEVEL_DOMINATED;
	return CLIP_LEVEL_INCOMPARABLE;
}

CLIP_EXPORT int
clip_level_dominates(const struct clip_level *a, const struct clip_level *b)
{
	clip_assert_return(a, -EINVAL);
	clip_assert_return(b, -EINVAL);
	return level_dominates(a, b);
}

CLIP_EXPORT int
clip_level_equal(const struct clip_level *a, const struct clip_level *b)
{
	clip_assert_return(a, -EINVAL);
	clip_assert_return(b, -EINVAL);
	return level_equal(a, b);
}

CLIP_EXPORT int
clip_level_join(struct clip_level **ret, const struct clip_level *a, const struct clip_level *b)
{
	struct clip_level *l;

	clip_assert_return(ret, -EINVAL);
	clip_assert_return(a, -EINVAL);
	clip_assert_return(b, -EINVAL);

	l = level_alloc();
	if (!l)
		return -ENOMEM;
	l->sensitivity = a->sensitivity > b->sensitivity ? a->sensitivity : b->sensitivity;
	for (size_t i = 0; i < CATEGORY_WORDS; i++)
		l->cats[i] = a->cats[i] | b->cats[i];
	*ret = l;
	return 0;
}

CLIP_EXPORT int
clip_level_meet(struct clip_level **ret, const struct clip_level *a, const struct clip_level *b)
{
	struct clip_level *l;

	clip_assert_return(ret, -EINVAL);
	clip_assert_return(a, -EINVAL);
	clip_assert_return(b, -EINVAL);

	l = level_alloc();
	if (!l)
		return -ENOMEM;
	l->sensitivity = a->sensitivity < b->sensitivity ? a->sensitivity : b->sensitivity;
	for (size_t i = 0; i < CATEGORY_WORDS; i++)
		l->cats[i] = a->cats[i] & b->cats[i];
	*ret = l;
	return 0;
}

/*
 * Takes references: a level's value never changes after creation, only its
 * count, so holding a const level by reference is safe.
 */
static int
range_make(struct clip_range **ret, const struct clip_level *low, const struct clip_level *high)
{
	struct clip_range *range = calloc(1, sizeof(*range));

	if (!range)
		return -ENOMEM;
	range->n_ref = 1;
	range->low = clip_level_ref((struct clip_level *)low);
	range->high = clip_level_ref((struct clip_level *)high);
	*ret = range;
	return 0;
}

static int
range_parse(struct clip_range **ret, const char *text, struct clip_error **reterr)
{
	_cleanup_(clip_level_unrefp) struct clip_level *low = NULL, *high = NULL;
	size_t len = strlen(text), low_len, high_start;
	const char *dash = memchr(text, '-', len);
	struct syntax_error e;
	char q[QUOTE_MAX + 4];
	int r;

	low_len = dash ? (size_t)(dash - text) : len;
	r = level_parse_span(&low, text, low_len, &e);
	if (r == -EINVAL)
		return syntax_error_set(reterr, "", "range", text, len, e.offset, e.reason);
	if (r < 0)
		return r;
	if (!dash)
		return range_make(ret, low, low);
	high_start = low_len + 1;
	r = level_parse_span(&high, text + high_start, len - high_start, &e);
	if (r == -EINVAL)
		return syntax_error_set(reterr, "", "range", text, len, high_start + e.offset,
					e.reason);
	if (r < 0)
		return r;
	if (!level_dominates(high, low)) {
		quote(q, text, len);
		return error_setf(reterr, -EINVAL, (int)high_start,
				  "invalid range \"%s\": the high level at offset %zu does not "
				  "dominate the low level",
				  q, high_start);
	}
	return range_make(ret, low, high);
}

CLIP_EXPORT int
clip_range_parse(struct clip_range **ret, const char *text, struct clip_error **reterr)
{
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_return(text, api_return(-EINVAL, reterr));

	r = check_length(text, "range", reterr);
	if (r >= 0)
		r = range_parse(ret, text, reterr);
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_range_new(struct clip_range **ret, const struct clip_level *low, const struct clip_level *high)
{
	clip_assert_return(ret, -EINVAL);
	clip_assert_return(low, -EINVAL);
	clip_assert_return(high, -EINVAL);
	clip_assert_return(level_dominates(high, low), -EINVAL);

	return range_make(ret, low, high);
}

CLIP_EXPORT struct clip_range *
clip_range_ref(struct clip_range *range)
{
	if (range)
		range->n_ref++;
	return range;
}

CLIP_EXPORT struct clip_range *
clip_range_unref(struct clip_range *range)
{
	if (!range || --range->n_ref > 0)
		return NULL;
	clip_level_unref(range->low);
	clip_level_unref(range->high);
	free(range);
	return NULL;
}

CLIP_EXPORT int
clip_range_format(const struct clip_range *range, char **ret)
{
	char low[LEVEL_FORMAT_MAX], high[LEVEL_FORMAT_MAX];
	char *s;

	clip_assert_return(range, -EINVAL);
	clip_assert_return(ret, -EINVAL);

	level_format_buf(range->low, low);
	if (level_equal(range->low, range->high))
		s = strdup(low);
	else {
		level_format_buf(range->high, high);
		if (asprintf(&s, "%s-%s", low, high) < 0)
			s = NULL;
	}
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

CLIP_EXPORT const struct clip_level *
clip_range_get_low(const struct clip_range *range)
{
	return range ? range->low : NULL;
}

CLIP_EXPORT const struct clip_level *
clip_range_get_high(const struct clip_range *range)
{
	return range ? range->high : NULL;
}

CLIP_EXPORT int
clip_range_contains(const struct clip_range *range, const struct clip_level *level)
{
	clip_assert_return(range, -EINVAL);
	clip_assert_return(level, -EINVAL);
	return level_dominates(range->high, level) && level_dominates(level, range->low);
}

/* A total order on levels (not the dominance order), for sorting. */
static int
level_order(const struct clip_level *a, const struct clip_level *b)
{
	if (a->sensitivity != b->sensitivity)
		return a->sensitivity < b->sensitivity ? -1 : 1;
	return memcmp(a->cats, b->cats, sizeof(a->cats));
}

/* Ties are broken by line, so that of two equal entries the later is second. */
static int
by_level_cmp(const void *x, const void *y)
{
	const struct level_name *a = *(struct level_name *const *)x;
	const struct level_name *b = *(struct level_name *const *)y;
	int r = level_order(a->level, b->level);

	return r != 0 ? r : (a->line > b->line) - (a->line < b->line);
}

static int
by_name_cmp(const void *x, const void *y)
{
	const struct level_name *a = *(struct level_name *const *)x;
	const struct level_name *b = *(struct level_name *const *)y;
	int r = strcmp(a->name, b->name);

	return r != 0 ? r : (a->line > b->line) - (a->line < b->line);
}

static int
level_key_cmp(const void *key, const void *elem)
{
	return level_order(key, (*(struct level_name *const *)elem)->level);
}

static int
name_key_cmp(const void *key, const void *elem)
{
	return strcmp(key, (*(struct level_name *const *)elem)->name);
}

static void
names_free(struct clip_level_names *names)
{
	for (size_t i = 0; i < names->n_entries; i++)
		clip_level_unref(names->entries[i].level);
	free(names->entries);
	free(names->by_level);
	free(names->by_name);
	free(names);
}

CLIP_EXPORT struct clip_level_names *
clip_level_names_ref(struct clip_level_names *names)
{
	if (names)
		names->n_ref++;
	return names;
}

CLIP_EXPORT struct clip_level_names *
clip_level_names_unref(struct clip_level_names *names)
{
	if (!names || --names->n_ref > 0)
		return NULL;
	names_free(names);
	return NULL;
}

static size_t
skip_blanks(const char *text, size_t i, size_t end)
{
	while (i < end && is_blank(text[i]))
		i++;
	return i;
}

/* The NAME of a line, at text[*pos]; stops at the first blank or the end. */
static int
parse_name_token(const char *text, size_t *pos, size_t end, unsigned line, char *ret,
		 struct clip_error **reterr)
{
	size_t start = *pos, i = *pos;

	while (i < end && is_name_char(text[i]))
		i++;
	if (i == start)
		return error_setf(reterr, -EINVAL, (int)i, "line %u: expected a name at offset %zu",
				  line, i);
	if (text[start] == 's' && i - start > 1 && is_digit(text[start + 1]))
		return error_setf(reterr, -EINVAL, (int)start,
				  "line %u: name \"%.*s\" could be read as a level, at offset %zu",
				  line, (int)(i - start < QUOTE_MAX ? i - start : QUOTE_MAX),
				  text + start, start);
	if (i - start > NAME_LENGTH_MAX)
		return error_setf(reterr, -EINVAL, (int)(start + NAME_LENGTH_MAX),
				  "line %u: name longer than %d characters at offset %zu", line,
				  NAME_LENGTH_MAX, start + NAME_LENGTH_MAX);
	if (i < end && !is_blank(text[i]))
		return error_setf(reterr, -EINVAL, (int)i,
				  "line %u: invalid character in name at offset %zu", line, i);
	memcpy(ret, text + start, i - start);
	ret[i - start] = '\0';
	*pos = i;
	return 0;
}

/*
 * One line text[start..end): 1 and an entry in @ret, 0 for a blank or
 * comment line, or -EINVAL.
 */
static int
parse_names_line(const char *text, size_t start, size_t end, unsigned line, struct level_name *ret,
		 struct clip_error **reterr)
{
	struct syntax_error e;
	char prefix[32];
	size_t i, level_start;
	int r;

	i = skip_blanks(text, start, end);
	if (i == end || text[i] == '#')
		return 0;
	level_start = i;
	while (i < end && !is_blank(text[i]) && text[i] != '=')
		i++;
	r = level_parse_span(&ret->level, text + level_start, i - level_start, &e);
	if (r == -EINVAL) {
		snprintf(prefix, sizeof(prefix), "line %u: ", line);
		return syntax_error_set(reterr, prefix, "level", text + level_start,
					i - level_start, level_start + e.offset, e.reason);
	}
	if (r < 0)
		return r;
	ret->line = line;
	ret->level_offset = level_start;
	i = skip_blanks(text, i, end);
	if (i == end || text[i] != '=')
		return error_setf(reterr, -EINVAL, (int)i, "line %u: expected '=' at offset %zu",
				  line, i);
	i = skip_blanks(text, i + 1, end);
	ret->name_offset = i;
	r = parse_name_token(text, &i, end, line, ret->name, reterr);
	if (r < 0)
		return r;
	i = skip_blanks(text, i, end);
	if (i != end)
		return error_setf(reterr, -EINVAL, (int)i,
				  "line %u: expected the end of the line at offset %zu", line, i);
	return 1;
}

static int
names_add_line(struct clip_level_names *names, const char *text, size_t start, size_t end,
	       unsigned line, struct clip_error **reterr)
{
	struct level_name entry = { .level = NULL };
	const char *nul = memchr(text + start, '\0', end - start);
	int r;

	if (nul)
		return error_setf(reterr, -EINVAL, (int)(nul - text),
				  "line %u: NUL byte at offset %zu", line, (size_t)(nul - text));
	r = parse_names_line(text, start, end, line, &entry, reterr);
	if (r <= 0) {
		clip_level_unref(entry.level);
		return r;
	}
	if (names->n_entries == NAMES_ENTRIES_MAX) {
		clip_level_unref(entry.level);
		return error_setf(reterr, -E2BIG, (int)start, "line %u: more than %d entries", line,
				  NAMES_ENTRIES_MAX);
	}
	if (names->n_entries == names->n_allocated) {
		size_t n = names->n_allocated ? 2 * names->n_allocated : 16;
		struct level_name *p = reallocarray(names->entries, n, sizeof(*p));

		if (!p) {
			clip_level_unref(entry.level);
			return -ENOMEM;
		}
		names->entries = p;
		names->n_allocated = n;
	}
	names->entries[names->n_entries++] = entry;
	return 0;
}

/*
 * Sort the two views and refuse a duplicate level or name; of all
 * duplicates, the one on the earliest line is reported.
 */
static int
names_index(struct clip_level_names *names, struct clip_error **reterr)
{
	const struct level_name *dup = NULL, *orig = NULL;
	bool dup_is_name = false;
	char text[LEVEL_FORMAT_MAX], q[QUOTE_MAX + 4];
	size_t n = names->n_entries;

	names->by_level = calloc(n ? n : 1, sizeof(*names->by_level));
	names->by_name = calloc(n ? n : 1, sizeof(*names->by_name));
	if (!names->by_level || !names->by_name)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		names->by_level[i] = names->by_name[i] = &names->entries[i];
	qsort(names->by_level, n, sizeof(*names->by_level), by_level_cmp);
	qsort(names->by_name, n, sizeof(*names->by_name), by_name_cmp);

	for (size_t i = 1; i < n; i++) {
		const struct level_name *a = names->by_level[i - 1], *b = names->by_level[i];

		if (level_equal(a->level, b->level) && (!dup || b->line < dup->line)) {
			dup = b;
			orig = a;
			dup_is_name = false;
		}
		a = names->by_name[i - 1];
		b = names->by_name[i];
		if (strcmp(a->name, b->name) == 0 && (!dup || b->line < dup->line)) {
			dup = b;
			orig = a;
			dup_is_name = true;
		}
	}
	if (!dup)
		return 0;
	if (dup_is_name)
		return error_setf(reterr, -EINVAL, (int)dup->name_offset,
				  "line %u: name \"%s\" already used on line %u", dup->line,
				  dup->name, orig->line);
	quote(q, text, level_format_buf(dup->level, text));
	return error_setf(reterr, -EINVAL, (int)dup->level_offset,
			  "line %u: level %s already named on line %u", dup->line, q, orig->line);
}

static int
names_parse(struct clip_level_names **ret, const char *text, size_t size,
	    struct clip_error **reterr)
{
	_cleanup_(clip_level_names_unrefp) struct clip_level_names *names = NULL;
	unsigned line = 1;
	int r;

	if (size > NAMES_SIZE_MAX)
		return error_set(reterr, -E2BIG, "names table too long (%zu bytes, at most %d)",
				 size, NAMES_SIZE_MAX);
	names = calloc(1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	names->n_ref = 1;
	for (size_t start = 0; start < size; line++) {
		const char *nl = memchr(text + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - text) : size;

		r = names_add_line(names, text, start, end, line, reterr);
		if (r < 0)
			return r;
		start = end + 1;
	}
	r = names_index(names, reterr);
	if (r < 0)
		return r;
	*ret = steal_ptr(names);
	return 0;
}

CLIP_EXPORT int
clip_level_names_parse(struct clip_level_names **ret, const char *text, size_t size,
		       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_return(text, api_return(-EINVAL, reterr));

	return api_return(names_parse(ret, text, size, reterr), reterr);
}

static const struct level_name *
names_find_name(const struct clip_level_names *names, const char *name)
{
	struct level_name *const *p;

	p = bsearch(name, names->by_name, names->n_entries, sizeof(*names->by_name), name_key_cmp);
	return p ? *p : NULL;
}

static const struct level_name *
names_find_level(const struct clip_level_names *names, const struct clip_level *level)
{
	struct level_name *const *p;

	p = bsearch(level, names->by_level, names->n_entries, sizeof(*names->by_level),
		    level_key_cmp);
	return p ? *p : NULL;
}

CLIP_EXPORT int
clip_level_parse_name(struct clip_level **ret, const struct clip_level_names *names,
		      const char *text, struct clip_error **reterr)
{
	const struct level_name *entry;
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(ret, api_return(-EINVAL, reterr));
	clip_assert_return(text, api_return(-EINVAL, reterr));

	r = check_length(text, "level", reterr);
	if (r < 0)
		return api_return(r, reterr);
	entry = names ? names_find_name(names, text) : NULL;
	if (entry) {
		*ret = clip_level_ref(entry->level);
		return api_return(0, reterr);
	}
	r = level_parse(ret, text, reterr);
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_level_format_name(const struct clip_level *level, const struct clip_level_names *names,
		       char **ret)
{
	const struct level_name *entry;
	char *s;

	clip_assert_return(level, -EINVAL);
	clip_assert_return(ret, -EINVAL);

	entry = names ? names_find_level(names, level) : NULL;
	if (!entry)
		return clip_level_format(level, ret);
	s = strdup(entry->name);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}
