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
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <clip/clip.h>

#include "transfer/proto.h"
#include "base/utf8.h"

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
show(FILE *f, const struct proto_prompt *p)
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
	fprintf(f, "\n  (no answer within %u s is a denial)\n", p->timeout_ms / 1000);
	fflush(f);
}

/* y/N on the terminal, within the question's timeout. */
static int
ask_tty(FILE *tty, int tty_fd, const struct proto_prompt *p)
{
	struct pollfd pf = { .fd = tty_fd, .events = POLLIN };
	char line[16] = { 0 };

	/* Whatever was typed before the question is not an answer to it. */
	tcflush(tty_fd, TCIFLUSH);
	fprintf(tty, "Deliver? [y/N] ");
	fflush(tty);
	if (poll(&pf, 1, (int)p->timeout_ms) <= 0)
		return 0;
	if (read(tty_fd, line, sizeof(line) - 1) <= 0)
		return 0;
	return line[0] == 'y' || line[0] == 'Y';
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
	struct clip_error *error = NULL;
	FILE *tty = NULL;
	int opt, sock, tty_fd = -1, ready_fd = -1;

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
	for (;;) {
		struct pollfd pf = { .fd = sock, .events = POLLIN };
		struct proto_msg msg, a = { .type = PROTO_ANSWER, .fd = -1 };
		int r;

		if (poll(&pf, 1, -1) < 0)
			continue;
		r = proto_recv(sock, &msg, &error);
		if (r == -EAGAIN)
			continue;
		if (r < 0) {
			fprintf(stderr, "clip-confirm: %s\n",
				error ? clip_error_get_message(error) : "the mediator went away");
			clip_error_free(error);
			return r == -ECONNRESET ? 0 : 1;
		}
		if (msg.type == PROTO_HELLO) {
			/* The mediator now asks us: ready. */
			printf("clip-confirm: connected to %s\n", path);
			fflush(stdout);
			if (ready_fd >= 0) {
				if (write(ready_fd, "READY=1\n", 8) < 0)
					return 1;
				close(ready_fd);
				ready_fd = -1;
			}
			continue;
		}
		if (msg.type != PROTO_PROMPT)
			continue;
		show(tty ? tty : stdout, &msg.prompt);
		if (autom && strcmp(autom, "never") == 0)
			continue;
		a.answer.id = msg.prompt.id;
		a.answer.allow =
			autom ? strcmp(autom, "yes") == 0 : ask_tty(tty, tty_fd, &msg.prompt);
		fprintf(tty ? tty : stdout, "  -> %s\n", a.answer.allow ? "allowed" : "refused");
		fflush(tty ? tty : stdout);
		if (proto_send(sock, &a, NULL) < 0)
			return 1;
	}
}
