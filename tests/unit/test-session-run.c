/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session's life through the API: start (the wiring each cage sees),
 * status, restart of one cage, a cage that dies (reported, restarted, given
 * up after the burst), a transfer through the session's mediator, the
 * control socket (and its refusal to another uid), a runner that died,
 * and the stop that leaves nothing: no process, registry entry, socket or
 * cgroup. And the refusals: a wiring spot taken by a symbolic link or by
 * another uid, a state directory another runner holds, the misuse of each
 * call.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <clip/session.h>
#include <clip/transfer.h>

#include "base/util.h"
#include "cage/cage-internal.h"
#include "helpers.h"
#include "sync-fault.h"
#include "lsm/lsm.h"
#include "transfer/proto.h"

#define N_CAGES 3
static const char *const names[N_CAGES] = { "low", "mid", "high" };
static const char *const levels[N_CAGES] = { "s0", "s1:c5", "s2" };

struct events {
	int ended, restarted, failed, stopped;
	int last_status;
	char last_cage[CLIP_SESSION_NAME_MAX + 1];
};

static void
on_event(struct clip_session *s, int event, const char *cage, int status, void *userdata)
{
	struct events *ev = userdata;

	(void)s;
	switch (event) {
	case CLIP_SESSION_EVENT_CAGE_ENDED:
		ev->ended++;
		break;
	case CLIP_SESSION_EVENT_CAGE_RESTARTED:
		ev->restarted++;
		break;
	case CLIP_SESSION_EVENT_CAGE_FAILED:
		ev->failed++;
		break;
	case CLIP_SESSION_EVENT_STOPPED:
		ev->stopped++;
		break;
	}
	if (event != CLIP_SESSION_EVENT_CAGE_RESTARTED)
		ev->last_status = status;
	snprintf(ev->last_cage, sizeof(ev->last_cage), "%s", cage ? cage : "");
}

/* valgrind 3.19 (Debian 12) answers ENOSYS to open_tree, pidfd_send_signal, landlock. */
static bool
under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

struct world {
	char *dir;
	char state[512];
	struct clip_ctx *ctx;
	struct clip_session *s;
	struct events ev;
	bool default_state; /* the session's state directory is the default one */
};

/*
 * The session of the test running, until world_free(): a failed assertion
 * leaves the test without freeing it, and its cages, registered, would
 * outlive the test's process. Dropping it stops them: at the suite's fini,
 * and at the worker's exit, which a failed assertion reaches without the
 * fini.
 */
static struct clip_session *live_session;

static void
drop_live_session(void)
{
	live_session = clip_session_unref(live_session);
}

TestSuite(session_run, .fini = drop_live_session);

/* A session of three cages (low s0, mid s1:c5, high s2), not started. */
static void
world_new(struct world *w, const char *policy, int high_restart)
{
	struct clip_error *e = NULL;
	char path[600];

	if (!test_is_root() && access("/proc/self/ns/user", F_OK) != 0)
		cr_skip_test("no user namespaces");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	memset(w, 0, sizeof(*w));
	w->dir = test_tmpdir("tmpfs");
	snprintf(path, sizeof(path), "%s/ctx", w->dir);
	w->ctx = test_ctx(path);
	cr_assert_eq(clip_session_new(&w->s, w->ctx, "t", NULL), 0);
	if (!live_session)
		atexit(drop_live_session);
	live_session = w->s;
	snprintf(w->state, sizeof(w->state), "%s/session", w->dir);
	cr_assert_eq(clip_session_set_state_dir(w->s, w->state, NULL), 0);
	for (int i = 0; i < N_CAGES; i++) {
		struct clip_level *l = test_level(levels[i]);
		struct clip_session_cage c = {
			.size = sizeof(c),
			.name = names[i],
			.level = l,
			.data_dir = path,
			.restart = i == 2 ? high_restart : CLIP_SESSION_RESTART_NO,
			/* On the test's tmpfs: test-session-crypt.c has the encrypted ones. */
			.data_encryption = CLIP_SESSION_DATA_NONE,
		};

		snprintf(path, sizeof(path), "%s/data/%s", w->dir, names[i]);
		cr_assert_eq(clip_session_add_cage(w->s, &c, &e), 0, "%s",
			     e ? clip_error_get_message(e) : "");
		clip_level_unref(l);
	}
	if (policy) {
		struct clip_policy *p = test_policy(policy);

		cr_assert_eq(clip_session_set_policy(w->s, p, NULL), 0);
		clip_policy_unref(p);
	}
	cr_assert_eq(clip_session_set_event_fn(w->s, on_event, &w->ev), 0);
}

static void
world_start(struct world *w)
{
	struct clip_error *e = NULL;
	int r = clip_session_start(w->s, 0, &e);

	cr_assert_eq(r, 0, "start: %d %s", r, e ? clip_error_get_message(e) : "");
}

static void
world_free(struct world *w)
{
	live_session = NULL;
	clip_session_unref(w->s);
	clip_ctx_unref(w->ctx);
	free(w->dir);
}

/* Dispatch until @cond holds, or fail after 10 s. */
#define pump_until(w, cond) \
	do { \
		long long _end = now_ms() + 10000; \
		while (!(cond)) { \
			struct pollfd _p = { .fd = clip_session_get_fd((w)->s), \
					     .events = POLLIN }; \
			cr_assert(now_ms() < _end, "never: %s", #cond); \
			(void)poll(&_p, 1, 100); \
			while (clip_session_dispatch((w)->s, NULL) > 0) \
				; \
		} \
	} while (0)

/* Run @script in @cage of the session and return its exit status. */
static int
run_in(struct world *w, const char *cage, const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_error *e = NULL;
	int pidfd = -1, status = -1;

	cr_assert_eq(clip_session_spawn(w->s, cage, &o, &pidfd, &e), 0, "spawn: %s",
		     e ? clip_error_get_message(e) : "");
	cr_assert_eq(clip_cage_wait_process(clip_session_get_cage(w->s, cage), pidfd, &status), 0);
	close(pidfd);
	return status;
}

static pid_t
init_pid(struct world *w, const char *cage)
{
	int *pids = NULL;
	size_t n = 0;
	pid_t pid;

	cr_assert_eq(clip_cage_get_pids(clip_session_get_cage(w->s, cage), &pids, &n), 0);
	cr_assert_geq(n, 1);
	pid = pids[0];
	free(pids);
	return pid;
}

static bool
exists(const char *dir, const char *name)
{
	char path[700];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

Test(session_run, each_cage_sees_its_wiring_and_nothing_else)
{
	struct world w;
	struct stat st;
	char path[700];

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	/* Its socket alone at /run/clip, read-only; the inbox noexec; /data writable. */
	cr_assert_eq(run_in(&w, "low", "test \"$(ls -A /run/clip)\" = transfer.sock"), 0,
		     "/run/clip holds more than transfer.sock");
	cr_assert_neq(run_in(&w, "low", "touch /run/clip/x"), 0, "/run/clip is writable");
	cr_assert_eq(run_in(&w, "low",
			    "grep -q '^[^ ]* [^ ]* [^ ]* [^ ]* /inbox [^ ]*noexec' "
			    "/proc/self/mountinfo"),
		     0, "/inbox is not noexec");
	cr_assert_eq(run_in(&w, "mid", "echo x > /data/f && echo y > /inbox/g"), 0,
		     "/data or /inbox is not writable");
	cr_assert_neq(run_in(&w, "mid", "ls /run/clip/../../inbox/../confirm.sock"), 0);
	snprintf(path, sizeof(path), "%s/data/mid/f", w.dir);
	cr_assert_eq(access(path, F_OK), 0, "the data directory is not the one bound at /data");
	/* On the host: each inbox 0700 to the cage's uid, the sockets where they go. */
	for (int i = 0; i < N_CAGES; i++) {
		struct clip_cage *c = clip_session_get_cage(w.s, names[i]);
		uid_t uid = test_is_root()
				    ? clip_cage_profile_get_uid_base(clip_cage_get_profile(c))
				    : geteuid();

		snprintf(path, sizeof(path), "%s/inbox/%s", w.state, names[i]);
		cr_assert_eq(lstat(path, &st), 0);
		cr_assert(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700, "%s: %o", path,
			  st.st_mode);
		cr_assert_eq(st.st_uid, uid, "%s: owned by %u, want %u", path, st.st_uid, uid);
		snprintf(path, sizeof(path), "%s/data/%s", w.dir, names[i]);
		cr_assert_eq(lstat(path, &st), 0);
		cr_assert_eq(st.st_mode & 07777, 0700);
		cr_assert_eq(st.st_uid, uid);
		snprintf(path, sizeof(path), "%s/run/%s/transfer.sock", w.state, names[i]);
		cr_assert_eq(lstat(path, &st), 0);
		cr_assert(S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0666);
		cr_assert_geq(clip_session_get_socket_fd(w.s, names[i]), 0);
	}
	snprintf(path, sizeof(path), "%s/control.sock", w.state);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/confirm.sock", w.state);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_not_null(clip_session_get_mediator(w.s));
	world_free(&w);
}

/* The LSM's maps alone, in a bpffs of the test's own (doc/lsm.md, "This host"); else skipped. */
static void
lsm_maps_of_the_test_s_own(void)
{
	int r;

	if (!test_is_root())
		cr_skip_test("not root: no bpffs of its own, no BPF maps");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	cr_assert_eq(test_unshare_mount(), 0);
	cr_assert_eq(mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"), 0, "%s", strerror(errno));
	r = lsm_test_pin_maps();
	if (r == -EOPNOTSUPP)
		cr_skip_test("built without the BPF LSM (-Dlsm=disabled)");
	cr_assert_eq(r, 0, "%s", strerror(-r));
}

Test(session_run, the_lsm_learns_each_cage_s_transfer_socket_and_data_directory)
{
	struct world w;
	char path[700];

	lsm_maps_of_the_test_s_own();
	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	for (int i = 0; i < N_CAGES; i++) {
		struct clip_cage *c = clip_session_get_cage(w.s, names[i]);
		struct clip_level *level = test_level(levels[i]);
		struct lsm_level want, got;
		struct lsm_task t;
		uint64_t id = 0;
		int data;

		/* Its init, and the one socket not of the cage that it may reach, under its id. */
		cr_assert_eq(lsm_test_task(clip_cage_get_fd(c), &t), 0, "%s: not registered",
			     names[i]);
		cr_assert_eq(lsm_test_socket(clip_session_get_socket_fd(w.s, names[i]), &id), 0,
			     "%s: its transfer socket is not marked", names[i]);
		cr_assert_eq(id, t.cage_id, "%s: its socket is another cage's", names[i]);
		/* Its data directory at its level. */
		snprintf(path, sizeof(path), "%s/data/%s", w.dir, names[i]);
		data = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(data, 0);
		lsm_level_from(&want, level);
		cr_assert_eq(lsm_test_inode(data, &got), 0, "%s: its data directory has no level",
			     names[i]);
		cr_assert_eq(memcmp(&got, &want, sizeof(want)), 0, "%s: not its level", names[i]);
		cr_assert_eq(memcmp(&t.level, &want, sizeof(want)), 0, "%s: not its level",
			     names[i]);
		close(data);
		clip_level_unref(level);
	}
	cr_assert_eq(clip_lsm_unload(w.ctx, NULL), 0);
	world_free(&w);
}

Test(session_run, an_existing_data_directory_of_the_cage_is_taken_as_it_is)
{
	struct clip_cage_profile *p = NULL;
	struct world w;
	struct stat st;
	char path[700];
	uid_t uid;

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	/* The uid the session gives cage "low" of session "t": the one derived from "t.low". */
	cr_assert_eq(clip_cage_profile_new(&p, "t.low", NULL), 0);
	uid = test_is_root() ? clip_cage_profile_get_uid_base(p) : geteuid();
	clip_cage_profile_unref(p);
	snprintf(path, sizeof(path), "%s/data", w.dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/data/low", w.dir);
	cr_assert_eq(mkdir(path, 0750), 0);
	cr_assert_eq(chmod(path, 0750), 0);
	/* Not root: the user's own uid and group (a plain user's gid is not its uid). */
	cr_assert_eq(chown(path, uid, test_is_root() ? uid : getegid()), 0);
	world_start(&w);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0750, "the user's mode was changed: %o", st.st_mode);
	cr_assert_eq(run_in(&w, "low", "echo x > /data/f"), 0);
	world_free(&w);
}

Test(session_run, status_tells_each_cage_and_the_mediator)
{
	struct clip_session_status *st = NULL;
	struct world w;
	static const char *const sorted[] = { "high", "low", "mid" };
	static const char *const sorted_levels[] = { "s2", "s0", "s1:c5" };
	unsigned pending = 9;
	int agent = 9;

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	cr_assert_eq(clip_session_get_status(w.s, &st, NULL), 0);
	cr_assert_eq(clip_session_status_get_n_cages(st), N_CAGES);
	for (size_t i = 0; i < N_CAGES; i++) {
		const char *level = NULL;
		unsigned pids = 0, restarts = 9;
		int state = -1;

		cr_assert_str_eq(
			clip_session_status_get_cage(st, i, &state, &level, &pids, NULL, &restarts),
			sorted[i]);
		cr_assert_eq(state, CLIP_CAGE_RUNNING);
		cr_assert_str_eq(level, sorted_levels[i]);
		cr_assert_geq(pids, 1);
		cr_assert_eq(restarts, 0);
	}
	cr_assert_null(clip_session_status_get_cage(st, N_CAGES, NULL, NULL, NULL, NULL, NULL));
	cr_assert_eq(clip_session_status_get_mediator(st, &pending, &agent), 0);
	cr_assert_eq(pending, 0);
	cr_assert_eq(agent, 0);
	clip_session_status_free(st);
	world_free(&w);
}

Test(session_run, a_restart_touches_one_cage_only)
{
	struct world w;
	pid_t before[N_CAGES];

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	for (int i = 0; i < N_CAGES; i++)
		before[i] = init_pid(&w, names[i]);
	cr_assert_eq(clip_session_restart_cage(w.s, "mid", 100, NULL), 0);
	cr_assert_neq(init_pid(&w, "mid"), before[1], "mid was not restarted");
	cr_assert_eq(init_pid(&w, "low"), before[0], "low was touched");
	cr_assert_eq(init_pid(&w, "high"), before[2], "high was touched");
	cr_assert_eq(run_in(&w, "mid", "test -S /run/clip/transfer.sock"), 0);
	/* No event: a restart asked for is no cage ending by itself. */
	while (clip_session_dispatch(w.s, NULL) > 0)
		;
	cr_assert_eq(w.ev.ended, 0);
	world_free(&w);
}

Test(session_run, a_killed_cage_is_reported_and_restarted_by_its_rule)
{
	struct world w;
	pid_t pid;

	world_new(&w, NULL, CLIP_SESSION_RESTART_ALWAYS);
	world_start(&w);
	pid = init_pid(&w, "high");
	cr_assert_eq(kill(pid, SIGKILL), 0);
	pump_until(&w, w.ev.restarted == 1);
	cr_assert_eq(w.ev.ended, 1);
	cr_assert_eq(w.ev.last_status, 128 + SIGKILL);
	cr_assert_str_eq(w.ev.last_cage, "high");
	cr_assert_neq(init_pid(&w, "high"), pid);
	cr_assert_eq(run_in(&w, "high", "true"), 0, "the restarted cage does not run");
	/* A cage whose rule is "no" stays down, reported. */
	cr_assert_eq(kill(init_pid(&w, "low"), SIGKILL), 0);
	pump_until(&w, w.ev.ended == 2);
	cr_assert_eq(w.ev.restarted, 1);
	cr_assert_eq(clip_cage_get_state(clip_session_get_cage(w.s, "low")), CLIP_CAGE_STOPPED);
	{
		struct clip_session_status *st = NULL;
		unsigned restarts = 0;
		int state = -1;

		cr_assert_eq(clip_session_get_status(w.s, &st, NULL), 0);
		cr_assert_str_eq(
			clip_session_status_get_cage(st, 0, &state, NULL, NULL, NULL, &restarts),
			"high");
		cr_assert_eq(restarts, 1);
		cr_assert_str_eq(
			clip_session_status_get_cage(st, 1, &state, NULL, NULL, NULL, NULL), "low");
		cr_assert_eq(state, CLIP_CAGE_STOPPED);
		clip_session_status_free(st);
	}
	world_free(&w);
}

Test(session_run, a_cage_that_keeps_dying_is_given_up)
{
	struct world w;

	world_new(&w, NULL, CLIP_SESSION_RESTART_ON_FAILURE);
	world_start(&w);
	for (int i = 1; i <= 5; i++) {
		cr_assert_eq(kill(init_pid(&w, "high"), SIGKILL), 0);
		pump_until(&w, w.ev.restarted == i);
	}
	cr_assert_eq(kill(init_pid(&w, "high"), SIGKILL), 0);
	pump_until(&w, w.ev.failed == 1);
	cr_assert_eq(w.ev.ended, 6);
	cr_assert_eq(w.ev.restarted, 5);
	cr_assert_eq(clip_cage_get_state(clip_session_get_cage(w.s, "high")), CLIP_CAGE_STOPPED);
	/* A restart asked for still works, and starts a new count. */
	cr_assert_eq(clip_session_restart_cage(w.s, "high", 0, NULL), 0);
	cr_assert_eq(run_in(&w, "high", "true"), 0);
	world_free(&w);
}

/* The names of registered cages of session "t". */
static int
registered(struct clip_ctx *ctx)
{
	char **list = NULL;
	int n = clip_cage_list(ctx, &list, NULL), found = 0;

	cr_assert_geq(n, 0);
	for (int i = 0; i < n; i++) {
		found += strncmp(list[i], "t.", 2) == 0;
		free(list[i]);
	}
	free(list);
	return found;
}

Test(session_run, a_stop_leaves_nothing)
{
	struct world w;
	int pidfds[N_CAGES];
	char cgroups[N_CAGES][512], path[700];

	world_new(&w, NULL, CLIP_SESSION_RESTART_ALWAYS);
	world_start(&w);
	cr_assert_eq(registered(w.ctx), N_CAGES);
	for (int i = 0; i < N_CAGES; i++) {
		struct clip_cage *c = clip_session_get_cage(w.s, names[i]);

		pidfds[i] = (int)syscall(SYS_pidfd_open, init_pid(&w, names[i]), 0);
		cr_assert_geq(pidfds[i], 0);
		snprintf(cgroups[i], sizeof(cgroups[i]), "%s", c->cg.v2 ? c->cg.v2 : "");
	}
	cr_assert_eq(clip_session_stop(w.s, 100, NULL), 0);
	cr_assert_eq(w.ev.stopped, 1);
	/* Asked to stop: no cage "ended by itself", none restarted. */
	cr_assert_eq(w.ev.ended, 0);
	cr_assert_eq(w.ev.restarted, 0);
	for (int i = 0; i < N_CAGES; i++) {
		struct pollfd p = { .fd = pidfds[i], .events = POLLIN };

		cr_assert_eq(poll(&p, 1, 0), 1, "the init of %s still runs", names[i]);
		close(pidfds[i]);
		if (cgroups[i][0])
			cr_assert_neq(access(cgroups[i], F_OK), 0, "cgroup %s is left", cgroups[i]);
		snprintf(path, sizeof(path), "%s/inbox/%s", w.state, names[i]);
		cr_assert_eq(access(path, F_OK), 0, "the inbox went");
		snprintf(path, sizeof(path), "%s/data/%s", w.dir, names[i]);
		cr_assert_eq(access(path, F_OK), 0, "the data directory went");
	}
	cr_assert_eq(registered(w.ctx), 0, "a registry entry is left");
	cr_assert_not(exists(w.state, "run"), "the socket directories are left");
	cr_assert_not(exists(w.state, "confirm.sock"));
	cr_assert_not(exists(w.state, "control.sock"));
	cr_assert_null(clip_session_get_mediator(w.s));
	cr_assert_null(clip_session_get_cage(w.s, "low"));
	assert_errno(clip_session_get_fd(w.s), -ECHILD);
	assert_errno(clip_session_stop(w.s, 0, NULL), -ECHILD);
	assert_errno(clip_session_dispatch(w.s, NULL), -ECHILD);
	/* And it starts again. */
	world_start(&w);
	cr_assert_eq(run_in(&w, "low", "true"), 0);
	world_free(&w);
}

/* In a child: ask @request of the session's runner; exit 0 when it answers as @want. */
static pid_t
control_child(struct world *w, const char *request, int want, bool unprivileged)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct clip_session_status *st = NULL;
		struct clip_error *e = NULL;
		struct clip_ctx *ctx = NULL;
		int r;

		if (unprivileged)
			test_drop_privileges();
		if (clip_ctx_new(&ctx) < 0)
			_exit(10);
		if (w->default_state) {
			char path[600];

			/* The default: STATE/sessions/NAME of a context with the runner's state. */
			snprintf(path, sizeof(path), "%s/ctx", w->dir);
			if (clip_ctx_set_state_dir(ctx, path) < 0)
				_exit(15);
		}
		r = clip_session_control(ctx, "t", w->default_state ? NULL : w->state, request,
					 strcmp(request, "status") == 0 ? &st : NULL, &e);
		if (r != want) {
			fprintf(stderr, "control %s: %d %s\n", request, r,
				e ? clip_error_get_message(e) : "");
			_exit(11);
		}
		if (r == -EPERM && !strstr(clip_error_get_message(e), "may not control"))
			_exit(12);
		if (st && clip_session_status_get_n_cages(st) != N_CAGES)
			_exit(13);
		if (st && strcmp(clip_session_status_get_cage(st, 2, NULL, NULL, NULL, NULL, NULL),
				 "mid") != 0)
			_exit(14);
		_exit(0);
	}
	return pid;
}

/* Dispatch until the child @pid exits; its exit status. */
static int
pump_child(struct world *w, pid_t pid)
{
	int status = -1;

	for (long long end = now_ms() + 20000; now_ms() < end;) {
		struct pollfd p = { .fd = clip_session_get_fd(w->s), .events = POLLIN };

		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (p.fd >= 0) {
			(void)poll(&p, 1, 50);
			while (clip_session_dispatch(w->s, NULL) > 0)
				;
		} else
			usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	cr_assert_fail("the control client never ended");
	return -1;
}

Test(session_run, the_control_socket_answers_status_restart_and_stop)
{
	struct world w;
	pid_t mid;

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	mid = init_pid(&w, "mid");
	cr_assert_eq(pump_child(&w, control_child(&w, "status", 0, false)), 0);
	cr_assert_eq(pump_child(&w, control_child(&w, "restart mid", 0, false)), 0);
	cr_assert_neq(init_pid(&w, "mid"), mid, "mid was not restarted");
	/* The runner's errors come back with their message. */
	cr_assert_eq(pump_child(&w, control_child(&w, "restart nosuch", -EINVAL, false)), 0);
	cr_assert_eq(pump_child(&w, control_child(&w, "reboot", -EINVAL, false)), 0);
	cr_assert_eq(pump_child(&w, control_child(&w, "stop", 0, false)), 0);
	cr_assert_eq(w.ev.stopped, 1);
	assert_errno(clip_session_get_fd(w.s), -ECHILD);
	/* Nobody answers any more. */
	{
		struct clip_error *e = NULL;

		assert_errno(clip_session_control(w.ctx, "t", w.state, "status", NULL, &e), -ESRCH);
		clip_error_free(e);
	}
	world_free(&w);
}

/*
 * An answer on a control connection, seen as it leaves the runner: is the
 * request it answers in the trail already? (doc/session.md: each request
 * that changes the session is recorded before its answer.)
 */
static struct {
	bool on;
	char log[600], want[64];
	unsigned answers, early;
} answer_probe;

ssize_t
send(int fd, const void *buf, size_t n, int flags)
{
	if (answer_probe.on && n >= 3 &&
	    (memcmp(buf, "ok\n", 3) == 0 || (n > 6 && memcmp(buf, "error ", 6) == 0))) {
		char text[65536];
		int log = open(answer_probe.log, O_RDONLY | O_CLOEXEC);
		ssize_t k = log < 0 ? -1 : read(log, text, sizeof(text) - 1);

		if (log >= 0)
			close(log);
		text[k > 0 ? k : 0] = '\0';
		answer_probe.answers++;
		if (!strstr(text, answer_probe.want))
			answer_probe.early++;
	}
	return syscall(SYS_sendto, fd, buf, n, flags, NULL, 0);
}

Test(session_run, a_change_asked_on_the_control_socket_is_recorded_before_its_answer)
{
	static const struct {
		const char *request, *record;
		int want;
	} cases[] = {
		{ "stop mid", "decision=done by=root reason=stop%20mid", 0 },
		{ "start mid", "decision=done by=root reason=start%20mid", 0 },
		{ "stop nosuch", "decision=failed by=root reason=stop%20nosuch", -EINVAL },
		{ "reload", "decision=failed by=root reason=reload", -EOPNOTSUPP },
	};
	struct world w;

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	/* The session's log is its context's (clip_session_get_audit()). */
	snprintf(answer_probe.log, sizeof(answer_probe.log), "%s/" CLIP_AUDIT_LOG_NAME,
		 clip_ctx_get_state_dir(w.ctx));
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		snprintf(answer_probe.want, sizeof(answer_probe.want), "%s", cases[i].record);
		answer_probe.answers = answer_probe.early = 0;
		answer_probe.on = true;
		cr_assert_eq(
			pump_child(&w, control_child(&w, cases[i].request, cases[i].want, false)),
			0, "%s", cases[i].request);
		answer_probe.on = false;
		cr_assert_eq(answer_probe.answers, 1, "%s: %u answers", cases[i].request,
			     answer_probe.answers);
		cr_assert_eq(answer_probe.early, 0, "'%s' was answered before it was recorded",
			     cases[i].request);
	}
	world_free(&w);
}

/* A change done whose record the trail lost is not answered "ok": the asker learns it, EIO. */
Test(session_run, a_change_whose_record_fails_is_answered_so)
{
	struct world w;

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	answer_probe = (__typeof__(answer_probe)){ .on = true };
	test_sync_fault.fail = 1;
	cr_assert_eq(pump_child(&w, control_child(&w, "stop mid", -EIO, false)), 0);
	answer_probe.on = false;
	cr_assert_eq(test_sync_fault.fail, 0, "the record was not synced");
	/* Done all the same: mid is stopped. */
	cr_assert_eq(pump_child(&w, control_child(&w, "start mid", 0, false)), 0);
	world_free(&w);
}

Test(session_run, the_default_state_directory_is_under_the_contexts)
{
	struct world w;
	char path[700];

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	cr_assert_eq(clip_session_set_state_dir(w.s, NULL, NULL), 0);
	w.default_state = true;
	snprintf(w.state, sizeof(w.state), "%s/ctx/sessions/t", w.dir);
	world_start(&w);
	snprintf(path, sizeof(path), "%s/run/low/transfer.sock", w.state);
	cr_assert_eq(access(path, F_OK), 0, "%s", path);
	cr_assert_eq(pump_child(&w, control_child(&w, "status", 0, false)), 0);
	cr_assert_eq(pump_child(&w, control_child(&w, "stop", 0, false)), 0);
	cr_assert_not(exists(w.state, "control.sock"));
	world_free(&w);
}

Test(session_run, the_control_socket_refuses_another_uid)
{
	struct world w;
	char path[700];

	if (!test_is_root())
		cr_skip_test("not root: no other uid to be");
	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	/* The socket's mode refuses it at connect. */
	cr_assert_eq(pump_child(&w, control_child(&w, "stop", -EPERM, true)), 0);
	/* And with the mode opened by mistake, the runner refuses the peer's uid. */
	snprintf(path, sizeof(path), "%s/control.sock", w.state);
	cr_assert_eq(chmod(path, 0666), 0);
	cr_assert_eq(pump_child(&w, control_child(&w, "stop", -EPERM, true)), 0);
	cr_assert_eq(w.ev.stopped, 0, "another uid stopped the session");
	cr_assert_geq(clip_session_get_fd(w.s), 0);
	world_free(&w);
}

Test(session_run, the_cages_a_dead_runner_left_are_stopped_first)
{
	struct world w;
	pid_t child, old;
	int status = -1, pidfd;

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		/* A runner that dies without stopping: its cages are registered, they outlive it. */
		struct clip_ctx *ctx = NULL;
		struct clip_session *s = NULL;
		char path[600];

		snprintf(path, sizeof(path), "%s/ctx", w.dir);
		if (clip_ctx_new(&ctx) < 0 || clip_ctx_set_state_dir(ctx, path) < 0 ||
		    clip_session_new(&s, ctx, "t", NULL) < 0)
			_exit(10);
		(void)clip_session_set_state_dir(s, w.state, NULL);
		for (int i = 0; i < N_CAGES; i++) {
			struct clip_level *l = NULL;
			struct clip_session_cage c = { .size = sizeof(c),
						       .name = names[i],
						       .data_encryption = CLIP_SESSION_DATA_NONE };

			snprintf(path, sizeof(path), "%s/data/%s", w.dir, names[i]);
			c.data_dir = path;
			if (clip_level_parse(&l, levels[i], NULL) < 0)
				_exit(11);
			c.level = l;
			if (clip_session_add_cage(s, &c, NULL) < 0)
				_exit(12);
		}
		_exit(clip_session_start(s, 0, NULL) < 0 ? 13 : 0);
	}
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the first runner: %d", status);
	{
		struct clip_cage *c = NULL;
		int *pids = NULL;
		size_t n = 0;

		cr_assert_eq(clip_session_attach_cage(&c, w.ctx, "t", "low", NULL), 0,
			     "the dead runner's cage is not registered");
		cr_assert_eq(clip_cage_get_pids(c, &pids, &n), 0);
		old = pids[0];
		free(pids);
		clip_cage_unref(c);
	}
	pidfd = (int)syscall(SYS_pidfd_open, old, 0);
	cr_assert_geq(pidfd, 0);
	world_start(&w);
	{
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		cr_assert_eq(poll(&p, 1, 5000), 1, "the leftover cage still runs");
	}
	close(pidfd);
	cr_assert_neq(init_pid(&w, "low"), old);
	cr_assert_eq(registered(w.ctx), N_CAGES);
	cr_assert_eq(clip_session_stop(w.s, 100, NULL), 0);
	cr_assert_eq(registered(w.ctx), 0);
	world_free(&w);
}

static uid_t
cage_uid(struct world *w, const char *cage)
{
	return test_is_root() ? clip_cage_profile_get_uid_base(
					clip_cage_get_profile(clip_session_get_cage(w->s, cage)))
			      : geteuid();
}

static void
status_mediator(struct world *w, unsigned *pending, int *agent)
{
	struct clip_session_status *st = NULL;

	cr_assert_eq(clip_session_get_status(w->s, &st, NULL), 0);
	cr_assert_eq(clip_session_status_get_mediator(st, pending, agent), 0);
	clip_session_status_free(st);
}

/* In a child, as @uid (root mode: the cage's), send @fd to "high" through @sock_path. */
static pid_t
transfer_child(const char *sock_path, int fd, uid_t uid)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct clip_transfer *t = NULL;
		int sock = -1;

		if (uid != geteuid() &&
		    (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0))
			_exit(10);
		if (clip_transfer_connect(&sock, sock_path, NULL) < 0)
			_exit(11);
		if (clip_transfer_send(&t, sock, fd, "high", "doc.txt", NULL, NULL) < 0)
			_exit(12);
		/* 0 delivered, else 20 + the status. */
		_exit(clip_transfer_get_status(t) == CLIP_TRANSFER_DELIVERED
			      ? 0
			      : 20 + clip_transfer_get_status(t));
	}
	return pid;
}

Test(session_run, a_document_moves_up_through_the_sessions_mediator)
{
	struct world w;
	char sock[700], path[700];
	uid_t uid;
	int fd;

	world_new(&w, "low high allow\n", CLIP_SESSION_RESTART_NO);
	world_start(&w);
	uid = cage_uid(&w, "low");
	fd = test_file(w.dir, "doc", "a document\n");
	snprintf(sock, sizeof(sock), "%s/run/low/transfer.sock", w.state);
	cr_assert_eq(pump_child(&w, transfer_child(sock, fd, uid)), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/inbox/high/doc.txt", w.state);
	cr_assert_eq(access(path, F_OK), 0, "not delivered to high's inbox");
	cr_assert_eq(run_in(&w, "high", "test \"$(cat /inbox/doc.txt)\" = 'a document'"), 0);
	/* Down is denied: the policy has no such rule. */
	fd = test_file(w.dir, "doc2", "x\n");
	snprintf(sock, sizeof(sock), "%s/run/mid/transfer.sock", w.state);
	cr_assert_eq(pump_child(&w, transfer_child(sock, fd, cage_uid(&w, "mid"))),
		     20 + CLIP_TRANSFER_DENIED_POLICY);
	close(fd);
	world_free(&w);
}

Test(session_run, a_stop_answers_a_pending_question_no)
{
	struct world w;
	char sock[700], path[700];
	unsigned pending = 0;
	int agent = 0, fd, status = -1, inbox;
	pid_t child;

	world_new(&w, "low high ask\n", CLIP_SESSION_RESTART_NO);
	world_start(&w);
	/* An agent that never answers. */
	snprintf(path, sizeof(path), "%s/confirm.sock", w.state);
	cr_assert_eq(clip_transfer_connect(&fd, path, NULL), 0);
	pump_until(&w, (status_mediator(&w, &pending, &agent), agent == 1));
	snprintf(sock, sizeof(sock), "%s/run/low/transfer.sock", w.state);
	{
		int doc = test_file(w.dir, "doc", "waits for the user\n");

		child = transfer_child(sock, doc, cage_uid(&w, "low"));
		close(doc);
	}
	pump_until(&w, (status_mediator(&w, &pending, &agent), pending == 1));
	cr_assert_eq(clip_session_stop(w.s, 100, NULL), 0);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 20 + CLIP_TRANSFER_DENIED_USER,
		     "the requester was not answered no: %d", WEXITSTATUS(status));
	snprintf(path, sizeof(path), "%s/inbox/high", w.state);
	inbox = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(inbox, 0);
	cr_assert(test_dir_is_empty(inbox), "something is left in the inbox");
	close(inbox);
	close(fd);
	world_free(&w);
}

Test(session_run, with_external_sockets_the_caller_accepts)
{
	struct world w;
	struct clip_error *e = NULL;
	char sock[700];
	int doc, conn, listen_fd;
	pid_t child;

	world_new(&w, "low high allow\n", CLIP_SESSION_RESTART_NO);
	cr_assert_eq(clip_session_start(w.s, CLIP_SESSION_START_EXTERNAL_SOCKETS, &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	listen_fd = clip_session_get_socket_fd(w.s, "low");
	cr_assert_geq(listen_fd, 0);
	snprintf(sock, sizeof(sock), "%s/run/low/transfer.sock", w.state);
	doc = test_file(w.dir, "doc", "through the caller\n");
	child = transfer_child(sock, doc, cage_uid(&w, "low"));
	close(doc);
	{
		struct pollfd p = { .fd = listen_fd, .events = POLLIN };

		cr_assert_eq(poll(&p, 1, 5000), 1, "no connection on the cage's socket");
	}
	/* The session's mediator does not accept it: the connection waits for the caller. */
	while (clip_session_dispatch(w.s, NULL) > 0)
		;
	conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(conn, 0, "the mediator took the connection itself");
	cr_assert_eq(clip_mediator_add_connection(clip_session_get_mediator(w.s), "low", conn, &e),
		     0, "%s", e ? clip_error_get_message(e) : "");
	close(conn);
	cr_assert_eq(pump_child(&w, child), 0);
	world_free(&w);
}

struct notices {
	int rootless;
	char line[512];
};

static void
catch_notice(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	struct notices *n = userdata;

	(void)ctx;
	if (priority == LOG_NOTICE && strstr(message, "is rootless")) {
		n->rootless++;
		snprintf(n->line, sizeof(n->line), "%s", message);
	}
}

Test(session_run, a_rootless_session_says_once_what_it_lacks)
{
	struct world w;
	struct notices n = { 0 };

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	cr_assert_eq(clip_ctx_set_cage_mode(w.ctx, CLIP_CAGE_MODE_ROOTLESS), 0);
	cr_assert_eq(clip_ctx_set_log_fn(w.ctx, catch_notice, &n), 0);
	world_start(&w);
	cr_assert_eq(n.rootless, 1, "said %d times", n.rootless);
	cr_assert(strstr(n.line, "user.clip.label"), "%s", n.line);
	/* Rootless, every inbox is the caller's. */
	{
		char path[700];
		struct stat st;

		snprintf(path, sizeof(path), "%s/inbox/low", w.state);
		cr_assert_eq(lstat(path, &st), 0);
		cr_assert_eq(st.st_uid, geteuid());
	}
	cr_assert_eq(run_in(&w, "low", "echo x > /data/f"), 0);
	world_free(&w);
}

Test(session_run, a_transfer_in_flight_completes_across_another_cages_restart)
{
	struct world w;
	struct proto_msg prompt = { .fd = -1 }, yes = { .type = PROTO_ANSWER, .fd = -1 };
	char sock[700], path[700];
	int agent = -1, doc;
	unsigned pending = 0;
	int connected = 0;
	pid_t child, mid;

	world_new(&w, "low high ask\n", CLIP_SESSION_RESTART_NO);
	world_start(&w);
	snprintf(path, sizeof(path), "%s/confirm.sock", w.state);
	cr_assert_eq(clip_transfer_connect(&agent, path, NULL), 0);
	pump_until(&w, (status_mediator(&w, &pending, &connected), connected == 1));
	cr_assert_eq(proto_recv(agent, &prompt, NULL), 0);
	cr_assert_eq(prompt.type, PROTO_HELLO);
	snprintf(sock, sizeof(sock), "%s/run/low/transfer.sock", w.state);
	doc = test_file(w.dir, "doc", "in flight\n");
	child = transfer_child(sock, doc, cage_uid(&w, "low"));
	close(doc);
	pump_until(&w, (status_mediator(&w, &pending, &connected), pending == 1));
	/* While low's document waits for the user, mid is restarted. */
	mid = init_pid(&w, "mid");
	cr_assert_eq(clip_session_restart_cage(w.s, "mid", 100, NULL), 0);
	cr_assert_neq(init_pid(&w, "mid"), mid);
	status_mediator(&w, &pending, &connected);
	cr_assert_eq(pending, 1, "the question went with the restart");
	/* The user says yes: the transfer completes. */
	cr_assert_eq(proto_recv(agent, &prompt, NULL), 0);
	cr_assert_eq(prompt.type, PROTO_PROMPT);
	yes.answer.id = prompt.prompt.id;
	yes.answer.allow = 1;
	cr_assert_eq(proto_send(agent, &yes, NULL), 0);
	cr_assert_eq(pump_child(&w, child), 0, "the transfer in flight did not complete");
	snprintf(path, sizeof(path), "%s/inbox/high/doc.txt", w.state);
	cr_assert_eq(access(path, F_OK), 0);
	close(agent);
	world_free(&w);
}

/* A runner that lies: it answers @answer (@size bytes) to whatever it is asked. */
struct liar {
	int listen_fd;
	const char *answer;
	size_t size;
};

static void *
liar_serve(void *userdata)
{
	struct liar *l = userdata;
	char req[512];
	int fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return NULL;
	(void)recv(fd, req, sizeof(req), 0);
	(void)send(fd, l->answer, l->size, MSG_NOSIGNAL);
	close(fd);
	return NULL;
}

/*
 * clip_session_control() "status" against a runner answering @answer (or,
 * @st NULL, clip_session_down()): its return value.
 */
static int
ask_liar(const char *dir, const char *answer, size_t size, struct clip_session_status **st,
	 char *message, size_t message_size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct liar l = { .answer = answer, .size = size };
	struct clip_error *e = NULL;
	struct clip_ctx *ctx = test_ctx(NULL);
	pthread_t thread;
	int r;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/control.sock", dir);
	(void)unlink(sa.sun_path);
	l.listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	cr_assert_eq(bind(l.listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(l.listen_fd, 4), 0);
	cr_assert_eq(pthread_create(&thread, NULL, liar_serve, &l), 0);
	r = st ? clip_session_control(ctx, "t", dir, "status", st, &e)
	       : clip_session_down(ctx, "t", dir, &e);
	pthread_join(thread, NULL);
	close(l.listen_fd);
	snprintf(message, message_size, "%s", e ? clip_error_get_message(e) : "");
	clip_error_free(e);
	clip_ctx_unref(ctx);
	return r;
}

Test(session_run, a_runner_that_lies_is_not_believed)
{
	static const char *const lies[] = {
		"okay\n",
		"ok\n", /* no mediator line */
		"ok\nmediator 0 2\n", /* an agent is 0 or 1 */
		"ok\nmediator 0 0", /* no end of line */
		"ok\nmediator 0 0\ncage Low 1 s0 1 0 0\n", /* not a cage name */
		"ok\nmediator 0 0\ncage low 3 s0 1 0 0\n", /* no such state */
		"ok\nmediator 0 0\ncage low 1 s99 1 0 0\n", /* no such level */
		"ok\nmediator 0 0\ncage low 1 s0 99999999 0 0\n", /* more pids than a host has */
		"ok\nmediator 0 0\ncage low 1 s0 01 0 0\n", /* not as the runner writes it */
		"ok\nmediator 0 0\ncage low 1 s0 1 0 0 7\n", /* a field too many */
		"ok\nmediator 0 0\ncage mid 1 s0 1 0 0\ncage low 1 s0 1 0 0\n", /* unsorted */
		"ok\nmediator 0 0\ncage low 1 s0 1 0 0\ncage low 1 s0 1 0 0\n", /* twice */
		"ok\nmediator -1 0\n",
		"error 0 nothing\n", /* no errno */
		"error 99999 x\n", /* no such errno */
		"error 1\n", /* no message */
	};
	char *dir = test_tmpdir("tmpfs"), message[1024];
	struct clip_session_status *st = NULL;
	char *big;

	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		int r = ask_liar(dir, lies[i], strlen(lies[i]), &st, message, sizeof(message));

		cr_assert_eq(r, -EPROTO, "lie %zu '%s': %d %s", i, lies[i], r, message);
		cr_assert_null(st);
	}
	/* Nothing: a runner that died as it was asked. */
	assert_errno(ask_liar(dir, "", 0, &st, message, sizeof(message)), -ECONNRESET);
	cr_assert(strstr(message, "closed without an answer"), "%s", message);
	/* Too big for the answer's bound: not read. */
	big = malloc(70000);
	memset(big, 'a', 70000);
	memcpy(big, "ok\nmediator 0 0\n", 16);
	assert_errno(ask_liar(dir, big, 70000, &st, message, sizeof(message)), -EPROTO);
	free(big);
	/* A NUL in it. */
	assert_errno(ask_liar(dir, "ok\nmediator 0 0\n\0", 17, &st, message, sizeof(message)),
		     -EPROTO);
	/* Its error comes back with its message, controls replaced. */
	assert_errno(ask_liar(dir, "error 1 go\033]0;away\n", 19, &st, message, sizeof(message)),
		     -EPERM);
	cr_assert(strstr(message, "go?]0;away"), "%s", message);
	/* And the truth is believed. */
	{
		static const char truth[] = "ok\nmediator 3 1\ncage a 1 s1:c5 4 0 2\n"
					    "cage b 2 s0 0 0 0\n";
		const char *level = NULL;
		unsigned pending = 0, pids = 0, restarts = 0;
		int agent = 0, state = 0;

		assert_errno(ask_liar(dir, truth, sizeof(truth) - 1, &st, message, sizeof(message)),
			     0);
		cr_assert_eq(clip_session_status_get_n_cages(st), 2);
		cr_assert_str_eq(
			clip_session_status_get_cage(st, 0, &state, &level, &pids, NULL, &restarts),
			"a");
		cr_assert_eq(state, CLIP_CAGE_RUNNING);
		cr_assert_str_eq(level, "s1:c5");
		cr_assert_eq(pids, 4);
		cr_assert_eq(restarts, 2);
		cr_assert_eq(clip_session_status_get_mediator(st, &pending, &agent), 0);
		cr_assert_eq(pending, 3);
		cr_assert_eq(agent, 1);
		clip_session_status_free(st);
	}
	free(dir);
}

/* -- refusals ----------------------------------------------------------- */

/*
 * clip_session_down() against a runner that closes without an answer: it
 * died as it was asked, so down goes on as with no runner, once the lock
 * its children may still hold for a moment is let go (here, a child of the
 * test holds it 300 ms); nothing of the session is left: -ESRCH, not an
 * error about the answer.
 */
Test(session_run, down_goes_on_when_the_runner_closes_without_an_answer)
{
	char *dir = test_tmpdir("tmpfs"), message[1024], c;
	int p[2], status;
	pid_t pid;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd < 0 || flock(fd, LOCK_EX) < 0 || write(p[1], "l", 1) != 1)
			_exit(1);
		(void)nanosleep(&(struct timespec){ .tv_nsec = 300 * 1000 * 1000 }, NULL);
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &c, 1), 1, "the lock holder did not start");
	close(p[0]);
	assert_errno(ask_liar(dir, "", 0, NULL, message, sizeof(message)), -ESRCH);
	cr_assert(strstr(message, "no runner left anything"), "%s", message);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	free(dir);
}

/* The start fails with @err and a message holding @want, and leaves no socket and no cage. */
static void
start_refused(struct world *w, int err, const char *want)
{
	struct clip_error *e = NULL;

	assert_errno(clip_session_start(w->s, 0, &e), err);
	cr_assert(e && strstr(clip_error_get_message(e), want), "message '%s', want '%s'",
		  e ? clip_error_get_message(e) : "(none)", want);
	clip_error_free(e);
	cr_assert_not(exists(w->state, "run"));
	cr_assert_not(exists(w->state, "control.sock"));
	cr_assert_not(exists(w->state, "confirm.sock"));
	cr_assert_eq(registered(w->ctx), 0);
	cr_assert_null(clip_session_get_mediator(w->s));
}

Test(session_run, a_symbolic_link_where_an_inbox_goes_is_refused)
{
	struct world w;
	char path[700], elsewhere[700];

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	/* Planted: the inbox of "high" would be the host's directory of the attacker's choice. */
	snprintf(path, sizeof(path), "%s/inbox", w.state);
	cr_assert_eq(mkdir(w.state, 0700), 0);
	cr_assert_eq(mkdir(path, 0711), 0);
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", w.dir);
	cr_assert_eq(mkdir(elsewhere, 0755), 0);
	snprintf(path, sizeof(path), "%s/inbox/high", w.state);
	cr_assert_eq(symlink(elsewhere, path), 0);
	start_refused(&w, -ELOOP, "is a symbolic link");
	world_free(&w);
}

Test(session_run, an_inbox_of_another_uid_is_refused)
{
	struct world w;
	char path[700];

	if (!test_is_root())
		cr_skip_test("not root: no other uid to give the inbox to");
	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	snprintf(path, sizeof(path), "%s/inbox", w.state);
	cr_assert_eq(mkdir(w.state, 0700), 0);
	cr_assert_eq(mkdir(path, 0711), 0);
	snprintf(path, sizeof(path), "%s/inbox/low", w.state);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(chown(path, TEST_UID, TEST_GID), 0);
	start_refused(&w, -EPERM, "owned by uid 65534");
	world_free(&w);
}

Test(session_run, a_state_directory_another_runner_holds_is_refused)
{
	struct world w, other;

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	world_start(&w);
	world_new(&other, NULL, CLIP_SESSION_RESTART_NO);
	cr_assert_eq(clip_session_set_state_dir(other.s, w.state, NULL), 0);
	{
		struct clip_error *e = NULL;

		assert_errno(clip_session_start(other.s, 0, &e), -EEXIST);
		cr_assert(strstr(clip_error_get_message(e), "in use by another runner"), "%s",
			  clip_error_get_message(e));
		clip_error_free(e);
	}
	/* The running one is untouched. */
	cr_assert(exists(w.state, "control.sock"));
	cr_assert_eq(run_in(&w, "low", "true"), 0);
	world_free(&other);
	world_free(&w);
}

Test(session_run, misuse_is_refused)
{
	struct world w;
	struct clip_error *e = NULL;

	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	assert_errno(clip_session_stop(w.s, 0, NULL), -ECHILD);
	assert_errno(clip_session_get_fd(w.s), -ECHILD);
	assert_errno(clip_session_dispatch(w.s, NULL), -ECHILD);
	assert_errno(clip_session_restart_cage(w.s, "low", 0, NULL), -ECHILD);
	assert_errno(clip_session_get_socket_fd(w.s, "low"), -ECHILD);
	assert_errno(clip_session_start(w.s, 0x80, NULL), -EINVAL);
	world_start(&w);
	assert_errno(clip_session_start(w.s, 0, NULL), -EBUSY);
	assert_errno(clip_session_restart_cage(w.s, "nosuch", 0, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "no cage 'nosuch'"));
	e = clip_error_free(e);
	assert_errno(clip_session_get_socket_fd(w.s, "nosuch"), -EINVAL);
	cr_assert_null(clip_session_get_cage(w.s, "nosuch"));
	assert_errno(clip_session_control(w.ctx, "Bad!", w.state, "status", NULL, NULL), -EINVAL);
	assert_errno(clip_session_control(w.ctx, "t", "relative", "status", NULL, NULL), -EINVAL);
	world_free(&w);
}

/* @name in @dir, holding @text. */
static void
put_file(const char *dir, const char *name, const char *text)
{
	close(test_file(dir, name, text));
}

/*
 * A cage made anew after a reload (its profile changed) is a new cage with
 * a new id for the BPF LSM: its transfer socket is marked with that id,
 * or its processes could no longer reach their own socket. The LSM's maps
 * alone are pinned (as above): what user space tells the LSM is read back.
 */
Test(session_run, a_cage_made_anew_after_a_reload_keeps_its_transfer_socket_for_the_lsm)
{
	struct world w = { 0 };
	struct clip_error *e = NULL;
	struct lsm_task before, after;
	uint64_t id = 0;
	char path[700];

	lsm_maps_of_the_test_s_own();
	/* A session of one cage, loaded from its file: what a reload reads again. */
	w.dir = test_tmpdir("tmpfs");
	snprintf(path, sizeof(path), "%s/ctx", w.dir);
	w.ctx = test_ctx(path);
	snprintf(w.state, sizeof(w.state), "%s/session", w.dir);
	snprintf(path, sizeof(path),
		 "[Session]\nName=t\nStateDirectory=%s\n\n[Cage]\nName=low\nLevel=s0\n"
		 "Profile=low.cage\nDataDirectory=data/low\nDataEncryption=none\n",
		 w.state);
	put_file(w.dir, "t.session", path);
	put_file(w.dir, "low.cage", "[Cage]\nName=low\n");
	snprintf(path, sizeof(path), "%s/t.session", w.dir);
	cr_assert_eq(clip_session_load(&w.s, w.ctx, path, &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	if (!live_session)
		atexit(drop_live_session);
	live_session = w.s;
	world_start(&w);
	cr_assert_eq(lsm_test_task(clip_cage_get_fd(clip_session_get_cage(w.s, "low")), &before),
		     0);
	cr_assert_eq(lsm_test_socket(clip_session_get_socket_fd(w.s, "low"), &id), 0);
	cr_assert_eq(id, before.cage_id, "the socket is not the cage's before the reload");
	/* A new profile, reloaded; the restart makes the cage anew from it. */
	put_file(w.dir, "low.cage", "[Cage]\nName=low\n\n[Files]\nTemporaryFileSystem=/var/tmp\n");
	cr_assert_eq(pump_child(&w, control_child(&w, "reload", 0, false)), 0);
	cr_assert_eq(pump_child(&w, control_child(&w, "restart low", 0, false)), 0);
	cr_assert_eq(lsm_test_task(clip_cage_get_fd(clip_session_get_cage(w.s, "low")), &after), 0);
	cr_assert_neq(after.cage_id, before.cage_id, "the cage was not made anew");
	cr_assert_eq(lsm_test_socket(clip_session_get_socket_fd(w.s, "low"), &id), 0);
	cr_assert_eq(id, after.cage_id,
		     "the transfer socket is still the old cage's (%" PRIx64 "), not the new "
		     "one's (%" PRIx64 ")",
		     id, after.cage_id);
	cr_assert_eq(clip_lsm_unload(w.ctx, NULL), 0);
	world_free(&w);
}

/* A directory's name: listen() on a socket bound in a directory of that name fails. */
static const char *listen_fails_in;

/*
 * listen(), in place of libc's for the library's objects in this program:
 * with listen_fails_in set, a socket bound (through /proc/self/fd/N/NAME,
 * as session_listen_at() binds) in a directory of that name is refused.
 */
int
listen(int fd, int backlog)
{
	struct sockaddr_un sa = { 0 };
	socklen_t len = sizeof(sa);
	char dir[sizeof(sa.sun_path)], target[4096], *slash;
	ssize_t n;

	if (listen_fails_in && getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
		snprintf(dir, sizeof(dir), "%s", sa.sun_path);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		n = readlink(dir, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			slash = strrchr(target, '/');
			if (slash && strcmp(slash + 1, listen_fails_in) == 0) {
				errno = EACCES; /* as an LSM refusing it */
				return -1;
			}
		}
	}
	return (int)syscall(SYS_listen, fd, backlog);
}

/*
 * A role's socket (STATE/admin/control.sock, STATE/audit/control.sock)
 * that cannot listen: the start fails, naming it, and leaves nothing it
 * made, the role's directory and the state directory included; the
 * session then starts.
 */
Test(session_run, a_role_socket_that_cannot_listen_fails_the_start_and_leaves_no_directory)
{
	static const char *const roles[] = { "admin", "audit" };
	struct world w;

	if (!test_is_root())
		cr_skip_test("not root: the roles' sockets are a root runner's");
	world_new(&w, NULL, CLIP_SESSION_RESTART_NO);
	cr_assert_eq(clip_session_set_role_group(w.s, CLIP_SESSION_ROLE_ADMIN, 64201, NULL), 0);
	cr_assert_eq(clip_session_set_role_group(w.s, CLIP_SESSION_ROLE_AUDIT, 64202, NULL), 0);
	/* The admin's first (none made yet), then the auditors' (the admin's made). */
	for (size_t i = 0; i < 2; i++) {
		struct clip_error *e = NULL;
		char want[700];
		int r;

		listen_fails_in = roles[i];
		r = clip_session_start(w.s, 0, &e);
		listen_fails_in = NULL;
		cr_assert_eq(r, -EACCES, "%d %s", r, clip_error_get_message(e));
		snprintf(want, sizeof(want), "cannot listen on %s/%s/control.sock", w.state,
			 roles[i]);
		cr_assert(strstr(clip_error_get_message(e), want), "'%s' lacks '%s'",
			  clip_error_get_message(e), want);
		clip_error_free(e);
		cr_assert_not(exists(w.state, "admin"), "%s: STATE/admin is left", roles[i]);
		cr_assert_not(exists(w.state, "audit"), "%s: STATE/audit is left", roles[i]);
		cr_assert(access(w.state, F_OK) < 0 && errno == ENOENT,
			  "%s: the state directory %s is left", roles[i], w.state);
		assert_errno(clip_session_get_fd(w.s), -ECHILD);
	}
	world_start(&w);
	cr_assert(exists(w.state, "admin/control.sock") && exists(w.state, "audit/control.sock"));
	world_free(&w);
}
