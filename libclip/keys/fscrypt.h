/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A level's data key, and the kernel's filesystem encryption (fscrypt, v2
 * policies) that holds it: what the session module uses to unlock a
 * level's data directory when its first cage starts and to lock it when
 * its last cage stops (doc/data-at-rest.md). The contents and names are
 * encrypted by the kernel, through its ioctls only; the key material given
 * to it is wiped from this process once given.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/ctx-internal.h"

/* The raw key given to the kernel: AES-256-XTS takes 64 bytes. */
#define LEVEL_KEY_SIZE 64
/* The kernel's identifier of a v2 key (FSCRYPT_KEY_IDENTIFIER_SIZE). */
#define FSCRYPT_ID_SIZE 16
/* The user secret's longest form, in bytes. */
#define LEVEL_SECRET_MAX 4096

/*
 * The data key of the level @level (its canonical text): HKDF-SHA512 over
 * the context's key for level data (from its provider's master key, sealed
 * to the TPM with the "tpm" provider) and, when @secret is not NULL,
 * scrypt(@secret) salted per context and level. Neither the disk alone
 * nor the master key alone gives it when a secret is used.
 */
int level_key_derive(struct clip_ctx *ctx, const char *level, const void *secret, size_t n,
		     uint8_t out[LEVEL_KEY_SIZE], struct clip_error **reterr);

/*
 * The policy of the directory @dirfd: 1 with its key identifier in @id
 * when it is a v2 policy with AES-256-XTS contents, AES-256-CTS names and
 * 32-byte padding; 0 when it has no policy; -EKEYREJECTED for any other
 * policy (v1, other modes or flags); -EOPNOTSUPP when the filesystem has
 * no encryption; else -errno.
 */
int fscrypt_get_policy(int dirfd, uint8_t id[FSCRYPT_ID_SIZE]);
/* Give the empty directory @dirfd the v2 policy above with the key @id: 0 or -errno. */
int fscrypt_set_policy(int dirfd, const uint8_t id[FSCRYPT_ID_SIZE]);
/*
 * The identifier the kernel gives @key (HKDF-SHA512, as fs/crypto does),
 * known before the key is added: 0 or -errno.
 */
int fscrypt_key_identifier(const uint8_t key[LEVEL_KEY_SIZE], uint8_t id[FSCRYPT_ID_SIZE]);
/* Add @key to the filesystem of @fd; its identifier in @id: 0 or -errno. */
int fscrypt_add_key(int fd, const uint8_t key[LEVEL_KEY_SIZE], uint8_t id[FSCRYPT_ID_SIZE]);
/*
 * Remove the key @id from the filesystem of @fd: every user's claim when
 * @all_users (CAP_SYS_ADMIN), else the caller's. 0 when removed, 1 when
 * files still open kept their inodes (FILES_BUSY: they stay readable
 * until closed, a new removal evicts them), 2 when other users still
 * claim it, or -errno.
 */
int fscrypt_remove_key(int fd, const uint8_t id[FSCRYPT_ID_SIZE], bool all_users);
/* FSCRYPT_KEY_STATUS_ABSENT, _PRESENT or _INCOMPLETELY_REMOVED of @id on @fd's filesystem, or -errno. */
int fscrypt_key_status(int fd, const uint8_t id[FSCRYPT_ID_SIZE]);
