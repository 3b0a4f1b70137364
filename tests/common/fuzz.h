/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libFuzzer entry point every fuzz-*.c defines; fuzz-main.c calls it
 * when the fuzzers are built as corpus replayers.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
