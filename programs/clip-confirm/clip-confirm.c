/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip-confirm: a terminal confirmation agent for the transfer mediator.
 * See clip-confirm(1) and doc/confirm-protocol.md.
 *
 *   clip-confirm [--socket PATH] [--auto yes|no|never] [--ready-fd N]
 *
 * It shows each question (source and target cage and level, direction,
 * name, size, SHA-256, note) on the terminal and sends the user's y/N.
 * Everything shown came from a cage or was derived from what a cage sent:
 * it is printed with every non-printable or formatting character escaped.
 * --auto answers without a terminal (tests, demos); "never" lets each
 * question time out.
 *
 * It runs no timer: it asks the mediator to say when a question expires
 * (PROTO_FEATURES), and then withdraws it from the user. Questions that
 * arrive while the user answers another wait their turn, and leave the
 * queue when they expire there.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <clip/clip.h>

#include "transfer/proto.h"
#include "base/utf8.h"
#include "base/util.h"

/* Print untrusted text with anything unsafe for a terminal escaped. */
static void
print_safe(FILE *f, const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t k = utf8_decode(s + i, n - i, &c);

		if (k == 0 || utf8_is_dangerous(c) || c == '\\') {
			if (k == 0)
				k = 1;
			for (size_t j = 0; j < k; j++)
				fprintf(f, "\\x%02x", (unsigned char)s[i + j]);
		} else
			fwrite(s + i, 1, k, f);
		i += k;
	}
}

static void
show(FILE *f, const struct proto_prompt *p, uint32_t left_ms)
{
	fprintf(f, "\n=== transfer request ===\n  from:      ");
	print_safe(f, p->source);
	fprintf(f, " (level ");
	print_safe(f, p->source_level);
	fprintf(f, ")\n  to:        ");
	print_safe(f, p->target);
	fprintf(f, " (level ");
	print_safe(f, p->target_level);
	fprintf(f, ")\n  direction: %s%s\n  name:      ", proto_direction_name(p->direction),
		p->direction == PROTO_DIRECTION_DOWN           ? "  ** DOWNGRADE **"
		: p->direction == PROTO_DIRECTION_INCOMPARABLE ? "  ** LEVELS INCOMPARABLE **"
							       : "");
	print_safe(f, p->name);
	fprintf(f, "\n  size:      %llu bytes\n  sha256:    ", (unsigned long long)p->size);
	for (int i = 0; i < 32; i++)
		fprintf(f, "%02x", p->sha256[i]);
	fprintf(f, "\n  encrypted: %s\n  note:      ",
		p->encrypt ? "yes (AES-256-GCM envelope)" : "no");
	print_safe(f, p->note);
	fprintf(f, "\n  (no answer within %u s is a denial)\n", (left_ms + 999) / 1000);
	fflush(f);
}

/* The mediator bounds its questions (256 pending); so do we, in case. */
#define QUESTIONS_MAX 256

/* A question put to us and not answered or expired yet, oldest first. */
struct question {
	struct proto_prompt p;
	long long received_ms; /* now_ms() */
	bool shown;
	struct question *next;
};

struct agent {
	int sock;
	const char *autom; /* yes, no, never, or NULL: ask on the terminal */
	FILE *out; /* the terminal, or stdout with --auto */
	int tty_fd;
	struct question *questions;
	size_t n_questions;
	struct question *asking; /* on the terminal, waiting for y/N */
};

/* What is left of @q's time: it ran while it waited its turn. */
static uint32_t
left_ms(const struct question *q)
{
	long long spent = now_ms() - q->received_ms;

	return spent < q->p.timeout_ms ? (uint32_t)(q->p.timeout_ms - spent) : 0;
}

static void
question_drop(struct agent *a, struct question *q)
{
	for (struct question **pp = &a->questions; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			a->n_questions--;
			break;
		}
	if (a->asking == q)
		a->asking = NULL;
	free(q);
}

static int
send_answer(struct agent *a, uint64_t id, bool allow)
{
	struct proto_msg m = { .type = PROTO_ANSWER, .fd = -1 };

	m.answer.id = id;
	m.answer.allow = allow;
	fprintf(a->out, "  -> %s\n", allow ? "allowed" : "refused");
	fflush(a->out);
	return proto_send(a->sock, &m, NULL);
}

/* On the terminal: the oldest question not shown yet, when none is asked. */
static void
ask_next(struct agent *a)
{
	struct question *q = a->questions;

	if (a->asking || a->autom)
		return;
	while (q && q->shown)
		q = q->next;
	if (!q)
		return;
	show(a->out, &q->p, left_ms(q));
	q->shown = true;
	a->asking = q;
	/* Whatever was typed before the question is not an answer to it. */
	tcflush(a->tty_fd, TCIFLUSH);
	fprintf(a->out, "Deliver? [y/N] ");
	fflush(a->out);
}

static int
on_prompt(struct agent *a, const struct proto_prompt *p)
{
	struct question *q;

	if (a->autom && strcmp(a->autom, "never") != 0) {
		show(a->out, p, p->timeout_ms);
		return send_answer(a, p->id, strcmp(a->autom, "yes") == 0);
	}
	/* Beyond the bound, a question is left to time out at the mediator. */
	if (a->n_questions >= QUESTIONS_MAX)
		return 0;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->p = *p;
	q->received_ms = now_ms();
	for (struct question **pp = &a->questions;; pp = &(*pp)->next)
		if (!*pp) {
			*pp = q;
			break;
		}
	a->n_questions++;
	if (a->autom) {
		/* --auto never: shown, then left to expire. */
		show(a->out, p, p->timeout_ms);
		q->shown = true;
	}
	ask_next(a);
	return 0;
}

static void
on_expired(struct agent *a, const struct proto_expired *e)
{
	struct question *q = a->questions;

	while (q && q->p.id != e->id)
		q = q->next;
	/* Already answered: the answer crossed the expiry, and is ignored. */
	if (!q)
		return;
	if (q == a->asking) {
		/* Withdrawn from the user: what was typed for it is no answer. */
		fputs("\n", a->out);
		tcflush(a->tty_fd, TCIFLUSH);
	}
	if (q->shown)
		fprintf(a->out, "  -> %s: not delivered\n", proto_expiry_name(e->reason));
	else {
		fprintf(a->out, "\n(a transfer from ");
		print_safe(a->out, q->p.source);
		fprintf(a->out, " to ");
		print_safe(a->out, q->p.target);
		fprintf(a->out, " waiting its turn: %s, not delivered)\n",
			proto_expiry_name(e->reason));
		if (a->asking)
			fprintf(a->out, "Deliver? [y/N] ");
	}
	fflush(a->out);
	question_drop(a, q);
	ask_next(a);
}

/* The user's line for the question asked: y or Y allows, anything else refuses. */
static int
on_tty(struct agent *a)
{
	struct question *q = a->asking;
	char line[16] = { 0 };
	int r;

	/* End of file (^D) is no answer: a refusal. */
	if (read(a->tty_fd, line, sizeof(line) - 1) < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	r = send_answer(a, q->p.id, line[0] == 'y' || line[0] == 'Y');
	question_drop(a, q);
	ask_next(a);
	return r;
}

/* Until the mediator goes away (0) or something fails (1). */
static int
serve(struct agent *a, const char *path, int ready_fd)
{
	for (;;) {
		struct pollfd pf[2] = {
			{ .fd = a->sock, .events = POLLIN },
			{ .fd = a->tty_fd, .events = POLLIN },
		};
		struct clip_error *error = NULL;
		struct proto_msg msg;
		int r;

		if (poll(pf, a->tty_fd >= 0 && a->asking ? 2 : 1, -1) < 0)
			continue;
		if (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = on_tty(a);
			if (r < 0) {
				fprintf(stderr, "clip-confirm: cannot answer: %s\n", strerror(-r));
				return 1;
			}
		}
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = proto_recv(a->sock, &msg, &error);
		if (r == -EAGAIN)
			continue;
		if (r < 0) {
			fprintf(stderr, "clip-confirm: %s\n",
				error ? clip_error_get_message(error) : "the mediator went away");
			clip_error_free(error);
			return r == -ECONNRESET ? 0 : 1;
		}
		if (msg.type == PROTO_HELLO) {
			struct proto_msg f = { .type = PROTO_FEATURES, .fd = -1 };

			/* The mediator now asks us: we want to know when a question expires. */
			f.features.flags = PROTO_FEATURE_EXPIRED;
			if (proto_send(a->sock, &f, NULL) < 0)
				return 1;
			printf("clip-confirm: connected to %s\n", path);
			fflush(stdout);
			if (ready_fd >= 0) {
				if (write(ready_fd, "READY=1\n", 8) < 0)
					return 1;
				close(ready_fd);
				ready_fd = -1;
			}
		} else if (msg.type == PROTO_PROMPT) {
			if (on_prompt(a, &msg.prompt) < 0)
				return 1;
		} else if (msg.type == PROTO_EXPIRED)
			on_expired(a, &msg.expired);
	}
}

static void
usage(FILE *f)
{
	fputs("Usage: clip-confirm [--socket PATH] [--auto yes|no|never] [--ready-fd N]\n"
	      "  --socket PATH   the mediator's agent socket (default /run/clip/confirm.sock)\n"
	      "  --auto ANSWER   answer yes or no without a terminal, or never\n"
	      "  --ready-fd N    write READY=1 to fd N once the mediator greeted us\n"
	      "  -h, --help      this text\n"
	      "      --version   the version of libclip clip-confirm runs with\n",
	      f);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "auto", required_argument, NULL, 'a' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *path = "/run/clip/confirm.sock", *autom = NULL;
	struct agent a = { .sock = -1, .tty_fd = -1 };
	struct clip_error *error = NULL;
	FILE *tty = NULL;
	int opt, r, sock, tty_fd = -1, ready_fd = -1;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'a':
			autom = optarg;
			break;
		case 'r':
			ready_fd = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("clip-confirm (libclip) %s\n", clip_version());
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (autom && strcmp(autom, "yes") && strcmp(autom, "no") && strcmp(autom, "never")) {
		fprintf(stderr, "clip-confirm: --auto is yes, no or never\n");
		return 2;
	}
	if (!autom) {
		tty_fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
		tty = tty_fd >= 0 ? fdopen(tty_fd, "r+") : NULL;
		if (!tty) {
			fprintf(stderr, "clip-confirm: needs a terminal (or --auto): %m\n");
			return 1;
		}
	}
	if (clip_transfer_connect(&sock, path, &error) < 0) {
		fprintf(stderr, "clip-confirm: %s\n", clip_error_get_message(error));
		clip_error_free(error);
		return 1;
	}
	a.sock = sock;
	a.autom = autom;
	a.tty_fd = tty_fd;
	a.out = tty ? tty : stdout;
	r = serve(&a, path, ready_fd);
	while (a.questions)
		question_drop(&a, a.questions);
	close(sock);
	if (tty)
		fclose(tty);
	return r;
}
