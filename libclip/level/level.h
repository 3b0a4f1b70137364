/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the level module gives the modules above it: cleanups for its types. */
#pragma once

#include <clip/level.h>

#include "base/macro.h"

DEFINE_UNREF_CLEANUP(struct clip_level, clip_level_unref)
DEFINE_UNREF_CLEANUP(struct clip_range, clip_range_unref)
DEFINE_UNREF_CLEANUP(struct clip_level_names, clip_level_names_unref)
