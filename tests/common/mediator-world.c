/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "helpers.h"
#include "mediator-world.h"

int
test_listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", path);
	cr_assert_eq(listen(fd, 64), 0);
	return fd;
}

void
test_world_pump(struct test_world *w)
{
	while (clip_mediator_dispatch(w->m, NULL) > 0)
		;
}

void
test_world_setup(struct test_world *w, const char *policy_text, struct clip_mediator_opts opts)
{
	static const char *const names[] = { "low", "high" }, *const levels[] = { "s0", "s2" };
	struct clip_policy *p = test_policy(policy_text);
	char path[600];
	int agent_listen;

	memset(w, 0, sizeof(*w));
	w->agent_fd = -1;
	w->dir = test_tmpdir("tmpfs");
	snprintf(path, sizeof(path), "%s/state", w->dir);
	w->ctx = test_ctx(path);
	w->dfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(clip_audit_open(&w->audit, w->ctx, w->dfd, "audit.log", 0, NULL), 0);
	opts.label_flags = test_is_root() ? 0 : CLIP_LABEL_ROOTLESS;
	cr_assert_eq(clip_mediator_new(&w->m, w->ctx, p, w->audit, &opts, NULL), 0);
	clip_policy_unref(p);
	for (int i = 0; i < 2; i++) {
		struct clip_level *l = test_level(levels[i]);
		struct clip_mediator_cage c = { .size = sizeof(c), .name = names[i], .level = l };
		struct clip_error *e = NULL;

		snprintf(path, sizeof(path), "%s/%s", w->dir, names[i]);
		cr_assert_eq(mkdir(path, 0755), 0);
		w->inbox[i] = c.inbox_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(w->sock[i], sizeof(w->sock[i]), "%s/%s.sock", w->dir, names[i]);
		c.socket_fd = test_listen_at(w->sock[i]);
		cr_assert_eq(clip_mediator_add_cage(w->m, &c, &e), 0, "%s",
			     e ? clip_error_get_message(e) : "");
		close(c.socket_fd);
		clip_level_unref(l);
	}
	snprintf(w->agent_sock, sizeof(w->agent_sock), "%s/agent.sock", w->dir);
	agent_listen = test_listen_at(w->agent_sock);
	cr_assert_eq(clip_mediator_add_agent_socket(w->m, agent_listen, NULL), 0);
	close(agent_listen);
}

void
test_world_teardown(struct test_world *w)
{
	if (w->agent_fd >= 0)
		close(w->agent_fd);
	clip_agent_unref(w->agent);
	close(w->inbox[0]), close(w->inbox[1]);
	close(w->dfd);
	clip_mediator_unref(w->m);
	clip_audit_unref(w->audit);
	clip_ctx_unref(w->ctx);
	free(w->dir);
}
