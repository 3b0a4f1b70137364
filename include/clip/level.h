/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Confidentiality levels: a sensitivity s0..s15 and a set of categories
 * c0..c1023, written in SELinux MCS syntax ("s2:c0.c3,c7"), and ranges
 * "low-high" for clearances. Pure: nothing here does I/O.
 *
 * See clip-level(3).
 */
#ifndef CLIP_LEVEL_H
#define CLIP_LEVEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_error;
struct clip_level;
struct clip_range;
struct clip_level_names;

/* Bounds of the grammar. */
#define CLIP_LEVEL_SENSITIVITY_MAX 15
#define CLIP_LEVEL_CATEGORY_MAX 1023
/* Longest input any level or range parser accepts, in bytes. */
#define CLIP_LEVEL_TEXT_MAX 8192

/* Results of clip_level_compare(). */
#define CLIP_LEVEL_EQUAL 0
#define CLIP_LEVEL_DOMINATES 1
#define CLIP_LEVEL_DOMINATED 2
#define CLIP_LEVEL_INCOMPARABLE 3

/**
 * clip_level_parse - parse a level in SELinux MCS syntax
 *
 * Grammar: "s" N [":" ITEM ("," ITEM)*], ITEM = "c" N | "c" N "." "c" N,
 * decimal numbers without sign or leading zero, sensitivity <= 15,
 * categories <= 1023; items strictly ascending and not overlapping; a
 * range "cA.cB" has A < B. Nothing else is accepted (no spaces).
 *
 * @param ret where the new level is stored; untouched on failure
 * @param text a NUL-terminated string of at most CLIP_LEVEL_TEXT_MAX bytes
 * @param reterr optional; on -EINVAL, a message naming the offending
 *	  character, whose offset clip_error_get_offset() returns
 * @return 0, or -EINVAL (outside the grammar or bounds, or NULL
 *	   arguments), -ENOMEM.
 * @since 0.1
 */
int clip_level_parse(struct clip_level **ret, const char *text, struct clip_error **reterr);

/**
 * clip_level_new - a level from its parts
 *
 * @param ret where the new level is stored; untouched on failure
 * @param sensitivity 0 to CLIP_LEVEL_SENSITIVITY_MAX
 * @param categories an array of category numbers (any order, duplicates
 *	  allowed), or NULL when @n_categories is 0
 * @param n_categories the number of entries in @categories
 * @return 0, or -EINVAL (out of bounds), -ENOMEM.
 * @since 0.1
 */
int clip_level_new(struct clip_level **ret, unsigned sensitivity, const unsigned *categories,
		   size_t n_categories);

/**
 * clip_level_ref - take a reference
 * @return @level.
 * @since 0.1
 */
struct clip_level *clip_level_ref(struct clip_level *level);

/**
 * clip_level_unref - drop a reference
 * @param level a level, or NULL (a no-op)
 * @return NULL.
 * @since 0.1
 */
struct clip_level *clip_level_unref(struct clip_level *level);

/**
 * clip_level_format - the canonical text of a level
 *
 * Categories ascending, runs of two or more written "cA.cB", no
 * categories part when the set is empty. Other writers may spell the same
 * set differently ("c0,c1" for "c0.c1"): compare levels, not their text.
 * clip_level_parse() of the result gives an equal level.
 *
 * @param level a level
 * @param ret where a newly allocated string is stored (free() it)
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_level_format(const struct clip_level *level, char **ret);

/**
 * clip_level_get_sensitivity - the sensitivity
 * @return 0 to 15, or -EINVAL.
 * @since 0.1
 */
int clip_level_get_sensitivity(const struct clip_level *level);

/**
 * clip_level_has_category - whether a category is in the level's set
 * @return 1 or 0, or -EINVAL (NULL level, category out of bounds).
 * @since 0.1
 */
int clip_level_has_category(const struct clip_level *level, unsigned category);

/**
 * clip_level_compare - compare two levels in the dominance order
 *
 * A dominates B when A's sensitivity is >= B's and A's categories include
 * all of B's.
 *
 * @return CLIP_LEVEL_EQUAL, CLIP_LEVEL_DOMINATES (a dominates b and they
 *	   differ), CLIP_LEVEL_DOMINATED (b dominates a and they differ),
 *	   CLIP_LEVEL_INCOMPARABLE, or -EINVAL.
 * @since 0.1
 */
int clip_level_compare(const struct clip_level *a, const struct clip_level *b);

/**
 * clip_level_dominates - whether @a dominates (or equals) @b
 * @return 1 or 0, or -EINVAL.
 * @since 0.1
 */
int clip_level_dominates(const struct clip_level *a, const struct clip_level *b);

/**
 * clip_level_equal - whether two levels are equal
 * @return 1 or 0, or -EINVAL.
 * @since 0.1
 */
int clip_level_equal(const struct clip_level *a, const struct clip_level *b);

/**
 * clip_level_join - least upper bound: the higher sensitivity, the union of
 * the categories
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_level_join(struct clip_level **ret, const struct clip_level *a,
		    const struct clip_level *b);

/**
 * clip_level_meet - greatest lower bound: the lower sensitivity, the
 * intersection of the categories
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_level_meet(struct clip_level **ret, const struct clip_level *a,
		    const struct clip_level *b);

/**
 * clip_range_parse - parse a range "LOW-HIGH", or a single level (LOW ==
 * HIGH)
 *
 * HIGH must dominate LOW.
 *
 * @param ret where the new range is stored; untouched on failure
 * @param text at most CLIP_LEVEL_TEXT_MAX bytes
 * @param reterr optional; as for clip_level_parse()
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_range_parse(struct clip_range **ret, const char *text, struct clip_error **reterr);

/**
 * clip_range_new - a range from two levels
 * @return 0, or -EINVAL (NULL, or @high does not dominate @low), -ENOMEM.
 * @since 0.1
 */
int clip_range_new(struct clip_range **ret, const struct clip_level *low,
		   const struct clip_level *high);

/** @since 0.1 */
struct clip_range *clip_range_ref(struct clip_range *range);
/** @since 0.1 */
struct clip_range *clip_range_unref(struct clip_range *range);

/**
 * clip_range_format - canonical "LOW-HIGH", or "LOW" when both are equal
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_range_format(const struct clip_range *range, char **ret);

/**
 * clip_range_get_low, clip_range_get_high - the bounds
 * @return a level owned by @range (take a reference to keep it), or NULL
 *	   when @range is NULL.
 * @since 0.1
 */
const struct clip_level *clip_range_get_low(const struct clip_range *range);
const struct clip_level *clip_range_get_high(const struct clip_range *range);

/**
 * clip_range_contains - whether HIGH dominates @level and @level dominates
 * LOW
 * @return 1 or 0, or -EINVAL.
 * @since 0.1
 */
int clip_range_contains(const struct clip_range *range, const struct clip_level *level);

/**
 * clip_level_names_parse - parse a translation table in the style of
 * SELinux setrans.conf
 *
 * One "LEVEL=NAME" per line; '#' starts a comment line; blank lines and
 * spaces around LEVEL and NAME are ignored. NAME is 1 to 64 characters of
 * [A-Za-z0-9_.-] and does not start with 's' followed by a digit (so that
 * it can never be read as a level). Each level and each name appears once.
 *
 * @param ret where the new table is stored; untouched on failure
 * @param text the table's text, not necessarily NUL-terminated
 * @param size its length, at most 1 MiB; at most 4096 entries
 * @param reterr optional; the message names the line, the offset is into
 *	  @text
 * @return 0, or -EINVAL, -E2BIG (too long or too many entries), -ENOMEM.
 * @since 0.1
 */
int clip_level_names_parse(struct clip_level_names **ret, const char *text, size_t size,
			   struct clip_error **reterr);

/** @since 0.1 */
struct clip_level_names *clip_level_names_ref(struct clip_level_names *names);
/** @since 0.1 */
struct clip_level_names *clip_level_names_unref(struct clip_level_names *names);

/**
 * clip_level_parse_name - parse a level written as a name of @names or in
 * the level grammar
 *
 * @param names a table, or NULL for the grammar alone
 * @return as clip_level_parse().
 * @since 0.1
 */
int clip_level_parse_name(struct clip_level **ret, const struct clip_level_names *names,
			  const char *text, struct clip_error **reterr);

/**
 * clip_level_format_name - the name of a level in @names, or its canonical
 * text when it has none
 *
 * @param names a table, or NULL
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_level_format_name(const struct clip_level *level, const struct clip_level_names *names,
			   char **ret);

#ifdef __cplusplus
}
#endif

#endif
