/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transfer wire format; doc/transfer-protocol.md is the reference.
 *
 * Header (12 bytes, little endian): magic u32 "CLXF", version u16, type
 * u16, body length u32. Body: the fields of the type in a fixed order;
 * integers little endian, strings as a u16 length then the bytes (no NUL).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/error.h"
#include "proto.h"
#include "base/utf8.h"
#include "base/util.h"

/* More than one fd is refused, but room for a few lets us see and close them. */
#define PROTO_FDS_SEEN 8

struct wbuf {
	uint8_t *p;
	size_t n;
	bool overflow;
};

static void
put(struct wbuf *w, const void *p, size_t n)
{
	if (w->overflow || n > PROTO_MSG_MAX - w->n) {
		w->overflow = true;
		return;
	}
	memcpy(w->p + w->n, p, n);
	w->n += n;
}

static void
put_uint(struct wbuf *w, uint64_t v, size_t width)
{
	uint8_t le[8];

	for (size_t i = 0; i < width; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	put(w, le, width);
}

static int
put_str(struct wbuf *w, const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n > max)
		return -E2BIG;
	put_uint(w, n, 2);
	put(w, s, n);
	return 0;
}

static int
encode_body(const struct proto_msg *msg, struct wbuf *w)
{
	int r = 0;

	switch (msg->type) {
	case PROTO_REQUEST:
		put_uint(w, msg->request.id, 8);
		r |= put_str(w, msg->request.target, PROTO_CAGE_MAX);
		r |= put_str(w, msg->request.name, PROTO_NAME_MAX);
		r |= put_str(w, msg->request.note, PROTO_NOTE_MAX);
		break;
	case PROTO_REPLY:
		put_uint(w, msg->reply.id, 8);
		put_uint(w, msg->reply.status, 1);
		put_uint(w, msg->reply.error, 4);
		put_uint(w, msg->reply.size, 8);
		put(w, msg->reply.sha256, 32);
		put_uint(w, msg->reply.encrypted, 1);
		r |= put_str(w, msg->reply.name, PROTO_NAME_MAX);
		r |= put_str(w, msg->reply.message, PROTO_TEXT_MAX);
		break;
	case PROTO_PROMPT:
		put_uint(w, msg->prompt.id, 8);
		put_uint(w, msg->prompt.timeout_ms, 4);
		put_uint(w, msg->prompt.direction, 1);
		put_uint(w, msg->prompt.encrypt, 1);
		put_uint(w, msg->prompt.size, 8);
		put(w, msg->prompt.sha256, 32);
		r |= put_str(w, msg->prompt.source, PROTO_CAGE_MAX);
		r |= put_str(w, msg->prompt.source_level, PROTO_LEVEL_MAX);
		r |= put_str(w, msg->prompt.target, PROTO_CAGE_MAX);
		r |= put_str(w, msg->prompt.target_level, PROTO_LEVEL_MAX);
		r |= put_str(w, msg->prompt.name, PROTO_NAME_MAX);
		r |= put_str(w, msg->prompt.note, PROTO_NOTE_MAX);
		break;
	case PROTO_ANSWER:
		put_uint(w, msg->answer.id, 8);
		put_uint(w, msg->answer.allow, 1);
		break;
	case PROTO_HELLO:
		break;
	case PROTO_EXPIRED:
		put_uint(w, msg->expired.id, 8);
		put_uint(w, msg->expired.reason, 1);
		break;
	case PROTO_FEATURES:
		put_uint(w, msg->features.flags, 4);
		break;
	case PROTO_REPORT:
		put_uint(w, msg->report.kind, 1);
		put_uint(w, msg->report.error, 4);
		r |= put_str(w, msg->report.subject, PROTO_NAME_MAX);
		r |= put_str(w, msg->report.text, PROTO_TEXT_MAX);
		break;
	default:
		return -EINVAL;
	}
	return r < 0 ? -E2BIG : 0;
}

int
proto_encode(const struct proto_msg *msg, uint8_t *buf)
{
	struct wbuf w = { .p = buf, .n = PROTO_HEADER_SIZE };
	int r;

	r = encode_body(msg, &w);
	if (r < 0)
		return r;
	if (w.overflow)
		return -E2BIG;
	{
		struct wbuf h = { .p = buf };

		put_uint(&h, PROTO_MAGIC, 4);
		put_uint(&h, PROTO_VERSION, 2);
		put_uint(&h, msg->type, 2);
		put_uint(&h, w.n - PROTO_HEADER_SIZE, 4);
	}
	return (int)w.n;
}

/* A cursor over untrusted bytes; the first failure sticks. */
struct rbuf {
	const uint8_t *p;
	size_t n, off;
	const char *field;
	struct clip_error **reterr;
	int r;
};

static int _printf_(2, 3) fail(struct rbuf *b, const char *format, ...)
{
	char text[160];
	va_list ap;

	if (b->r < 0)
		return b->r;
	va_start(ap, format);
	vsnprintf(text, sizeof(text), format, ap);
	va_end(ap);
	b->r = error_setf(b->reterr, -EBADMSG, (int)b->off, "%s", text);
	return b->r;
}

static uint64_t
get_uint(struct rbuf *b, size_t width, const char *field)
{
	uint64_t v = 0;

	if (b->r < 0)
		return 0;
	if (b->n - b->off < width) {
		fail(b, "message ends inside field '%s'", field);
		return 0;
	}
	for (size_t i = 0; i < width; i++)
		v |= (uint64_t)b->p[b->off + i] << (8 * i);
	b->off += width;
	return v;
}

static void
get_bytes(struct rbuf *b, void *out, size_t n, const char *field)
{
	if (b->r < 0)
		return;
	if (b->n - b->off < n) {
		fail(b, "message ends inside field '%s'", field);
		return;
	}
	memcpy(out, b->p + b->off, n);
	b->off += n;
}

enum str_kind {
	STR_BYTES, /* anything but NUL */
	STR_TEXT, /* UTF-8, no control character */
	STR_CAGE, /* a cage name: [a-z0-9][a-z0-9_-]* */
	STR_LEVEL, /* printable ASCII */
};

static bool
str_ok(const char *s, size_t n, enum str_kind kind)
{
	switch (kind) {
	case STR_BYTES:
		return true;
	case STR_TEXT:
		return utf8_is_printable(s, n, true);
	case STR_CAGE:
		return proto_cage_name_valid(s, n);
	case STR_LEVEL:
		for (size_t i = 0; i < n; i++)
			if (s[i] <= 0x20 || s[i] >= 0x7f)
				return false;
		return n > 0;
	}
	return false;
}

static void
get_str(struct rbuf *b, char *out, size_t max, enum str_kind kind, const char *field)
{
	size_t len = (size_t)get_uint(b, 2, field);

	if (b->r < 0)
		return;
	if (len > max) {
		fail(b, "field '%s' is longer than its bound", field);
		return;
	}
	get_bytes(b, out, len, field);
	if (b->r < 0)
		return;
	out[len] = '\0';
	if (memchr(out, '\0', len)) {
		fail(b, "field '%s' contains a NUL byte", field);
		return;
	}
	if (!str_ok(out, len, kind))
		fail(b, "field '%s' has a character it may not hold", field);
}

static uint8_t
get_enum(struct rbuf *b, unsigned max, const char *field)
{
	uint8_t v = (uint8_t)get_uint(b, 1, field);

	if (b->r == 0 && v >= max)
		fail(b, "field '%s' has an unknown value", field);
	return v;
}

bool
proto_cage_name_valid(const char *s, size_t n)
{
	if (n == 0 || n > PROTO_CAGE_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  (i > 0 && (c == '-' || c == '_'));

		if (!ok)
			return false;
	}
	/* "s<digit>" would read as a level in the policy. */
	return !(s[0] == 's' && n > 1 && s[1] >= '0' && s[1] <= '9');
}

static void
decode_body(struct rbuf *b, struct proto_msg *msg)
{
	switch (msg->type) {
	case PROTO_REQUEST: {
		struct proto_request *q = &msg->request;

		q->id = get_uint(b, 8, "id");
		get_str(b, q->target, PROTO_CAGE_MAX, STR_CAGE, "target");
		get_str(b, q->name, PROTO_NAME_MAX, STR_BYTES, "name");
		get_str(b, q->note, PROTO_NOTE_MAX, STR_TEXT, "note");
		break;
	}
	case PROTO_REPLY: {
		struct proto_reply *y = &msg->reply;

		y->id = get_uint(b, 8, "id");
		y->status = get_enum(b, _PROTO_STATUS_MAX, "status");
		y->error = (uint32_t)get_uint(b, 4, "error");
		if (b->r == 0 && y->error > 4095)
			fail(b, "field '%s' is not an errno", "error");
		y->size = get_uint(b, 8, "size");
		get_bytes(b, y->sha256, 32, "sha256");
		y->encrypted = get_enum(b, 2, "encrypted");
		get_str(b, y->name, PROTO_NAME_MAX, STR_BYTES, "name");
		get_str(b, y->message, PROTO_TEXT_MAX, STR_TEXT, "message");
		break;
	}
	case PROTO_PROMPT: {
		struct proto_prompt *p = &msg->prompt;

		p->id = get_uint(b, 8, "id");
		p->timeout_ms = (uint32_t)get_uint(b, 4, "timeout");
		p->direction = get_enum(b, _PROTO_DIRECTION_MAX, "direction");
		p->encrypt = get_enum(b, 2, "encrypt");
		p->size = get_uint(b, 8, "size");
		get_bytes(b, p->sha256, 32, "sha256");
		get_str(b, p->source, PROTO_CAGE_MAX, STR_CAGE, "source");
		get_str(b, p->source_level, PROTO_LEVEL_MAX, STR_LEVEL, "source level");
		get_str(b, p->target, PROTO_CAGE_MAX, STR_CAGE, "target");
		get_str(b, p->target_level, PROTO_LEVEL_MAX, STR_LEVEL, "target level");
		get_str(b, p->name, PROTO_NAME_MAX, STR_BYTES, "name");
		get_str(b, p->note, PROTO_NOTE_MAX, STR_TEXT, "note");
		break;
	}
	case PROTO_ANSWER:
		msg->answer.id = get_uint(b, 8, "id");
		msg->answer.allow = get_enum(b, 2, "allow");
		break;
	case PROTO_HELLO:
		break;
	case PROTO_EXPIRED:
		msg->expired.id = get_uint(b, 8, "id");
		msg->expired.reason = get_enum(b, _PROTO_EXPIRY_MAX, "reason");
		break;
	case PROTO_FEATURES:
		msg->features.flags = (uint32_t)get_uint(b, 4, "flags");
		break;
	case PROTO_REPORT: {
		struct proto_report *t = &msg->report;

		t->kind = get_enum(b, _PROTO_REPORT_MAX, "kind");
		if (b->r == 0 && t->kind == 0)
			fail(b, "field '%s' has an unknown value", "kind");
		t->error = (uint32_t)get_uint(b, 4, "error");
		if (b->r == 0 && t->error > 4095)
			fail(b, "field '%s' is not an errno", "error");
		get_str(b, t->subject, PROTO_NAME_MAX, STR_BYTES, "subject");
		get_str(b, t->text, PROTO_TEXT_MAX, STR_TEXT, "text");
		break;
	}
	case _PROTO_TYPE_MAX:
		break;
	}
}

int
proto_decode(const uint8_t *untrusted_buf, size_t n, unsigned n_fds, struct proto_msg *msg,
	     struct clip_error **reterr)
{
	struct rbuf b = { .p = untrusted_buf, .n = n, .reterr = reterr };
	uint64_t untrusted_magic, untrusted_version, untrusted_type, untrusted_length;

	memset(msg, 0, sizeof(*msg));
	msg->fd = -1;
	if (n > PROTO_MSG_MAX)
		return error_set(reterr, -EBADMSG, "message of %zu bytes is over the bound of %d",
				 n, PROTO_MSG_MAX);
	if (n < PROTO_HEADER_SIZE)
		return error_set(reterr, -EBADMSG, "message of %zu bytes is shorter than a header",
				 n);
	untrusted_magic = get_uint(&b, 4, "magic");
	untrusted_version = get_uint(&b, 2, "version");
	untrusted_type = get_uint(&b, 2, "type");
	untrusted_length = get_uint(&b, 4, "length");
	if (untrusted_magic != PROTO_MAGIC)
		return error_setf(reterr, -EBADMSG, 0,
				  "not a libclip transfer message (bad magic)");
	if (untrusted_version != PROTO_VERSION)
		return error_setf(reterr, -EBADMSG, 4, "unsupported protocol version %u (want %d)",
				  (unsigned)untrusted_version, PROTO_VERSION);
	if (untrusted_type < PROTO_REQUEST || untrusted_type >= _PROTO_TYPE_MAX)
		return error_setf(reterr, -EBADMSG, 6, "unknown message type %u",
				  (unsigned)untrusted_type);
	if (untrusted_length != n - PROTO_HEADER_SIZE)
		return error_setf(reterr, -EBADMSG, 8,
				  "length field says %llu bytes, the message has %zu",
				  (unsigned long long)untrusted_length, n - PROTO_HEADER_SIZE);
	msg->type = (enum proto_type)untrusted_type;
	if (n_fds != (msg->type == PROTO_REQUEST ? 1u : 0u))
		return error_set(reterr, -EBADMSG, "a %s message came with %u fds (want %u)",
				 msg->type == PROTO_REQUEST ? "request" : "non-request", n_fds,
				 msg->type == PROTO_REQUEST ? 1u : 0u);
	decode_body(&b, msg);
	if (b.r < 0)
		return b.r;
	if (b.off != n)
		return error_setf(reterr, -EBADMSG, (int)b.off,
				  "%zu trailing bytes after the message", n - b.off);
	return 0;
}

static void
close_fd(int fd, void *userdata)
{
	(void)userdata;
	close(fd);
}

int
proto_recv(int sock, struct proto_msg *msg, struct clip_error **reterr)
{
	return proto_recv_with(sock, msg, close_fd, NULL, reterr);
}

int
proto_recv_with(int sock, struct proto_msg *msg, void (*drop_fd)(int fd, void *userdata),
		void *userdata, struct clip_error **reterr)
{
	uint8_t untrusted_buf[PROTO_MSG_MAX + 1];
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * PROTO_FDS_SEEN)];
	} control;
	struct iovec iov = { .iov_base = untrusted_buf, .iov_len = sizeof(untrusted_buf) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	int fds[PROTO_FDS_SEEN];
	size_t n_fds = 0;
	bool other_cmsg = false;
	ssize_t n;
	int r;

	memset(msg, 0, sizeof(*msg));
	msg->fd = -1;
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return -EAGAIN;
		if (errno == ECONNRESET)
			return -ECONNRESET;
		return error_set_errno(reterr, -errno, "cannot receive a message");
	}
	/* Collect every fd first, so that each one is closed on any refusal. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (n_fds < PROTO_FDS_SEEN)
					fds[n_fds++] = fd;
				else
					drop_fd(fd, userdata);
			}
		} else
			other_cmsg = true;
	}
	if (n == 0 && n_fds == 0)
		return -ECONNRESET;
	if (mh.msg_flags & MSG_TRUNC)
		r = error_set(reterr, -EBADMSG, "message is over the bound of %d bytes",
			      PROTO_MSG_MAX);
	else if (mh.msg_flags & MSG_CTRUNC)
		r = error_set(reterr, -EBADMSG, "message came with too many fds");
	else if (other_cmsg)
		r = error_set(reterr, -EBADMSG, "message came with unexpected control data");
	else
		r = proto_decode(untrusted_buf, (size_t)n, (unsigned)n_fds, msg, reterr);
	if (r < 0) {
		for (size_t i = 0; i < n_fds; i++)
			drop_fd(fds[i], userdata);
		return r;
	}
	if (n_fds == 1)
		msg->fd = fds[0];
	return 0;
}

int
proto_send_raw(int sock, const void *buf, size_t n, int fd)
{
	return send_fds(sock, buf, n, &fd, fd >= 0);
}

int
proto_send(int sock, const struct proto_msg *msg, struct clip_error **reterr)
{
	uint8_t buf[PROTO_MSG_MAX];
	int n, r;

	n = proto_encode(msg, buf);
	if (n < 0)
		return error_set(reterr, n, "cannot encode the message: a field is too long");
	r = proto_send_raw(sock, buf, (size_t)n, msg->fd);
	if (r < 0)
		return error_set_errno(reterr, r, "cannot send a message");
	return 0;
}

void
proto_msg_done(struct proto_msg *msg)
{
	if (msg->fd >= 0)
		close(msg->fd);
	msg->fd = -1;
}

const char *
proto_expiry_name(unsigned reason)
{
	static const char *const names[] = { "no answer in time", "withdrawn by the mediator" };

	return reason < ELEMENTSOF(names) ? names[reason] : "?";
}

const char *
proto_direction_name(unsigned direction)
{
	static const char *const names[] = { "up", "down", "same", "incomparable" };

	return direction < ELEMENTSOF(names) ? names[direction] : "?";
}

const char *
proto_status_name(unsigned status)
{
	static const char *const names[] = { "delivered", "denied by policy", "denied by the user",
					     "failed" };

	return status < ELEMENTSOF(names) ? names[status] : "?";
}

/*
 * Defusing a descriptor a peer sent (clipd's fronts and the mediator's
 * closing threads): how deep into UNIX sockets queued in UNIX sockets, and
 * how many queued messages of each are taken out.
 */
#define DEFUSE_DEPTH 3
#define DEFUSE_MESSAGES 256

static void fd_defuse(int fd, unsigned depth);

/* Take out what is queued in the UNIX socket @fd, defusing and closing each descriptor. */
static void
unix_drain(int fd, unsigned depth)
{
	for (unsigned i = 0; i < DEFUSE_MESSAGES; i++) {
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int) * 253)];
		} control;
		char data[256];
		struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
		struct msghdr mh = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = control.buf,
			.msg_controllen = sizeof(control.buf),
		};
		bool fds = false;
		ssize_t k = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t j = 0; j < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); j++) {
				int inner;

				memcpy(&inner, CMSG_DATA(c) + j * sizeof(int), sizeof(int));
				fd_defuse(inner, depth + 1);
				close(inner);
				fds = true;
			}
		}
		if (k == 0 && !fds)
			return;
	}
}

/* Make the close of @fd not wait: a socket resets instead of lingering. */
static void
fd_defuse(int fd, unsigned depth)
{
	struct linger no_linger = { .l_onoff = 1, .l_linger = 0 };
	int domain = 0;
	socklen_t len = sizeof(domain);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
		return; /* not a socket */
	if (domain != AF_UNIX) {
		(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &no_linger, sizeof(no_linger));
		return;
	}
	if (depth >= DEFUSE_DEPTH)
		return;
	/* Nothing more comes in; what is queued is taken out. */
	(void)shutdown(fd, SHUT_RDWR);
	unix_drain(fd, depth);
}

void
proto_fd_defuse(int fd)
{
	fd_defuse(fd, 0);
}
