/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cage's seccomp filters: a default deny-list (EPERM) of the calls
 * that reach the kernel's most exposed parts or undo the isolation, and
 * the profile's additions as a second filter, stacked on the first (the
 * kernel runs both; either refuses). Two, not one, so that the init can
 * load the default one before it starts the first process, which inherits
 * it: none of the set-up calls left is on the deny-list, whereas a
 * profile may deny anything, so its additions come last, just before
 * execve(). Compiled with libseccomp once (the default, per process; the
 * additions, per profile) and kept as classic BPF, so that starting a
 * cage or a process only loads them (filter compilation dominated crun's
 * start-up time).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>

#include "cage-internal.h"
#include "base/error.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
/* Linux 6.3; newer than the headers of Debian 12. */
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008u
#endif

/* The BPF of a filter has at most BPF_MAXINSNS instructions of 8 bytes. */
#define BPF_BYTES_MAX (4096 * sizeof(struct sock_filter))

static const char *const denied[] = {
	/* Kernel modules, kexec, reboot, swap, accounting, clocks. */
	"init_module",
	"finit_module",
	"delete_module",
	"kexec_load",
	"kexec_file_load",
	"reboot",
	"swapon",
	"swapoff",
	"acct",
	"settimeofday",
	"clock_settime",
	"clock_adjtime",
	"adjtimex",
	"syslog",
	"iopl",
	"ioperm",
	"quotactl",
	"quotactl_fd",
	"lookup_dcookie",
	"vhangup",
	"uselib",
	"nfsservctl",
	"_sysctl",
	/* The keyring, bpf, perf, io_uring. */
	"keyctl",
	"add_key",
	"request_key",
	"bpf",
	"perf_event_open",
	"io_uring_setup",
	"io_uring_enter",
	"io_uring_register",
	/* Other processes' memory. */
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"kcmp",
	"pidfd_getfd",
	/* Mounts, old and new API; chroot; namespaces of other processes. */
	"mount",
	"umount",
	"umount2",
	"pivot_root",
	"chroot",
	"move_mount",
	"open_tree",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"mount_setattr",
	"setns",
	/* Files by handle bypass the mount tree; userfaultfd helps kernel exploits. */
	"open_by_handle_at",
	"name_to_handle_at",
	"userfaultfd",
};

/* Namespace flags refused to clone() and unshare(). */
static const unsigned long ns_flags[] = {
	CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
	CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME,
};

bool
cage_seccomp_is_default_denied(int nr)
{
	for (size_t i = 0; i < ELEMENTSOF(denied); i++)
		if (seccomp_syscall_resolve_name(denied[i]) == nr)
			return true;
	return false;
}

static int
default_build(scmp_filter_ctx f)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	int r;

	for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
		int nr = seccomp_syscall_resolve_name(denied[i]);

		if (nr < 0) /* not on this architecture */
			continue;
		r = seccomp_rule_add(f, eperm, nr, 0);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(ns_flags); i++) {
		r = seccomp_rule_add(f, eperm, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (r < 0)
			return r;
		r = seccomp_rule_add(f, eperm, SCMP_SYS(unshare), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (r < 0)
			return r;
	}
	/*
	 * clone3() passes its flags in memory, where seccomp cannot look:
	 * ENOSYS makes the C library fall back to clone(), which is checked.
	 */
	r = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r < 0)
		return r;
	/* Typing into a terminal the cage shares with someone else. */
	r = seccomp_rule_add(f, eperm, SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
	if (r < 0)
		return r;
	return seccomp_rule_add(f, eperm, SCMP_SYS(ioctl), 1,
				SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
}

/*
 * W^X where vm.memfd_noexec cannot be 2 (a rootless cage: only the host's
 * root may write it): no memfd that could ever be executed. A memfd made
 * without MFD_NOEXEC_SEAL is executable (mode 0777) under the kernel's
 * default, and Landlock lets an internal mount's file execute; with the
 * seal it has no x bit, and F_SEAL_EXEC keeps it so. EACCES, the answer
 * of a kernel with vm.memfd_noexec=2 to MFD_EXEC.
 */
static int
memfd_build(scmp_filter_ctx f, const struct clip_cage_profile *p)
{
	(void)p;
	return seccomp_rule_add(f, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(memfd_create), 1,
				SCMP_A1(SCMP_CMP_MASKED_EQ, MFD_NOEXEC_SEAL, 0));
}

static int
additions_build(scmp_filter_ctx f, const struct clip_cage_profile *p)
{
	for (size_t i = 0; i < p->n_syscalls; i++) {
		int r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), p->syscalls[i], 0);

		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

static int
filter_export(scmp_filter_ctx f, struct sock_filter **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ struct sock_filter *bpf = NULL;
	struct stat st;
	ssize_t n;
	int r;

	fd = memfd_create("clip-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = seccomp_export_bpf(f, fd);
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || (size_t)st.st_size > BPF_BYTES_MAX ||
	    st.st_size % (off_t)sizeof(struct sock_filter))
		return -EBADMSG;
	bpf = malloc((size_t)st.st_size);
	if (!bpf)
		return -ENOMEM;
	n = pread(fd, bpf, (size_t)st.st_size, 0);
	if (n != st.st_size)
		return n < 0 ? -errno : -EIO;
	*ret = steal_ptr(bpf);
	*ret_len = (size_t)st.st_size / sizeof(struct sock_filter);
	return 0;
}

/* A filter built by @build (with @p) into classic BPF. */
static int
compile(int (*build)(scmp_filter_ctx f, const struct clip_cage_profile *p),
	const struct clip_cage_profile *p, struct sock_filter **ret, size_t *ret_len)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!f)
		return -ENOMEM;
	/* no_new_privs is set by the cage itself, in its order. */
	r = seccomp_attr_set(f, SCMP_FLTATR_CTL_NNP, 0);
	/*
	 * A binary tree of the system call numbers, not a chain: the kernel
	 * loads (checks and JIT-compiles) the default filter in about 60 us
	 * instead of 125 us, and each call takes a few comparisons.
	 */
	if (r >= 0)
		r = seccomp_attr_set(f, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r >= 0)
		r = build(f, p);
	if (r >= 0)
		r = filter_export(f, ret, ret_len);
	seccomp_release(f);
	return r;
}

static int
default_build_for(scmp_filter_ctx f, const struct clip_cage_profile *p)
{
	(void)p;
	return default_build(f);
}

/*
 * The default filter, compiled once per process (cages start from worker
 * threads too) and never freed: published with a release store, so that
 * the cage's processes, cloned from a launcher whose other threads may
 * hold any lock, read it without one.
 */
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sock_filter *default_bpf, *memfd_bpf;
static size_t default_len, memfd_len;

int
cage_seccomp_compile(struct clip_cage_profile *p, struct clip_error **reterr)
{
	int r = 0;

	pthread_mutex_lock(&default_lock);
	if (!default_bpf) {
		struct sock_filter *bpf = NULL, *memfd = NULL;

		r = compile(default_build_for, NULL, &bpf, &default_len);
		if (r >= 0)
			r = compile(memfd_build, NULL, &memfd, &memfd_len);
		if (r >= 0) {
			__atomic_store_n(&memfd_bpf, memfd, __ATOMIC_RELEASE);
			__atomic_store_n(&default_bpf, bpf, __ATOMIC_RELEASE);
		} else
			free(bpf);
	}
	pthread_mutex_unlock(&default_lock);
	if (r >= 0 && !p->bpf && p->n_syscalls > 0)
		r = compile(additions_build, p, &p->bpf, &p->bpf_len);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot compile the seccomp filter");
	return 0;
}

struct sock_fprog
cage_seccomp_default(void)
{
	struct sock_filter *bpf = __atomic_load_n(&default_bpf, __ATOMIC_ACQUIRE);

	return (struct sock_fprog){ .len = bpf ? (unsigned short)default_len : 0, .filter = bpf };
}

struct sock_fprog
cage_seccomp_memfd(void)
{
	struct sock_filter *bpf = __atomic_load_n(&memfd_bpf, __ATOMIC_ACQUIRE);

	return (struct sock_fprog){ .len = bpf ? (unsigned short)memfd_len : 0, .filter = bpf };
}
