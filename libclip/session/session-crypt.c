/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The levels' data at rest (doc/data-at-rest.md): each data directory of
 * a cage with DataEncryption=fscrypt is encrypted by the kernel with the
 * key of the cage's level (keys/fscrypt.h). The key is added to the data's
 * filesystem before the first cage of the level starts and removed after
 * the last one stopped or died; removed, the kernel forgets it and every
 * user, root included, sees encrypted names and gets ENOKEY on open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <libgen.h>
#include <linux/fscrypt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <clip/level.h>
#include <clip/session.h>

#include "base/error.h"
#include "base/log.h"
#include "base/test-hooks.h"
#include "base/util.h"
#include "keys/fscrypt.h"
#include "session-internal.h"

/* How long a removal is tried again while files of the level are busy: 5 s. */
#define LOCK_TRIES 500
#define LOCK_TRY_NS (10 * 1000 * 1000)

_Static_assert(sizeof(((struct session_cage *)0)->key_id) == FSCRYPT_ID_SIZE,
	       "a key identifier is FSCRYPT_ID_SIZE bytes");

void
session_secret_free(struct clip_session *s)
{
	if (s->secret)
		secure_wipe(s->secret, s->secret_size);
	free(s->secret);
	s->secret = NULL;
	s->secret_size = 0;
}

CLIP_EXPORT int
clip_session_set_secret(struct clip_session *s, const void *secret, size_t size,
			struct clip_error **reterr)
{
	void *copy = NULL;

	clip_assert_reterr(reterr);
	session_assert_arg(s, reterr, "%s: the session is NULL", __func__);
	ctx_assert_return_error(s->ctx, reterr);
	session_assert_arg(secret ? size > 0 && size <= LEVEL_SECRET_MAX : size == 0, reterr,
			   "%s: a secret is 1 to %d bytes (given %zu)", __func__, LEVEL_SECRET_MAX,
			   size);
	if (s->started)
		return api_return(error_set(reterr, -EBUSY, "session '%s' is started", s->name),
				  reterr);
	if (secret) {
		copy = malloc(size);
		if (!copy)
			return api_return(-ENOMEM, reterr);
		memcpy(copy, secret, size);
	}
	session_secret_free(s);
	s->secret = copy;
	s->secret_size = size;
	return 0;
}

/* Another cage of @s holds the key @c holds, on the same filesystem. */
static bool
key_shared(const struct clip_session *s, const struct session_cage *c)
{
	for (size_t i = 0; i < s->n_cages; i++) {
		const struct session_cage *o = s->cages[i];

		if (o != c && o->key_held && o->key_dev == c->key_dev &&
		    memcmp(o->key_id, c->key_id, FSCRYPT_ID_SIZE) == 0)
			return true;
	}
	return false;
}

/*
 * Remove the key @id from the filesystem of @fd (every user's claim when
 * root: nobody keeps the level open). The cage's mounts go shortly after
 * its processes: the removal is tried again while the kernel says its
 * files are busy, which evicts what they held. 0, 1 (files still open
 * elsewhere: they stay readable until closed), 2 (other users hold it),
 * or -errno: -ENOKEY when it was not there (a reboot since, say).
 */
static int
key_remove_once(int fd, const uint8_t id[FSCRYPT_ID_SIZE])
{
	int r = fscrypt_remove_key(fd, id, geteuid() == 0);

	/* Root of a user namespace: every user's claim needs the host's CAP_SYS_ADMIN. */
	if (r == -EACCES && geteuid() == 0)
		r = fscrypt_remove_key(fd, id, false);
	return r;
}

static int
key_remove(int fd, const uint8_t id[FSCRYPT_ID_SIZE])
{
	int r = key_remove_once(fd, id);

	for (int i = 0; r == 1 && i < LOCK_TRIES; i++) {
		nanosleep(&(struct timespec){ .tv_nsec = LOCK_TRY_NS }, NULL);
		r = key_remove_once(fd, id);
		/* Gone meanwhile: the last busy inode was evicted. */
		if (r == -ENOKEY)
			r = 0;
	}
	return r;
}

/*
 * STATE/keys/DEV-ID, DEV the filesystem's device number, ID the key's
 * identifier, both in hex, holding the path of the directory the key was
 * added through: what the runner added, so that `session down` with no
 * runner left (clip_session_down()) removes what a killed one could not.
 * Neither is secret: the identifier is the kernel's hash of the key.
 */
static void
key_record_name(uint64_t dev, const uint8_t id[FSCRYPT_ID_SIZE], char name[64])
{
	char hex[2 * FSCRYPT_ID_SIZE + 1];

	hex_encode(id, FSCRYPT_ID_SIZE, hex);
	snprintf(name, 64, "%" PRIx64 "-%s", dev, hex);
}

static int
key_record(struct clip_session *s, struct session_cage *c, const char *parent,
	   struct clip_error **reterr)
{
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *text = NULL;
	char name[64];
	int r;

	if (mkdirat(s->state_fd, SESSION_KEYS_DIR, 0700) < 0 && errno != EEXIST)
		return error_set_errno(reterr, -errno, "session '%s': cannot make %s/", s->name,
				       SESSION_KEYS_DIR);
	dir = openat(s->state_fd, SESSION_KEYS_DIR,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return error_set_errno(reterr, -errno, "session '%s': cannot open %s/", s->name,
				       SESSION_KEYS_DIR);
	if (asprintf(&text, "%s\n", parent) < 0)
		return -ENOMEM;
	key_record_name(c->key_dev, c->key_id, name);
	r = write_file_atomic(dir, name, text, strlen(text), 0600, true);
	if (r < 0)
		return error_set_errno(reterr, r, "session '%s': cannot record the key of %s",
				       s->name, c->data_dir);
	return 0;
}

static void
key_unrecord(int state_fd, uint64_t dev, const uint8_t id[FSCRYPT_ID_SIZE])
{
	_cleanup_close_ int dir = -1;
	char name[64];

	dir = openat(state_fd, SESSION_KEYS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return;
	key_record_name(dev, id, name);
	(void)unlinkat(dir, name, 0);
}

void
session_crypt_lock(struct clip_session *s, struct session_cage *c)
{
	int r;

	if (!c->key_held)
		return;
	c->key_held = false;
	if (!key_shared(s, c) && !test_hook_disabled("session-data-lock")) {
		r = key_remove(c->key_fd, c->key_id);
		if (r == -ENOKEY)
			r = 0;
		if (r == 1)
			log_warning(s->ctx,
				    "session '%s': level data of cage '%s' locked, but files in %s "
				    "are still open elsewhere: they stay readable until closed",
				    s->name, c->name, c->data_dir);
		else if (r == 2)
			log_warning(
				s->ctx,
				"session '%s': level data of cage '%s' in %s: other users still "
				"hold its key",
				s->name, c->name, c->data_dir);
		else if (r < 0)
			log_err(s->ctx, "session '%s': cannot lock the data of cage '%s' in %s: %s",
				s->name, c->name, c->data_dir, strerror(-r));
		else
			log_info(s->ctx, "session '%s': data of cage '%s' locked", s->name,
				 c->name);
		/* Removed, or as far as the kernel will: the record has done its work. */
		if (r >= 0 && s->state_fd >= 0)
			key_unrecord(s->state_fd, c->key_dev, c->key_id);
	}
	close(c->key_fd);
	c->key_fd = -1;
}

/* Parse a record's name: 0, or -EINVAL for what this file did not write. */
static int
key_record_parse(const char *name, uint64_t *ret_dev, uint8_t id[FSCRYPT_ID_SIZE])
{
	const char *dash = strchr(name, '-');
	char *end;

	if (!dash || dash == name || strlen(dash + 1) != 2 * FSCRYPT_ID_SIZE)
		return -EINVAL;
	errno = 0;
	*ret_dev = strtoull(name, &end, 16);
	if (errno || end != dash || hex_decode(dash + 1, FSCRYPT_ID_SIZE, id) < 0)
		return -EINVAL;
	return 0;
}

/*
 * One record: its key removed through the directory it names. 1, 0 (not a
 * record's name), or -errno: the record is left, and the log says why.
 */
static int
lock_leftover(struct clip_ctx *ctx, const char *session, int dir, const char *name)
{
	_cleanup_(clip_error_freep) struct clip_error *e = NULL;
	_cleanup_close_ int fd = -1, parent = -1;
	uint8_t id[FSCRYPT_ID_SIZE];
	char path[PATH_MAX + 1];
	struct stat st;
	uint64_t dev;
	ssize_t n;
	int r;

	if (key_record_parse(name, &dev, id) < 0)
		return 0;
	fd = open_regular(dir, name, PATH_MAX, NULL, &e);
	if (fd < 0) {
		log_err(ctx, "session '%s': cannot read the key record %s: %s", session, name,
			clip_error_get_message(e));
		return fd;
	}
	n = read(fd, path, PATH_MAX);
	if (n <= 1 || path[n - 1] != '\n' || path[0] != '/') {
		log_err(ctx, "session '%s': the key record %s is malformed: left alone", session,
			name);
		return -EBADMSG;
	}
	path[n - 1] = '\0';
	/* Walked as at the start: no link, no directory another user controls. */
	parent = dir_open_walk(path, false, "data directory's parent", &e);
	if (parent < 0) {
		log_err(ctx, "session '%s': %s", session, clip_error_get_message(e));
		return parent;
	}
	if (fstat(parent, &st) < 0 || (uint64_t)st.st_dev != dev) {
		log_err(ctx,
			"session '%s': %s is no longer on the filesystem its key was added to: "
			"record %s left alone",
			session, path, name);
		return -EBADMSG;
	}
	r = key_remove(parent, id);
	if (r == -ENOKEY) {
		/* Not there (removed by hand, or the machine restarted since): nothing to lock. */
		log_debug(ctx, "session '%s': the key recorded for %s is gone already", session,
			  path);
		(void)unlinkat(dir, name, 0);
		return 0;
	}
	if (r < 0) {
		log_err(ctx, "session '%s': cannot remove the key of level data under %s: %s",
			session, path, strerror(-r));
		return r;
	}
	log_warning(ctx,
		    "session '%s': level data under %s was left unlocked by a runner that "
		    "is gone: %s",
		    session, path,
		    r == 1   ? "locked, but files are still open elsewhere"
		    : r == 2 ? "its claim removed, but other users still hold the key"
			     : "locked");
	(void)unlinkat(dir, name, 0);
	return 1;
}

int
session_crypt_lock_leftovers(struct clip_ctx *ctx, const char *session, int state_fd)
{
	_cleanup_close_ int dir = -1;
	struct dirent *de;
	DIR *d;
	int n = 0, r = 0;

	dir = openat(state_fd, SESSION_KEYS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return errno == ENOENT ? 0 : -errno;
	d = dir_stream(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int k;

		if (de->d_name[0] == '.')
			continue;
		k = lock_leftover(ctx, session, dir, de->d_name);
		if (k > 0)
			n++;
		else if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	/* One left unlocked is a failure, whatever the others did. */
	return r < 0 ? r : n;
}

/* 1 when the directory @fd has no entry, 0 when it has one, or -errno. */
static int
dir_is_empty(int fd)
{
	DIR *d = dir_stream(fd);
	struct dirent *de;
	int r = 1;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			r = 0;
			break;
		}
	closedir(d);
	return r;
}

/* Check @data against the level's key @id; give it the policy when empty and plain. */
static int
check_policy(struct clip_session *s, struct session_cage *c, int data, const char *level,
	     struct clip_error **reterr)
{
	uint8_t found[FSCRYPT_ID_SIZE];
	bool checked = !test_hook_disabled("session-data-policy");
	int r;

	r = fscrypt_get_policy(data, found);
	if (r == 0) {
		r = dir_is_empty(data);
		if (r < 0)
			return error_set_errno(reterr, r, "session '%s': cannot read %s", s->name,
					       c->data_dir);
		if (r == 0 && test_hook_disabled("session-data-encrypted"))
			return 0;
		if (r == 0)
			return error_set(reterr, -EPERM,
					 "session '%s': data directory %s of cage '%s' is not "
					 "encrypted and not empty: refused (DataEncryption=none in "
					 "its [Cage] keeps it plain)",
					 s->name, c->data_dir, c->name);
		r = fscrypt_set_policy(data, c->key_id);
		if (r < 0)
			return error_set_errno(reterr, r,
					       "session '%s': cannot encrypt data directory %s of "
					       "cage '%s'",
					       s->name, c->data_dir, c->name);
		log_info(s->ctx, "session '%s': data directory %s encrypted with level %s's key",
			 s->name, c->data_dir, level);
		return 0;
	}
	if (r == -EOPNOTSUPP)
		return error_set(reterr, r,
				 "session '%s': data directory %s of cage '%s' is on a filesystem "
				 "without encryption (ext4 needs -O encrypt): refused "
				 "(DataEncryption=none in its [Cage] keeps it plain)",
				 s->name, c->data_dir, c->name);
	if (r == -EKEYREJECTED && checked)
		return error_set(reterr, -EACCES,
				 "session '%s': data directory %s of cage '%s' has an encryption "
				 "policy libclip does not make (v1, or other modes or flags): "
				 "refused",
				 s->name, c->data_dir, c->name);
	if (r < 0 && r != -EKEYREJECTED)
		return error_set_errno(reterr, r,
				       "session '%s': cannot read the encryption policy of %s",
				       s->name, c->data_dir);
	if (r > 0 && memcmp(found, c->key_id, FSCRYPT_ID_SIZE) != 0 && checked)
		return error_set(reterr, -EACCES,
				 "session '%s': data directory %s of cage '%s' is encrypted with "
				 "another key than level %s's (another user secret, another master "
				 "key, or a directory planted there): refused",
				 s->name, c->data_dir, c->name, level);
	return 0;
}

int
session_crypt_unlock(struct clip_session *s, struct session_cage *c, struct clip_error **reterr)
{
	_cleanup_free_ char *copy = strdup(c->data_dir), *copy2 = strdup(c->data_dir),
			    *copy3 = strdup(c->data_dir);
	_cleanup_free_ char *level = NULL;
	_cleanup_close_ int parent = -1, data = -1;
	uint8_t key[LEVEL_KEY_SIZE], kernel_id[FSCRYPT_ID_SIZE];
	struct stat st;
	bool shared;
	int r;

	if (c->data_encryption == CLIP_SESSION_DATA_NONE || c->key_held)
		return 0;
	if (!copy || !copy2 || !copy3 || clip_level_format(c->level, &level) < 0)
		return -ENOMEM;
	parent = dir_open_walk(dirname(copy), false, "data directory's parent", reterr);
	if (parent < 0)
		return parent;
	data = openat(parent, basename(copy2), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (data < 0 || fstat(data, &st) < 0)
		return error_set_errno(reterr, -errno,
				       "session '%s': cannot open data directory %s", s->name,
				       c->data_dir);

	{
		struct stat pst;

		if (fstat(parent, &pst) < 0)
			return error_set_errno(reterr, -errno,
					       "session '%s': cannot stat the parent "
					       "of %s",
					       s->name, c->data_dir);
		/* The key goes to the data's filesystem through the parent, which no cage holds open. */
		if (pst.st_dev != st.st_dev)
			return error_set(
				reterr, -EINVAL,
				"session '%s': data directory %s of cage '%s' is a mount "
				"point: make it a directory within the encrypted filesystem",
				s->name, c->data_dir, c->name);
	}
	r = level_key_derive(s->ctx, level, s->secret, s->secret_size, key, reterr);
	if (r < 0)
		return r;
	/*
	 * Recorded before it is added, under the identifier the kernel will
	 * give it: a crash between the two leaves a record of a key that is
	 * not there, which `session down` drops (-ENOKEY), never a key that
	 * no record names.
	 */
	r = fscrypt_key_identifier(key, c->key_id);
	if (r < 0) {
		secure_wipe(key, sizeof(key));
		return error_set_errno(
			reterr, r, "session '%s': cannot compute the identifier of a key", s->name);
	}
	c->key_dev = (uint64_t)st.st_dev;
	/* Another cage of the level holds it: recorded already, under the directory it used. */
	shared = key_shared(s, c);
	if (!shared && !test_hook_disabled("session-key-record-first")) {
		r = key_record(s, c, dirname(copy3), reterr);
		if (r < 0) {
			secure_wipe(key, sizeof(key));
			return r;
		}
	}
	r = fscrypt_add_key(parent, key, kernel_id);
	secure_wipe(key, sizeof(key));
	if (r == 0 && memcmp(kernel_id, c->key_id, FSCRYPT_ID_SIZE) != 0) {
		/* Not the key recorded (nor another cage's): taken back, so that no key goes unrecorded. */
		(void)key_remove(parent, kernel_id);
		r = error_set(reterr, -EIO,
			      "session '%s': the kernel names the key of level %s otherwise than "
			      "computed: not added",
			      s->name, level);
	} else if (r == -EOPNOTSUPP || r == -ENOTTY)
		r = error_set(reterr, -EOPNOTSUPP,
			      "session '%s': data directory %s of cage '%s' is on a filesystem "
			      "without encryption (ext4 needs -O encrypt): refused "
			      "(DataEncryption=none in its [Cage] keeps it plain)",
			      s->name, c->data_dir, c->name);
	else if (r < 0)
		r = error_set_errno(reterr, r,
				    "session '%s': cannot add the key of level %s for data "
				    "directory %s",
				    s->name, level, c->data_dir);
	if (r < 0) {
		if (!shared && s->state_fd >= 0)
			key_unrecord(s->state_fd, c->key_dev, c->key_id);
		return r;
	}
	if (!shared && test_hook_disabled("session-key-record-first"))
		(void)key_record(s, c, dirname(copy3), NULL);
	c->key_held = true;
	c->key_fd = steal_fd(parent);
	r = check_policy(s, c, data, level, reterr);
	if (r < 0) {
		session_crypt_lock(s, c);
		return r;
	}
	log_info(s->ctx, "session '%s': data of cage '%s' (level %s) unlocked", s->name, c->name,
		 level);
	return 0;
}
