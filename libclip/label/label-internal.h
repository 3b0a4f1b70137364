/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * label: tamper-evident file labels (trusted.clip.label, an HMAC bound to
 * the inode) and levels as the MLS part of SELinux contexts. The label
 * value codec is here for the unit tests and the fuzzer.
 *
 * Calls: base keys level lsm
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <clip/level.h>

/* "v1 " LEVEL " " 64 hex digits; the longest value we write or read. */
#define LABEL_VALUE_MAX 4096
#define LABEL_MAC_SIZE 32

/*
 * Decode an attribute value, untrusted: exactly "v1 LEVEL MAC" with LEVEL in
 * canonical form and MAC 64 lowercase hex digits, nothing before or after.
 * Returns 0, or -EBADMSG with a message naming what is wrong.
 */
int label_value_parse(const char *untrusted_value, size_t size, struct clip_level **ret_level,
		      uint8_t ret_mac[LABEL_MAC_SIZE], struct clip_error **reterr);

/* Encode; returns the length written into @out (LABEL_VALUE_MAX bytes). */
int label_value_format(const struct clip_level *level, const uint8_t mac[LABEL_MAC_SIZE],
		       char out[LABEL_VALUE_MAX]);
