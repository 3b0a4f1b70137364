// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libclip's BPF LSM (doc/lsm.md): kernel-enforced separation of the cages
 * from each other and from the core, and of levels on labelled files.
 *
 * Every program first looks up the calling task's storage: a task the
 * library has not registered as a cage's process (every process of the
 * core, of other users, of the host) has none, and is denied nothing.
 * Compiled by clang's BPF target with CO-RE (vmlinux.h of the build
 * host's BTF), embedded in libclip with a skeleton (lsm-skel.h).
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "lsm-abi.h"

#define EPERM 1
#define EACCES 13
#define FMODE_READ 0x1
#define FMODE_WRITE 0x2

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lsm_task);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lsm_sock);
} socks SEC(".maps");

/* A labelled inode: the key of its level in levels. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, LSM_INODES_MAX);
	__type(key, struct lsm_inode_key);
	__type(value, __u64);
} inodes SEC(".maps");

/* The levels of the labelled inodes, by a 64-bit digest of their value (lsm.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, LSM_LEVELS_MAX);
	__type(key, __u64);
	__type(value, struct lsm_level);
} levels SEC(".maps");

/* libclip/level/level.c, level_dominates(): the same test, word by word. */
static __always_inline bool
level_dominates(const struct lsm_level *a, const struct lsm_level *b)
{
	if (a->sensitivity < b->sensitivity)
		return false;
	for (int i = 0; i < LSM_CATEGORY_WORDS; i++)
		if (b->cats[i] & ~a->cats[i])
			return false;
	return true;
}

static __always_inline bool
level_equal(const struct lsm_level *a, const struct lsm_level *b)
{
	return level_dominates(a, b) && level_dominates(b, a);
}

static __always_inline struct lsm_task *
current_cage(void)
{
	return bpf_task_storage_get(&tasks, bpf_get_current_task_btf(), 0, 0);
}

/* Whether the caller may reach @target: 0 outside a cage, else only in its own cage (-EPERM). */
static __always_inline int
reach_task(struct task_struct *target)
{
	struct lsm_task *t = current_cage(), *o;

	if (!t)
		return 0;
	o = bpf_task_storage_get(&tasks, target, 0, 0);
	return o && o->cage_id == t->cage_id ? 0 : -EPERM;
}

/* Everything a cage's process forks is of its cage. */
SEC("lsm/task_alloc")
int
BPF_PROG(clip_task_alloc, struct task_struct *task, unsigned long clone_flags)
{
	struct lsm_task *t = current_cage(), *n;

	if (!t)
		return 0;
	n = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!n)
		return -EPERM; /* a cage's child that would escape its cage is not made */
	*n = *t;
	return 0;
}

/* ptrace, process_vm_readv/writev, pidfd_getfd, /proc/PID/mem and the like. */
SEC("lsm/ptrace_access_check")
int
BPF_PROG(clip_ptrace_access_check, struct task_struct *child, unsigned int mode)
{
	return reach_task(child);
}

SEC("lsm/ptrace_traceme")
int
BPF_PROG(clip_ptrace_traceme, struct task_struct *parent)
{
	return reach_task(parent);
}

/* kill(), pidfd_send_signal() and the like; SIGIO (@cred set) is not the caller's. */
SEC("lsm/task_kill")
int
BPF_PROG(clip_task_kill, struct task_struct *p, struct kernel_siginfo *info, int sig,
	 const struct cred *cred)
{
	return cred ? 0 : reach_task(p);
}

/* A cage's sockets are its own: marked at creation. */
SEC("lsm/socket_post_create")
int
BPF_PROG(clip_socket_post_create, struct socket *sock, int family, int type, int protocol, int kern)
{
	struct lsm_task *t = current_cage();
	struct sock *sk = sock->sk;
	struct lsm_sock *s;

	if (!t || kern || !sk)
		return 0;
	s = bpf_sk_storage_get(&socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!s)
		return -EPERM;
	s->cage_id = t->cage_id;
	return 0;
}

/* A UNIX socket a cage may reach: one of its own, or one the library gave it. */
static __always_inline int
unix_peer(struct sock *other)
{
	struct lsm_task *t = current_cage();
	struct lsm_sock *s;

	if (!t)
		return 0;
	s = bpf_sk_storage_get(&socks, other, 0, 0);
	return s && s->cage_id == t->cage_id ? 0 : -EPERM;
}

SEC("lsm/unix_stream_connect")
int
BPF_PROG(clip_unix_stream_connect, struct sock *sock, struct sock *other, struct sock *newsk)
{
	return unix_peer(other);
}

/*
 * Datagrams and SOCK_SEQPACKET: to a socket this one is connected to
 * (a socket pair the library made, say) it sends as it could at connect
 * time; to another, as a connection would be.
 */
SEC("lsm/unix_may_send")
int
BPF_PROG(clip_unix_may_send, struct socket *sock, struct socket *other)
{
	struct unix_sock *u = (struct unix_sock *)sock->sk;

	if (BPF_CORE_READ(u, peer) == other->sk)
		return 0;
	return unix_peer(other->sk);
}

/* What no cage does, whatever its capabilities in its user namespace. */
#define DENY_IN_CAGE(hook, ...) \
	SEC("lsm/" #hook) \
	int BPF_PROG(clip_##hook, ##__VA_ARGS__) \
	{ \
		return current_cage() ? -EPERM : 0; \
	}

DENY_IN_CAGE(bpf, int cmd)
DENY_IN_CAGE(perf_event_open, int type)
DENY_IN_CAGE(kernel_module_request, char *kmod_name)
DENY_IN_CAGE(kernel_read_file, struct file *file, int id, bool contents)
DENY_IN_CAGE(kernel_load_data, int id, bool contents)
DENY_IN_CAGE(key_alloc, struct key *key)
DENY_IN_CAGE(key_permission, void *key_ref)
DENY_IN_CAGE(sb_mount, const char *dev_name)
DENY_IN_CAGE(sb_umount, struct vfsmount *mnt)
DENY_IN_CAGE(move_mount, const struct path *from_path)
DENY_IN_CAGE(sb_pivotroot, const struct path *old_path)

/* The level of @inode, NULL when it has none (unlabelled: today's rules). */
static __always_inline struct lsm_level *
inode_level(struct inode *inode)
{
	struct lsm_inode_key k = {};
	__u64 *level_key;

	if (!inode)
		return NULL;
	k.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	k.ino = BPF_CORE_READ(inode, i_ino);
	level_key = bpf_map_lookup_elem(&inodes, &k);
	return level_key ? bpf_map_lookup_elem(&levels, level_key) : NULL;
}

/* Reading needs the cage's level to dominate the file's; writing, the same level. */
SEC("lsm/file_open")
int
BPF_PROG(clip_file_open, struct file *file)
{
	struct lsm_task *t = current_cage();
	struct lsm_level *l;
	unsigned int mode;

	if (!t)
		return 0;
	l = inode_level(file->f_inode);
	if (!l)
		return 0;
	mode = file->f_mode;
	if ((mode & FMODE_READ) && !level_dominates(&t->level, l))
		return -EACCES;
	if ((mode & FMODE_WRITE) && !level_equal(&t->level, l))
		return -EACCES;
	return 0;
}

/* A change in a labelled directory, or of a labelled inode: a write, at its level only. */
static __always_inline int
write_to(struct inode *inode)
{
	struct lsm_task *t = current_cage();
	struct lsm_level *l;

	if (!t)
		return 0;
	l = inode_level(inode);
	return !l || level_equal(&t->level, l) ? 0 : -EACCES;
}

/* A change in directory @dir: a write to it. */
#define WRITE_IN_DIR(hook) \
	SEC("lsm/" #hook) \
	int BPF_PROG(clip_##hook, struct inode *dir) \
	{ \
		return write_to(dir); \
	}

WRITE_IN_DIR(inode_create)
WRITE_IN_DIR(inode_mkdir)
WRITE_IN_DIR(inode_mknod)
WRITE_IN_DIR(inode_symlink)

SEC("lsm/inode_link")
int
BPF_PROG(clip_inode_link, struct dentry *old_dentry, struct inode *dir)
{
	return write_to(dir) ?: write_to(old_dentry->d_inode);
}

/* The removal of @dentry from @dir: a write to both. */
#define REMOVE_FROM_DIR(hook) \
	SEC("lsm/" #hook) \
	int BPF_PROG(clip_##hook, struct inode *dir, struct dentry *dentry) \
	{ \
		return write_to(dir) ?: write_to(dentry->d_inode); \
	}

REMOVE_FROM_DIR(inode_unlink)
REMOVE_FROM_DIR(inode_rmdir)

SEC("lsm/inode_rename")
int
BPF_PROG(clip_inode_rename, struct inode *old_dir, struct dentry *old_dentry, struct inode *new_dir)
{
	return write_to(old_dir) ?: write_to(new_dir) ?: write_to(old_dentry->d_inode);
}

SEC("lsm/inode_setattr")
int
BPF_PROG(clip_inode_setattr, struct mnt_idmap *idmap, struct dentry *dentry)
{
	return write_to(dentry->d_inode);
}

/* Not attached: the shared table of dominance cases runs through it (BPF_PROG_TEST_RUN). */
SEC("syscall")
int
clip_test_dominates(struct lsm_dominates_args *args)
{
	args->dominates = level_dominates(&args->a, &args->b);
	args->equal = level_equal(&args->a, &args->b);
	return 0;
}
