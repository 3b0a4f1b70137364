/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test hooks: a build configured with -Dtest_hooks=true reads
 * CLIP_TEST_DISABLE, a comma-separated list of mechanism names, and
 * switches those protections off, so that the threat model's check
 * (tests/build/check-threat-model) can show that each mechanism has a test
 * that fails without it. A normal build never reads the variable, and
 * every function here answers "nothing disabled".
 */
#pragma once

#include <stdbool.h>

/* The list from CLIP_TEST_DISABLE in a test-hooks build, else NULL. */
const char *test_hook_list(void);

/* Whether the comma-separated @list names @what exactly (@list may be NULL). */
bool test_hook_list_has(const char *list, const char *what);

/* Whether this process runs with mechanism @what switched off. */
bool test_hook_disabled(const char *what);
