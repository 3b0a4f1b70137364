/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cleanup helpers for base's public types, for use inside the library.
 * Each module declares those of its own types beside them (level/level.h).
 */
#pragma once

#include <clip/ctx.h>

#include "macro.h"
