/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the level module gives the modules above it: cleanups for its types, and its formatter. */
#pragma once

#include <clip/level.h>

#include "base/macro.h"

/* The longest canonical text of a level, with its NUL. */
#define LEVEL_FORMAT_MAX (4 + 6 * (CLIP_LEVEL_CATEGORY_MAX + 1) + 1)

/* clip_level_format() into @buf, without allocating; returns the text's length. */
size_t level_format_buf(const struct clip_level *l, char buf[LEVEL_FORMAT_MAX]);

DEFINE_UNREF_CLEANUP(struct clip_level, clip_level_unref)
DEFINE_UNREF_CLEANUP(struct clip_range, clip_range_unref)
DEFINE_UNREF_CLEANUP(struct clip_level_names, clip_level_names_unref)
