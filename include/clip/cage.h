/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cages: isolated process trees, one per confidentiality level.
 *
 * A profile (a file in the style of systemd-nspawn's .nspawn files, see
 * clip.cage(5), or the builder functions below) says what a cage sees:
 * its root, its binds, its network, its limits, the capabilities and
 * system calls it keeps. A cage made from a profile is started (a new
 * user, mount, pid, ipc, uts, cgroup and network namespace around a small
 * init), processes are spawned into it from outside, and it is stopped as
 * a whole. Processes are handed out as pidfds, never as pid numbers.
 *
 * See clip-cage(3) and doc/cage.md.
 */
#ifndef CLIP_CAGE_H
#define CLIP_CAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;
struct clip_level;
struct clip_cage;
struct clip_cage_profile;

/* Bounds of a profile. */
#define CLIP_CAGE_PROFILE_SIZE_MAX (64 * 1024)
#define CLIP_CAGE_NAME_MAX 32
#define CLIP_CAGE_BINDS_MAX 64
#define CLIP_CAGE_SYSCALLS_MAX 128
#define CLIP_CAGE_PORTS_MAX 64 /* TCP ports of each kind: clip_cage_profile_add_port() */
#define CLIP_CAGE_LANDLOCK_ABI_MAX 7 /* the newest Landlock ABI libclip uses */

/* How cages are made: clip_ctx_set_cage_mode(). */
#define CLIP_CAGE_MODE_AUTO 0 /* decided from what the process has */
#define CLIP_CAGE_MODE_ROOT 1 /* each cage maps 65536 ids from its UidBase */
#define CLIP_CAGE_MODE_ROOTLESS 2 /* each cage maps the caller's uid and gid to 0 */

/* Network modes. */
#define CLIP_CAGE_NET_NONE 0
#define CLIP_CAGE_NET_LOOPBACK 1
#define CLIP_CAGE_NET_VETH 2

/* Flags of clip_cage_profile_add_bind(). */
#define CLIP_CAGE_BIND_RW (1u << 0)

/* Kinds of clip_cage_profile_add_port(). */
#define CLIP_CAGE_PORT_BIND (1u << 0)
#define CLIP_CAGE_PORT_CONNECT (1u << 1)

/* Flags of clip_cage_start() and clip_cage_start_spawn(). */
#define CLIP_CAGE_START_REGISTER (1u << 0)
#define CLIP_CAGE_START_END_WITH_FIRST (1u << 1) /* clip_cage_start_spawn() only */

/* Flags of struct clip_cage_spawn_opts. */
#define CLIP_CAGE_SPAWN_PTY (1u << 0) /* a pty of its own: see clip_cage_spawn() */

/* States of clip_cage_get_state(). */
#define CLIP_CAGE_NEW 0
#define CLIP_CAGE_RUNNING 1
#define CLIP_CAGE_STOPPED 2

/* Protections that could not be applied: clip_cage_get_missing(). */
#define CLIP_CAGE_MISSING_MEMORY (1u << 0)
#define CLIP_CAGE_MISSING_TASKS (1u << 1)
#define CLIP_CAGE_MISSING_CPU (1u << 2)
#define CLIP_CAGE_MISSING_LANDLOCK (1u << 3)
#define CLIP_CAGE_MISSING_CGROUP (1u << 4) /* limits, but no cgroup of its own */
#define CLIP_CAGE_MISSING_LANDLOCK_NET (1u << 5) /* TCP ports unchecked: Landlock ABI < 4 */
#define CLIP_CAGE_MISSING_LANDLOCK_IOCTL (1u << 6) /* device ioctls allowed: ABI < 5 */
#define CLIP_CAGE_MISSING_LANDLOCK_SCOPE (1u << 7) /* abstract sockets, signals: ABI < 6 */
#define CLIP_CAGE_MISSING_LANDLOCK_LOG (1u << 8) /* denials unread: ABI < 7, no audit */
#define CLIP_CAGE_MISSING_LSM (1u << 9) /* the BPF LSM is not loaded (clip_lsm_load()) */

/* Resource limits; 0 means "no limit". */
struct clip_cage_limits {
	uint32_t size; /* sizeof(struct clip_cage_limits) */
	uint32_t cpu_quota_percent; /* of one CPU, 1 to 100000 */
	uint64_t memory_max; /* bytes */
	uint64_t tasks_max;
};

/* What to run in a cage: clip_cage_spawn(). */
struct clip_cage_spawn_opts {
	uint32_t size; /* sizeof(struct clip_cage_spawn_opts) */
	uint32_t n_fds; /* entries in fds, at most 64 */
	const char *const *argv; /* argv[0] without a '/': see clip_cage_spawn() */
	const char *const *envp; /* NULL: an empty environment */
	const int *fds; /* fds[i] becomes fd i in the process; all others are closed */
	const char *cwd; /* NULL: "/" */
	uint32_t uid; /* inside the cage's user namespace */
	uint32_t gid;
	uint32_t flags; /* 0 or CLIP_CAGE_SPAWN_PTY */
	int *ret_pty; /* CLIP_CAGE_SPAWN_PTY: where the pty's master is stored (O_CLOEXEC) */
};

/**
 * clip_cage_profile_new - an empty profile
 *
 * The defaults: level s0, read-only binds of the host's /usr, /bin, /sbin,
 * /lib, /lib32, /lib64, /libx32 and /etc (those that exist), no network
 * (CLIP_CAGE_NET_NONE), no limit, no capability, the default system-call
 * deny-list, W^X off.
 *
 * The setters below refuse a bad value with -EINVAL (-E2BIG for one entry
 * too many) and a message in @reterr that names the value and says what
 * is wrong with it ("bind target '/x/' ends with a slash ...").
 *
 * @param ret where the new profile is stored; untouched on failure
 * @param name 1 to CLIP_CAGE_NAME_MAX characters of [A-Za-z0-9_.-], not
 *	  starting with '.' or '-'
 * @param reterr optional
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_new(struct clip_cage_profile **ret, const char *name,
			  struct clip_error **reterr);

/**
 * clip_cage_profile_parse - parse a profile, see clip.cage(5)
 *
 * Strict: an unknown section or key, a key given twice, a bad value or a
 * line that is not "[Section]", "Key=Value", a comment or blank is an
 * error whose message names @filename, the line and the key, and whose
 * offset (clip_error_get_offset()) is the offending byte.
 *
 * @param ret where the new profile is stored; untouched on failure
 * @param filename used in messages only (NULL: "profile")
 * @param data the text, not necessarily NUL-terminated
 * @param size its length, at most CLIP_CAGE_PROFILE_SIZE_MAX
 * @param reterr optional
 * @return 0, or -EINVAL (malformed), -E2BIG (too long), -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_parse(struct clip_cage_profile **ret, const char *filename, const char *data,
			    size_t size, struct clip_error **reterr);

/**
 * clip_cage_profile_load - read and parse a profile from a file descriptor
 *
 * @param fd a regular file open for reading
 * @param filename used in messages only
 * @return 0, or -EBADF, -EMEDIUMTYPE (not a regular file), -EIO, and the
 *	   errors of clip_cage_profile_parse().
 * @since 0.1
 */
int clip_cage_profile_load(struct clip_cage_profile **ret, int fd, const char *filename,
			   struct clip_error **reterr);

/**
 * clip_cage_profile_format - the profile as text that
 * clip_cage_profile_parse() reads back into an equal profile
 *
 * The text is canonical: every key in a fixed order, one line each, no
 * comments, no spaces but between list entries, binds and temporary file
 * systems sorted by target, capabilities and system calls by name. Two
 * files that differ only in spacing, comments, the order of sections,
 * keys or list entries, or the spelling of capabilities give the same
 * text. It is what a cage with Measure=yes measures into the TPM.
 *
 * @param ret where a newly allocated string is stored (free() it)
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_format(const struct clip_cage_profile *profile, char **ret);

/**
 * clip_cage_profile_dup - a copy of a profile, under another name
 *
 * The copy is made through the canonical text (clip_cage_profile_format()),
 * so it holds everything the profile says; changing one leaves the other
 * alone.
 *
 * @param ret where the copy is stored; untouched on failure
 * @param name the copy's name, as clip_cage_profile_new(), or NULL to keep
 *	  the name of @profile
 * @param reterr optional
 * @return 0, or -EINVAL (a bad name), -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_dup(struct clip_cage_profile **ret, const struct clip_cage_profile *profile,
			  const char *name, struct clip_error **reterr);

/**
 * clip_cage_profile_ref - take a reference
 * @return @profile.
 * @since 0.1
 */
struct clip_cage_profile *clip_cage_profile_ref(struct clip_cage_profile *profile);

/**
 * clip_cage_profile_unref - drop a reference
 * @param profile a profile, or NULL (a no-op)
 * @return NULL.
 * @since 0.1
 */
struct clip_cage_profile *clip_cage_profile_unref(struct clip_cage_profile *profile);

/**
 * clip_cage_profile_get_name - the profile's name
 * @return a string owned by @profile, or NULL when @profile is NULL.
 * @since 0.1
 */
const char *clip_cage_profile_get_name(const struct clip_cage_profile *profile);

/**
 * clip_cage_profile_set_level - the confidentiality level of the cage
 * @param reterr optional
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_set_level(struct clip_cage_profile *profile, const struct clip_level *level,
				struct clip_error **reterr);

/**
 * clip_cage_profile_get_level - the level
 * @return the level, owned by @profile, or NULL when @profile is NULL.
 * @since 0.1
 */
const struct clip_level *clip_cage_profile_get_level(const struct clip_cage_profile *profile);

/**
 * clip_cage_profile_set_root - a directory bound read-only as the cage's
 * root instead of the host's /usr and friends
 *
 * @param path an absolute, normalised path (no ".", "..", "//" or trailing
 *	  "/"), without spaces, ':' or '\\'; or NULL for the default
 * @param reterr optional
 * @return 0, or -EINVAL (the message says what is wrong with @path), -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_set_root(struct clip_cage_profile *profile, const char *path,
			       struct clip_error **reterr);

/**
 * clip_cage_profile_set_data_dir - the level's data directory, bound
 * read-write, noexec, nosuid and nodev at /data
 *
 * @param path as clip_cage_profile_set_root(), or NULL for none
 * @param reterr optional
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_set_data_dir(struct clip_cage_profile *profile, const char *path,
				   struct clip_error **reterr);

/**
 * clip_cage_profile_get_data_dir - the data directory set
 * @return a string owned by @profile, or NULL when none is set or
 *	   @profile is NULL.
 * @since 0.1
 */
const char *clip_cage_profile_get_data_dir(const struct clip_cage_profile *profile);

/**
 * clip_cage_profile_add_bind - bind a host path into the cage
 *
 * Read-only unless CLIP_CAGE_BIND_RW; read-write binds are always
 * noexec, nosuid and nodev.
 *
 * @param source an absolute host path, as clip_cage_profile_set_root()
 * @param target the same in the cage, or NULL for @source; not /, nor in
 *	  /proc, /dev or /data, nor the target of another bind or tmpfs
 * @param flags 0 or CLIP_CAGE_BIND_RW
 * @param reterr optional
 * @return 0, or -EINVAL, -E2BIG (more than CLIP_CAGE_BINDS_MAX binds and
 *	   tmpfs), -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_add_bind(struct clip_cage_profile *profile, const char *source,
			       const char *target, unsigned flags, struct clip_error **reterr);

/**
 * clip_cage_profile_get_bind - the @i th bind of the profile (tmpfs left
 * out), in the order they were added
 *
 * @param ret_source, ret_target where strings owned by @profile are
 *	  stored, or NULL
 * @param ret_flags where 0 or CLIP_CAGE_BIND_RW is stored, or NULL
 * @return 0, or -ENOENT past the last bind, -EINVAL (@profile is NULL).
 * @since 0.1
 */
int clip_cage_profile_get_bind(const struct clip_cage_profile *profile, size_t i,
			       const char **ret_source, const char **ret_target,
			       unsigned *ret_flags);

/**
 * clip_cage_profile_add_tmpfs - an empty tmpfs (nosuid, nodev, noexec)
 *
 * @return as clip_cage_profile_add_bind().
 * @since 0.1
 */
int clip_cage_profile_add_tmpfs(struct clip_cage_profile *profile, const char *target,
				struct clip_error **reterr);

/**
 * clip_cage_profile_set_network - the cage's network
 *
 * @param mode CLIP_CAGE_NET_NONE (a network namespace without any
 *	  interface up), CLIP_CAGE_NET_LOOPBACK (lo up) or CLIP_CAGE_NET_VETH
 *	  (lo up and a veth pair, needs root)
 * @param address the cage's IPv4 address with a prefix ("10.7.0.2/24")
 *	  for CLIP_CAGE_NET_VETH, NULL otherwise
 * @param reterr optional
 * @return 0, or -EINVAL, -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_set_network(struct clip_cage_profile *profile, int mode, const char *address,
				  struct clip_error **reterr);

/**
 * clip_cage_profile_set_limits - memory, tasks and CPU limits
 *
 * @param limits its size member set to sizeof(struct clip_cage_limits): a
 *	  smaller struct (an older <clip/cage.h>) leaves the limits it lacks at
 *	  0, a larger one (a newer <clip/cage.h>) is taken when what it adds is 0
 * @param reterr optional
 * @return 0, or -EINVAL (a bad value, or a struct smaller than 8 bytes),
 *	   -E2BIG (a larger struct that sets what this version does not know).
 * @since 0.1
 */
int clip_cage_profile_set_limits(struct clip_cage_profile *profile,
				 const struct clip_cage_limits *limits, struct clip_error **reterr);

/**
 * clip_cage_profile_add_capability - keep a capability (none by default)
 *
 * @param name "CAP_NET_BIND_SERVICE" or "net_bind_service"
 * @param reterr optional
 * @return 0, or -EINVAL (unknown name).
 * @since 0.1
 */
int clip_cage_profile_add_capability(struct clip_cage_profile *profile, const char *name,
				     struct clip_error **reterr);

/**
 * clip_cage_profile_add_syscall_deny - deny one more system call (EPERM)
 *
 * @param name a system call of this architecture, as seccomp knows it
 * @param reterr optional
 * @return 0, or -EINVAL (unknown), -E2BIG (more than
 *	   CLIP_CAGE_SYSCALLS_MAX), -ENOMEM.
 * @since 0.1
 */
int clip_cage_profile_add_syscall_deny(struct clip_cage_profile *profile, const char *name,
				       struct clip_error **reterr);

/**
 * clip_cage_profile_set_wx - W^X: set and lock SECBIT_EXEC_RESTRICT_FILE
 * and SECBIT_EXEC_DENY_INTERACTIVE in every process of the cage
 *
 * @param on 1 or 0
 * @param reterr optional
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_cage_profile_set_wx(struct clip_cage_profile *profile, int on, struct clip_error **reterr);

/**
 * clip_cage_profile_set_measure - measure the cage into the TPM when it
 * starts (off by default)
 *
 * When on, clip_cage_start() measures the profile's canonical text
 * (clip_cage_profile_format()) as the event "cage:NAME" with
 * clip_tpm_measure() before anything runs in the cage, and refuses to
 * start the cage when the measurement fails. When off, the cage's start
 * never touches the TPM.
 *
 * @param on 1 or 0
 * @param reterr optional
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_cage_profile_set_measure(struct clip_cage_profile *profile, int on,
				  struct clip_error **reterr);

/**
 * clip_cage_profile_set_uid_base - the first host uid (and gid) of the
 * 65536 that the cage's user namespace maps when run by root (UidBase=)
 *
 * The cage's uid N is host uid @base + N: what owns its data directory,
 * what a peer in the cage shows in SO_PEERCRED. Without it, a base is
 * derived from the name (clip_cage_profile_get_uid_base() tells it). A
 * rootless cage maps the caller's own uid instead, whatever the base.
 *
 * @param base a non-zero multiple of 65536 below 2^32 - 65536
 * @param reterr optional
 * @return 0, or -EINVAL (the message says why @base is refused).
 * @since 0.1
 */
int clip_cage_profile_set_uid_base(struct clip_cage_profile *profile, uint32_t base,
				   struct clip_error **reterr);

/**
 * clip_cage_profile_get_uid_base - the first host uid of the cage's range
 * when run by root: the one set, or the one derived from the name
 *
 * @return the base, or 0 when @profile is NULL.
 * @since 0.1
 */
uint32_t clip_cage_profile_get_uid_base(const struct clip_cage_profile *profile);

/**
 * clip_cage_profile_has_uid_base - whether the uid base was set
 * (clip_cage_profile_set_uid_base(), UidBase=) rather than derived
 * @return 1 or 0 (also for a NULL @profile).
 * @since 0.1
 */
int clip_cage_profile_has_uid_base(const struct clip_cage_profile *profile);

/**
 * clip_cage_profile_set_start_timeout - how long a start or a spawn waits
 * for the cage's set-up (StartTimeoutSec=, 30 s by default)
 *
 * clip_cage_start(), clip_cage_start_spawn() and clip_cage_spawn() wait
 * for the cage's init or the spawned process to report its set-up (or its
 * execve()). A set-up that hangs (a bind source on a file system that no
 * longer answers, say) would otherwise hang the caller with it. After the
 * time, the start kills what it made and fails with -ETIMEDOUT, leaving
 * nothing of the cage; the spawn kills the process and fails the same way.
 *
 * @param seconds 1 to 3600, or 0 for the default
 * @param reterr optional
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_cage_profile_set_start_timeout(struct clip_cage_profile *profile, unsigned seconds,
					struct clip_error **reterr);

/**
 * clip_cage_profile_add_port - a TCP port the cage may bind or connect to
 * (TCPBindPorts=, TCPConnectPorts=)
 *
 * Where the kernel has Landlock ABI 4 or later, a cage binds and connects
 * TCP sockets (IPv4 and IPv6) only to the ports its profile lists: none by
 * default. Without it, clip_cage_get_missing() says
 * CLIP_CAGE_MISSING_LANDLOCK_NET. A port added twice is kept once. Ports
 * have no use without a network (CLIP_CAGE_NET_NONE).
 *
 * @param kind CLIP_CAGE_PORT_BIND or CLIP_CAGE_PORT_CONNECT, or both
 * @param port 1 to 65535
 * @param reterr optional
 * @return 0, or -EINVAL, -E2BIG (more than CLIP_CAGE_PORTS_MAX of a kind).
 * @since 0.1
 */
int clip_cage_profile_add_port(struct clip_cage_profile *profile, unsigned kind, unsigned port,
			       struct clip_error **reterr);

/**
 * clip_cage_profile_set_landlock_min_abi - the oldest Landlock ABI the cage
 * may start with (LandlockMinimumABI=)
 *
 * A start on a kernel whose Landlock is older (or missing) fails with
 * -EOPNOTSUPP and says which ABI the profile requires and which the kernel
 * has, instead of starting with the protections it lacks reported by
 * clip_cage_get_missing(). ABI 4 brings TCP ports, 5 device ioctls, 6 the
 * scoping of abstract sockets and signals, 7 the logging of denials.
 *
 * @param abi 1 to CLIP_CAGE_LANDLOCK_ABI_MAX, or 0: no minimum (the default)
 * @param reterr optional
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_cage_profile_set_landlock_min_abi(struct clip_cage_profile *profile, unsigned abi,
					   struct clip_error **reterr);

/**
 * clip_ctx_set_cage_mode - choose how the cages of a context are made
 *
 * CLIP_CAGE_MODE_AUTO, the default, decides from what the process has,
 * not from its uid: root mode when it holds CAP_SYS_ADMIN, CAP_SETUID and
 * CAP_SETGID in its user namespace and that namespace maps the ids
 * libclip's cages take (every id of 524288 to 1611137023, as the initial
 * namespace does); rootless otherwise, e.g. uid 0 in a container that
 * maps one id. CLIP_CAGE_MODE_ROOTLESS forces rootless mode, even for
 * root; CLIP_CAGE_MODE_ROOT forces root mode, whose cages then fail to
 * start (-EPERM, the message naming the ids) where their range is not
 * mapped.
 * Cages already started keep the mode they were started in.
 *
 * @param ctx a context
 * @param mode CLIP_CAGE_MODE_AUTO, CLIP_CAGE_MODE_ROOT or
 *	  CLIP_CAGE_MODE_ROOTLESS
 * @return 0, or -EINVAL (another mode), -ECHILD.
 * @since 0.1
 */
int clip_ctx_set_cage_mode(struct clip_ctx *ctx, int mode);

/**
 * clip_ctx_get_cage_mode - how the cages of a context are made
 *
 * The first call in CLIP_CAGE_MODE_AUTO decides, logs the decision and
 * its reason in one line (LOG_INFO), and keeps it for the context.
 *
 * @param ctx a context
 * @return CLIP_CAGE_MODE_ROOT or CLIP_CAGE_MODE_ROOTLESS, never
 *	   CLIP_CAGE_MODE_AUTO; or -EINVAL, -ECHILD.
 * @since 0.1
 */
int clip_ctx_get_cage_mode(struct clip_ctx *ctx);

/**
 * clip_cage_new - a cage, not started, from a profile
 *
 * @param ret where the new cage is stored; untouched on failure
 * @param ctx a context (its state directory holds the registry)
 * @param profile the profile; a reference is taken
 * @return 0, or -EINVAL, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_cage_new(struct clip_cage **ret, struct clip_ctx *ctx, struct clip_cage_profile *profile,
		  struct clip_error **reterr);

/**
 * clip_cage_ref - take a reference
 * @return @cage.
 * @since 0.1
 */
struct clip_cage *clip_cage_ref(struct clip_cage *cage);

/**
 * clip_cage_unref - drop a reference. A running cage keeps running.
 * @return NULL.
 * @since 0.1
 */
struct clip_cage *clip_cage_unref(struct clip_cage *cage);

/**
 * clip_cage_start - create the namespaces, the cgroups and the cage's init
 *
 * In root mode (clip_ctx_get_cage_mode()), the cage's user namespace
 * maps 65536 ids from the profile's UidBase; in rootless mode, it maps
 * the caller's uid and gid to 0. Limits the host cannot apply are logged and reported
 * by clip_cage_get_missing(), not failed. With CLIP_CAGE_START_REGISTER
 * the cage is recorded under its name in the state directory, so that
 * clip_cage_attach() and clip_cage_list() find it, and it outlives the
 * caller; without it, the cage is killed when the thread that started it
 * exits (PR_SET_PDEATHSIG). With Measure=yes
 * (clip_cage_profile_set_measure()), the canonical profile is measured
 * into the TPM first, and a measurement that fails fails the start
 * before any process of the cage exists. A cage that has ended (stopped,
 * or ended with its first process) starts again as new: new namespaces,
 * cgroups and init, and a new clip_cage_get_fd(); the statuses of its
 * earlier processes stay for clip_cage_wait_process().
 *
 * @param flags 0 or CLIP_CAGE_START_REGISTER
 * @return 0, or -EINVAL (bad flags), -EBUSY (the cage is running), -EPERM (the host
 *	   refuses user namespaces to this user: the message says why),
 *	   -EOPNOTSUPP (veth in rootless mode), -EPERM also in root mode
 *	   when the cage's 65536 ids are not all mapped in the caller's
 *	   user namespace (the message names them), -EEXIST (a cage of that name is
 *	   registered and running), -ENOMEM, -EIO (a set-up step failed
 *	   in the child: the message names it), -ETIMEDOUT (the set-up did
 *	   not end within StartTimeoutSec=; nothing is left), -EACCES, -ENOTDIR (the state
 *	   directory, with CLIP_CAGE_START_REGISTER), -ECHILD; with
 *	   Measure=yes, the errors of clip_tpm_measure(): -ENODEV (no TPM
 *	   reachable), -EBADMSG (a damaged event log), -EPERM, -ENOSPC,
 *	   -EDQUOT, -EROFS, -ENAMETOOLONG.
 * @since 0.1
 */
int clip_cage_start(struct clip_cage *cage, unsigned flags, struct clip_error **reterr);

/**
 * clip_cage_attach - a running, registered cage, by name
 *
 * @return 0, or -EINVAL, -ENODATA (no such cage running), -EPERM, -EACCES
 *	   (the state directory), -ENOMEM, -EBADMSG (corrupt registry entry).
 * @since 0.1
 */
int clip_cage_attach(struct clip_cage **ret, struct clip_ctx *ctx, const char *name,
		     struct clip_error **reterr);

/**
 * clip_cage_list - the names of the running, registered cages
 *
 * Stale entries (their init is gone) are removed on the way.
 *
 * @param ret a newly allocated NULL-terminated array of strings; free each
 *	  string and the array
 * @return the number of names, or -EINVAL, -ENOMEM, -EPERM, -EACCES.
 * @since 0.1
 */
int clip_cage_list(struct clip_ctx *ctx, char ***ret, struct clip_error **reterr);

/**
 * clip_cage_spawn - run a process in a running cage
 *
 * The process enters every namespace of the cage through setns(2) on the
 * init's pidfd, joins the cage's cgroups, starts a new session, keeps
 * only the chosen fds, changes to the uid and gid given, drops the
 * capabilities not in the profile, sets no_new_privs, the securebits,
 * Landlock and the seccomp filter, and executes argv; argv[0] without a
 * '/' is looked for in /usr/local/bin, /usr/bin, /bin, /usr/sbin and /sbin.
 * A refusal names the culprit: the command, the option (a closed fds[0]
 * is "the process's fd 0 (stdin)"), or the set-up step that failed.
 *
 * A cage never holds a terminal of the host: an fd in opts->fds that is a
 * terminal (the user's tty, a console, a pty slave) is refused with
 * -EBADF. With CLIP_CAGE_SPAWN_PTY in opts->flags, each of them is
 * replaced instead by the slave of a new pty, made by the caller from
 * /dev/ptmx with the window size and modes of the first terminal
 * replaced, and the process's controlling terminal; the master is stored
 * in *opts->ret_pty, the caller's to relay (clip_cage_pty_relay()) and
 * close: closing it hangs up the slave, so that what the process left
 * behind reads end-of-file and writes EIO, never the user's terminal.
 * The cage has no devpts of its own: the slave is all of the pty it
 * reaches (TIOCSTI on it feeds the cage's own input, never the master).
 *
 * @param opts what to run; opts->size set to sizeof(struct
 *	  clip_cage_spawn_opts): a smaller struct (an older <clip/cage.h>, at
 *	  least up to fds) leaves the members it lacks at 0, a larger one (a
 *	  newer <clip/cage.h>) is taken when what it adds is 0
 * @param ret_pidfd where a pidfd of the new process is stored (O_CLOEXEC);
 *	  the process is a child of the caller: reap it with
 *	  clip_cage_wait_process() or waitid(P_PIDFD); a reaper of the
 *	  caller's own (waitpid(-1)) may take it too, see
 *	  clip_cage_wait_process()
 * @return 0, or -EINVAL, -E2BIG (more than 4096 arguments, or a larger opts
 *	   that sets what this version does not know), -ENOMEM,
 *	   -EBADF (a bad fd in opts, or a terminal without
 *	   CLIP_CAGE_SPAWN_PTY), -ECHILD (the cage is not running),
 *	   -ENOENT (no such command), -EACCES, -EPERM (execution refused),
 *	   -EIO (another set-up step failed: the message names it),
 *	   -ETIMEDOUT (not executed within StartTimeoutSec=: killed).
 * @since 0.1
 */
int clip_cage_spawn(struct clip_cage *cage, const struct clip_cage_spawn_opts *opts, int *ret_pidfd,
		    struct clip_error **reterr);

/**
 * clip_cage_start_spawn - clip_cage_start() and clip_cage_spawn() of a first
 * process in one step
 *
 * The cage's init forks the first process itself once the cage is set up,
 * before it drops its own rights; the process then restricts itself as
 * clip_cage_spawn() describes while init does the same. It saves the
 * caller a fork, a setns() into every namespace and a move into the
 * cgroups: the way to run one command in a new cage (`clipctl cage run`).
 * The process is init's child, not the caller's: wait for it with
 * clip_cage_wait_process() (not waitid()); its pidfd polls readable when
 * it exits. If the command cannot be executed, the cage is not started.
 * With CLIP_CAGE_START_END_WITH_FIRST the cage ends with its first
 * process, as a container ends with its main process: init exits once it
 * has sent the status, and the kernel kills whatever else the cage holds.
 * clip_cage_stop() or clip_cage_wait() still reaps the init and removes
 * the cgroups; the stop is then quicker, the cage being half gone already.
 *
 * @param flags as clip_cage_start(), and CLIP_CAGE_START_END_WITH_FIRST
 * @param opts what to run first, as clip_cage_spawn()
 * @param ret_pidfd where a pidfd of the first process is stored (O_CLOEXEC)
 * @return 0, or the errors of clip_cage_start() and clip_cage_spawn().
 * @since 0.1
 */
int clip_cage_start_spawn(struct clip_cage *cage, unsigned flags,
			  const struct clip_cage_spawn_opts *opts, int *ret_pidfd,
			  struct clip_error **reterr);

/**
 * clip_cage_pty_relay - relay between the user's terminal and the master
 * of a cage's pty (CLIP_CAGE_SPAWN_PTY) until the process ends
 *
 * What the user types on @in_fd goes to @pty unchanged; what the cage
 * writes goes to @out_fd filtered: printable text (valid UTF-8 without
 * C1 controls), tab, newline, carriage return, backspace, bell, and the
 * escape sequences a shell or a full-screen program needs pass (SGR
 * colours and attributes; cursor movement, position, save and restore;
 * erasing, inserting, deleting and scrolling lines and characters; a
 * scroll region; the alternate screen, cursor visibility, application
 * cursor keys and keypad, auto-wrap, bracketed paste; the G0 and G1
 * character sets). Everything else is dropped whole: OSC (the title, the
 * clipboard through OSC 52, hyperlinks), DCS, APC, PM, SOS, queries and
 * reports that make the terminal type on the user's behalf, window
 * operations, mouse tracking, other modes and the remaining control
 * characters. When the relay ends, the modes the cage left set are reset
 * on @out_fd (the main screen, the cursor shown, SGR reset, ...).
 *
 * When @in_fd is a terminal it is put in raw mode for the relay and
 * always restored (on return, error or signal); its window size is copied
 * to @pty at the start and on each SIGWINCH. SIGWINCH, SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT are blocked in the calling thread while it relays
 * (its mask is restored on return) and taken through a signalfd: the
 * last four end the relay with -EINTR, the signal consumed.
 *
 * The relay returns once the process behind @pidfd has ended and what it
 * wrote is out (at most 1 MiB more); the caller then closes @pty, which
 * hangs up the slave for whatever the process left behind.
 *
 * @param pty the master, from CLIP_CAGE_SPAWN_PTY
 * @param in_fd the user's terminal (or any fd) to read, or -1 for none
 * @param out_fd where the filtered output goes, or -1 to discard it
 * @param pidfd the process whose end ends the relay
 * @param reterr optional
 * @return 0 (the process ended), or -EINVAL, -EINTR (a signal ended it:
 *	   the message names it), -EIO (@out_fd or @pty failed), -ENOMEM.
 * @since 0.1
 */
int clip_cage_pty_relay(int pty, int in_fd, int out_fd, int pidfd, struct clip_error **reterr);

/**
 * clip_cage_wait_process - wait for a spawned process and reap it
 *
 * The cage's init and the helper that spawns are cloned with no exit
 * signal: waitpid(-1) and waitid(P_ALL) of the caller never see them
 * (unless given __WALL or __WCLONE). A spawned process is the same until
 * it executes its command (execve() gives it SIGCHLD back); a reaper of
 * the caller's (an init's waitpid(-1)) may take it from then on, and its
 * status is still returned here, from its pidfd (Linux 6.15). The rule
 * for such a reaper: never __WALL or __WCLONE; and before Linux 6.15,
 * leave the spawned processes alone (see clip-cage(3)).
 *
 * @param pidfd from clip_cage_spawn() or clip_cage_start_spawn()
 * @param ret_status its exit status, or 128 + the signal that killed it
 * @return 0, or -EINVAL, -ECHILD (not a process spawned in this cage,
 *	   already waited for, or reaped by another before Linux 6.15).
 * @since 0.1
 */
int clip_cage_wait_process(struct clip_cage *cage, int pidfd, int *ret_status);

/**
 * clip_cage_signal - send a signal to every process of the cage but its
 * init
 *
 * @param signal a signal number, or 0 to count the processes
 * @return the number of processes signalled, or -EINVAL, -ECHILD (not
 *	   running), -ENOMEM.
 * @since 0.1
 */
int clip_cage_signal(struct clip_cage *cage, int signal);

/**
 * clip_cage_stop - stop the cage: SIGTERM to every process, then after
 * @grace_ms, SIGKILL to the whole tree; then clip_cage_wait()
 *
 * @return 0, or -EINVAL, -ECHILD (not running), -EPERM.
 * @since 0.1
 */
int clip_cage_stop(struct clip_cage *cage, unsigned grace_ms, struct clip_error **reterr);

/**
 * clip_cage_wait - wait until the cage has ended, then clean up its
 * cgroups and registry entry
 *
 * The processes the caller spawned are reaped on the way (the kernel
 * does not finish a pid namespace before): clip_cage_wait_process()
 * still returns their status.
 *
 * @param timeout_ms how long to wait; -1 for ever
 * @return 0, or -EINVAL, -ECHILD (never started), -ENODATA (still running
 *	   at the timeout), -ENOMEM.
 * @since 0.1
 */
int clip_cage_wait(struct clip_cage *cage, int timeout_ms);

/**
 * clip_cage_get_state - CLIP_CAGE_NEW, CLIP_CAGE_RUNNING or CLIP_CAGE_STOPPED
 * @return the state, or -EINVAL.
 * @since 0.1
 */
int clip_cage_get_state(struct clip_cage *cage);

/**
 * clip_cage_get_fd - a pollable fd for event loops: a pidfd of the cage's
 * init, readable (POLLIN) once the cage has ended; a new one after the
 * cage starts again
 *
 * @return the fd, owned by @cage, or -EINVAL, -ECHILD (never started).
 * @since 0.1
 */
int clip_cage_get_fd(const struct clip_cage *cage);

/**
 * clip_cage_denial_fn - told of a Landlock denial of the cage
 * @param what as the kernel's audit names it, printable ASCII, at most 200
 *	  bytes: "scope.signal opid=1 ocomm=\"sleep\"",
 *	  "net.connect_tcp daddr=127.0.0.1 dest=47777"... (names come from
 *	  the cage: the kernel quotes or hex-encodes them)
 */
typedef void (*clip_cage_denial_fn)(struct clip_cage *cage, const char *what, void *userdata);

/**
 * clip_cage_set_denial_fn - who is told of the cage's Landlock denials,
 * beside the library's log ("cage NAME was refused WHAT")
 *
 * The denials are read with Landlock ABI 7, while the kernel's audit is
 * on, by a launcher that is the host's root (else clip_cage_get_missing()
 * says CLIP_CAGE_MISSING_LANDLOCK_LOG): by clip_cage_read_denials(), and
 * when the cage ends (clip_cage_wait(), clip_cage_stop()).
 *
 * @param fn called in the thread that reads, or NULL for the log alone
 * @return 0, or -EINVAL.
 * @since 0.1
 */
int clip_cage_set_denial_fn(struct clip_cage *cage, clip_cage_denial_fn fn, void *userdata);

/**
 * clip_cage_get_denial_fd - a pollable fd for event loops: readable
 * (POLLIN) when the kernel's audit has records to read, which
 * clip_cage_read_denials() sorts (most are not the cage's)
 *
 * @return the fd, owned by @cage, or -EINVAL, -ECHILD (not running),
 *	   -ENODATA (the cage's denials are not read: see
 *	   clip_cage_set_denial_fn()).
 * @since 0.1
 */
int clip_cage_get_denial_fd(const struct clip_cage *cage);

/**
 * clip_cage_read_denials - read what the kernel's audit holds, without
 * waiting: each Landlock denial of the cage is logged and passed to the
 * function of clip_cage_set_denial_fn()
 *
 * A denial is known as the cage's by the Landlock domain that made it:
 * those of the cage's init, its first process and the last 64 processes
 * spawned into it. A flood over the socket's buffer is lost, and said so
 * in the log.
 *
 * @return the number of the cage's denials read, or -EINVAL, -ECHILD,
 *	   -ENODATA (as clip_cage_get_denial_fd()).
 * @since 0.1
 */
int clip_cage_read_denials(struct clip_cage *cage);

/**
 * clip_cage_get_pids - the host pids of the cage's processes, its init first
 *
 * @param ret a newly allocated array (free() it)
 * @param ret_n its number of entries
 * @return 0, or -EINVAL, -ECHILD (not running), -ENOMEM.
 * @since 0.1
 */
int clip_cage_get_pids(struct clip_cage *cage, int **ret, size_t *ret_n);

/**
 * clip_cage_get_profile - the cage's profile
 * @return the profile, owned by @cage, or NULL when @cage is NULL.
 * @since 0.1
 */
const struct clip_cage_profile *clip_cage_get_profile(const struct clip_cage *cage);

/**
 * clip_cage_get_missing - the protections clip_cage_start() could not
 * apply on this host (CLIP_CAGE_MISSING_* flags)
 * @return the flags (0: everything applied), or -EINVAL.
 * @since 0.1
 */
int clip_cage_get_missing(const struct clip_cage *cage);

/* Flags of clip_cage_identify_pidfd() and friends. */
#define CLIP_CAGE_IDENTITY_CORE (1u << 0) /* in no cage: the core (the caller's pid namespace) */
#define CLIP_CAGE_IDENTITY_NESTED (1u << 1) /* in a pid namespace made inside the cage */

/**
 * clip_cage_identify_pidfd - which cage a process is in: its name and
 * level, or the core
 *
 * What a compositor or a panel asks of a client before it draws a level:
 * the answer comes from the kernel, not from anything the process says.
 * A process is in a cage when its pid namespace is the one of a running
 * cage of @ctx's registry (CLIP_CAGE_START_REGISTER) or lies below it; it
 * is in the core when its pid namespace is the caller's. The namespace is
 * read through the pidfd, never through a pid: a process that has ended
 * is gone (-ESRCH), whatever now holds its pid.
 *
 * @param ctx the context whose state directory holds the registry
 * @param pidfd a pidfd (pidfd_open(2), CLONE_PIDFD, SO_PEERPIDFD)
 * @param ret_name optional: the cage's name (free() it), NULL for the core
 * @param ret_level optional: the cage's level (a new reference), NULL for
 *	  the core
 * @param ret_flags optional: CLIP_CAGE_IDENTITY_* flags
 * @param reterr optional
 * @return 0, or -EINVAL, -EBADF (@pidfd is no pidfd), -ESRCH (the
 *	   process has ended), -ENODATA (it is in a pid namespace that is
 *	   neither the core's nor a registered cage's, as a container's),
 *	   -EACCES, -EPERM (the caller may not read its namespace), -ENOMEM,
 *	   -EBADMSG (a corrupt registry entry).
 * @since 0.1
 */
int clip_cage_identify_pidfd(struct clip_ctx *ctx, int pidfd, char **ret_name,
			     struct clip_level **ret_level, unsigned *ret_flags,
			     struct clip_error **reterr);

/**
 * clip_cage_identify_pid - clip_cage_identify_pidfd() for the process
 * that holds @pid when the call opens it
 *
 * A pid says nothing of a process that has ended: prefer a pidfd, or the
 * socket of clip_cage_identify_socket().
 *
 * @return as clip_cage_identify_pidfd(); -ESRCH when no process has @pid.
 * @since 0.1
 */
int clip_cage_identify_pid(struct clip_ctx *ctx, int pid, char **ret_name,
			   struct clip_level **ret_level, unsigned *ret_flags,
			   struct clip_error **reterr);

/**
 * clip_cage_identify_socket - clip_cage_identify_pidfd() for the peer of
 * a connected UNIX socket (what a Wayland or X server knows of a client)
 *
 * The peer is the process that connected (or created the socket pair),
 * taken by the kernel at that moment as a pidfd (SO_PEERPIDFD): a peer
 * that has ended since is gone (-ESRCH), even when its pid is reused.
 *
 * @return as clip_cage_identify_pidfd(); -EBADF (no connected UNIX
 *	   socket), -EOPNOTSUPP (the kernel gives no SO_PEERPIDFD: before
 *	   Linux 6.5).
 * @since 0.1
 */
int clip_cage_identify_socket(struct clip_ctx *ctx, int sock, char **ret_name,
			      struct clip_level **ret_level, unsigned *ret_flags,
			      struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
