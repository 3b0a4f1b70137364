/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <clip/clip.h>

/*
 * A mediator in this process with two cages, low (s0) and high (s2), in a
 * fresh tmpfs directory: what the mediator's and the agent's tests start
 * from. Each cage has an inbox (dir/low, dir/high) and a transfer socket
 * (sock[0], sock[1]); the agents' socket listens at agent_sock, nobody
 * connected yet.
 */
struct test_world {
	char *dir;
	struct clip_ctx *ctx;
	struct clip_audit *audit;
	struct clip_mediator *m;
	int dfd, inbox[2];
	char sock[2][512], agent_sock[512];
	/* The test's agent, closed (unreferenced) by test_world_teardown() if set. */
	int agent_fd;
	struct clip_agent *agent;
};

void test_world_setup(struct test_world *w, const char *policy_text,
		      struct clip_mediator_opts opts);
void test_world_teardown(struct test_world *w);
/* Dispatch the mediator until it has nothing to do. */
void test_world_pump(struct test_world *w);
/* A SOCK_SEQPACKET socket listening at @path, or the test fails. */
int test_listen_at(const char *path);
