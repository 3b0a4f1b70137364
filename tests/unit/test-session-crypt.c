/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The levels' data at rest (doc/data-at-rest.md), shown on an ext4 of its
 * own with -O encrypt, loop-mounted in the test's private directory: after
 * the last cage of a level stops (or dies, or the start fails), root sees
 * encrypted names and ENOKEY, and the raw image holds no plaintext; the
 * next start gives the data back byte for byte, with the right key only
 * (not another user secret, not another master key); a plain directory, a
 * filesystem without encryption and a directory planted with another key
 * are refused; a runner killed halfway leaves the key in the kernel, and
 * the next start and stop remove it. Root only: it mounts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fscrypt.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <clip/session.h>

#include "base/util.h"
#include "helpers.h"
#include "keys/fscrypt.h"
#include "session/session-internal.h"

#define MARKER "clip-at-rest-marker-4c1b9e"
#define CONTROL "clip-plain-control-marker-88d2"

static char *tmp; /* the test's private directory: img, mnt, ctx, ctx2, state */
static char mnt[600], img[600];
static bool mounted;
static struct clip_session *live[4];

static void
drop_sessions(void)
{
	for (size_t i = 0; i < ELEMENTSOF(live); i++)
		live[i] = clip_session_unref(live[i]);
}

/* Every path out: the sessions stop (their cages hold the data), the image is unmounted. */
static void
cleanup(void)
{
	char cmd[1300];

	drop_sessions();
	if (mounted) {
		/* -d: the loop device goes with the mount. */
		snprintf(cmd, sizeof(cmd), "umount -d '%s' || umount -l -d '%s'", mnt, mnt);
		if (system(cmd) == 0)
			mounted = false;
	}
	if (img[0])
		(void)unlink(img);
}

TestSuite(session_crypt, .fini = cleanup);

static bool key_record(char name[256]);

static bool
fscrypt_here(void)
{
	return access("/sys/fs/ext4/features/encryption", F_OK) == 0;
}

static struct clip_ctx *
ctx_at(const char *name)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	return test_ctx(path);
}

/* A fresh 64 MiB ext4 with -O encrypt, mounted at mnt; the context of tmp/ctx. */
static struct clip_ctx *
setup(void)
{
	char cmd[2600];

	if (!test_is_root())
		cr_skip_test("root only: the test mounts an ext4 image");
	if (!fscrypt_here())
		cr_skip_test("the kernel's ext4 has no encryption (CONFIG_FS_ENCRYPTION)");
	if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload"))
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	/* A mount namespace of the test's own: the image's mount is seen by no
	   namespace made meanwhile, and goes with the test's process. */
	cr_assert_eq(unshare(CLONE_NEWNS), 0);
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	tmp = test_tmpdir("tmpfs");
	atexit(cleanup); /* after test_tmpdir's: runs before the directory goes */
	snprintf(img, sizeof(img), "%s/img", tmp);
	snprintf(mnt, sizeof(mnt), "%s/mnt", tmp);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	snprintf(cmd, sizeof(cmd),
		 "truncate -s 64M '%s' && mkfs.ext4 -q -O encrypt '%s' && mount -o loop '%s' '%s'",
		 img, img, img, mnt);
	cr_assert_eq(system(cmd), 0, "cannot make the ext4 image: %s", cmd);
	mounted = true;
	return ctx_at("ctx");
}

struct cage_spec {
	const char *name, *level, *data; /* data: a path under mnt, or absolute */
	int encryption;
};

/* A session (slot @slot of live[]) of @n cages, its state in tmp/state. */
static struct clip_session *
session_make(int slot, struct clip_ctx *ctx, const struct cage_spec *cages, size_t n,
	     const char *secret)
{
	struct clip_session *s = NULL;
	char path[700];

	cr_assert_eq(clip_session_new(&s, ctx, "crypt", NULL), 0);
	live[slot] = s;
	snprintf(path, sizeof(path), "%s/state", tmp);
	cr_assert_eq(clip_session_set_state_dir(s, path, NULL), 0);
	for (size_t i = 0; i < n; i++) {
		struct clip_level *l = test_level(cages[i].level);
		struct clip_session_cage c = {
			.size = sizeof(c),
			.name = cages[i].name,
			.level = l,
			.data_dir = path,
			.data_encryption = cages[i].encryption,
		};
		struct clip_error *e = NULL;

		if (cages[i].data[0] == '/')
			snprintf(path, sizeof(path), "%s", cages[i].data);
		else
			snprintf(path, sizeof(path), "%s/%s", mnt, cages[i].data);
		cr_assert_eq(clip_session_add_cage(s, &c, &e), 0, "%s",
			     e ? clip_error_get_message(e) : "");
		clip_level_unref(l);
	}
	if (secret)
		cr_assert_eq(clip_session_set_secret(s, secret, strlen(secret), NULL), 0);
	return s;
}

/* Give mnt/@sub (and what it holds) to the uid base the session chose for @cage. */
static void
give_to_cage(struct clip_session *s, const char *cage, const char *sub)
{
	char cmd[900];
	uint32_t base;

	cr_assert_eq(clip_session_check(s, NULL), 0);
	base = clip_cage_profile_get_uid_base(session_find_cage(s, cage)->profile);
	snprintf(cmd, sizeof(cmd), "chown -R %u:%u '%s/%s'", base, base, mnt, sub);
	cr_assert_eq(system(cmd), 0);
}

static void
start_ok(struct clip_session *s)
{
	struct clip_error *e = NULL;
	int r = clip_session_start(s, 0, &e);

	cr_assert_eq(r, 0, "start: %d %s", r, e ? clip_error_get_message(e) : "");
}

/* The start is refused with @err and a message holding @what. */
static void
start_refused(struct clip_session *s, int err, const char *what)
{
	struct clip_error *e = NULL;
	int r = clip_session_start(s, 0, &e);

	cr_assert_eq(r, err, "start: got %d (%s), want %d", r, e ? clip_error_get_message(e) : "",
		     err);
	cr_assert(e && strstr(clip_error_get_message(e), what), "message '%s' lacks '%s'",
		  e ? clip_error_get_message(e) : "", what);
	clip_error_free(e);
}

static void
stop(int slot)
{
	cr_assert_eq(clip_session_stop(live[slot], 0, NULL), 0);
	live[slot] = clip_session_unref(live[slot]);
}

/* Run @script in @cage and return its exit status. */
static int
run_in(struct clip_session *s, const char *cage, const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_error *e = NULL;
	int pidfd = -1, status = -1;

	cr_assert_eq(clip_session_spawn(s, cage, &o, &pidfd, &e), 0, "spawn: %s",
		     e ? clip_error_get_message(e) : "");
	cr_assert_eq(clip_cage_wait_process(clip_session_get_cage(s, cage), pidfd, &status), 0);
	close(pidfd);
	return status;
}

static int
open_dir(const char *sub)
{
	char path[700];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mnt, sub);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0, "%s: %m", path);
	return fd;
}

/* mnt/@sub made, 0700, plain: holding @name (@content) unless @name is NULL. */
static void
plain_dir(const char *sub, const char *name, const char *content)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%s", mnt, sub);
	cr_assert_eq(mkdir(path, 0700), 0, "%s: %m", path);
	if (name)
		close(test_file(path, name, content));
}

/* The kernel's status of the key of the directory mnt/@sub. */
static int
key_status(const char *sub)
{
	uint8_t id[FSCRYPT_ID_SIZE];
	int fd = open_dir(sub), m = open_dir("."), r;

	cr_assert_eq(fscrypt_get_policy(fd, id), 1, "%s has no policy of libclip's", sub);
	r = fscrypt_key_status(m, id);
	close(fd);
	close(m);
	return r;
}

/* The one entry of mnt/@sub (besides . and ..), in @name. */
static void
only_entry(const char *sub, char *name, size_t size)
{
	DIR *d = fdopendir(open_dir(sub));
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			snprintf(name, size, "%s", de->d_name);
			n++;
		}
	closedir(d);
	cr_assert_eq(n, 1, "%s holds %d entries", sub, n);
}

/* Whether the raw image holds @text, after a syncfs of the mount. */
static bool
image_holds(const char *text)
{
	int m = open_dir(".");
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;
	FILE *f;

	cr_assert_eq(syncfs(m), 0);
	close(m);
	f = fopen(img, "re");
	cr_assert_not_null(f);
	buf = malloc(64u << 20);
	cr_assert_not_null(buf);
	n = fread(buf, 1, 64u << 20, f);
	fclose(f);
	return memmem(buf, n, text, strlen(text)) != NULL;
}

/* Read mnt/@sub/@name as root: its bytes in @out, or -errno. */
static int
read_host(const char *sub, const char *name, char *out, size_t size)
{
	char path[900];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", mnt, sub, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, out, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	out[n] = '\0';
	return (int)n;
}

static const struct cage_spec low = { "low", "s0", "low", CLIP_SESSION_DATA_FSCRYPT };

/* A session of cage low writes MARKER to /data/plans.txt, and stops. */
static void
write_marker(struct clip_ctx *ctx, const char *secret)
{
	struct clip_session *s = session_make(0, ctx, &low, 1, secret);

	start_ok(s);
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_PRESENT);
	cr_assert_eq(run_in(s, "low", "echo " MARKER " >/data/plans.txt"), 0);
	stop(0);
}

/*
 * The identifier of a key, computed here as fs/crypto computes it, against
 * a value from another implementation of RFC 5869 (Python's hmac module:
 * HKDF-SHA512, salt 64 zero bytes, info "fscrypt\0" and context 1, 16
 * bytes of the key 00 01 ... 3f). Runs everywhere; the tests that mount
 * compare it with the kernel's.
 */
Test(session_crypt, the_key_identifier_is_the_kernel_s_hkdf)
{
	uint8_t key[LEVEL_KEY_SIZE], id[FSCRYPT_ID_SIZE];
	char hex[2 * FSCRYPT_ID_SIZE + 1];

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	cr_assert_eq(fscrypt_key_identifier(key, id), 0);
	hex_encode(id, sizeof(id), hex);
	cr_assert_str_eq(hex, "8699c2c53707405da5aba5ae4d8583c0");
}

Test(session_crypt, a_stopped_level_is_unreadable_to_root_and_back_after_a_start)
{
	struct clip_ctx *ctx;
	struct clip_session *s;
	char name[300], buf[256];
	int fd;

	ctx = setup();
	write_marker(ctx, NULL);
	/* Locked: the key is gone, names are encrypted, contents ENOKEY, to root. */
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_ABSENT);
	only_entry("low", name, sizeof(name));
	cr_assert_str_neq(name, "plans.txt", "the name is readable after the stop");
	cr_assert_eq(read_host("low", name, buf, sizeof(buf)), -ENOKEY);
	cr_assert_eq(read_host("low", "plans.txt", buf, sizeof(buf)), -ENOENT);
	/* The raw image: the plaintext written beside it is found, the level's is not. */
	fd = test_file(mnt, "plain.txt", CONTROL "\n");
	close(fd);
	cr_assert(image_holds(CONTROL), "the scan of the image does not see what is written");
	cr_assert(!image_holds(MARKER), "the level's plaintext is in the raw image");

	/* Started again: the data is back, byte for byte, to the cage and to root. */
	s = session_make(1, ctx, &low, 1, NULL);
	start_ok(s);
	cr_assert_eq(read_host("low", "plans.txt", buf, sizeof(buf)), (int)strlen(MARKER "\n"));
	cr_assert_str_eq(buf, MARKER "\n");
	cr_assert_eq(run_in(s, "low", "test \"$(cat /data/plans.txt)\" = " MARKER), 0);
	stop(1);
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_ABSENT);
	clip_ctx_unref(ctx);
}

Test(session_crypt, another_user_secret_does_not_open_the_level)
{
	struct clip_ctx *ctx;
	struct clip_session *s;
	char name[300], buf[256];

	ctx = setup();
	write_marker(ctx, "correct horse");
	/* The same master key, another secret or none: refused, still locked. */
	s = session_make(1, ctx, &low, 1, "wrong horse");
	start_refused(s, -EACCES, "/mnt/low of cage 'low' is encrypted with another key");
	s = session_make(2, ctx, &low, 1, NULL);
	start_refused(s, -EACCES, "another key than level s0's");
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_ABSENT);
	only_entry("low", name, sizeof(name));
	cr_assert_str_neq(name, "plans.txt");
	/* The right one opens it. */
	s = session_make(3, ctx, &low, 1, "correct horse");
	start_ok(s);
	cr_assert_gt(read_host("low", "plans.txt", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, MARKER "\n");
	stop(3);
	clip_ctx_unref(ctx);
}

Test(session_crypt, another_master_key_does_not_open_the_level)
{
	struct clip_ctx *ctx, *other;
	struct clip_session *s;

	ctx = setup();
	write_marker(ctx, "correct horse");
	/* The disk and the secret, without the context's master key: nothing opens. */
	other = ctx_at("ctx-other");
	s = session_make(1, other, &low, 1, "correct horse");
	start_refused(s, -EACCES, "another master key");
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_ABSENT);
	clip_ctx_unref(other);
	clip_ctx_unref(ctx);
}

Test(session_crypt, a_plain_data_directory_is_refused_unless_said)
{
	static const struct cage_spec plain = { "low", "s0", "low", CLIP_SESSION_DATA_NONE };
	struct clip_ctx *ctx;
	struct clip_session *s;
	char buf[64];

	ctx = setup();
	plain_dir("low", "old.txt", "plain\n");
	s = session_make(0, ctx, &low, 1, NULL);
	give_to_cage(s, "low", "low");
	start_refused(s, -EPERM, "data directory ");
	start_refused(s, -EPERM, "/mnt/low of cage 'low' is not encrypted and not empty");
	/* Said explicitly: taken as it is, plain. */
	live[0] = clip_session_unref(live[0]);
	s = session_make(1, ctx, &plain, 1, NULL);
	give_to_cage(s, "low", "low");
	start_ok(s);
	stop(1);
	cr_assert_gt(read_host("low", "old.txt", buf, sizeof(buf)), 0);
	clip_ctx_unref(ctx);
}

Test(session_crypt, a_filesystem_without_encryption_is_refused)
{
	struct clip_ctx *ctx;
	struct clip_session *s;
	char path[700], name[256];
	struct cage_spec onfs = low;

	ctx = setup();
	/* The test's directory is a tmpfs: no fscrypt there. */
	snprintf(path, sizeof(path), "%s/plain-low", tmp);
	onfs.data = path;
	s = session_make(0, ctx, &onfs, 1, NULL);
	start_refused(s, -EOPNOTSUPP, "on a filesystem without encryption");
	/* Recorded before the add, the record goes with the refusal. */
	cr_assert_not(key_record(name), "a key record is left: %s", name);
	clip_ctx_unref(ctx);
}

Test(session_crypt, a_directory_planted_with_another_key_is_refused)
{
	uint8_t key[LEVEL_KEY_SIZE], id[FSCRYPT_ID_SIZE];
	struct clip_ctx *ctx;
	struct clip_session *s;
	int m, d;

	ctx = setup();
	/* Whoever could write there made the directory, encrypted with a key they hold. */
	memset(key, 0x5a, sizeof(key));
	m = open_dir(".");
	cr_assert_eq(fscrypt_add_key(m, key, id), 0);
	plain_dir("low", NULL, NULL);
	d = open_dir("low");
	cr_assert_eq(fscrypt_set_policy(d, id), 0);
	close(d);
	s = session_make(0, ctx, &low, 1, NULL);
	/* Even given to the cage's uid: whoever planted it could. */
	give_to_cage(s, "low", "low");
	start_refused(s, -EACCES, "a directory planted there");
	/* The planted key is theirs: removed here so that nothing stays. */
	cr_assert_geq(fscrypt_remove_key(m, id, true), 0);
	close(m);
	clip_ctx_unref(ctx);
}

static void
on_event(struct clip_session *s, int event, const char *cage, int status, void *userdata)
{
	(void)s, (void)cage, (void)status;
	if (event == CLIP_SESSION_EVENT_CAGE_ENDED)
		(*(int *)userdata)++;
}

Test(session_crypt, the_level_locks_with_its_last_cage_even_one_that_dies)
{
	static const struct cage_spec two[] = {
		{ "a", "s0", "a", CLIP_SESSION_DATA_FSCRYPT },
		{ "b", "s0", "b", CLIP_SESSION_DATA_FSCRYPT },
	};
	struct clip_ctx *ctx;
	struct clip_session *s;
	int *pids = NULL, ended = 0;
	size_t n = 0;

	ctx = setup();
	s = session_make(0, ctx, two, 2, NULL);
	start_ok(s);
	cr_assert_eq(key_status("a"), FSCRYPT_KEY_STATUS_PRESENT);
	/* One key for the level: both directories under it. */
	cr_assert_eq(key_status("b"), FSCRYPT_KEY_STATUS_PRESENT);
	cr_assert_eq(clip_session_set_event_fn(s, on_event, &ended), 0);
	for (int i = 0; i < 2; i++) {
		long long end = now_ms() + 10000;

		cr_assert_eq(clip_cage_get_pids(clip_session_get_cage(s, two[i].name), &pids, &n),
			     0);
		cr_assert_eq(kill(pids[0], SIGKILL), 0);
		free(pids);
		pids = NULL;
		/* Dispatch until the session saw the end. */
		while (ended < i + 1) {
			struct pollfd p = { .fd = clip_session_get_fd(s), .events = POLLIN };

			cr_assert_lt(now_ms(), end, "the session never saw cage %s die",
				     two[i].name);
			(void)poll(&p, 1, 100);
			while (clip_session_dispatch(s, NULL) > 0)
				;
		}
		/* The first death leaves the level open for the other cage; the last locks it. */
		cr_assert_eq(key_status("a"),
			     i == 0 ? FSCRYPT_KEY_STATUS_PRESENT : FSCRYPT_KEY_STATUS_ABSENT,
			     "after cage %s died", two[i].name);
	}
	stop(0);
	clip_ctx_unref(ctx);
}

Test(session_crypt, a_failed_start_leaves_no_level_unlocked)
{
	static const struct cage_spec two[] = {
		{ "a", "s0", "a", CLIP_SESSION_DATA_FSCRYPT },
		{ "b", "s2", "b", CLIP_SESSION_DATA_FSCRYPT },
	};
	struct clip_ctx *ctx;
	struct clip_session *s;

	ctx = setup();
	/* b's directory is plain and holds a file: refused, after a was unlocked. */
	plain_dir("b", "x", "x\n");
	/* a's is there (empty), so that the failed start leaves it. */
	plain_dir("a", NULL, NULL);
	s = session_make(0, ctx, two, 2, NULL);
	give_to_cage(s, "a", "a");
	give_to_cage(s, "b", "b");
	start_refused(s, -EPERM, "/mnt/b of cage 'b' is not encrypted");
	cr_assert_eq(key_status("a"), FSCRYPT_KEY_STATUS_ABSENT, "a failed start left a unlocked");
	clip_ctx_unref(ctx);
}

/* A runner of session "crypt" (cage low, state in tmp/state) started, then killed with SIGKILL. */
static void
killed_runner(void)
{
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The runner: starts, then is killed with its cages running. No
		   Criterion call here: this process is not the test's. */
		struct clip_level *l = NULL;
		struct clip_session_cage c = { .size = sizeof(c), .name = "low" };
		struct clip_session *s = NULL;
		struct clip_ctx *ctx = NULL;
		char path[700];

		snprintf(path, sizeof(path), "%s/ctx", tmp);
		if (clip_ctx_new(&ctx) < 0 || clip_ctx_set_state_dir(ctx, path) < 0 ||
		    clip_session_new(&s, ctx, "crypt", NULL) < 0 ||
		    clip_level_parse(&l, "s0", NULL) < 0)
			_exit(1);
		snprintf(path, sizeof(path), "%s/state", tmp);
		if (clip_session_set_state_dir(s, path, NULL) < 0)
			_exit(1);
		snprintf(path, sizeof(path), "%s/low", mnt);
		c.level = l;
		c.data_dir = path;
		if (clip_session_add_cage(s, &c, NULL) < 0 || clip_session_start(s, 0, NULL) < 0)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %d", status);
	/* The key is the filesystem's, not the process's: it outlives the runner. */
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_PRESENT);
}

/* A session of cage low started and stopped. */
static void
stop_after_start(struct clip_ctx *ctx)
{
	start_ok(session_make(1, ctx, &low, 1, NULL));
	stop(1);
}

Test(session_crypt, a_runner_killed_halfway_leaves_the_key_until_the_next_start_and_stop)
{
	struct clip_ctx *ctx = setup();

	killed_runner();
	/* The next start stops the leftover cage and takes the level over; its stop locks it. */
	stop_after_start(ctx);
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_ABSENT);
	clip_ctx_unref(ctx);
}

/* The one record of tmp/state/keys, in @name; false when there is none. */
static bool
key_record(char name[256])
{
	char path[700];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/state/keys", tmp);
	d = opendir(path);
	if (!d)
		return false;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			cr_assert_not(found, "two key records");
			snprintf(name, 256, "%s", de->d_name);
			found = true;
		}
	closedir(d);
	return found;
}

/*
 * The FS_IOC_ADD_ENCRYPTION_KEY of a start, seen from inside while @on:
 * whether the key's record was on disk already (its name in @before), and
 * the identifier the kernel gave the key.
 */
static struct {
	bool on;
	unsigned adds;
	bool recorded_first;
	char before[256];
	uint8_t id[FSCRYPT_ID_SIZE];
	bool lie; /* the identifier the kernel gives is changed on its way back */
	unsigned removes; /* of the key by that changed identifier */
} add_probe;

int
ioctl(int fd, unsigned long request, ...)
{
	bool probe = add_probe.on && request == FS_IOC_ADD_ENCRYPTION_KEY;
	va_list ap;
	void *arg;
	int r;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	/* The identifier changed on its way back names the key it came from. */
	if (add_probe.lie && (request == FS_IOC_REMOVE_ENCRYPTION_KEY ||
			      request == FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS)) {
		uint8_t *id = ((struct fscrypt_remove_key_arg *)arg)->key_spec.u.identifier;
		uint8_t lied[FSCRYPT_ID_SIZE];

		memcpy(lied, add_probe.id, FSCRYPT_ID_SIZE);
		lied[0] ^= 1;
		if (memcmp(id, lied, FSCRYPT_ID_SIZE) == 0) {
			add_probe.removes++;
			id[0] ^= 1;
		}
	}
	if (probe) {
		add_probe.adds++;
		add_probe.recorded_first = key_record(add_probe.before);
	}
	r = (int)syscall(SYS_ioctl, fd, request, arg);
	if (probe && r == 0) {
		uint8_t *id = ((struct fscrypt_add_key_arg *)arg)->key_spec.u.identifier;

		memcpy(add_probe.id, id, FSCRYPT_ID_SIZE);
		if (add_probe.lie)
			id[0] ^= 1;
	}
	return r;
}

/*
 * A key's record is written before the key is added, under the identifier
 * the kernel then gives it: a runner killed between the two leaves a
 * record `down` drops, never a key that no record names (test hook
 * "session-key-record-first").
 */
Test(session_crypt, a_key_is_recorded_under_the_kernel_s_identifier_before_it_is_added)
{
	struct clip_ctx *ctx = setup();
	struct clip_session *s = session_make(0, ctx, &low, 1, NULL);
	uint8_t id[FSCRYPT_ID_SIZE];

	add_probe.on = true;
	start_ok(s);
	add_probe.on = false;
	cr_assert_eq(add_probe.adds, 1);
	cr_assert(add_probe.recorded_first, "the key was added before its record was written");
	cr_assert_eq(hex_decode(strchr(add_probe.before, '-') + 1, FSCRYPT_ID_SIZE, id), 0);
	cr_assert_eq(memcmp(id, add_probe.id, FSCRYPT_ID_SIZE), 0,
		     "the record names another key than the kernel's");
	stop(0);
	cr_assert_not(key_record(add_probe.before), "the record outlives the stop");
	clip_ctx_unref(ctx);
}

/*
 * A key the kernel names otherwise than computed is not taken as the
 * level's: the start fails, the key is taken back by the name the kernel
 * gave it, and no record is left (the kernel here only seems to: the
 * answer is changed on its way back, and that name is changed back on its
 * way to the removal).
 */
Test(session_crypt, a_key_the_kernel_names_otherwise_fails_the_start_and_leaves_no_record)
{
	struct clip_ctx *ctx = setup();
	struct clip_session *s = session_make(0, ctx, &low, 1, NULL);
	char name[256];
	int m;

	add_probe = (__typeof__(add_probe)){ .on = true, .lie = true };
	start_refused(s, -EIO, "names the key of level s0 otherwise than computed");
	add_probe.on = false;
	cr_assert_not(key_record(name), "a key record is left: %s", name);
	cr_assert_geq(add_probe.removes, 1, "the key was not taken back");
	m = open_dir(".");
	cr_assert_eq(fscrypt_key_status(m, add_probe.id), FSCRYPT_KEY_STATUS_ABSENT,
		     "the key the kernel named otherwise is still there");
	close(m);
	clip_ctx_unref(ctx);
}

/*
 * clip_session_down() with no runner left: the cage it left stopped, the
 * key it recorded removed, the level locked; not while another process
 * holds the state directory's lock; nothing left the second time.
 */
Test(session_crypt, down_takes_a_killed_runner_s_cage_and_locks_its_level)
{
	struct clip_ctx *ctx = setup();
	struct clip_cage *cage = NULL;
	struct clip_error *e = NULL;
	char state[700], name[256], buf[64];
	int fd, r;

	killed_runner();
	cr_assert(key_record(name), "the runner recorded no key");
	snprintf(state, sizeof(state), "%s/state", tmp);

	/* Another state directory, none there: not this session's cages, whatever their names. */
	assert_errno(clip_session_down(ctx, "crypt", "/nonexistent/state", &e), -ESRCH);
	e = clip_error_free(e);
	cr_assert_eq(clip_cage_attach(&cage, ctx, "crypt.low", NULL), 0,
		     "down through another state directory stopped the cage");
	cage = clip_cage_unref(cage);
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_PRESENT);

	/* A runner starting holds the lock: down waits for nobody and touches nothing. */
	fd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	assert_errno(clip_session_down(ctx, "crypt", state, &e), -EBUSY);
	cr_assert(strstr(clip_error_get_message(e), "does not answer"), "%s",
		  clip_error_get_message(e));
	e = clip_error_free(e);
	close(fd);
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_PRESENT);

	r = clip_session_down(ctx, "crypt", state, &e);
	cr_assert_eq(r, 1, "down: %d %s", r, e ? clip_error_get_message(e) : "");
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_ABSENT);
	cr_assert_eq(read_host("low", "anything", buf, sizeof(buf)), -ENOENT);
	cr_assert_neq(clip_cage_attach(&cage, ctx, "crypt.low", NULL), 0,
		      "the killed runner's cage is still registered");
	cr_assert_not(key_record(name), "the record of a removed key is left");

	assert_errno(clip_session_down(ctx, "crypt", state, &e), -ESRCH);
	cr_assert(strstr(clip_error_get_message(e), "no runner left anything"), "%s",
		  clip_error_get_message(e));
	e = clip_error_free(e);
	/* The arguments, as every client of a session checks them. */
	assert_errno(clip_session_down(ctx, "a/b", state, NULL), -EINVAL);
	assert_errno(clip_session_down(ctx, "crypt", "relative", NULL), -EINVAL);
	clip_ctx_unref(ctx);
}

/*
 * A record is the state directory's, root's, but what it names is walked
 * as a start walks it: a directory reached through a symbolic link, or on
 * another filesystem than the key's, is not where the key is removed.
 */
Test(session_crypt, down_leaves_a_key_record_that_leads_elsewhere)
{
	static const char *const elsewhere[] = { "link", "/" };
	struct clip_ctx *ctx = setup();
	struct clip_cage *cage = NULL;
	struct clip_error *e = NULL;
	char state[700], name[256], path[1000], link[700], text[800];
	int r;

	snprintf(state, sizeof(state), "%s/state", tmp);
	snprintf(link, sizeof(link), "%s/link", tmp);
	cr_assert_eq(symlink(mnt, link), 0);
	for (size_t i = 0; i < ELEMENTSOF(elsewhere); i++) {
		int fd;

		killed_runner();
		cr_assert(key_record(name));
		snprintf(path, sizeof(path), "%s/keys/%s", state, name);
		snprintf(text, sizeof(text), "%s\n",
			 strcmp(elsewhere[i], "link") == 0 ? link : "/");
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
		close(fd);
		/* The cage is stopped; the key stays, and so does its record: down says so. */
		r = clip_session_down(ctx, "crypt", state, &e);
		cr_assert_lt(r, 0, "through %s: %d", elsewhere[i], r);
		cr_assert(strstr(clip_error_get_message(e), "could not all be taken down"), "%s",
			  clip_error_get_message(e));
		e = clip_error_free(e);
		cr_assert_neq(clip_cage_attach(&cage, ctx, "crypt.low", NULL), 0,
			      "the killed runner's cage is still registered");
		cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_PRESENT, "through %s",
			     elsewhere[i]);
		cr_assert(key_record(name), "the record was dropped");
		/* Put right: a start and a stop lock it (and drop the record). */
		stop_after_start(ctx);
		cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_ABSENT);
	}
	clip_ctx_unref(ctx);
}

/* A record whose key is gone already (removed by hand, a reboot since): dropped, nothing locked. */
Test(session_crypt, down_drops_the_record_of_a_key_gone_already)
{
	struct clip_ctx *ctx = setup();
	uint8_t id[FSCRYPT_ID_SIZE];
	char state[700], name[256];
	int m;

	killed_runner();
	cr_assert(key_record(name));
	cr_assert_eq(hex_decode(strchr(name, '-') + 1, FSCRYPT_ID_SIZE, id), 0);
	m = open_dir(".");
	cr_assert_geq(fscrypt_remove_key(m, id, true), 0);
	close(m);
	cr_assert_eq(key_status("low"), FSCRYPT_KEY_STATUS_ABSENT);
	snprintf(state, sizeof(state), "%s/state", tmp);
	/* The cage it left is stopped: 1; the record goes without a word of locking. */
	cr_assert_eq(clip_session_down(ctx, "crypt", state, NULL), 1);
	cr_assert_not(key_record(name), "the record of a key gone already is left");
	clip_ctx_unref(ctx);
}
