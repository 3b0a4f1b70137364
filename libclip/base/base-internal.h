/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * base: what every module stands on. The library context (ctx-internal.h),
 * errors (error.h), logging through the context's handler (log.h), small
 * helpers (util.h, macro.h), dlopen() of optional libraries
 * (dl.h), libcrypto loaded when used (crypto.h) and strict UTF-8 (utf8.h).
 * Unlike the other modules' private headers, base's are for every module:
 * this one includes them all.
 *
 * Calls:
 */
#pragma once

#include "crypto.h"
#include "ctx-internal.h"
#include "dl.h"
#include "error.h"
#include "log.h"
#include "macro.h"
#include "utf8.h"
#include "util.h"
