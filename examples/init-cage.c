/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An init that starts a cage in its own event loop.
 *
 *   init-cage PROFILE COMMAND [ARG...]
 *
 * Starts a cage from PROFILE (clip.cage(5), e.g. examples/profiles/low.cage),
 * runs COMMAND in it with our stdin, stdout and stderr, and waits in a
 * poll() loop for whichever comes first: COMMAND exits (its pidfd), the
 * cage ends under it (the cage's fd), or SIGTERM or SIGINT arrives (a
 * signalfd), which stops the cage. A cage never gets a terminal of ours:
 * when stdin, stdout or stderr is one (a console), COMMAND gets a pty of
 * its own instead (CLIP_CAGE_SPAWN_PTY), relayed with
 * clip_cage_pty_relay() until it exits. Prints COMMAND's exit status (128 + the
 * signal that killed it) and exits with it, as an init hands on its main
 * process's status. On SIGCHLD it reaps its other children, as an init
 * does, following the rule of clip-cage(3) ("In an init").
 *
 * Run by root, the cage's user namespace maps 65536 ids from the profile's
 * UidBase. Run by anyone else, the same code starts a rootless cage (the
 * caller's uid is root inside) where the host allows user namespaces; the
 * limits it cannot apply are reported, not failed.
 *
 * Build it as an outside program would:
 *   cc init-cage.c $(pkg-config --cflags --libs libclip) -o init-cage
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <clip/clip.h>

/* How long the processes of the cage get between SIGTERM and SIGKILL. */
#define STOP_GRACE_MS 2000

static void
log_stderr(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	fprintf(stderr, "init-cage: %s\n", message);
}

/* Print what failed and why; the message of @error when there is one. */
static int
fail(const char *what, int r, struct clip_error *error)
{
	fprintf(stderr, "init-cage: %s: %s\n", what,
		error ? clip_error_get_message(error) : strerror(-r));
	clip_error_free(error);
	return -1;
}

/* A started cage from the profile in the file @path. */
static int
start_cage(struct clip_ctx *ctx, const char *path, struct clip_cage **ret)
{
	struct clip_cage_profile *profile = NULL;
	struct clip_error *error = NULL;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return fail(path, -errno, NULL);
	r = clip_cage_profile_load(&profile, fd, path, &error);
	close(fd);
	if (r < 0)
		return fail("bad profile", r, error);
	r = clip_cage_new(ret, ctx, profile, &error);
	/* The cage holds its own reference. */
	clip_cage_profile_unref(profile);
	if (r < 0)
		return fail("cannot make the cage", r, error);
	/* Not registered: the cage is ours alone and dies with this process. */
	r = clip_cage_start(*ret, 0, &error);
	if (r < 0) {
		*ret = clip_cage_unref(*ret);
		return fail("cannot start the cage", r, error);
	}
	return 0;
}

/* The pid behind @pidfd: the "Pid:" line of its /proc/self/fdinfo, or -1. */
static pid_t
pidfd_pid(int pidfd)
{
	char path[64], line[128];
	pid_t pid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %d", &pid) == 1)
			break;
	if (f)
		fclose(f);
	return pid;
}

/*
 * What an init does on SIGCHLD: reap whatever died under it. The cage's
 * init never shows here (libclip clones it with no exit signal). The
 * command does once it has exited, and is left to
 * clip_cage_wait_process(): a peek first (WNOWAIT), since before Linux
 * 6.15 the library could not tell a status taken here.
 */
static void
reap_others(pid_t command)
{
	for (;;) {
		siginfo_t si = { .si_pid = 0 };

		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0 ||
		    si.si_pid == command)
			return;
		(void)waitpid(si.si_pid, NULL, 0);
	}
}

/* Wait until the command exits, the cage ends or a signal asks us to stop. */
static int
event_loop(struct clip_cage *cage, int pidfd, int sfd)
{
	struct pollfd p[] = {
		{ .fd = pidfd, .events = POLLIN },
		{ .fd = clip_cage_get_fd(cage), .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
	};
	struct signalfd_siginfo si;
	pid_t command = pidfd_pid(pidfd);

	for (;;) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return fail("poll", -errno, NULL);
		}
		if (p[2].revents & POLLIN) {
			if (read(sfd, &si, sizeof(si)) != sizeof(si))
				continue;
			if (si.ssi_signo == SIGCHLD) {
				reap_others(command);
				continue;
			}
			fprintf(stderr, "init-cage: %s, stopping the cage\n",
				strsignal((int)si.ssi_signo));
			return 0;
		}
		/* A pidfd polls readable once its process has exited. */
		if (p[0].revents || p[1].revents)
			return 0;
	}
}

int
main(int argc, char **argv)
{
	static const int fds[] = { 0, 1, 2 };
	static const char *const envp[] = { "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/", NULL };
	int pty = -1;
	struct clip_cage_spawn_opts spawn = {
		.size = sizeof(spawn),
		.argv = (const char *const *)argv + 2,
		.envp = envp,
		.fds = fds,
		.n_fds = 3,
		.flags = CLIP_CAGE_SPAWN_PTY,
		.ret_pty = &pty,
	};
	struct clip_error *error = NULL;
	struct clip_cage *cage = NULL;
	struct clip_ctx *ctx = NULL;
	int r, sfd = -1, pidfd = -1, status = EXIT_FAILURE;
	sigset_t mask;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PROFILE COMMAND [ARG...]\n", argv[0]);
		return 2;
	}
	/*
	 * Blocked before the cage exists, so that a SIGTERM (or SIGCHLD)
	 * sent at any time is read from the signalfd. The cage's processes
	 * do not inherit the mask: libclip clears it before it executes the
	 * command.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		fail("signalfd", -errno, NULL);
		return EXIT_FAILURE;
	}
	r = clip_ctx_new(&ctx);
	if (r < 0) {
		fail("cannot make a context", r, NULL);
		goto out;
	}
	/* The library never prints: its warnings (limits not applied) come here. */
	clip_ctx_set_log_fn(ctx, log_stderr, NULL);
	clip_ctx_set_log_priority(ctx, LOG_WARNING);
	if (start_cage(ctx, argv[1], &cage) < 0)
		goto out;
	r = clip_cage_spawn(cage, &spawn, &pidfd, &error);
	if (r < 0) {
		fail(argv[2], r, error);
		/* Its init would die with us, but leave its cgroups behind. */
		clip_cage_stop(cage, 0, NULL);
		goto out;
	}
	fprintf(stderr, "init-cage: %s runs in cage %s\n", argv[2],
		clip_cage_profile_get_name(clip_cage_get_profile(cage)));

	/*
	 * A pty of its own (one of ours was a terminal): relayed until the
	 * command exits. The relay takes SIGTERM and SIGINT itself (-EINTR);
	 * SIGCHLD waits in our signalfd until the event loop.
	 */
	r = 0;
	if (pty >= 0) {
		r = clip_cage_pty_relay(pty, isatty(0) ? 0 : -1, isatty(1) ? 1 : 2, pidfd, &error);
		close(pty);
		if (r < 0)
			fail("the command's terminal", r, error); /* and the cage is stopped */
	}
	if (r == 0 && event_loop(cage, pidfd, sfd) < 0)
		goto out;
	/*
	 * On a signal, or once the command is done: SIGTERM to what is left
	 * in the cage, SIGKILL after the grace, its init reaped and its
	 * cgroups removed. Also when the cage ended by itself: until stopped
	 * (or clip_cage_wait()), its init is not reaped. Stopping reaps our
	 * command too, and keeps its status for us.
	 */
	r = clip_cage_stop(cage, STOP_GRACE_MS, &error);
	if (r < 0) {
		fail("cannot stop the cage", r, error);
		goto out;
	}
	r = clip_cage_wait_process(cage, pidfd, &status);
	if (r < 0) {
		status = EXIT_FAILURE;
		fail("wait", r, NULL);
		goto out;
	}
	printf("exit status %d\n", status);
out:
	if (pidfd >= 0)
		close(pidfd);
	clip_cage_unref(cage);
	clip_ctx_unref(ctx);
	close(sfd);
	return status;
}
