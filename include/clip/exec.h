/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * W^X for interpreters: may this file run as code?
 *
 * An interpreter asks the kernel whether a file it is about to interpret
 * could be executed (Linux 6.14+: execveat(2) with AT_EXECVE_CHECK, the
 * upstream form of CLIP OS's O_MAYEXEC) and obeys the answer as the
 * process's securebits say: SECBIT_EXEC_RESTRICT_FILE (refuse files that
 * fail the check) and SECBIT_EXEC_DENY_INTERACTIVE (refuse code given on
 * the command line, and standard input unless it passes the check). On
 * older kernels the check is a degraded emulation, which the library
 * reports (clip_exec_check_support()), never silently.
 *
 * Everything works on file descriptors: an interpreter checks the
 * descriptor it then reads, and never re-opens by path.
 *
 * See clip-exec(3).
 */
#ifndef CLIP_EXEC_H
#define CLIP_EXEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct clip_ctx;
struct clip_error;

/*
 * The exec securebits, with the values of the kernel's
 * <linux/securebits.h> (SECBIT_EXEC_*, Linux 6.14+).
 */
#define CLIP_EXEC_RESTRICT_FILE (1u << 8)
#define CLIP_EXEC_RESTRICT_FILE_LOCKED (1u << 9)
#define CLIP_EXEC_DENY_INTERACTIVE (1u << 10)
#define CLIP_EXEC_DENY_INTERACTIVE_LOCKED (1u << 11)
#define CLIP_EXEC_SECUREBITS \
	(CLIP_EXEC_RESTRICT_FILE | CLIP_EXEC_RESTRICT_FILE_LOCKED | CLIP_EXEC_DENY_INTERACTIVE | \
	 CLIP_EXEC_DENY_INTERACTIVE_LOCKED)

/* clip_exec_open(): follow /proc magic links (/dev/fd/N, /proc/PID/root). */
#define CLIP_EXEC_OPEN_MAGICLINKS (1u << 0)

/* Answers of clip_exec_check_support(). */
#define CLIP_EXEC_CHECK_NATIVE 1
#define CLIP_EXEC_CHECK_DEGRADED 2

/* The bound of clip_exec_read_all() when it is given 0. */
#define CLIP_EXEC_READ_MAX (64u * 1024 * 1024)

/* clip_exec_allow_tree(): change nothing, say whether the tree passes. */
#define CLIP_EXEC_TREE_CHECK (1u << 0)
/* clip_exec_allow_tree(): also walk the file systems mounted in the tree. */
#define CLIP_EXEC_TREE_CROSS_MOUNTS (1u << 1)

/*
 * What clip_exec_allow_tree() found. Set size to
 * sizeof(struct clip_exec_tree_stats); the library fills what both sides
 * know.
 */
struct clip_exec_tree_stats {
	uint32_t size;
	/* Regular files walked. */
	uint64_t files;
	/* Files given x bits (with CLIP_EXEC_TREE_CHECK: that lack them). */
	uint64_t changed;
	/* Files and directories left as they are, being unsafe to bless. */
	uint64_t unsafe;
	/* Regular files on a file system mounted noexec: no mode makes them pass. */
	uint64_t noexec;
	/* Mount points inside the tree, not walked into. */
	uint64_t mounts;
};

/**
 * clip_exec_check_support - whether the kernel answers the check itself
 *
 * Probed once per process (an execveat(2) that can execute nothing); a
 * degraded answer is also logged once, at LOG_WARNING.
 *
 * @param ctx a context
 * @return CLIP_EXEC_CHECK_NATIVE (AT_EXECVE_CHECK), CLIP_EXEC_CHECK_DEGRADED
 *	   (an older kernel: the library checks that the file is regular, that
 *	   its file system is not mounted noexec, and that the caller may
 *	   execute it), or -EINVAL, -ECHILD.
 * @since 0.1
 */
int clip_exec_check_support(struct clip_ctx *ctx);

/**
 * clip_exec_check_fd - may this file run as code? The kernel's answer.
 *
 * No policy: the answer whatever the securebits say. The file is not
 * executed, nor is its format looked at.
 *
 * @param ctx a context
 * @param fd the file, open (O_PATH is enough)
 * @param reterr optional; on refusal the message says why
 * @return 0 when the kernel would execute the file, or -EACCES (no
 *	   execute permission, a file system mounted noexec, not a regular
 *	   file, or a security module said no), -EPERM (the system's
 *	   execution policy, e.g. a fanotify listener such as fapolicyd),
 *	   -ETXTBSY (the file is open for writing), -EBADF (@fd is not open),
 *	   -EINVAL, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_exec_check_fd(struct clip_ctx *ctx, int fd, struct clip_error **reterr);

/**
 * clip_exec_get_securebits - the exec securebits of the calling thread
 *
 * @param ctx a context
 * @param ret where the bits (within CLIP_EXEC_SECUREBITS) are stored
 * @return 0, or -EINVAL, -ECHILD.
 * @since 0.1
 */
int clip_exec_get_securebits(struct clip_ctx *ctx, unsigned *ret);

/**
 * clip_exec_set_securebits - add exec securebits and locks
 *
 * Adds @bits to the securebits of the calling thread; they pass to the
 * threads it then creates, to its children and across execve(2). Bits are
 * only ever added: a set bit stays, a lock makes its bit permanent (a lock
 * without its bit locks the bit off). The kernel needs no privilege for
 * these bits. The kernel keeps securebits per thread: call this before
 * creating threads.
 *
 * @param ctx a context
 * @param bits a subset of CLIP_EXEC_SECUREBITS
 * @param reterr optional
 * @return 0, or -EINVAL (bits outside CLIP_EXEC_SECUREBITS), -EPERM (a bit
 *	   to set is locked off), -EOPNOTSUPP (the kernel has no such bits:
 *	   before Linux 6.14), -ECHILD.
 * @since 0.1
 */
int clip_exec_set_securebits(struct clip_ctx *ctx, unsigned bits, struct clip_error **reterr);

/**
 * clip_exec_may_run_file - the decision for a file an interpreter would run
 *
 * Checks @fd (always, as the kernel documentation asks) and enforces the
 * answer when SECBIT_EXEC_RESTRICT_FILE is set, or when @flags has
 * CLIP_EXEC_RESTRICT_FILE. A refusal is logged at LOG_WARNING; a file that
 * fails the check but runs because nothing enforces it, at LOG_NOTICE.
 *
 * @param ctx a context
 * @param fd the file, open
 * @param name how the interpreter names the file (messages and the
 *	  argv[0] of the check), or NULL
 * @param flags 0, or CLIP_EXEC_RESTRICT_FILE to enforce whatever the
 *	  securebits say (CLIP_EXEC_DENY_INTERACTIVE is accepted and ignored)
 * @param reterr optional; on refusal the message says why
 * @return 0 (the check passed), 1 (the check failed but is not enforced:
 *	   run it), or the errors of clip_exec_check_fd().
 * @since 0.1
 */
int clip_exec_may_run_file(struct clip_ctx *ctx, int fd, const char *name, unsigned flags,
			   struct clip_error **reterr);

/**
 * clip_exec_may_run_interactive - the decision for code that is not a file
 *
 * For code on the command line (python -c, perl -e), pass -1 as @fd: it
 * is refused when SECBIT_EXEC_DENY_INTERACTIVE is set (or @flags has
 * CLIP_EXEC_DENY_INTERACTIVE). For code read from a descriptor (standard
 * input, an interactive prompt) pass that descriptor: it is checked, and
 * under DENY_INTERACTIVE refused unless the check passes (a regular,
 * executable file). Logged as clip_exec_may_run_file() does.
 *
 * @param ctx a context
 * @param fd the descriptor the code is read from, or -1
 * @param what what the input is, for messages ("-c", "standard input"),
 *	  or NULL
 * @param flags 0, or CLIP_EXEC_DENY_INTERACTIVE to enforce whatever the
 *	  securebits say (CLIP_EXEC_RESTRICT_FILE is accepted and ignored)
 * @param reterr optional; on refusal the message says why
 * @return 0 (allowed: no check needed, or the check passed), 1 (the
 *	   check failed but is not enforced), -EACCES (refused; for @fd -1,
 *	   because interactive code is denied), or the errors of
 *	   clip_exec_check_fd().
 * @since 0.1
 */
int clip_exec_may_run_interactive(struct clip_ctx *ctx, int fd, const char *what, unsigned flags,
				  struct clip_error **reterr);

/**
 * clip_exec_open - open a file to interpret, and decide
 *
 * Opens @path for reading (O_CLOEXEC, O_NOCTTY, without blocking on a
 * FIFO), refuses a directory, then applies clip_exec_may_run_file() to
 * the open file. The caller reads the returned descriptor, never the path
 * again. /proc magic links are not followed (openat2(2)
 * RESOLVE_NO_MAGICLINKS) unless @flags has CLIP_EXEC_OPEN_MAGICLINKS.
 *
 * @param ctx a context
 * @param dirfd a directory, or AT_FDCWD; @path is relative to it
 * @param path the file
 * @param flags CLIP_EXEC_OPEN_MAGICLINKS and the @flags of
 *	  clip_exec_may_run_file()
 * @param reterr optional
 * @return a new descriptor (>= 0), or -ENOENT, -ENOTDIR, -ELOOP (a magic
 *	   link, or too many links), -ENAMETOOLONG, -EISDIR (a directory),
 *	   -EACCES (no permission to open the file, or the check refused
 *	   it), -EMFILE, and the errors of clip_exec_may_run_file().
 * @since 0.1
 */
int clip_exec_open(struct clip_ctx *ctx, int dirfd, const char *path, unsigned flags,
		   struct clip_error **reterr);

/**
 * clip_exec_read_all - read a file to interpret, whole
 *
 * Reads @fd from its current offset to the end into a new buffer, with
 * a NUL byte after the content (not counted in *@ret_size).
 *
 * @param ctx a context
 * @param fd a readable, blocking descriptor
 * @param max the largest content accepted, or 0 for CLIP_EXEC_READ_MAX
 * @param ret where the buffer is stored (free it with free(3));
 *	  untouched on failure
 * @param ret_size where the size of the content is stored
 * @param reterr optional
 * @return 0, or -E2BIG (more than @max bytes), -EISDIR, -EBADF, -EIO,
 *	   -EINVAL, -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_exec_read_all(struct clip_ctx *ctx, int fd, size_t max, char **ret, size_t *ret_size,
		       struct clip_error **reterr);

/**
 * clip_exec_allow_tree - make an interpreter's library tree pass the check
 *
 * Walks the directory @path and gives every regular file the x bit of each
 * class (owner, group, others) that has its r bit: whoever may read a
 * file of the tree may then also run it as code, under
 * SECBIT_EXEC_RESTRICT_FILE. Nothing else changes: no bit is removed,
 * directories keep their mode (their x bit is what opening a file needs
 * already), and a file that already has its bits is not touched, so a
 * second call changes nothing.
 *
 * Whoever can write to a file, or to a directory, of the tree could put
 * code there that would then pass the check. So a file or directory owned
 * by another user than root and the caller, one writable by its group or
 * by others, a set-user-ID or set-group-ID file that lacks x bits, and a
 * tree whose parent directories others may write to (unless sticky) are
 * left as they are, logged at LOG_WARNING, and counted as unsafe; an
 * unsafe directory is not walked. Symbolic links are never followed (the
 * file a link names is blessed only if it is in a tree itself), nor are
 * mount points crossed, unless @flags has CLIP_EXEC_TREE_CROSS_MOUNTS.
 * Each change is logged at LOG_INFO, each mount point at LOG_NOTICE.
 *
 * @param ctx a context
 * @param dirfd a directory, or AT_FDCWD; @path is relative to it
 * @param path the tree (symbolic links in @path itself are followed)
 * @param flags CLIP_EXEC_TREE_CHECK, CLIP_EXEC_TREE_CROSS_MOUNTS
 * @param stats NULL, or where the counts are stored (its size member set
 *	  by the caller); untouched on failure
 * @param reterr optional
 * @return 0 when the tree passes (afterwards; with CLIP_EXEC_TREE_CHECK,
 *	   as it is): no file to change, none unsafe, none on a noexec
 *	   mount; 1 when it does not; or -ENOENT, -ENOTDIR (@path is not a
 *	   directory), -EACCES (a directory of the tree cannot be read),
 *	   -EPERM (a file cannot be changed: the caller is not its owner),
 *	   -EROFS, -ELOOP (more than 128 levels of directories),
 *	   -ENAMETOOLONG, -EMFILE, -EOPNOTSUPP (no fchmodat2(), Linux 6.6,
 *	   and no /proc to change a mode through a descriptor), -EINVAL,
 *	   -ENOMEM, -ECHILD.
 * @since 0.1
 */
int clip_exec_allow_tree(struct clip_ctx *ctx, int dirfd, const char *path, unsigned flags,
			 struct clip_exec_tree_stats *stats, struct clip_error **reterr);

#ifdef __cplusplus
}
#endif

#endif
