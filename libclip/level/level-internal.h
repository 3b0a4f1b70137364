/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * level: sensitivities and categories in SELinux MCS syntax, dominance,
 * join and meet, ranges, setrans-style names. Pure: no I/O, no state but
 * the objects it returns; everything it offers is public (clip/level.h)
 * but the allocation-free formatter the label module verifies with (level.h).
 *
 * Calls: base
 */
#pragma once

#include "level.h"
