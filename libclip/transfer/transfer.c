/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The transfer client; the wire format is proto.c's. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <clip/transfer.h>

#include "base/error.h"
#include "base/util.h"
#include "proto.h"
#include "transfer-internal.h"
#include "base/utf8.h"

struct clip_transfer {
	unsigned n_ref;
	int sock;
	uint64_t id;
	bool done;
	struct proto_reply reply;
};

int
transfer_connect_to(int *ret, const char *path, const char *env, const char *fallback, int flags,
		    struct clip_error **reterr)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (!path)
		path = secure_getenv(env);
	if (!path || !*path)
		path = fallback;
	if (strlen(path) >= sizeof(sa.sun_path))
		return error_set(reterr, -ENAMETOOLONG, "socket path %.64s... is too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | flags, 0);
	if (fd < 0)
		return error_set_errno(reterr, -errno, "cannot create a socket");
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return error_set_errno(reterr, r, "cannot reach the mediator at %s", path);
	}
	*ret = fd;
	return 0;
}

CLIP_EXPORT int
clip_transfer_connect(int *ret, const char *path, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(ret, api_return(-EINVAL, reterr));

	return api_return(transfer_connect_to(ret, path, "CLIP_TRANSFER_SOCKET",
					      CLIP_TRANSFER_SOCKET, 0, reterr),
			  reterr);
}

static int
transfer_report(const char *path, int kind, const char *subject, int error, const char *text,
		struct clip_error **reterr)
{
	struct proto_msg msg = { .type = PROTO_REPORT, .fd = -1 };
	_cleanup_close_ int sock = -1;
	uint8_t buf[PROTO_MSG_MAX];
	int n, r;

	if (kind <= 0 || kind >= _PROTO_REPORT_MAX)
		return error_set(reterr, -EINVAL, "unknown report kind %d", kind);
	if (error < 0 || error > 4095)
		return error_set(reterr, -EINVAL, "%d is not an errno", error);
	if (strnlen(subject, PROTO_NAME_MAX + 1) > PROTO_NAME_MAX)
		return error_set(reterr, -E2BIG, "the subject is over %d bytes", PROTO_NAME_MAX);
	if (strnlen(text, PROTO_TEXT_MAX + 1) > PROTO_TEXT_MAX ||
	    !utf8_is_printable(text, strlen(text), true))
		return error_set(reterr, -EINVAL,
				 "the text must be at most %d bytes of UTF-8 without control "
				 "characters",
				 PROTO_TEXT_MAX);
	msg.report.kind = (uint8_t)kind;
	msg.report.error = (uint32_t)error;
	snprintf(msg.report.subject, sizeof(msg.report.subject), "%s", subject);
	snprintf(msg.report.text, sizeof(msg.report.text), "%s", text);
	n = proto_encode(&msg, buf);
	if (n < 0)
		return error_set(reterr, n, "cannot encode the report");
	/* One way, never blocking: a mediator whose backlog or buffer is full gets no report. */
	r = transfer_connect_to(&sock, path, "CLIP_TRANSFER_SOCKET", CLIP_TRANSFER_SOCKET,
				SOCK_NONBLOCK, reterr);
	if (r < 0)
		return r;
	if (send(sock, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		if (errno == EPIPE || errno == ECONNRESET)
			return error_set(reterr, -ECONNRESET, "the mediator closed the connection");
		if (errno == EAGAIN)
			return error_set(reterr, -EAGAIN,
					 "the mediator's socket is full: the report is not sent");
		return error_set_errno(reterr, -errno, "cannot send the report");
	}
	return 0;
}

CLIP_EXPORT int
clip_transfer_report(const char *path, int kind, const char *subject, int error, const char *text,
		     struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(subject, api_return(-EINVAL, reterr));

	return api_return(transfer_report(path, kind, subject, error, text ? text : "", reterr),
			  reterr);
}

static int
transfer_new(struct clip_transfer **ret, int sock, int fd, const char *target, const char *name,
	     const char *note, struct clip_error **reterr)
{
	struct proto_msg msg = { .type = PROTO_REQUEST, .fd = fd };
	struct clip_transfer *t;
	int r;

	if (!proto_cage_name_valid(target, strnlen(target, PROTO_CAGE_MAX + 1)))
		return error_set(reterr, -EINVAL, "'%.64s' is not a cage name", target);
	if (strnlen(name, PROTO_NAME_MAX + 1) > PROTO_NAME_MAX)
		return error_set(reterr, -EINVAL, "the name is over %d bytes", PROTO_NAME_MAX);
	if (strnlen(note, PROTO_NOTE_MAX + 1) > PROTO_NOTE_MAX ||
	    !utf8_is_printable(note, strlen(note), true))
		return error_set(reterr, -EINVAL,
				 "the note must be at most %d bytes of UTF-8 without control "
				 "characters",
				 PROTO_NOTE_MAX);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->n_ref = 1;
	t->sock = fcntl(sock, F_DUPFD_CLOEXEC, 3);
	if (t->sock < 0) {
		free(t);
		return error_set_errno(reterr, -EBADF, "bad socket");
	}
	if (getrandom(&t->id, sizeof(t->id), 0) != sizeof(t->id))
		t->id = (uint64_t)time(NULL);
	msg.request.id = t->id;
	snprintf(msg.request.target, sizeof(msg.request.target), "%s", target);
	snprintf(msg.request.name, sizeof(msg.request.name), "%s", name);
	snprintf(msg.request.note, sizeof(msg.request.note), "%s", note);
	r = proto_send(t->sock, &msg, NULL);
	if (r < 0) {
		close(t->sock);
		free(t);
		if (r == -EPIPE || r == -ECONNRESET)
			return error_set(reterr, -ECONNRESET, "the mediator closed the connection");
		return error_set_errno(reterr, r, "cannot send the request");
	}
	*ret = t;
	return 0;
}

CLIP_EXPORT int
clip_transfer_new(struct clip_transfer **ret, int sock, int fd, const char *target,
		  const char *name, const char *note, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(ret && target && name, api_return(-EINVAL, reterr));
	clip_assert_return(sock >= 0 && fd >= 0, api_return(-EBADF, reterr));

	return api_return(transfer_new(ret, sock, fd, target, name, note ? note : "", reterr),
			  reterr);
}

CLIP_EXPORT struct clip_transfer *
clip_transfer_ref(struct clip_transfer *t)
{
	if (t)
		t->n_ref++;
	return t;
}

CLIP_EXPORT struct clip_transfer *
clip_transfer_unref(struct clip_transfer *t)
{
	if (t && --t->n_ref == 0) {
		close(t->sock);
		free(t);
	}
	return NULL;
}

CLIP_EXPORT int
clip_transfer_get_fd(struct clip_transfer *t)
{
	clip_assert_return(t, -EINVAL);
	return t->sock;
}

static int
transfer_dispatch(struct clip_transfer *t, struct clip_error **reterr)
{
	struct proto_msg msg;
	int r;

	if (t->done)
		return 1;
	r = proto_recv(t->sock, &msg, reterr);
	if (r == -EAGAIN)
		return 0;
	if (r == -ECONNRESET)
		return error_set(reterr, -ECONNRESET, "the mediator closed the connection");
	if (r < 0)
		return r;
	if (msg.type != PROTO_REPLY || msg.reply.id != t->id)
		return error_set(reterr, -EBADMSG, "the mediator answered another request");
	t->reply = msg.reply;
	t->done = true;
	return 1;
}

CLIP_EXPORT int
clip_transfer_dispatch(struct clip_transfer *t, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(t, api_return(-EINVAL, reterr));

	return api_return(transfer_dispatch(t, reterr), reterr);
}

static int
transfer_wait(struct clip_transfer *t, int timeout_ms, struct clip_error **reterr)
{
	long long start = now_ms();

	for (;;) {
		struct pollfd p = { .fd = t->sock, .events = POLLIN };
		int left = timeout_ms, r;

		r = transfer_dispatch(t, reterr);
		if (r != 0)
			return r < 0 ? r : 0;
		if (timeout_ms >= 0) {
			left = timeout_ms - (int)(now_ms() - start);
			if (left <= 0)
				return error_set(reterr, -EAGAIN,
						 "no answer from the mediator yet");
		}
		if (poll(&p, 1, left) < 0 && errno != EINTR)
			return error_set_errno(reterr, -errno, "poll failed");
	}
}

CLIP_EXPORT int
clip_transfer_wait(struct clip_transfer *t, int timeout_ms, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(t && timeout_ms >= -1, api_return(-EINVAL, reterr));

	return api_return(transfer_wait(t, timeout_ms, reterr), reterr);
}

CLIP_EXPORT int
clip_transfer_send(struct clip_transfer **ret, int sock, int fd, const char *target,
		   const char *name, const char *note, struct clip_error **reterr)
{
	struct clip_transfer *t = NULL;
	int r;

	clip_assert_reterr(reterr);
	clip_assert_return(ret && target && name, api_return(-EINVAL, reterr));
	clip_assert_return(sock >= 0 && fd >= 0, api_return(-EBADF, reterr));

	r = transfer_new(&t, sock, fd, target, name, note ? note : "", reterr);
	if (r == 0) {
		r = transfer_wait(t, -1, reterr);
		if (r < 0)
			clip_transfer_unref(t);
		else
			*ret = t;
	}
	return api_return(r, reterr);
}

CLIP_EXPORT int
clip_transfer_get_status(const struct clip_transfer *t)
{
	clip_assert_return(t, -EINVAL);
	return t->done ? t->reply.status : -EAGAIN;
}

CLIP_EXPORT int
clip_transfer_get_error(const struct clip_transfer *t)
{
	clip_assert_return(t, -EINVAL);
	return t->done ? -(int)t->reply.error : 0;
}

CLIP_EXPORT const char *
clip_transfer_get_message(const struct clip_transfer *t)
{
	return t ? t->reply.message : NULL;
}

CLIP_EXPORT const char *
clip_transfer_get_name(const struct clip_transfer *t)
{
	return t ? t->reply.name : NULL;
}

CLIP_EXPORT int
clip_transfer_get_digest(const struct clip_transfer *t, uint64_t *size, uint8_t *sha256,
			 int *encrypted)
{
	clip_assert_return(t, -EINVAL);
	if (!t->done)
		return -EAGAIN;
	if (size)
		*size = t->reply.size;
	if (sha256)
		memcpy(sha256, t->reply.sha256, 32);
	if (encrypted)
		*encrypted = t->reply.encrypted;
	return 0;
}
