/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the Criterion tests of every suite (tests/common/). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <clip/clip.h>

#include "base/macro.h"

/* The unprivileged identity tests switch to. */
#define TEST_UID 65534
#define TEST_GID 65534

/*
 * A fresh directory on a file system of the given type ("tmpfs", "ext4"),
 * removed with everything in it at exit. The test is skipped, with the
 * reason, when no such file system is writable here.
 */
char *test_tmpdir(const char *fstype);

/* A context logging into the test's output, state in @state_dir. */
struct clip_ctx *test_ctx(const char *state_dir);

/* Create @dir/@name with @content; returns an O_RDONLY fd. */
int test_file(const char *dir, const char *name, const char *content);

/* Drop to TEST_UID/TEST_GID for good (call in a child); root only (test_is_root()). */
void test_drop_privileges(void);

/*
 * Run @fn in a child process as TEST_UID and return its exit status
 * (the status of _exit(), or 128 + signal).
 */
int test_run_unprivileged(int (*fn)(void *), void *userdata);

/*
 * Enter a private mount namespace (for a child: it cannot be left). Not
 * root, in a user namespace of its own first, whose uid and gid 0 are the
 * caller's. Returns 0, 77 when no user namespace can be made here, or the
 * step that failed: 90 setgroups, 91 uid_map, 92 gid_map, 93 the mount
 * namespace (root), 94 the private propagation.
 */
int test_unshare_mount(void);

/*
 * Whether this is root of the host: uid 0 in the initial user namespace.
 * uid 0 of a container's user namespace (unshare -Urm, rootless podman)
 * has no trusted.* attributes, no other uid to switch or chown to: the
 * tests take their unprivileged paths there.
 */
bool test_is_root(void);

/* @text parsed as a level, or the test fails with the parser's message. */
struct clip_level *test_level(const char *text);

/* @text parsed as a policy named "test.policy", or the test fails. */
struct clip_policy *test_policy(const char *text);

/*
 * Turn the kernel's audit on or off (AUDIT_SET, the host's root only):
 * the previous state (0 or 1), or a negative errno. Landlock's denials
 * reach a launcher only while it is on; a test that turns it on turns it
 * back as it was (test_audit_set(previous)) in its .fini.
 */
int test_audit_set(int enabled);

/* Whether the directory @dfd has no entry but "." and "..". */
bool test_dir_is_empty(int dfd);

/* cr_assert for a negative errno with the errno's name in the message. */
#define assert_errno(expr, err) \
	do { \
		int _r = (expr); \
		cr_assert_eq(_r, (err), "%s: got %d (%s), want %d (%s)", #expr, _r, \
			     _r < 0 ? strerror(-_r) : "success", (err), strerror(-(err))); \
	} while (0)
