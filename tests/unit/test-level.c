/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Levels, ranges and the names table: the grammar's every refusal with its
 * offset, canonical formatting, the dominance order, and the table.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "helpers.h"
#include <criterion/parameterized.h>

#include <clip/ctx.h>
#include <clip/level.h>

/* What a failing call must leave in *ret. */
#define SENTINEL ((void *)(uintptr_t)0x5e17e1)

/* The canonical text, in a static buffer good until the next call. */
static const char *
fmt(const struct clip_level *l)
{
	static char buf[8192];
	char *s = NULL;

	cr_assert_eq(clip_level_format(l, &s), 0);
	cr_assert_lt(strlen(s), sizeof(buf));
	strcpy(buf, s);
	free(s);
	return buf;
}

static void
assert_printable(const char *message)
{
	cr_assert_gt(strlen(message), 0, "empty message");
	for (const char *p = message; *p; p++)
		cr_assert((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f,
			  "raw byte 0x%02x in message \"%s\"", (unsigned char)*p, message);
}

/* Parse @text, expect -EINVAL at @offset, *ret untouched; returns the message. */
static char *
assert_level_refused(const char *text, int offset)
{
	struct clip_level *l = SENTINEL;
	struct clip_error *err = NULL;
	char *message;

	cr_assert_eq(clip_level_parse(&l, text, &err), -EINVAL, "\"%s\" accepted", text);
	cr_assert_eq(l, SENTINEL, "*ret changed on failure");
	cr_assert_not_null(err);
	cr_assert_eq(clip_error_get_errno(err), -EINVAL);
	cr_assert_eq(clip_error_get_offset(err), offset, "\"%s\": offset %d, want %d (%s)", text,
		     clip_error_get_offset(err), offset, clip_error_get_message(err));
	assert_printable(clip_error_get_message(err));
	message = strdup(clip_error_get_message(err));
	clip_error_free(err);
	return message;
}

static void
assert_range_refused(const char *text, int offset)
{
	struct clip_range *range = SENTINEL;
	struct clip_error *err = NULL;

	cr_assert_eq(clip_range_parse(&range, text, &err), -EINVAL, "\"%s\" accepted", text);
	cr_assert_eq(range, SENTINEL, "*ret changed on failure");
	cr_assert_eq(clip_error_get_offset(err), offset, "\"%s\": offset %d, want %d (%s)", text,
		     clip_error_get_offset(err), offset, clip_error_get_message(err));
	assert_printable(clip_error_get_message(err));
	clip_error_free(err);
}

struct refusal {
	char text[40];
	int offset;
	char reason[48];
};

ParameterizedTestParameters(level_parse, refuses_outside_grammar_at_offset)
{
	static struct refusal params[] = {
		{ "", 0, "expected 's'" },
		{ "s", 1, "expected a digit" },
		{ "s16", 1, "sensitivity above 15" },
		{ "s99999999999999999999", 1, "sensitivity above 15" },
		{ "s-1", 1, "expected a digit" },
		{ "s+1", 1, "expected a digit" },
		{ "s01", 1, "leading zero" },
		{ "s00", 1, "leading zero" },
		{ "S2", 0, "expected 's'" },
		{ "c1", 0, "expected 's'" },
		{ " s2", 0, "expected 's'" },
		{ "s2 ", 2, "expected ':' or the end" },
		{ "s2\n", 2, "expected ':' or the end" },
		{ "s2\x7f", 2, "expected ':' or the end" },
		{ "s2,c1", 2, "expected ':' or the end" },
		{ "s2-s3", 2, "expected ':' or the end" },
		{ "s2:", 3, "expected 'c'" },
		{ "s2::c1", 3, "expected 'c'" },
		{ "s2:C1", 3, "expected 'c'" },
		{ "s2: c1", 3, "expected 'c'" },
		{ "s2:c", 4, "expected a digit" },
		{ "s2:c-1", 4, "expected a digit" },
		{ "s2:c1024", 4, "category above 1023" },
		{ "s2:c99999999999999999999", 4, "category above 1023" },
		{ "s2:c00", 4, "leading zero" },
		{ "s2:c007", 4, "leading zero" },
		{ "s2:c1,", 6, "expected 'c'" },
		{ "s2:c1,,c2", 6, "expected 'c'" },
		{ "s2:c1, c2", 6, "expected 'c'" },
		{ "s2:c3,c1", 7, "categories not in ascending order" },
		{ "s2:c1,c1", 7, "categories not in ascending order" },
		{ "s2:c0.c3,c2", 10, "categories not in ascending order" },
		{ "s2:c0.c3,c3", 10, "categories not in ascending order" },
		{ "s2:c0.c3,c1.c5", 10, "categories not in ascending order" },
		{ "s2:c3.c3", 7, "end of category range not above its start" },
		{ "s2:c5.c3", 7, "end of category range not above its start" },
		{ "s2:c0.c1024", 7, "category above 1023" },
		{ "s2:c0..c3", 6, "expected 'c'" },
		{ "s2:c0.", 6, "expected 'c'" },
		{ "s2:c0.c", 7, "expected a digit" },
		{ "s2:c0.x3", 6, "expected 'c'" },
		{ "s2:c0.c3.c5", 8, "expected ',' or the end" },
		{ "s2:c1:c2", 5, "expected ',', '.' or the end" },
		{ "s2:c1 ", 5, "expected ',', '.' or the end" },
		{ "s2:c1\xc3\xa9", 5, "expected ',', '.' or the end" },
		{ "s2:c1\t", 5, "expected ',', '.' or the end" },
		{ "\xff", 0, "expected 's'" },
	};

	return cr_make_param_array(struct refusal, params, sizeof(params) / sizeof(params[0]));
}

ParameterizedTest(struct refusal *p, level_parse, refuses_outside_grammar_at_offset)
{
	char *message = assert_level_refused(p->text, p->offset);
	char want[64];

	cr_assert_not_null(strstr(message, p->reason), "\"%s\": message \"%s\" lacks \"%s\"",
			   p->text, message, p->reason);
	snprintf(want, sizeof(want), "at offset %d", p->offset);
	cr_assert_not_null(strstr(message, want), "message \"%s\" lacks \"%s\"", message, want);
	free(message);
}

Test(level_parse, message_quotes_input_and_names_offset)
{
	char *message = assert_level_refused("s2:c0.x3", 6);

	cr_assert_str_eq(message, "invalid level \"s2:c0.x3\": expected 'c' at offset 6");
	free(message);
}

Test(level_parse, message_replaces_control_and_non_ascii_bytes)
{
	char *message = assert_level_refused("s2:c1\n\x1b[31m\xc3\xa9", 5);

	cr_assert_not_null(strstr(message, "\"s2:c1??[31m??\""), "%s", message);
	free(message);
}

Test(level_parse, message_caps_quoted_input)
{
	char text[1000] = "s2:";
	char *message;
	int offset;

	/* A long valid prefix, then an error far past what is quoted. */
	for (int c = 0; c < 100; c++)
		sprintf(text + strlen(text), "c%d,", c);
	strcat(text, "x");
	offset = (int)strlen(text) - 1;
	message = assert_level_refused(text, offset);
	cr_assert_lt(strlen(message), 200, "message not capped: %zu bytes", strlen(message));
	cr_assert_not_null(strstr(message, "...\""), "%s", message);
	free(message);
}

Test(level_parse, refuses_text_longer_than_max_at_offset_max)
{
	char *text = malloc(CLIP_LEVEL_TEXT_MAX + 2);
	char *message;

	memset(text, 'c', CLIP_LEVEL_TEXT_MAX + 1);
	memcpy(text, "s2:", 3);
	text[CLIP_LEVEL_TEXT_MAX + 1] = '\0';
	message = assert_level_refused(text, CLIP_LEVEL_TEXT_MAX);
	cr_assert_not_null(strstr(message, "too long"), "%s", message);
	free(message);
	free(text);
}

Test(level_parse, text_of_exactly_max_bytes_reaches_the_grammar)
{
	char *text = malloc(CLIP_LEVEL_TEXT_MAX + 1);
	char *message;

	memset(text, 'c', CLIP_LEVEL_TEXT_MAX);
	memcpy(text, "s2:", 3);
	text[CLIP_LEVEL_TEXT_MAX] = '\0';
	message = assert_level_refused(text, 4);
	cr_assert_null(strstr(message, "too long"), "%s", message);
	free(message);
	free(text);
}

Test(level_parse, refused_range_text_in_level_parse_leaves_ret)
{
	free(assert_level_refused("s0-s1", 2));
}

Test(level_parse, accepts_sensitivity_alone)
{
	struct clip_level *l = test_level("s0");

	cr_assert_eq(clip_level_get_sensitivity(l), 0);
	for (unsigned c = 0; c <= CLIP_LEVEL_CATEGORY_MAX; c++)
		cr_assert_eq(clip_level_has_category(l, c), 0, "c%u", c);
	clip_level_unref(l);
}

Test(level_parse, accepts_max_sensitivity)
{
	struct clip_level *l = test_level("s15");

	cr_assert_eq(clip_level_get_sensitivity(l), CLIP_LEVEL_SENSITIVITY_MAX);
	clip_level_unref(l);
}

Test(level_parse, accepts_categories_and_ranges)
{
	struct clip_level *l = test_level("s2:c0.c3,c7,c64.c66,c1023");
	const unsigned in[] = { 0, 1, 2, 3, 7, 64, 65, 66, 1023 };
	unsigned n = 0;

	cr_assert_eq(clip_level_get_sensitivity(l), 2);
	for (unsigned c = 0; c <= CLIP_LEVEL_CATEGORY_MAX; c++) {
		int want = n < sizeof(in) / sizeof(in[0]) && in[n] == c;

		cr_assert_eq(clip_level_has_category(l, c), want, "c%u", c);
		n += want;
	}
	clip_level_unref(l);
}

Test(level_parse, accepts_full_category_set)
{
	struct clip_level *l = test_level("s15:c0.c1023");

	for (unsigned c = 0; c <= CLIP_LEVEL_CATEGORY_MAX; c++)
		cr_assert_eq(clip_level_has_category(l, c), 1, "c%u", c);
	cr_assert_str_eq(fmt(l), "s15:c0.c1023");
	clip_level_unref(l);
}

Test(level_parse, null_arguments_are_einval)
{
	struct clip_level *l = SENTINEL;
	struct clip_error *err = NULL;

	cr_assert_eq(clip_level_parse(NULL, "s0", NULL), -EINVAL);
	cr_assert_eq(clip_level_parse(&l, NULL, NULL), -EINVAL);
	cr_assert_eq(l, SENTINEL);
	cr_assert_eq(clip_level_parse(&l, NULL, &err), -EINVAL);
	cr_assert_eq(clip_error_get_errno(err), -EINVAL, "a failure with reterr has an error");
	cr_assert_eq(l, SENTINEL);
	clip_error_free(err);
}

Test(level_parse, occupied_reterr_is_einval)
{
	struct clip_level *l = SENTINEL;
	struct clip_error *err = NULL, *first;

	cr_assert_eq(clip_level_parse(&l, "bad", &err), -EINVAL);
	first = err;
	cr_assert_eq(clip_level_parse(&l, "s0", &err), -EINVAL);
	cr_assert_eq(err, first, "an occupied reterr is not overwritten");
	cr_assert_eq(l, SENTINEL);
	clip_error_free(err);
}

Test(level_parse, success_leaves_reterr_null)
{
	struct clip_level *l = NULL;
	struct clip_error *err = NULL;

	cr_assert_eq(clip_level_parse(&l, "s1:c1", &err), 0);
	cr_assert_null(err);
	clip_level_unref(l);
}

Test(level_format, runs_of_two_or_more_are_ranges)
{
	static const char *const cases[][2] = {
		{ "s0", "s0" },
		{ "s2:c0,c1", "s2:c0.c1" },
		{ "s2:c0,c2", "s2:c0,c2" },
		{ "s2:c0.c1,c2", "s2:c0.c2" },
		{ "s2:c0.c2,c3.c5", "s2:c0.c5" },
		{ "s2:c0,c1,c2,c4,c6,c7", "s2:c0.c2,c4,c6.c7" },
		{ "s2:c63,c64", "s2:c63.c64" },
		{ "s2:c1022,c1023", "s2:c1022.c1023" },
		{ "s15:c0.c1023", "s15:c0.c1023" },
		{ "s3:c0.c511,c512.c1023", "s3:c0.c1023" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct clip_level *l = test_level(cases[i][0]);

		cr_assert_str_eq(fmt(l), cases[i][1], "format of %s", cases[i][0]);
		clip_level_unref(l);
	}
}

Test(level_format, canonical_texts_round_trip_exactly)
{
	static const char *const texts[] = {
		"s0",           "s15",      "s2:c0",       "s2:c0.c1",     "s2:c0,c2",
		"s7:c5.c9,c11", "s1:c1023", "s1:c0,c1023", "s15:c0.c1023", "s9:c10,c100,c1000",
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct clip_level *l = test_level(texts[i]);

		cr_assert_str_eq(fmt(l), texts[i]);
		clip_level_unref(l);
	}
}

static struct clip_level *
random_level(unsigned *seed)
{
	unsigned cats[64];
	size_t n = (size_t)(rand_r(seed) % 65);
	struct clip_level *l = NULL;

	for (size_t i = 0; i < n; i++)
		cats[i] = (unsigned)rand_r(seed) % (CLIP_LEVEL_CATEGORY_MAX + 1);
	cr_assert_eq(clip_level_new(&l, (unsigned)rand_r(seed) % 16, cats, n), 0);
	return l;
}

Test(level_format, parse_of_format_is_equal_and_format_idempotent)
{
	unsigned seed = 42;

	for (int i = 0; i < 2000; i++) {
		struct clip_level *a = random_level(&seed), *b;
		char *text = NULL;

		cr_assert_eq(clip_level_format(a, &text), 0);
		b = test_level(text);
		cr_assert_eq(clip_level_equal(a, b), 1, "%s", text);
		cr_assert_str_eq(fmt(b), text);
		free(text);
		clip_level_unref(a);
		clip_level_unref(b);
	}
}

Test(level_format, longest_texts_round_trip)
{
	unsigned alternate[512], pairs[684];
	size_t n_pairs = 0;
	struct clip_level *l = NULL, *back;
	char *text = NULL;

	for (unsigned i = 0; i < 512; i++)
		alternate[i] = 2 * i;
	/* Runs of two separated by a gap: the most bytes per category. */
	for (unsigned c = 0; c + 1 <= CLIP_LEVEL_CATEGORY_MAX; c += 3) {
		pairs[n_pairs++] = c;
		pairs[n_pairs++] = c + 1;
	}
	cr_assert_eq(clip_level_new(&l, 15, alternate, 512), 0);
	cr_assert_eq(clip_level_format(l, &text), 0);
	cr_assert_eq(strncmp(text, "s15:c0,c2,c4,", 13), 0, "%.20s", text);
	back = test_level(text);
	cr_assert_eq(clip_level_equal(l, back), 1);
	free(text);
	clip_level_unref(l);
	clip_level_unref(back);

	cr_assert_eq(clip_level_new(&l, 15, pairs, n_pairs), 0);
	cr_assert_eq(clip_level_format(l, &text), 0);
	cr_assert_eq(strncmp(text, "s15:c0.c1,c3.c4,", 16), 0, "%.20s", text);
	cr_assert_leq(strlen(text), CLIP_LEVEL_TEXT_MAX);
	back = test_level(text);
	cr_assert_eq(clip_level_equal(l, back), 1);
	free(text);
	clip_level_unref(l);
	clip_level_unref(back);
}

Test(level_format, null_arguments_are_einval)
{
	struct clip_level *l = test_level("s1");
	char *s = SENTINEL;

	cr_assert_eq(clip_level_format(NULL, &s), -EINVAL);
	cr_assert_eq(s, SENTINEL);
	cr_assert_eq(clip_level_format(l, NULL), -EINVAL);
	clip_level_unref(l);
}

Test(level_new, accepts_any_order_and_duplicates)
{
	const unsigned cats[] = { 7, 3, 0, 3, 1, 2, 1023, 7 };
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_new(&l, 4, cats, sizeof(cats) / sizeof(cats[0])), 0);
	cr_assert_str_eq(fmt(l), "s4:c0.c3,c7,c1023");
	clip_level_unref(l);
}

Test(level_new, no_categories)
{
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_new(&l, 0, NULL, 0), 0);
	cr_assert_str_eq(fmt(l), "s0");
	clip_level_unref(l);
}

Test(level_new, refuses_out_of_bounds_and_leaves_ret)
{
	const unsigned good[] = { 1 }, bad[] = { 1, CLIP_LEVEL_CATEGORY_MAX + 1 };
	struct clip_level *l = SENTINEL;

	cr_assert_eq(clip_level_new(&l, CLIP_LEVEL_SENSITIVITY_MAX + 1, good, 1), -EINVAL);
	cr_assert_eq(clip_level_new(&l, 0, bad, 2), -EINVAL);
	cr_assert_eq(clip_level_new(&l, 0, NULL, 1), -EINVAL);
	cr_assert_eq(clip_level_new(NULL, 0, good, 1), -EINVAL);
	cr_assert_eq(l, SENTINEL);
}

Test(level_accessors, null_and_out_of_bounds_are_einval)
{
	struct clip_level *l = test_level("s3:c1");

	cr_assert_eq(clip_level_get_sensitivity(NULL), -EINVAL);
	cr_assert_eq(clip_level_has_category(NULL, 1), -EINVAL);
	cr_assert_eq(clip_level_has_category(l, CLIP_LEVEL_CATEGORY_MAX + 1), -EINVAL);
	cr_assert_eq(clip_level_has_category(l, 1), 1);
	cr_assert_eq(clip_level_has_category(l, 0), 0);
	clip_level_unref(l);
}

Test(level_ref, ref_returns_argument_and_keeps_level_alive)
{
	struct clip_level *l = test_level("s1:c5");

	cr_assert_eq(clip_level_ref(l), l);
	cr_assert_null(clip_level_unref(l));
	/* Still held by the second reference. */
	cr_assert_str_eq(fmt(l), "s1:c5");
	cr_assert_null(clip_level_unref(l));
	cr_assert_null(clip_level_ref(NULL));
	cr_assert_null(clip_level_unref(NULL));
}

struct order_case {
	const char *a, *b;
	int want;
};

Test(level_compare, truth_table)
{
	static const struct order_case cases[] = {
		{ "s2", "s2", CLIP_LEVEL_EQUAL },
		{ "s2:c0.c3", "s2:c0,c1,c2,c3", CLIP_LEVEL_EQUAL },
		{ "s3", "s2", CLIP_LEVEL_DOMINATES },
		{ "s2", "s3", CLIP_LEVEL_DOMINATED },
		{ "s2:c1", "s2", CLIP_LEVEL_DOMINATES },
		{ "s2", "s2:c1", CLIP_LEVEL_DOMINATED },
		{ "s3:c0.c3", "s2:c1,c2", CLIP_LEVEL_DOMINATES },
		{ "s0", "s15:c0.c1023", CLIP_LEVEL_DOMINATED },
		{ "s2:c1", "s2:c2", CLIP_LEVEL_INCOMPARABLE },
		{ "s3", "s2:c1", CLIP_LEVEL_INCOMPARABLE },
		{ "s2:c1", "s3", CLIP_LEVEL_INCOMPARABLE },
		{ "s2:c1023", "s2:c0", CLIP_LEVEL_INCOMPARABLE },
		{ "s5:c0.c9", "s4:c0.c8,c10", CLIP_LEVEL_INCOMPARABLE },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct clip_level *a = test_level(cases[i].a), *b = test_level(cases[i].b);
		int want = cases[i].want;

		cr_assert_eq(clip_level_compare(a, b), want, "compare(%s, %s)", cases[i].a,
			     cases[i].b);
		cr_assert_eq(clip_level_dominates(a, b),
			     want == CLIP_LEVEL_EQUAL || want == CLIP_LEVEL_DOMINATES,
			     "dominates(%s, %s)", cases[i].a, cases[i].b);
		cr_assert_eq(clip_level_dominates(b, a),
			     want == CLIP_LEVEL_EQUAL || want == CLIP_LEVEL_DOMINATED,
			     "dominates(%s, %s)", cases[i].b, cases[i].a);
		cr_assert_eq(clip_level_equal(a, b), want == CLIP_LEVEL_EQUAL, "equal(%s, %s)",
			     cases[i].a, cases[i].b);
		clip_level_unref(a);
		clip_level_unref(b);
	}
}

Test(level_compare, null_arguments_are_einval)
{
	struct clip_level *l = test_level("s0");

	cr_assert_eq(clip_level_compare(NULL, l), -EINVAL);
	cr_assert_eq(clip_level_compare(l, NULL), -EINVAL);
	cr_assert_eq(clip_level_dominates(NULL, l), -EINVAL);
	cr_assert_eq(clip_level_dominates(l, NULL), -EINVAL);
	cr_assert_eq(clip_level_equal(NULL, l), -EINVAL);
	cr_assert_eq(clip_level_equal(l, NULL), -EINVAL);
	clip_level_unref(l);
}

Test(level_lattice, join_and_meet_table)
{
	static const char *const cases[][4] = {
		/* a, b, join, meet */
		{ "s2:c1", "s3:c2", "s3:c1.c2", "s2" },
		{ "s0:c0.c5", "s0:c3.c9", "s0:c0.c9", "s0:c3.c5" },
		{ "s4:c1023", "s1:c0", "s4:c0,c1023", "s1" },
		{ "s7:c2,c4", "s7:c2,c4", "s7:c2,c4", "s7:c2,c4" },
		{ "s0", "s15:c0.c1023", "s15:c0.c1023", "s0" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct clip_level *a = test_level(cases[i][0]), *b = test_level(cases[i][1]),
				  *j = NULL, *m = NULL;

		cr_assert_eq(clip_level_join(&j, a, b), 0);
		cr_assert_eq(clip_level_meet(&m, a, b), 0);
		cr_assert_str_eq(fmt(j), cases[i][2], "join(%s, %s)", cases[i][0], cases[i][1]);
		cr_assert_str_eq(fmt(m), cases[i][3], "meet(%s, %s)", cases[i][0], cases[i][1]);
		clip_level_unref(a);
		clip_level_unref(b);
		clip_level_unref(j);
		clip_level_unref(m);
	}
}

Test(level_lattice, join_is_least_upper_and_meet_greatest_lower_bound)
{
	unsigned seed = 7;

	for (int i = 0; i < 500; i++) {
		struct clip_level *a = random_level(&seed), *b = random_level(&seed);
		struct clip_level *j = NULL, *m = NULL;

		cr_assert_eq(clip_level_join(&j, a, b), 0);
		cr_assert_eq(clip_level_meet(&m, a, b), 0);
		cr_assert_eq(clip_level_dominates(j, a), 1);
		cr_assert_eq(clip_level_dominates(j, b), 1);
		cr_assert_eq(clip_level_dominates(a, m), 1);
		cr_assert_eq(clip_level_dominates(b, m), 1);
		/* When one dominates the other, they are the bounds themselves. */
		if (clip_level_dominates(a, b) == 1) {
			cr_assert_eq(clip_level_equal(j, a), 1);
			cr_assert_eq(clip_level_equal(m, b), 1);
		}
		clip_level_unref(a);
		clip_level_unref(b);
		clip_level_unref(j);
		clip_level_unref(m);
	}
}

Test(level_lattice, null_arguments_are_einval_and_leave_ret)
{
	struct clip_level *l = test_level("s0"), *r = SENTINEL;

	cr_assert_eq(clip_level_join(&r, NULL, l), -EINVAL);
	cr_assert_eq(clip_level_join(&r, l, NULL), -EINVAL);
	cr_assert_eq(clip_level_join(NULL, l, l), -EINVAL);
	cr_assert_eq(clip_level_meet(&r, NULL, l), -EINVAL);
	cr_assert_eq(clip_level_meet(&r, l, NULL), -EINVAL);
	cr_assert_eq(clip_level_meet(NULL, l, l), -EINVAL);
	cr_assert_eq(r, SENTINEL);
	clip_level_unref(l);
}

static const char *
range_fmt(const struct clip_range *range)
{
	static char buf[16384];
	char *s = NULL;

	cr_assert_eq(clip_range_format(range, &s), 0);
	cr_assert_lt(strlen(s), sizeof(buf));
	strcpy(buf, s);
	free(s);
	return buf;
}

Test(range, parse_low_high_and_contains)
{
	static const char *const inside[] = { "s0", "s1:c2", "s3:c0.c5", "s3" };
	static const char *const outside[] = { "s4", "s1:c6", "s0:c1023", "s15:c0.c1023" };
	struct clip_range *range = NULL;

	cr_assert_eq(clip_range_parse(&range, "s0-s3:c0.c5", NULL), 0);
	cr_assert_str_eq(fmt(clip_range_get_low(range)), "s0");
	cr_assert_str_eq(fmt(clip_range_get_high(range)), "s3:c0.c5");
	cr_assert_str_eq(range_fmt(range), "s0-s3:c0.c5");
	for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
		struct clip_level *l = test_level(inside[i]);

		cr_assert_eq(clip_range_contains(range, l), 1, "%s", inside[i]);
		clip_level_unref(l);
	}
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		struct clip_level *l = test_level(outside[i]);

		cr_assert_eq(clip_range_contains(range, l), 0, "%s", outside[i]);
		clip_level_unref(l);
	}
	clip_range_unref(range);
}

Test(range, low_bound_excludes_levels_below_it)
{
	struct clip_range *range = NULL;
	struct clip_level *below = test_level("s1"), *incomparable = test_level("s2:c3"),
			  *in = test_level("s2:c1.c2");

	cr_assert_eq(clip_range_parse(&range, "s1:c1-s4:c0.c9", NULL), 0);
	cr_assert_eq(clip_range_contains(range, below), 0);
	cr_assert_eq(clip_range_contains(range, incomparable), 0);
	cr_assert_eq(clip_range_contains(range, in), 1);
	clip_level_unref(below);
	clip_level_unref(incomparable);
	clip_level_unref(in);
	clip_range_unref(range);
}

Test(range, single_level_is_low_and_high)
{
	struct clip_range *range = NULL;

	cr_assert_eq(clip_range_parse(&range, "s2:c1", NULL), 0);
	cr_assert_eq(clip_level_equal(clip_range_get_low(range), clip_range_get_high(range)), 1);
	cr_assert_str_eq(range_fmt(range), "s2:c1");
	clip_range_unref(range);
}

Test(range, equal_bounds_format_as_one_level)
{
	struct clip_range *range = NULL;

	cr_assert_eq(clip_range_parse(&range, "s2:c0,c1-s2:c0.c1", NULL), 0);
	cr_assert_str_eq(range_fmt(range), "s2:c0.c1");
	clip_range_unref(range);
}

Test(range, high_not_dominating_low_is_refused)
{
	struct clip_range *range = SENTINEL;
	struct clip_error *err = NULL;

	cr_assert_eq(clip_range_parse(&range, "s2:c1-s3:c2", &err), -EINVAL);
	cr_assert_eq(range, SENTINEL);
	cr_assert_eq(clip_error_get_offset(err), 6);
	cr_assert_not_null(strstr(clip_error_get_message(err), "does not dominate"), "%s",
			   clip_error_get_message(err));
	clip_error_free(err);
	assert_range_refused("s3-s2", 3);
	assert_range_refused("s0:c5-s15:c0.c4", 6);
}

Test(range, syntax_errors_have_offsets_into_whole_text)
{
	assert_range_refused("", 0);
	assert_range_refused("-s2", 0);
	assert_range_refused("s0-", 3);
	assert_range_refused("s0-s3:cx", 7);
	assert_range_refused("s0-s1-s2", 5);
	assert_range_refused("s0:c1,-s2", 6);
	assert_range_refused("s0 - s2", 2);
	assert_range_refused("s0--s2", 3);
	assert_range_refused("s0-s2:c3,c1", 10);
}

Test(range, refuses_text_longer_than_max)
{
	char *text = malloc(CLIP_LEVEL_TEXT_MAX + 2);

	memset(text, 'c', CLIP_LEVEL_TEXT_MAX + 1);
	memcpy(text, "s0-s2:", 6);
	text[CLIP_LEVEL_TEXT_MAX + 1] = '\0';
	assert_range_refused(text, CLIP_LEVEL_TEXT_MAX);
	free(text);
}

Test(range, new_refuses_high_not_dominating)
{
	struct clip_level *low = test_level("s2:c1"), *high = test_level("s3:c2");
	struct clip_range *range = SENTINEL;

	cr_assert_eq(clip_range_new(&range, low, high), -EINVAL);
	cr_assert_eq(clip_range_new(&range, high, low), -EINVAL);
	cr_assert_eq(range, SENTINEL);
	clip_level_unref(low);
	clip_level_unref(high);
}

Test(range, new_holds_its_own_references)
{
	struct clip_level *low = test_level("s1"), *high = test_level("s5:c0.c3"),
			  *mid = test_level("s3:c1");
	struct clip_range *range = NULL;

	cr_assert_eq(clip_range_new(&range, low, high), 0);
	clip_level_unref(low);
	clip_level_unref(high);
	cr_assert_eq(clip_range_contains(range, mid), 1);
	cr_assert_str_eq(range_fmt(range), "s1-s5:c0.c3");
	cr_assert_eq(clip_range_ref(range), range);
	cr_assert_null(clip_range_unref(range));
	cr_assert_str_eq(range_fmt(range), "s1-s5:c0.c3");
	cr_assert_null(clip_range_unref(range));
	clip_level_unref(mid);
}

Test(range, null_arguments_are_einval)
{
	struct clip_level *l = test_level("s0");
	struct clip_range *range = SENTINEL;
	char *s = SENTINEL;

	cr_assert_eq(clip_range_parse(NULL, "s0", NULL), -EINVAL);
	cr_assert_eq(clip_range_parse(&range, NULL, NULL), -EINVAL);
	cr_assert_eq(clip_range_new(NULL, l, l), -EINVAL);
	cr_assert_eq(clip_range_new(&range, NULL, l), -EINVAL);
	cr_assert_eq(clip_range_new(&range, l, NULL), -EINVAL);
	cr_assert_eq(range, SENTINEL);
	cr_assert_eq(clip_range_format(NULL, &s), -EINVAL);
	cr_assert_eq(s, SENTINEL);
	cr_assert_eq(clip_range_contains(NULL, l), -EINVAL);
	cr_assert_null(clip_range_get_low(NULL));
	cr_assert_null(clip_range_get_high(NULL));
	cr_assert_null(clip_range_ref(NULL));
	cr_assert_null(clip_range_unref(NULL));
	clip_level_unref(l);
}

static const char good_table[] = "# Translations for this host\n"
				 "\n"
				 "s0=Unclassified\n"
				 "  s1:c0 =\tRestricted  \n"
				 "\t# indented comment\n"
				 "s2:c0.c3= Secret.Team-A_1\n"
				 "   \t \n"
				 "s15:c0.c1023=TopSecret";

static struct clip_level_names *
names_of(const char *text)
{
	struct clip_level_names *names = NULL;
	struct clip_error *err = NULL;
	int r = clip_level_names_parse(&names, text, strlen(text), &err);

	cr_assert_eq(r, 0, "%d %s", r, clip_error_get_message(err));
	return names;
}

/* Expect @error at @offset with "line N:" in the message; *ret untouched. */
static void
assert_names_refused(const char *text, size_t size, int error, unsigned line, int offset)
{
	struct clip_level_names *names = SENTINEL;
	struct clip_error *err = NULL;
	char want[32];

	cr_assert_eq(clip_level_names_parse(&names, text, size, &err), error, "%s",
		     clip_error_get_message(err));
	cr_assert_eq(names, SENTINEL, "*ret changed on failure");
	cr_assert_eq(clip_error_get_errno(err), error);
	cr_assert_eq(clip_error_get_offset(err), offset, "offset %d, want %d (%s)",
		     clip_error_get_offset(err), offset, clip_error_get_message(err));
	assert_printable(clip_error_get_message(err));
	if (line > 0) {
		snprintf(want, sizeof(want), "line %u: ", line);
		cr_assert_eq(strncmp(clip_error_get_message(err), want, strlen(want)), 0,
			     "message \"%s\" does not start with \"%s\"",
			     clip_error_get_message(err), want);
	}
	clip_error_free(err);
}

static void
assert_names_refused_str(const char *text, unsigned line, int offset)
{
	assert_names_refused(text, strlen(text), -EINVAL, line, offset);
}

Test(level_names, parses_table_with_comments_blanks_and_spaces)
{
	static const char *const pairs[][2] = {
		{ "Unclassified", "s0" },
		{ "Restricted", "s1:c0" },
		{ "Secret.Team-A_1", "s2:c0.c3" },
		{ "TopSecret", "s15:c0.c1023" },
	};
	struct clip_level_names *names = names_of(good_table);

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct clip_level *l = NULL;
		char *s = NULL;

		cr_assert_eq(clip_level_parse_name(&l, names, pairs[i][0], NULL), 0, "%s",
			     pairs[i][0]);
		cr_assert_str_eq(fmt(l), pairs[i][1]);
		cr_assert_eq(clip_level_format_name(l, names, &s), 0);
		cr_assert_str_eq(s, pairs[i][0]);
		free(s);
		clip_level_unref(l);
	}
	clip_level_names_unref(names);
}

Test(level_names, parse_name_falls_back_to_grammar)
{
	struct clip_level_names *names = names_of(good_table);
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_parse_name(&l, names, "s2:c0,c1,c2,c3", NULL), 0);
	cr_assert_str_eq(fmt(l), "s2:c0.c3");
	clip_level_unref(l);
	cr_assert_eq(clip_level_parse_name(&l, NULL, "s4:c9", NULL), 0);
	cr_assert_str_eq(fmt(l), "s4:c9");
	clip_level_unref(l);
	clip_level_names_unref(names);
}

Test(level_names, parse_name_refuses_unknown_name_and_leaves_ret)
{
	struct clip_level_names *names = names_of(good_table);
	struct clip_level *l = SENTINEL;
	struct clip_error *err = NULL;

	cr_assert_eq(clip_level_parse_name(&l, names, "Secrte", &err), -EINVAL);
	cr_assert_eq(clip_error_get_offset(err), 0);
	cr_assert_eq(l, SENTINEL);
	clip_error_free(err);
	err = NULL;
	/* Names match exactly: no case folding, no spaces. */
	cr_assert_eq(clip_level_parse_name(&l, names, "secret.team-a_1", NULL), -EINVAL);
	cr_assert_eq(clip_level_parse_name(&l, names, " TopSecret", NULL), -EINVAL);
	cr_assert_eq(clip_level_parse_name(&l, NULL, "TopSecret", &err), -EINVAL);
	cr_assert_eq(clip_error_get_offset(err), 0);
	cr_assert_eq(l, SENTINEL);
	clip_error_free(err);
	clip_level_names_unref(names);
}

Test(level_names, parse_name_refuses_overlong_text)
{
	struct clip_level_names *names = names_of(good_table);
	struct clip_level *l = SENTINEL;
	struct clip_error *err = NULL;
	char *text = malloc(CLIP_LEVEL_TEXT_MAX + 2);

	memset(text, 'A', CLIP_LEVEL_TEXT_MAX + 1);
	text[CLIP_LEVEL_TEXT_MAX + 1] = '\0';
	cr_assert_eq(clip_level_parse_name(&l, names, text, &err), -EINVAL);
	cr_assert_eq(clip_error_get_offset(err), CLIP_LEVEL_TEXT_MAX);
	cr_assert_eq(l, SENTINEL);
	clip_error_free(err);
	free(text);
	clip_level_names_unref(names);
}

Test(level_names, format_name_without_name_is_canonical_text)
{
	struct clip_level_names *names = names_of(good_table);
	struct clip_level *l = test_level("s2:c0,c1");
	char *s = NULL;

	cr_assert_eq(clip_level_format_name(l, names, &s), 0);
	cr_assert_str_eq(s, "s2:c0.c1");
	free(s);
	cr_assert_eq(clip_level_format_name(l, NULL, &s), 0);
	cr_assert_str_eq(s, "s2:c0.c1");
	free(s);
	clip_level_unref(l);
	l = test_level("s0");
	cr_assert_eq(clip_level_format_name(l, NULL, &s), 0);
	cr_assert_str_eq(s, "s0");
	free(s);
	clip_level_unref(l);
	clip_level_names_unref(names);
}

Test(level_names, level_written_differently_finds_its_name)
{
	struct clip_level_names *names = names_of("s3:c0,c1,c2=Team\n");
	struct clip_level *l = test_level("s3:c0.c2");
	char *s = NULL;

	cr_assert_eq(clip_level_format_name(l, names, &s), 0);
	cr_assert_str_eq(s, "Team");
	free(s);
	clip_level_unref(l);
	clip_level_names_unref(names);
}

Test(level_names, empty_and_comment_only_tables_are_valid)
{
	struct clip_level_names *names = names_of("");
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_parse_name(&l, names, "s1", NULL), 0);
	clip_level_unref(l);
	clip_level_names_unref(names);
	names = names_of("# nothing\n\n   \n");
	clip_level_names_unref(names);
}

Test(level_names, text_need_not_be_nul_terminated)
{
	/* No terminator: a read past @size shows under ASan and valgrind. */
	const char *text = "s0=AB";
	char *copy = malloc(4);
	struct clip_level_names *names = NULL;
	struct clip_level *l = NULL;

	memcpy(copy, text, 4);
	cr_assert_eq(clip_level_names_parse(&names, copy, 4, NULL), 0);
	cr_assert_eq(clip_level_parse_name(&l, names, "A", NULL), 0);
	cr_assert_str_eq(fmt(l), "s0");
	clip_level_unref(l);
	cr_assert_eq(clip_level_parse_name(&l, names, "AB", NULL), -EINVAL);
	clip_level_names_unref(names);
	free(copy);
}

Test(level_names, name_of_64_characters_is_accepted)
{
	char text[128];
	struct clip_level_names *names;

	snprintf(text, sizeof(text), "s0=%064d", 7);
	names = names_of(text);
	clip_level_names_unref(names);
}

Test(level_names, refuses_name_longer_than_64)
{
	char text[128];

	snprintf(text, sizeof(text), "s0=%065d", 7);
	assert_names_refused_str(text, 1, 3 + 64);
}

Test(level_names, refuses_bad_name_characters)
{
	assert_names_refused_str("s0=Unclass$ified\n", 1, 10);
	assert_names_refused_str("s0=A\ns1=B#c\n", 2, 9);
	assert_names_refused_str("s0=A=B\n", 1, 4);
	assert_names_refused_str("s0=Caf\xc3\xa9\n", 1, 6);
	assert_names_refused_str("s0=A\r\n", 1, 4);
}

Test(level_names, refuses_name_readable_as_level)
{
	assert_names_refused_str("s0=s2x\n", 1, 3);
	assert_names_refused_str("s0=A\ns1=  s0\n", 2, 10);
}

Test(level_names, accepts_names_starting_with_s_not_followed_by_digit)
{
	struct clip_level_names *names = names_of("s0=secret\ns1=S2\ns2=s\ns3=s_1\n");
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_parse_name(&l, names, "S2", NULL), 0);
	cr_assert_str_eq(fmt(l), "s1");
	clip_level_unref(l);
	clip_level_names_unref(names);
}

Test(level_names, refuses_missing_or_empty_name)
{
	assert_names_refused_str("s0=\n", 1, 3);
	assert_names_refused_str("s0=   \n", 1, 6);
	assert_names_refused_str("s0 Foo\n", 1, 3);
	assert_names_refused_str("s0\n", 1, 2);
	assert_names_refused_str("s0:c1\ts1=A\n", 1, 6);
}

Test(level_names, refuses_text_after_name)
{
	assert_names_refused_str("s0=A B\n", 1, 5);
	assert_names_refused_str("s0=A # comment\n", 1, 5);
}

Test(level_names, refuses_bad_level_naming_its_line)
{
	struct clip_level_names *names = SENTINEL;
	struct clip_error *err = NULL;
	const char *text = "# c\n\ns0=A\ns2:cx=B\n";

	assert_names_refused_str(text, 4, 14);
	cr_assert_eq(clip_level_names_parse(&names, text, strlen(text), &err), -EINVAL);
	cr_assert_str_eq(clip_error_get_message(err),
			 "line 4: invalid level \"s2:cx\": expected a digit at offset 14");
	clip_error_free(err);
	assert_names_refused_str("=A\n", 1, 0);
	assert_names_refused_str("s0=A\n  Secret=s0\n", 2, 7);
	assert_names_refused_str("s16=A\n", 1, 1);
}

Test(level_names, refuses_duplicate_level)
{
	assert_names_refused_str("s0=A\ns0=B\n", 2, 5);
	/* The same level, written two ways. */
	assert_names_refused_str("s0:c0,c1=A\n# x\ns0:c0.c1=B\n", 3, 15);
}

Test(level_names, refuses_duplicate_name)
{
	struct clip_level_names *names = SENTINEL;
	struct clip_error *err = NULL;
	const char *text = "s0=A\ns1=A\n";

	assert_names_refused_str(text, 2, 8);
	cr_assert_eq(clip_level_names_parse(&names, text, strlen(text), &err), -EINVAL);
	cr_assert_str_eq(clip_error_get_message(err), "line 2: name \"A\" already used on line 1");
	clip_error_free(err);
}

Test(level_names, earliest_duplicate_is_reported)
{
	/* Line 3 repeats a level, line 4 a name: line 3 is reported. */
	assert_names_refused_str("s0=A\ns1=B\ns1=C\ns2=A\n", 3, 10);
	assert_names_refused_str("s0=A\ns1=B\ns2=A\ns1=C\n", 3, 13);
}

Test(level_names, refuses_nul_byte)
{
	static const char text[] = "s0=A\ns1=B\0\n";

	assert_names_refused(text, sizeof(text) - 1, -EINVAL, 2, 9);
}

static char *
table_of(size_t n_entries, size_t *ret_size)
{
	char *text = malloc(n_entries * 16 + 1), *p = text;

	for (size_t i = 0; i < n_entries; i++)
		p += sprintf(p, "s%zu:c%zu=N%zu\n", i % 16, i / 16, i);
	*ret_size = (size_t)(p - text);
	return text;
}

Test(level_names, accepts_4096_entries)
{
	struct clip_level_names *names = NULL;
	struct clip_level *l = NULL;
	size_t size;
	char *text = table_of(4096, &size);
	char *s = NULL;

	cr_assert_eq(clip_level_names_parse(&names, text, size, NULL), 0);
	cr_assert_eq(clip_level_parse_name(&l, names, "N4095", NULL), 0);
	cr_assert_str_eq(fmt(l), "s15:c255");
	cr_assert_eq(clip_level_format_name(l, names, &s), 0);
	cr_assert_str_eq(s, "N4095");
	free(s);
	clip_level_unref(l);
	clip_level_names_unref(names);
	free(text);
}

Test(level_names, refuses_4097_entries_with_e2big)
{
	size_t size;
	char *text = table_of(4097, &size);
	size_t last_line = size - strlen("s0:c256=N4096\n");

	assert_names_refused(text, size, -E2BIG, 4097, (int)last_line);
	free(text);
}

Test(level_names, refuses_text_over_1mib_with_e2big)
{
	size_t size = 1024 * 1024 + 1;
	char *text = malloc(size);

	memset(text, '\n', size);
	assert_names_refused(text, size, -E2BIG, 0, -1);
	free(text);
	/* 1 MiB exactly is allowed. */
	text = malloc(size - 1);
	memset(text, '\n', size - 1);
	{
		struct clip_level_names *names = NULL;

		cr_assert_eq(clip_level_names_parse(&names, text, size - 1, NULL), 0);
		clip_level_names_unref(names);
	}
	free(text);
}

Test(level_names, ref_and_unref)
{
	struct clip_level_names *names = names_of(good_table);
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_names_ref(names), names);
	cr_assert_null(clip_level_names_unref(names));
	cr_assert_eq(clip_level_parse_name(&l, names, "Secret.Team-A_1", NULL), 0);
	cr_assert_null(clip_level_names_unref(names));
	/* The level outlives the table it came from. */
	cr_assert_str_eq(fmt(l), "s2:c0.c3");
	clip_level_unref(l);
	cr_assert_null(clip_level_names_ref(NULL));
	cr_assert_null(clip_level_names_unref(NULL));
}

Test(level_names, null_arguments_are_einval)
{
	struct clip_level_names *names = SENTINEL;
	struct clip_level *l = SENTINEL, *level = test_level("s0");
	char *s = SENTINEL;

	cr_assert_eq(clip_level_names_parse(NULL, "s0=A", 4, NULL), -EINVAL);
	cr_assert_eq(clip_level_names_parse(&names, NULL, 4, NULL), -EINVAL);
	cr_assert_eq(names, SENTINEL);
	cr_assert_eq(clip_level_parse_name(NULL, NULL, "s0", NULL), -EINVAL);
	cr_assert_eq(clip_level_parse_name(&l, NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(l, SENTINEL);
	cr_assert_eq(clip_level_format_name(NULL, NULL, &s), -EINVAL);
	cr_assert_eq(clip_level_format_name(level, NULL, NULL), -EINVAL);
	cr_assert_eq(s, SENTINEL);
	clip_level_unref(level);
}
