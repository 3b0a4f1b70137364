/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip-confirm: a terminal confirmation agent for the transfer mediator.
 * See clip-confirm(1) and doc/confirm-protocol.md.
 *
 *   clip-confirm [--socket PATH] [--auto yes|no|never] [--ready-fd N]
 *
 * It shows each question on the terminal and sends the user's y/N. The
 * name and note are a cage's words, written to be read: they come first,
 * quoted, one line each that cannot wrap, spaces collapsed, escaped; then
 * size and SHA-256; the facts that decide (cages, levels, direction,
 * encryption) come last, and the question says them again, so that no
 * text from a cage can draw a fake of them or push them out of sight.
 * --auto answers without a terminal (tests, demos); "never" lets each
 * question time out.
 *
 * It speaks the protocol through clip-agent(3), which decodes and checks
 * each question. It runs no timer: the library asks the mediator to say
 * when a question expires, and clip-confirm then withdraws it from the user. Questions that
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
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <clip/clip.h>

#include "base/macro.h"
#include "base/test-hooks.h"
#include "base/utf8.h"
#include "base/util.h"

/*
 * Untrusted text in quotes, on one line of at most @max columns (SIZE_MAX:
 * all of it, as it came), every run of spaces collapsed; what does not fit
 * is cut, and its length said.
 */
static void
print_untrusted(FILE *f, const char *s, size_t max)
{
	char tail[64];
	size_t budget;

	if (max == SIZE_MAX || utf8_put_escaped(NULL, s, true, SIZE_MAX) + 2 <= max) {
		fputc('"', f);
		utf8_put_escaped(f, s, max != SIZE_MAX, SIZE_MAX);
		fputc('"', f);
		return;
	}
	snprintf(tail, sizeof(tail), "...\" (cut, %zu bytes in all)", strlen(s));
	budget = max >= 1 + strlen(tail) + 8 ? max - 1 - strlen(tail) : 8;
	fputc('"', f);
	utf8_put_escaped(f, s, true, budget);
	fputs(tail, f);
}

/* Trusted text (a cage's name or level, checked by the decoder), escaped all the same. */
static void
print_safe(FILE *f, const char *s)
{
	utf8_put_escaped(f, s, false, SIZE_MAX);
}

/* The width of @f's terminal in columns; 80 when it is not a terminal. */
static size_t
term_width(FILE *f)
{
	struct winsize ws;

	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/*
 * What the sender says of its document: first, short, quoted, on a line
 * each that cannot wrap (the label takes 10 columns, and the last column
 * is left free), so that none of it can pass for a line of the facts.
 */
static void
show_untrusted(FILE *f, struct clip_agent_question *q, size_t width)
{
	size_t max = width == SIZE_MAX ? SIZE_MAX : width > 10 + 1 + 24 ? width - 10 - 1 : 24;
	const char *note = clip_agent_question_get_note(q, false);

	fprintf(f, "  what the sending cage says (untrusted):\n    name: ");
	print_untrusted(f, clip_agent_question_get_name(q, false), max);
	fprintf(f, "\n    note: ");
	if (note[0])
		print_untrusted(f, note, max);
	else
		fprintf(f, "(none)");
	fputc('\n', f);
}

static const char *
direction_name(int direction)
{
	static const char *const names[] = {
		[CLIP_AGENT_UP] = "up",
		[CLIP_AGENT_DOWN] = "down",
		[CLIP_AGENT_SAME] = "same",
		[CLIP_AGENT_INCOMPARABLE] = "incomparable",
	};

	return direction >= 0 && (size_t)direction < ELEMENTSOF(names) ? names[direction] : "?";
}

/* A cage and its level: "high (level s2)", or "high (s2)" when @short_form. */
static void
print_cage(FILE *f, const char *cage, const char *level, bool short_form)
{
	print_safe(f, cage);
	fputs(short_form ? " (" : " (level ", f);
	print_safe(f, level);
	fputc(')', f);
}

/*
 * A question: what the sender says first, then what the mediator vouches
 * for, the facts that decide last, right above the question that repeats
 * them. With the frame switched off (a test hook), the untrusted text
 * comes after the facts, whole, as it once did.
 */
static void
show(FILE *f, struct clip_agent_question *q, uint32_t left_ms)
{
	bool frame = !test_hook_disabled("confirm-frame");
	int direction = clip_agent_question_get_direction(q);
	const char *source, *source_level, *target, *target_level;
	uint8_t sha256[32];
	uint64_t size;

	source = clip_agent_question_get_source(q, &source_level);
	target = clip_agent_question_get_target(q, &target_level);
	clip_agent_question_get_digest(q, &size, sha256);
	fprintf(f, "\n=== transfer request: no answer within %u s is a denial ===\n",
		(left_ms + 999) / 1000);
	if (frame)
		show_untrusted(f, q, term_width(f));
	fprintf(f, "  size:      %llu bytes\n  sha256:    ", (unsigned long long)size);
	for (int i = 0; i < 32; i++)
		fprintf(f, "%02x", sha256[i]);
	fprintf(f, "\n  from:      ");
	print_cage(f, source, source_level, false);
	fprintf(f, "\n  to:        ");
	print_cage(f, target, target_level, false);
	fprintf(f, "\n  direction: %s%s\n  encrypted: %s\n", direction_name(direction),
		direction == CLIP_AGENT_DOWN           ? "  ** DOWNGRADE **"
		: direction == CLIP_AGENT_INCOMPARABLE ? "  ** LEVELS INCOMPARABLE **"
						       : "",
		clip_agent_question_get_flags(q) & CLIP_AGENT_ENCRYPTED
			? "yes (AES-256-GCM envelope)"
			: "no");
	if (!frame)
		show_untrusted(f, q, SIZE_MAX);
	fflush(f);
}

/* The question, with the facts in it: what scrolled away is said again. */
static void
ask(FILE *f, struct clip_agent_question *q)
{
	static const char *const how[] = {
		[CLIP_AGENT_UP] = "UP",
		[CLIP_AGENT_DOWN] = "DOWN (a downgrade)",
		[CLIP_AGENT_SAME] = "at the same level",
		[CLIP_AGENT_INCOMPARABLE] = "ACROSS incomparable levels",
	};
	int direction = clip_agent_question_get_direction(q);
	const char *source, *source_level, *target, *target_level;

	if (test_hook_disabled("confirm-frame")) {
		fputs("Deliver? [y/N] ", f);
		return;
	}
	source = clip_agent_question_get_source(q, &source_level);
	target = clip_agent_question_get_target(q, &target_level);
	fprintf(f, "Deliver %s from ",
		direction >= 0 && (size_t)direction < ELEMENTSOF(how) ? how[direction] : "?");
	print_cage(f, source, source_level, true);
	fputs(" to ", f);
	print_cage(f, target, target_level, true);
	fprintf(f, ", %s? [y/N] ",
		clip_agent_question_get_flags(q) & CLIP_AGENT_ENCRYPTED ? "encrypted"
									: "not encrypted");
}

/*
 * A question put to us and not answered or expired yet, oldest first (the
 * library bounds them to the mediator's 256).
 */
struct question {
	struct clip_agent_question *q;
	bool shown;
	struct question *next;
};

struct agent {
	struct clip_agent *agent;
	const char *autom; /* yes, no, never, or NULL: ask on the terminal */
	FILE *out; /* the terminal, or stdout with --auto */
	int tty_fd;
	struct question *questions;
	struct question *asking; /* on the terminal, waiting for y/N */
};

/* What is left of @q's time: it ran while it waited its turn. */
static uint32_t
left_ms(struct clip_agent_question *q)
{
	long long left = (long long)clip_agent_question_get_deadline(q, NULL) - now_ms();

	return left > 0 ? (uint32_t)left : 0;
}

static void
question_drop(struct agent *a, struct question *q)
{
	for (struct question **pp = &a->questions; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	if (a->asking == q)
		a->asking = NULL;
	clip_agent_question_unref(q->q);
	free(q);
}

static int
send_answer(struct agent *a, struct clip_agent_question *q, bool allow)
{
	fprintf(a->out, "  -> %s\n", allow ? "allowed" : "refused");
	fflush(a->out);
	return clip_agent_answer(a->agent, q, allow, NULL);
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
	show(a->out, q->q, left_ms(q->q));
	q->shown = true;
	a->asking = q;
	/* Whatever was typed before the question is not an answer to it. */
	tcflush(a->tty_fd, TCIFLUSH);
	ask(a->out, q->q);
	fflush(a->out);
}

/* A new question: takes @cq. */
static int
on_question(struct agent *a, struct clip_agent_question *cq)
{
	uint32_t timeout_ms;
	struct question *q;
	int r;

	clip_agent_question_get_deadline(cq, &timeout_ms);
	if (a->autom && strcmp(a->autom, "never") != 0) {
		show(a->out, cq, timeout_ms);
		r = send_answer(a, cq, strcmp(a->autom, "yes") == 0);
		clip_agent_question_unref(cq);
		return r;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		clip_agent_question_unref(cq);
		return -ENOMEM;
	}
	q->q = cq;
	for (struct question **pp = &a->questions;; pp = &(*pp)->next)
		if (!*pp) {
			*pp = q;
			break;
		}
	if (a->autom) {
		/* --auto never: shown, then left to expire. */
		show(a->out, cq, timeout_ms);
		q->shown = true;
	}
	ask_next(a);
	return 0;
}

static void
on_expired(struct agent *a, struct clip_agent_question *cq, bool withdrawn)
{
	const char *why = withdrawn ? "withdrawn by the mediator" : "no answer in time";
	struct question *q = a->questions;

	while (q && q->q != cq)
		q = q->next;
	/* Not queued (beyond --auto): nothing to withdraw. */
	if (!q)
		return;
	if (q == a->asking) {
		/* Withdrawn from the user: what was typed for it is no answer. */
		fputs("\n", a->out);
		tcflush(a->tty_fd, TCIFLUSH);
	}
	if (q->shown)
		fprintf(a->out, "  -> %s: not delivered\n", why);
	else {
		fprintf(a->out, "\n(a transfer from ");
		print_safe(a->out, clip_agent_question_get_source(cq, NULL));
		fprintf(a->out, " to ");
		print_safe(a->out, clip_agent_question_get_target(cq, NULL));
		fprintf(a->out, " waiting its turn: %s, not delivered)\n", why);
		if (a->asking)
			ask(a->out, a->asking->q);
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
	r = send_answer(a, q->q, line[0] == 'y' || line[0] == 'Y');
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
			{ .fd = clip_agent_get_fd(a->agent), .events = POLLIN },
			{ .fd = a->tty_fd, .events = POLLIN },
		};
		struct clip_agent_question *q = NULL;
		struct clip_error *error = NULL;
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
		r = clip_agent_receive(a->agent, 0, &q, &error);
		if (r < 0) {
			fprintf(stderr, "clip-confirm: %s\n", clip_error_get_message(error));
			clip_error_free(error);
			return r == -ECONNRESET ? 0 : 1;
		}
		switch (r) {
		case CLIP_AGENT_READY:
			printf("clip-confirm: connected to %s\n", path);
			fflush(stdout);
			if (ready_fd >= 0) {
				if (write(ready_fd, "READY=1\n", 8) < 0)
					return 1;
				close(ready_fd);
				ready_fd = -1;
			}
			break;
		case CLIP_AGENT_QUESTION:
			if (on_question(a, q) < 0)
				return 1;
			break;
		case CLIP_AGENT_EXPIRED:
		case CLIP_AGENT_WITHDRAWN:
			on_expired(a, q, r == CLIP_AGENT_WITHDRAWN);
			clip_agent_question_unref(q);
			break;
		}
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
	struct agent a = { .tty_fd = -1 };
	struct clip_error *error = NULL;
	FILE *tty = NULL;
	int opt, r, tty_fd = -1, ready_fd = -1;

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
	if (clip_agent_connect(&a.agent, path, NULL, &error) < 0) {
		fprintf(stderr, "clip-confirm: %s\n", clip_error_get_message(error));
		clip_error_free(error);
		return 1;
	}
	a.autom = autom;
	a.tty_fd = tty_fd;
	a.out = tty ? tty : stdout;
	r = serve(&a, path, ready_fd);
	while (a.questions)
		question_drop(&a, a.questions);
	clip_agent_unref(a.agent);
	if (tty)
		fclose(tty);
	return r;
}
