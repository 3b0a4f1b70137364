/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cage never holds a terminal of the host (issue 14, finding 3). The
 * user's tty given to a cage let it switch off echo, set TIOCEXCL, change
 * the line discipline, stop the output, resize the window, write OSC
 * sequences (the title, the clipboard), and a process it left behind read
 * what the user typed at the host's prompt afterwards.
 *
 * spawn: a terminal among the spawn's fds is refused, or, with
 *        CLIP_CAGE_SPAWN_PTY, replaced by the slave of a new pty whose
 *        master stays with the caller. The cage has no devpts mount
 *        (cage-child.c, mount_dev()): the slave fd is all it reaches, and
 *        TIOCGPTPEER works on a master only.
 * relay: the caller's side, clip_cage_pty_relay(): input in raw, output
 *        through a filter that lets through what a shell needs and drops
 *        the rest (pty_filter()); the terminal's modes restored however it
 *        ends; the window size followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <clip/cage.h>

#include "cage-internal.h"
#include "base/error.h"
#include "base/test-hooks.h"
#include "base/util.h"

#define PTY_FDS_MAX 64

static bool
is_terminal(int fd)
{
	struct termios t;

	return tcgetattr(fd, &t) == 0;
}

/* A new pty like @model (its modes and window size): the master, and its slave in *@ret_slave. */
static int
pty_open(int model, int *ret_slave, struct clip_error **reterr)
{
	_cleanup_close_ int master = -1;
	struct winsize ws;
	struct termios t;
	int slave, unlock = 0;

	master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return error_set_errno(reterr, -errno, "cannot open /dev/ptmx for the cage's pty");
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return error_set_errno(reterr, -errno, "cannot unlock the cage's pty");
	/* The slave from the master, not by its path: no race for /dev/pts/N. */
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return error_set_errno(reterr, -errno, "cannot open the slave of the cage's pty");
	if (tcgetattr(model, &t) == 0)
		(void)tcsetattr(slave, TCSANOW, &t);
	if (ioctl(model, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(master, TIOCSWINSZ, &ws);
	*ret_slave = slave;
	return steal_fd(master);
}

int
cage_pty_setup(struct clip_cage_spawn_opts *o, int fds[PTY_FDS_MAX], struct cage_pty *pty,
	       struct clip_error **reterr)
{
	bool want = o->flags & CLIP_CAGE_SPAWN_PTY;
	int r;

	*pty = (struct cage_pty){ .master = -1, .slave = -1, .ret = o->ret_pty };
	if (want && !pty->ret)
		return error_set(reterr, -EINVAL,
				 "spawn options: CLIP_CAGE_SPAWN_PTY without ret_pty: nowhere to "
				 "store the pty's master");
	if (pty->ret)
		*pty->ret = -1;
	/* From here on, the flag says that a pty was made: its slave is the controlling terminal. */
	o->flags &= ~CLIP_CAGE_SPAWN_PTY;
	/* Bad counts and fds are spawn_check()'s to name. */
	if (test_hook_disabled("cage-pty") || !o->fds || o->n_fds > PTY_FDS_MAX)
		return 0;
	for (uint32_t i = 0; i < o->n_fds; i++) {
		fds[i] = o->fds[i];
		if (fds[i] < 0 || !is_terminal(fds[i]))
			continue;
		if (!want)
			return error_set(
				reterr, -EBADF,
				"spawn options: fds[%u], the process's fd %u, is a terminal; "
				"a cage never holds a terminal of the host: give it pipes, "
				"or a pty of its own with CLIP_CAGE_SPAWN_PTY",
				i, i);
		if (pty->master < 0) {
			r = pty_open(fds[i], &pty->slave, reterr);
			if (r < 0)
				return r;
			pty->master = r;
			o->flags |= CLIP_CAGE_SPAWN_PTY;
		}
		fds[i] = pty->slave;
	}
	o->fds = fds;
	return 0;
}

void
cage_pty_finish(struct cage_pty *pty, int r)
{
	if (pty->slave >= 0)
		close(pty->slave);
	pty->slave = -1;
	if (pty->master >= 0 && r >= 0 && pty->ret)
		*pty->ret = pty->master;
	else if (pty->master >= 0)
		close(pty->master);
	pty->master = -1;
}

int
cage_pty_ctty(const int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (is_terminal(fds[i]))
			return (int)i;
	return -1;
}

/* -- the filter --------------------------------------------------------- */

enum {
	F_TEXT,
	F_ESC, /* after ESC */
	F_CHARSET, /* after ESC ( or ESC ): one byte */
	F_CSI, /* after ESC [ */
	F_STRING, /* OSC, DCS, APC, PM, SOS: dropped up to ST or BEL */
	F_STRING_ESC, /* ESC in a string */
	F_ESC_SKIP, /* an escape sequence with intermediates, dropped up to its final byte */
};

/* The private modes (CSI ? N h/l) that pass, and what to reset them to. */
static const struct {
	unsigned mode;
	unsigned dirty;
	const char *reset;
} private_modes[] = {
	{ 1, PTY_DIRTY_CURSOR_KEYS, "\033[?1l" },   { 7, PTY_DIRTY_WRAP, "\033[?7h" },
	{ 12, PTY_DIRTY_BLINK, "\033[?12l" },       { 25, PTY_DIRTY_CURSOR, "\033[?25h" },
	{ 47, PTY_DIRTY_ALT47, "\033[?47l" },       { 1047, PTY_DIRTY_ALT47, "\033[?1047l" },
	{ 1049, PTY_DIRTY_ALT1049, "\033[?1049l" }, { 2004, PTY_DIRTY_PASTE, "\033[?2004l" },
};

static void
out_put(struct pty_filter *f, const void *p, size_t n)
{
	if (f->n_out + n <= sizeof(f->out)) {
		memcpy(f->out + f->n_out, p, n);
		f->n_out += n;
	}
}

static void
out_byte(struct pty_filter *f, char c)
{
	out_put(f, &c, 1);
}

/* Private modes: every number one of ours. */
static bool
csi_private_ok(struct pty_filter *f, const char *p, size_t n)
{
	unsigned dirty = 0;

	for (size_t i = 0; i < n;) {
		unsigned v = 0;
		size_t k;
		bool found = false;

		if (p[i] < '0' || p[i] > '9')
			return false;
		for (; i < n && p[i] >= '0' && p[i] <= '9' && v < 100000; i++)
			v = v * 10 + (unsigned)(p[i] - '0');
		if (i < n && p[i] != ';')
			return false;
		i += i < n;
		for (k = 0; k < ELEMENTSOF(private_modes); k++)
			if (private_modes[k].mode == v) {
				dirty |= private_modes[k].dirty;
				found = true;
			}
		if (!found)
			return false;
	}
	f->dirty |= dirty;
	return n > 0;
}

/* The parameters of f->csi (without ESC [) and its final byte @fin: whether it passes. */
static bool
csi_ok(struct pty_filter *f, char fin)
{
	const char *p = f->csi;
	size_t n = f->n_csi;
	bool colon = fin == 'm';

	if (n > 0 && p[0] == '?')
		return (fin == 'h' || fin == 'l') && csi_private_ok(f, p + 1, n - 1);
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || p[i] == ';' || (colon && p[i] == ':')))
			return false;
	switch (fin) {
	case 'm':
		f->dirty |= PTY_DIRTY_SGR;
		return true;
	case 'r':
		f->dirty |= PTY_DIRTY_MARGINS;
		return true;
	case 'J':
		/* Not 3: the scrollback holds what the host printed before. */
		return n == 0 || (n == 1 && p[0] >= '0' && p[0] <= '2');
	case 's':
	case 'u':
		return n == 0;
	case 'A':
	case 'B':
	case 'C':
	case 'D':
	case 'E':
	case 'F':
	case 'G':
	case 'H':
	case 'f':
	case 'd':
	case 'e':
	case 'a':
	case '`':
	case 'K':
	case 'L':
	case 'M':
	case 'P':
	case '@':
	case 'X':
	case 'S':
	case 'T':
	case 'Z':
	case 'I':
		return true;
	default:
		return false;
	}
}

/* A byte that is not part of a UTF-8 sequence, in F_TEXT. */
static void
text_byte(struct pty_filter *f, unsigned char c)
{
	if (c == 033) {
		f->state = F_ESC;
		return;
	}
	if (c >= 0x20 && c < 0x7f) {
		out_byte(f, (char)c);
		return;
	}
	/* The C0 controls a shell needs; not SO/SI, DEL, NUL, CAN, SUB, ... */
	if (c == '\t' || c == '\n' || c == '\r' || c == '\b' || c == '\a')
		out_byte(f, (char)c);
}

/* UTF-8, strictly: no overlong form, no surrogate, nothing past U+10FFFF, no C1 control. */
static void
utf8_byte(struct pty_filter *f, unsigned char c)
{
	if (f->u_need == 0) {
		if (c < 0x80) {
			text_byte(f, c);
			return;
		}
		if (c >= 0xc2 && c <= 0xdf)
			f->u_need = 1;
		else if (c >= 0xe0 && c <= 0xef)
			f->u_need = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			f->u_need = 3;
		else {
			out_byte(f, '?');
			return;
		}
		f->u[0] = c;
		f->u_n = 1;
		return;
	}
	if ((c & 0xc0) != 0x80 ||
	    (f->u_n == 1 && ((f->u[0] == 0xe0 && c < 0xa0) || (f->u[0] == 0xed && c > 0x9f) ||
			     (f->u[0] == 0xf0 && c < 0x90) || (f->u[0] == 0xf4 && c > 0x8f)))) {
		/* A broken sequence: '?' for it, and the byte starts anew. */
		f->u_need = 0;
		out_byte(f, '?');
		utf8_byte(f, c);
		return;
	}
	f->u[f->u_n++] = c;
	if (--f->u_need > 0)
		return;
	/* U+0080 to U+009F: C1 controls, which a terminal may take as CSI, OSC, DCS, ... */
	if (!(f->u_n == 2 && f->u[0] == 0xc2 && f->u[1] < 0xa0))
		out_put(f, f->u, f->u_n);
}

static void
esc_byte(struct pty_filter *f, unsigned char c)
{
	static const char passes[] = "78DEM=>";

	f->state = F_TEXT;
	switch (c) {
	case '[':
		f->state = F_CSI;
		f->n_csi = 0;
		f->csi_long = false;
		return;
	case ']': /* OSC */
	case 'P': /* DCS */
	case '_': /* APC */
	case '^': /* PM */
	case 'X': /* SOS */
		f->state = F_STRING;
		return;
	case '(':
	case ')':
		f->charset = (char)c;
		f->state = F_CHARSET;
		return;
	case 033:
		f->state = F_ESC;
		return;
	default:
		break;
	}
	if (c >= 0x20 && c <= 0x2f) { /* intermediates: ESC # 8, ESC % G, ESC SP F, ... */
		f->state = F_ESC_SKIP;
		return;
	}
	if (c && strchr(passes, c)) {
		if (c == '=' || c == '>')
			f->dirty |= PTY_DIRTY_KEYPAD;
		out_byte(f, 033);
		out_byte(f, (char)c);
		return;
	}
	/* Anything else (ESC c resets the terminal, ...): dropped; a control byte is text again. */
	if (c < 0x20)
		text_byte(f, c);
}

static void
filter_byte(struct pty_filter *f, unsigned char c)
{
	switch (f->state) {
	case F_TEXT:
		utf8_byte(f, c);
		return;
	case F_ESC:
		esc_byte(f, c);
		return;
	case F_CHARSET:
		f->state = F_TEXT;
		if (c == '0' || c == 'A' || c == 'B') {
			f->dirty |= PTY_DIRTY_CHARSET;
			out_byte(f, 033);
			out_byte(f, f->charset);
			out_byte(f, (char)c);
		} else if (c == 033)
			f->state = F_ESC;
		else if (c >= 0x20 && c <= 0x2f) /* a two-byte set (ESC ( % 5): dropped whole */
			f->state = F_ESC_SKIP;
		return;
	case F_CSI:
		if (c >= 0x40 && c <= 0x7e) {
			f->state = F_TEXT;
			if (!f->csi_long && csi_ok(f, (char)c)) {
				out_put(f, "\033[", 2);
				out_put(f, f->csi, f->n_csi);
				out_byte(f, (char)c);
			}
		} else if (c >= 0x20 && c <= 0x3f) {
			if (f->n_csi < sizeof(f->csi))
				f->csi[f->n_csi++] = (char)c;
			else
				f->csi_long = true;
		} else {
			/* A control or 8-bit byte inside: the sequence is dropped, the byte is text. */
			f->state = F_TEXT;
			utf8_byte(f, c);
		}
		return;
	case F_STRING:
		if (c == 033)
			f->state = F_STRING_ESC;
		else if (c == '\a' || c == 0x18 || c == 0x1a) /* BEL ends an OSC; CAN, SUB abort */
			f->state = F_TEXT;
		return;
	case F_STRING_ESC:
		f->state = F_TEXT;
		if (c != '\\') /* not ST: the string ended, a new sequence starts */
			esc_byte(f, c);
		return;
	case F_ESC_SKIP:
		if (c >= 0x30 && c <= 0x7e)
			f->state = F_TEXT;
		else if (c < 0x20 || c > 0x7e) {
			f->state = F_TEXT;
			utf8_byte(f, c);
		}
		return;
	default:
		f->state = F_TEXT;
	}
}

size_t
pty_filter(struct pty_filter *f, const void *in, size_t n)
{
	const unsigned char *p = in;

	f->n_out = 0;
	if (test_hook_disabled("pty-filter")) {
		out_put(f, in, n);
		return f->n_out;
	}
	for (size_t i = 0; i < n; i++)
		filter_byte(f, p[i]);
	return f->n_out;
}

size_t
pty_filter_end(struct pty_filter *f)
{
	f->n_out = 0;
	/* The main screen first: leaving it restores the cursor that entering saved. */
	if (f->dirty & PTY_DIRTY_ALT1049)
		out_put(f, "\033[?1049l", 8);
	if (f->dirty & PTY_DIRTY_ALT47)
		out_put(f, "\033[?47l", 6);
	if (f->dirty & PTY_DIRTY_MARGINS)
		out_put(f, "\0337\033[r\0338", 7);
	for (size_t k = 0; k < ELEMENTSOF(private_modes); k++)
		if ((f->dirty & private_modes[k].dirty) &&
		    !(private_modes[k].dirty & (PTY_DIRTY_ALT47 | PTY_DIRTY_ALT1049)))
			out_put(f, private_modes[k].reset, strlen(private_modes[k].reset));
	if (f->dirty & PTY_DIRTY_KEYPAD)
		out_put(f, "\033>", 2);
	if (f->dirty & PTY_DIRTY_CHARSET)
		out_put(f, "\033(B\033)B", 6);
	if (f->dirty & PTY_DIRTY_SGR)
		out_put(f, "\033[0m", 4);
	f->dirty = 0;
	return f->n_out;
}

/* -- the relay ---------------------------------------------------------- */

#define RELAY_BUF 4096
#define RELAY_DRAIN_MAX (1024 * 1024)
#define RELAY_DRAIN_WAIT_MS 50

struct relay {
	int pty, in, out, pidfd, sfd;
	bool in_tty, in_done, pty_done;
	struct termios saved;
	char pending[RELAY_BUF];
	size_t n_pending, off_pending;
	struct pty_filter filter;
	size_t drained;
	struct clip_error **reterr;
};

static int
relay_write_out(struct relay *r, const void *p, size_t n)
{
	int e;

	if (r->out < 0 || n == 0)
		return 0;
	e = write_full(r->out, p, n);
	return e < 0 ? error_set_errno(r->reterr, -EIO, "cage pty relay: cannot write to fd %d",
				       r->out)
		     : 0;
}

static void
relay_winsize(struct relay *r)
{
	struct winsize ws;

	if (ioctl(r->in, TIOCGWINSZ, &ws) == 0 ||
	    (r->out >= 0 && ioctl(r->out, TIOCGWINSZ, &ws) == 0))
		(void)ioctl(r->pty, TIOCSWINSZ, &ws);
}

/* What the cage wrote: 0, 1 when the pty has nothing more (no slave open, or EAGAIN), -errno. */
static int
relay_from_pty(struct relay *r)
{
	char buf[RELAY_BUF];
	ssize_t n;
	size_t k;

	n = read(r->pty, buf, sizeof(buf));
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0 && errno == EAGAIN)
		return 1;
	if (n <= 0) { /* EIO: no process holds the slave any more */
		r->pty_done = true;
		return 1;
	}
	r->drained += (size_t)n;
	k = pty_filter(&r->filter, buf, (size_t)n);
	return relay_write_out(r, r->filter.out, k);
}

/* What the user typed: into the pending buffer, then into the pty as it takes it. */
static int
relay_from_in(struct relay *r)
{
	ssize_t n = read(r->in, r->pending, sizeof(r->pending));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		r->in_done = true;
		if (r->in_tty)
			return error_set(r->reterr, -EIO,
					 "cage pty relay: the terminal (fd %d) hung up", r->in);
		return 0;
	}
	r->n_pending = (size_t)n;
	r->off_pending = 0;
	return 0;
}

static void
relay_to_pty(struct relay *r)
{
	ssize_t n = write(r->pty, r->pending + r->off_pending, r->n_pending - r->off_pending);

	if (n > 0)
		r->off_pending += (size_t)n;
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		r->off_pending = r->n_pending; /* the slave is gone: what was typed is dropped */
	if (r->off_pending == r->n_pending)
		r->n_pending = r->off_pending = 0;
}

/*
 * The process has ended: what it wrote may still be on its way through
 * the pty (the kernel moves it in a worker), and goes out; bounded, for a
 * process left behind may write for ever.
 */
static int
relay_drain(struct relay *r)
{
	int e = 0;

	r->drained = 0;
	while (!r->pty_done && r->drained < RELAY_DRAIN_MAX && e >= 0) {
		struct pollfd p = { .fd = r->pty, .events = POLLIN };

		if (poll(&p, 1, RELAY_DRAIN_WAIT_MS) <= 0)
			break;
		e = relay_from_pty(r);
	}
	return e < 0 ? e : 0;
}

static int
relay_signal(struct relay *r)
{
	struct signalfd_siginfo si;

	if (read(r->sfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGWINCH) {
		relay_winsize(r);
		return 0;
	}
	return error_set(r->reterr, -EINTR, "cage pty relay: ended by %s",
			 sigabbrev_np((int)si.ssi_signo) ?: "a signal");
}

static int
relay_loop(struct relay *r)
{
	for (;;) {
		struct pollfd p[4] = {
			{ .fd = r->pidfd, .events = POLLIN },
			{ .fd = r->sfd, .events = POLLIN },
			{ .fd = r->pty_done ? -1 : r->pty,
			  .events = (short)(POLLIN | (r->n_pending ? POLLOUT : 0)) },
			{ .fd = r->in < 0 || r->in_done || r->n_pending ? -1 : r->in,
			  .events = POLLIN },
		};
		int e = 0;

		if (poll(p, ELEMENTSOF(p), -1) < 0) {
			if (errno == EINTR)
				continue;
			return error_set_errno(r->reterr, -errno, "cage pty relay: poll");
		}
		if (p[1].revents)
			e = relay_signal(r);
		if (e == 0 && (p[2].revents & POLLOUT))
			relay_to_pty(r);
		if (e == 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR)))
			e = relay_from_pty(r);
		if (e >= 0 && p[3].revents)
			e = relay_from_in(r);
		if (e < 0)
			return e;
		if (p[0].revents)
			return relay_drain(r);
	}
}

CLIP_EXPORT int
clip_cage_pty_relay(int pty, int in_fd, int out_fd, int pidfd, struct clip_error **reterr)
{
	struct relay r = { .pty = pty, .in = in_fd, .out = out_fd, .pidfd = pidfd, .sfd = -1 };
	sigset_t mask, old;
	int flags, e;
	size_t n;

	clip_assert_reterr(reterr);
	clip_assert_return(pty >= 0 && pidfd >= 0 && in_fd >= -1 && out_fd >= -1,
			   api_return(error_set(reterr, -EINVAL,
						"%s: pty %d, in_fd %d, out_fd %d, pidfd %d: "
						"pty and pidfd are needed, the others may be -1",
						__func__, pty, in_fd, out_fd, pidfd),
				      reterr));
	r.reterr = reterr;
	flags = fcntl(pty, F_GETFL);
	if (flags < 0 || fcntl(pidfd, F_GETFD) < 0)
		return api_return(error_set(reterr, -EBADF, "%s: pty %d or pidfd %d is not open",
					    __func__, pty, pidfd),
				  reterr);

	sigemptyset(&mask);
	sigaddset(&mask, SIGWINCH);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	(void)pthread_sigmask(SIG_BLOCK, &mask, &old);
	r.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r.sfd < 0) {
		e = error_set_errno(reterr, -errno, "cage pty relay: signalfd");
		goto out_mask;
	}
	(void)fcntl(pty, F_SETFL, flags | O_NONBLOCK);
	r.in_tty = in_fd >= 0 && tcgetattr(in_fd, &r.saved) == 0;
	if (r.in_tty) {
		struct termios raw = r.saved;

		cfmakeraw(&raw);
		(void)tcsetattr(in_fd, TCSANOW, &raw);
	}
	relay_winsize(&r);

	e = relay_loop(&r);

	n = pty_filter_end(&r.filter);
	(void)relay_write_out(&r, r.filter.out, n);
	if (r.in_tty)
		(void)tcsetattr(in_fd, TCSANOW, &r.saved);
	(void)fcntl(pty, F_SETFL, flags);
	close(r.sfd);
out_mask:
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	return api_return(e, reterr);
}
