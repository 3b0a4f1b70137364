/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The BPF LSM's user-space half (doc/lsm.md). The programs come from the
 * skeleton built from clip-lsm.bpf.c; they are attached and pinned, with
 * their maps, under CLIP_LSM_PIN_DIR, which outlives the loader: every
 * launcher of cages then only opens the pinned maps to register in them.
 *
 * What is pinned is the state: the links first, the map of the cages'
 * processes last, so that its pin says the LSM is whole (lsm_active());
 * unloading removes it first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>

#include <clip/level.h>
#include <clip/lsm.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/util.h"
#include "lsm-internal.h"
#include "lsm-skel.h"

#define BPFFS "/sys/fs/bpf"
#define PIN(name) CLIP_LSM_PIN_DIR "/" name

DEFINE_UNREF_CLEANUP(struct clip_lsm, clip_lsm__destroy)

/* libbpf writes its messages to stderr unless told otherwise: not from a library. */
static int
libbpf_quiet(enum libbpf_print_level level, const char *format, va_list args)
{
	return 0;
}

bool
lsm_active(void)
{
	struct stat st;

	return stat(PIN(LSM_MAP_TASKS), &st) == 0;
}

/*
 * lsm_active_recently()'s answer and until when it holds
 * (CLOCK_MONOTONIC_COARSE, ns), in one word so that they change together:
 * the answer in the lowest bit. A forget bumps the generation, so that a
 * thread that asked before it cannot store its stale answer after it.
 */
static _Atomic uint64_t active_until;
static _Atomic uint64_t active_generation;

bool
lsm_active_recently(void)
{
	struct timespec ts;
	uint64_t ns, seen = atomic_load_explicit(&active_until, memory_order_acquire), gen;
	bool active;

	/* The coarse clock (a tick's precision) reads in a fifth of the time. */
	(void)clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
	if (ns < (seen >> 1))
		return seen & 1;
	gen = atomic_load_explicit(&active_generation, memory_order_acquire);
	active = lsm_active();
	/* Kept only if nobody forgot meanwhile, and nobody else stored a newer one. */
	if (atomic_load_explicit(&active_generation, memory_order_acquire) == gen)
		(void)atomic_compare_exchange_strong(&active_until, &seen,
						     ((ns + 1000000000) << 1) | active);
	return active;
}

/* A load or an unload in this process: its next label asks again. */
static void
lsm_active_forget(void)
{
	atomic_fetch_add_explicit(&active_generation, 1, memory_order_acq_rel);
	atomic_store_explicit(&active_until, 0, memory_order_release);
}

/* The pinned map @name, O_CLOEXEC: its fd, or -errno (-EOPNOTSUPP when the LSM is not loaded). */
static int
lsm_map_open(const char *name)
{
	char path[sizeof(CLIP_LSM_PIN_DIR) + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", CLIP_LSM_PIN_DIR, name);
	fd = bpf_obj_get(path);
	return fd >= 0 ? fd : errno == ENOENT ? -EOPNOTSUPP : -errno;
}

/* @key's value in the pinned map @name, into @value, or (@update) @value set as it: 0 or -errno. */
static int
lsm_map_elem(const char *name, const void *key, void *value, bool update)
{
	int map = lsm_map_open(name), r;

	if (map < 0)
		return map;
	if (update)
		r = bpf_map_update_elem(map, key, value, BPF_ANY);
	else
		r = bpf_map_lookup_elem(map, key, value);
	r = r < 0 ? -errno : 0;
	close(map);
	return r;
}

int
lsm_tasks_open(void)
{
	return lsm_map_open(LSM_MAP_TASKS);
}

void
lsm_level_from(struct lsm_level *ret, const struct clip_level *level)
{
	*ret = (struct lsm_level){ 0 };
	if (!level)
		return;
	ret->sensitivity = (uint32_t)clip_level_get_sensitivity(level);
	for (unsigned c = 0; c <= CLIP_LEVEL_CATEGORY_MAX; c++)
		if (clip_level_has_category(level, c) > 0)
			ret->cats[c / 64] |= UINT64_C(1) << (c % 64);
}

void
lsm_task_init(struct lsm_task *ret, uint64_t cage_id, const struct clip_level *level)
{
	*ret = (struct lsm_task){ .cage_id = cage_id };
	lsm_level_from(&ret->level, level);
}

int
lsm_task_register(int tasks_fd, int pidfd, const struct lsm_task *task)
{
	int r = bpf_map_update_elem(tasks_fd, &pidfd, task, BPF_ANY);

	return r < 0 ? -errno : 0;
}

int
lsm_task_register_as(int from_pidfd)
{
	struct lsm_task t;
	int map, self, r;

	if (!lsm_active())
		return 0;
	map = lsm_tasks_open();
	if (map < 0)
		return map == -EOPNOTSUPP ? 0 : map; /* unloaded since */
	r = bpf_map_lookup_elem(map, &from_pidfd, &t) < 0 ? -errno : 0;
	if (r == -ENOENT)
		r = 0; /* a cage started before the LSM was loaded */
	else if (r == 0) {
		self = (int)syscall(SYS_pidfd_open, getpid(), 0);
		r = self < 0 ? -errno : lsm_task_register(map, self, &t);
		if (self >= 0)
			close(self);
	}
	close(map);
	return r;
}

uint64_t
lsm_cage_id_new(void)
{
	uint64_t id = 0;

	while (id == 0)
		if (getrandom(&id, sizeof(id), 0) != sizeof(id))
			id = ((uint64_t)getpid() << 32) ^ now_ns();
	return id;
}

int
lsm_socket_allow(int fd, uint64_t cage_id)
{
	struct lsm_sock v = { .cage_id = cage_id };

	return lsm_map_elem(LSM_MAP_SOCKS, &fd, &v, true);
}

/* The kernel's dev_t of a stat(2) st_dev (new_encode_dev() undone): what i_sb->s_dev holds. */
static int
inode_key(int fd, struct lsm_inode_key *ret)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*ret = (struct lsm_inode_key){
		.dev = ((uint64_t)major(st.st_dev) << 20) | minor(st.st_dev),
		.ino = st.st_ino,
	};
	return 0;
}

/* FNV-1a, 64 bits, of the level as the programs see it: its key in the map of levels. */
static uint64_t
level_digest(const struct lsm_level *l)
{
	const unsigned char *p = (const unsigned char *)l;
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < sizeof(*l); i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h;
}

/*
 * @level in the map of levels, under its digest; two levels with the same
 * digest (never seen) are refused rather than confused.
 */
static int
level_intern(int map, const struct lsm_level *v, uint64_t *ret_key)
{
	struct lsm_level old;
	uint64_t key = level_digest(v);
	int r;

	r = bpf_map_update_elem(map, &key, v, BPF_NOEXIST) < 0 ? -errno : 0;
	if (r == -EEXIST)
		r = bpf_map_lookup_elem(map, &key, &old) < 0 ? -errno
		    : memcmp(&old, v, sizeof(old)) != 0      ? -EADDRINUSE
							     : 0;
	*ret_key = key;
	return r;
}

int
lsm_inode_set(int fd, const struct clip_level *level)
{
	struct lsm_inode_key k;
	struct lsm_level v;
	uint64_t key;
	int map, r;

	r = inode_key(fd, &k);
	if (r < 0)
		return r;
	lsm_level_from(&v, level);
	map = lsm_map_open(LSM_MAP_LEVELS);
	if (map < 0)
		return map;
	r = level_intern(map, &v, &key);
	close(map);
	return r < 0 ? r : lsm_map_elem(LSM_MAP_INODES, &k, &key, true);
}

int
lsm_inode_forget(int fd)
{
	struct lsm_inode_key k;
	int map, r;

	r = inode_key(fd, &k);
	if (r < 0)
		return r;
	map = lsm_map_open(LSM_MAP_INODES);
	if (map < 0)
		return map;
	r = bpf_map_delete_elem(map, &k) < 0 && errno != ENOENT ? -errno : 0;
	close(map);
	return r;
}

/*
 * The skeleton opened and loaded with its maps and its test program only:
 * no hook attached, nothing pinned (the tests' and the bench's). 0, or
 * -errno; libbpf quiet meanwhile.
 */
static int
skel_load_maps_only(struct clip_lsm **ret)
{
	libbpf_print_fn_t old = libbpf_set_print(libbpf_quiet);
	struct clip_lsm *skel = clip_lsm__open();
	struct bpf_program *p;
	int r;

	if (!skel) {
		r = -errno;
		libbpf_set_print(old);
		return r;
	}
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, p == skel->progs.clip_test_dominates);
	r = clip_lsm__load(skel);
	libbpf_set_print(old);
	if (r < 0) {
		clip_lsm__destroy(skel);
		return r;
	}
	*ret = skel;
	return 0;
}

int
lsm_test_dominates(struct lsm_dominates_args *cases, size_t n)
{
	_cleanup_(clip_lsm__destroyp) struct clip_lsm *skel = NULL;
	int r, fd;

	r = skel_load_maps_only(&skel);
	fd = r >= 0 ? bpf_program__fd(skel->progs.clip_test_dominates) : -1;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &cases[i],
			    .ctx_size_in = sizeof(cases[i]));

		r = bpf_prog_test_run_opts(fd, &o);
		if (r >= 0)
			r = (int)o.retval == 0 ? 0 : -EIO;
	}
	return r < 0 ? r : 0;
}

int
lsm_test_fill_inodes(unsigned n_inodes, unsigned n_levels)
{
	_cleanup_(clip_lsm__destroyp) struct clip_lsm *skel = NULL;
	int r, levels, inodes;
	uint64_t key, got;

	r = skel_load_maps_only(&skel);
	if (r < 0)
		return r;
	levels = bpf_map__fd(skel->maps.levels);
	inodes = bpf_map__fd(skel->maps.inodes);
	for (unsigned i = 0; r >= 0 && i < n_inodes; i++) {
		struct lsm_level v = { .sensitivity =
					       i % n_levels % (CLIP_LEVEL_SENSITIVITY_MAX + 1) };
		struct lsm_inode_key k = { .dev = 8u << 20, .ino = 1000000u + i };

		v.cats[(i % n_levels) / 16 % LSM_CATEGORY_WORDS] |= UINT64_C(1)
								    << (i % n_levels % 64);
		r = level_intern(levels, &v, &key);
		if (r >= 0 && bpf_map_update_elem(inodes, &k, &key, BPF_ANY) < 0)
			r = -errno;
	}
	/* Every entry is there, with its level's key. */
	for (unsigned i = 0; r >= 0 && i < n_inodes; i += 997) {
		struct lsm_inode_key k = { .dev = 8u << 20, .ino = 1000000u + i };

		if (bpf_map_lookup_elem(inodes, &k, &got) < 0)
			r = -errno;
	}
	return r < 0 ? r : 0;
}

static int pins_remove(void);

int
lsm_test_pin_maps(void)
{
	_cleanup_(clip_lsm__destroyp) struct clip_lsm *skel = NULL;
	char path[PATH_MAX];
	int r;

	r = skel_load_maps_only(&skel);
	if (r < 0)
		return r;
	if (mkdir(CLIP_LSM_PIN_DIR, 0700) < 0)
		return -errno;
	struct bpf_map *maps[] = { skel->maps.levels, skel->maps.inodes, skel->maps.socks,
				   skel->maps.tasks };
	libbpf_print_fn_t old = libbpf_set_print(libbpf_quiet);

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(maps); i++) {
		snprintf(path, sizeof(path), "%s/%s", CLIP_LSM_PIN_DIR, bpf_map__name(maps[i]));
		r = bpf_map__pin(maps[i], path);
	}
	libbpf_set_print(old);
	if (r < 0)
		(void)pins_remove();
	lsm_active_forget();
	return r;
}

int
lsm_test_task(int pidfd, struct lsm_task *ret)
{
	return lsm_map_elem(LSM_MAP_TASKS, &pidfd, ret, false);
}

int
lsm_test_socket(int fd, uint64_t *ret_cage_id)
{
	struct lsm_sock v;
	int r = lsm_map_elem(LSM_MAP_SOCKS, &fd, &v, false);

	if (r >= 0)
		*ret_cage_id = v.cage_id;
	return r;
}

int
lsm_test_inode(int fd, struct lsm_level *ret)
{
	struct lsm_inode_key k;
	uint64_t key;
	int r;

	r = inode_key(fd, &k);
	if (r >= 0)
		r = lsm_map_elem(LSM_MAP_INODES, &k, &key, false);
	return r < 0 ? r : lsm_map_elem(LSM_MAP_LEVELS, &key, ret, false);
}

/* A bpffs on /sys/fs/bpf, as systemd mounts it, when there is none: 1 when mounted now. */
static int
bpffs_ensure(struct clip_error **reterr)
{
	struct statfs sf;

	if (statfs(BPFFS, &sf) < 0)
		return error_set_errno(reterr, -errno, "cannot find %s, where bpffs goes", BPFFS);
	if (sf.f_type == BPF_FS_MAGIC)
		return 0;
	if (mount("bpf", BPFFS, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") < 0)
		return error_set_errno(reterr, -errno, "cannot mount a bpffs on %s", BPFFS);
	return 1;
}

/* Every pin under the directory, the map of the processes first, then the directory. */
static int
pins_remove(void)
{
	_cleanup_close_ int dfd = -1;
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (unlink(PIN(LSM_MAP_TASKS)) < 0 && errno != ENOENT)
		return -errno;
	dfd = open(CLIP_LSM_PIN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = dir_stream(dfd);
	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    unlinkat(dfd, e->d_name, 0) < 0 && errno != ENOENT)
			r = -errno;
	closedir(d);
	if (r >= 0 && rmdir(CLIP_LSM_PIN_DIR) < 0 && errno != ENOENT)
		r = -errno;
	return r;
}

static int
lsm_load(struct clip_ctx *ctx, struct clip_error **reterr)
{
	_cleanup_(clip_lsm__destroyp) struct clip_lsm *skel = NULL;
	struct bpf_program *p;
	struct bpf_link *link;
	char path[PATH_MAX];
	int r;

	if (mkdir(CLIP_LSM_PIN_DIR, 0700) < 0 && errno != EEXIST)
		return error_set_errno(reterr, -errno, "cannot create %s", CLIP_LSM_PIN_DIR);
	if (lsm_active()) {
		log_debug(ctx, "the BPF LSM is loaded already (%s)", CLIP_LSM_PIN_DIR);
		return 1;
	}
	/* Half a load of a loader that died: its pins go. */
	(void)pins_remove();
	if (mkdir(CLIP_LSM_PIN_DIR, 0700) < 0 && errno != EEXIST)
		return error_set_errno(reterr, -errno, "cannot create %s", CLIP_LSM_PIN_DIR);
	skel = clip_lsm__open();
	if (!skel)
		return error_set_errno(reterr, -errno, "cannot open the BPF LSM's object");
	bpf_program__set_autoload(skel->progs.clip_test_dominates, false);
	r = clip_lsm__load(skel);
	if (r < 0)
		(void)pins_remove(); /* the directory made above */
	if (r < 0)
		return error_setf(
			reterr, r == -EPERM || r == -EACCES ? -EPERM : -EIO, -1,
			"the kernel refuses the BPF LSM's programs: %s (CAP_BPF, "
			"CAP_PERFMON and CAP_SYS_ADMIN are needed, and a kernel that lets "
			"BPF programs attach to its LSM hooks)",
			strerror(-r));
	bpf_object__for_each_program(p, skel->obj)
	{
		if (!bpf_program__autoload(p))
			continue;
		link = bpf_program__attach_lsm(p);
		if (!link) {
			r = -errno;
			(void)pins_remove();
			return error_set_errno(
				reterr, r,
				"cannot attach the BPF LSM's program %s (is \"bpf\" in "
				"the kernel's lsm= list?)",
				bpf_program__name(p));
		}
		snprintf(path, sizeof(path), "%s/link-%s", CLIP_LSM_PIN_DIR, bpf_program__name(p));
		r = bpf_link__pin(link, path);
		bpf_link__destroy(link);
		if (r < 0) {
			(void)pins_remove();
			return error_set_errno(reterr, r, "cannot pin %s", path);
		}
	}
	/* The map of the processes last: its pin says that the rest is there. */
	struct bpf_map *maps[] = { skel->maps.levels, skel->maps.inodes, skel->maps.socks,
				   skel->maps.tasks };
	for (size_t i = 0; i < ELEMENTSOF(maps); i++) {
		snprintf(path, sizeof(path), "%s/%s", CLIP_LSM_PIN_DIR, bpf_map__name(maps[i]));
		r = bpf_map__pin(maps[i], path);
		if (r < 0) {
			(void)pins_remove();
			return error_set_errno(reterr, r, "cannot pin %s", path);
		}
	}
	log_info(ctx, "the BPF LSM is loaded and pinned in %s", CLIP_LSM_PIN_DIR);
	return 0;
}

/* One loader at a time: a lock on the bpffs's root (not a pin, so unloading keeps it). */
static int
lock_bpffs(struct clip_error **reterr)
{
	int fd = open(BPFFS, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return error_set_errno(reterr, -errno, "cannot open %s", BPFFS);
	if (flock(fd, LOCK_EX) < 0) {
		int r = error_set_errno(reterr, -errno, "cannot lock %s", BPFFS);

		close(fd);
		return r;
	}
	return fd;
}

CLIP_EXPORT int
clip_lsm_load(struct clip_ctx *ctx, struct clip_error **reterr)
{
	libbpf_print_fn_t old;
	int r, lock, mounted;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);

	mounted = bpffs_ensure(reterr);
	if (mounted < 0)
		return api_return(mounted, reterr);
	lock = lock_bpffs(reterr);
	if (lock < 0)
		r = lock;
	else {
		old = libbpf_set_print(libbpf_quiet);
		r = lsm_load(ctx, reterr);
		libbpf_set_print(old);
		close(lock);
	}
	/* A failed load leaves the host as it was: no bpffs it did not have. */
	if (r < 0 && mounted > 0)
		(void)umount2(BPFFS, MNT_DETACH);
	lsm_active_forget();
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_lsm_status(struct clip_ctx *ctx)
{
	ctx_assert_return(ctx, -EINVAL);
	return lsm_active();
}

CLIP_EXPORT int
clip_lsm_unload(struct clip_ctx *ctx, struct clip_error **reterr)
{
	struct statfs sf;
	int r, lock;

	clip_assert_reterr(reterr);
	ctx_assert_return_error(ctx, reterr);

	if (statfs(BPFFS, &sf) < 0 || sf.f_type != BPF_FS_MAGIC)
		return api_return(0, reterr); /* no bpffs: nothing pinned */
	lock = lock_bpffs(reterr);
	if (lock < 0)
		return api_return(lock, reterr);
	r = pins_remove();
	close(lock);
	lsm_active_forget();
	if (r < 0)
		error_set_errno(reterr, r, "cannot remove the BPF LSM's pins in %s",
				CLIP_LSM_PIN_DIR);
	else
		log_info(ctx, "the BPF LSM is unloaded (%s removed)", CLIP_LSM_PIN_DIR);
	return api_return(r, reterr);
}
