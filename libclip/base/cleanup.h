/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cleanup helpers for the public object types, for use inside the library. */
#pragma once

#include <clip/ctx.h>
#include <clip/level.h>

#include "macro.h"

DEFINE_UNREF_CLEANUP(struct clip_level, clip_level_unref)
DEFINE_UNREF_CLEANUP(struct clip_range, clip_range_unref)
DEFINE_UNREF_CLEANUP(struct clip_level_names, clip_level_names_unref)
