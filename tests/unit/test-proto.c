/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wire format (transfer/proto.h): what the decoder refuses, and
 * proto_recv() given more fds than a message may carry.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clip/clip.h>

#include "helpers.h"
#include "transfer/proto.h"

static size_t
request_bytes(uint8_t *buf, const char *target, const char *name)
{
	struct proto_msg m = { .type = PROTO_REQUEST, .fd = -1 };
	int n;

	m.request.id = 42;
	snprintf(m.request.target, sizeof(m.request.target), "%s", target);
	snprintf(m.request.name, sizeof(m.request.name), "%s", name);
	n = proto_encode(&m, buf);
	cr_assert_gt(n, 0);
	return (size_t)n;
}

static void
assert_refused(const uint8_t *buf, size_t n, unsigned fds, const char *why)
{
	struct clip_error *e = NULL;
	struct proto_msg m;

	assert_errno(proto_decode(buf, n, fds, &m, &e), -EBADMSG);
	cr_assert(strstr(clip_error_get_message(e), why), "'%s' does not say '%s'",
		  clip_error_get_message(e), why);
	clip_error_free(e);
}

Test(proto, round_trip)
{
	uint8_t buf[PROTO_MSG_MAX];
	size_t n = request_bytes(buf, "high", "report.pdf");
	struct proto_msg m;

	cr_assert_eq(proto_decode(buf, n, 1, &m, NULL), 0);
	cr_assert_eq(m.type, PROTO_REQUEST);
	cr_assert_eq(m.request.id, 42);
	cr_assert_str_eq(m.request.target, "high");
	cr_assert_str_eq(m.request.name, "report.pdf");
}

Test(proto, refusals_name_what_is_wrong)
{
	uint8_t buf[PROTO_MSG_MAX + 16];
	size_t n = request_bytes(buf, "high", "a\x01");

	assert_refused(buf, n, 0, "came with 0 fds");
	assert_refused(buf, n, 2, "came with 2 fds");
	buf[4] = 2;
	assert_refused(buf, n, 1, "unsupported protocol version 2");
	buf[4] = 1;
	buf[8] = 0xff, buf[9] = 0xff, buf[10] = 0xff, buf[11] = 0xff;
	assert_refused(buf, n, 1, "length field says 4294967295 bytes");
	n = request_bytes(buf, "high", "x");
	buf[n] = 0;
	buf[8]++;
	assert_refused(buf, n + 1, 1, "1 trailing bytes");
	buf[0] = 'X';
	assert_refused(buf, n, 1, "bad magic");
	assert_refused(buf, 5, 1, "shorter than a header");
	assert_refused(buf, PROTO_MSG_MAX + 1, 1, "over the bound");
	/* A NUL inside a string: built by hand, the encoder cannot make one. */
	n = request_bytes(buf, "high", "abc");
	buf[PROTO_HEADER_SIZE + 8 + 2 + 4 + 2 + 1] = '\0';
	assert_refused(buf, n, 1, "field 'name' contains a NUL byte");
	n = request_bytes(buf, "high", "abc");
	buf[PROTO_HEADER_SIZE + 8 + 2] = 'H';
	assert_refused(buf, n, 1, "field 'target' has a character");
}

Test(proto, expired_and_features_round_trip_and_their_refusals)
{
	struct proto_msg m = { .type = PROTO_EXPIRED, .fd = -1 }, got;
	uint8_t buf[PROTO_MSG_MAX];
	int n;

	m.expired.id = UINT64_C(0x1122334455667788);
	m.expired.reason = PROTO_EXPIRY_WITHDRAWN;
	n = proto_encode(&m, buf);
	cr_assert_eq(n, PROTO_HEADER_SIZE + 9);
	cr_assert_eq(proto_decode(buf, (size_t)n, 0, &got, NULL), 0);
	cr_assert_eq(got.type, PROTO_EXPIRED);
	cr_assert_eq(got.expired.id, m.expired.id);
	cr_assert_eq(got.expired.reason, PROTO_EXPIRY_WITHDRAWN);
	buf[n - 1] = _PROTO_EXPIRY_MAX;
	assert_refused(buf, (size_t)n, 0, "field 'reason' has an unknown value");
	buf[8]--; /* the length that says so */
	assert_refused(buf, (size_t)n - 1, 0, "message ends inside field 'reason'");

	m = (struct proto_msg){ .type = PROTO_FEATURES, .fd = -1 };
	/* Bits this version does not know are kept: the mediator ignores them. */
	m.features.flags = PROTO_FEATURE_EXPIRED | UINT32_C(1) << 31;
	n = proto_encode(&m, buf);
	cr_assert_eq(n, PROTO_HEADER_SIZE + 4);
	cr_assert_eq(proto_decode(buf, (size_t)n, 0, &got, NULL), 0);
	cr_assert_eq(got.type, PROTO_FEATURES);
	cr_assert_eq(got.features.flags, m.features.flags);
	assert_refused(buf, (size_t)n, 1, "came with 1 fds");
	buf[6] = _PROTO_TYPE_MAX;
	assert_refused(buf, (size_t)n, 0, "unknown message type");
}

Test(proto, report_round_trips_and_its_refusals)
{
	struct proto_msg m = { .type = PROTO_REPORT, .fd = -1 }, got;
	uint8_t buf[PROTO_MSG_MAX];
	int n;

	m.report.kind = PROTO_REPORT_EXEC_REFUSED;
	m.report.error = EACCES;
	snprintf(m.report.subject, sizeof(m.report.subject), "/data/\xff.py");
	snprintf(m.report.text, sizeof(m.report.text), "mounted noexec");
	n = proto_encode(&m, buf);
	cr_assert_eq(n, PROTO_HEADER_SIZE + 1 + 4 + 2 + 10 + 2 + 14);
	cr_assert_eq(proto_decode(buf, (size_t)n, 0, &got, NULL), 0);
	cr_assert_eq(got.type, PROTO_REPORT);
	cr_assert_eq(got.report.kind, PROTO_REPORT_EXEC_REFUSED);
	cr_assert_eq(got.report.error, EACCES);
	cr_assert_str_eq(got.report.subject, "/data/\xff.py", "a subject is any bytes but NUL");
	cr_assert_str_eq(got.report.text, "mounted noexec");
	assert_refused(buf, (size_t)n, 1, "came with 1 fds");
	buf[PROTO_HEADER_SIZE] = 0;
	assert_refused(buf, (size_t)n, 0, "field 'kind' has an unknown value");
	buf[PROTO_HEADER_SIZE] = _PROTO_REPORT_MAX;
	assert_refused(buf, (size_t)n, 0, "field 'kind' has an unknown value");
	buf[PROTO_HEADER_SIZE] = PROTO_REPORT_EXEC_REFUSED;
	buf[PROTO_HEADER_SIZE + 2] = 0x10; /* error 4096 + 13 */
	assert_refused(buf, (size_t)n, 0, "field 'error' is not an errno");
	buf[PROTO_HEADER_SIZE + 2] = 0;
	buf[n - 1] = '\n';
	assert_refused(buf, (size_t)n, 0, "field 'text' has a character it may not hold");
}

Test(proto, note_refuses_control_and_bidi)
{
	struct proto_msg m = { .type = PROTO_REQUEST, .fd = -1 };
	uint8_t buf[PROTO_MSG_MAX];
	int n;

	strcpy(m.request.target, "high");
	strcpy(m.request.note, "x\xe2\x80\xae y"); /* U+202E */
	n = proto_encode(&m, buf);
	assert_refused(buf, (size_t)n, 1, "field 'note' has a character");
	strcpy(m.request.note, "\x1b[2J");
	n = proto_encode(&m, buf);
	assert_refused(buf, (size_t)n, 1, "field 'note' has a character");
}

Test(proto, recv_refuses_and_closes_extra_fds)
{
	int sv[2], fds[2];
	uint8_t buf[PROTO_MSG_MAX];
	size_t n = request_bytes(buf, "high", "x");
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} control = { 0 };
	struct iovec iov = { .iov_base = buf, .iov_len = n };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	struct clip_error *e = NULL;
	struct proto_msg m;
	struct stat st;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(2 * sizeof(int));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	cr_assert_geq(sendmsg(sv[0], &mh, 0), 0);
	close(fds[0]);
	close(fds[1]);
	assert_errno(proto_recv(sv[1], &m, &e), -EBADMSG);
	cr_assert(strstr(clip_error_get_message(e), "came with 2 fds"));
	clip_error_free(e);
	e = NULL;
	/* Both received fds were closed: the lowest free numbers are free again. */
	cr_assert_eq(fstat(fds[0], &st), -1);
	cr_assert_eq(fstat(fds[1], &st), -1);

	/* An oversized message is seen as truncated and refused. */
	{
		static uint8_t big[PROTO_MSG_MAX + 100];

		memcpy(big, buf, n);
		cr_assert_geq(send(sv[0], big, sizeof(big), 0), 0);
		assert_errno(proto_recv(sv[1], &m, &e), -EBADMSG);
		cr_assert(strstr(clip_error_get_message(e), "over the bound"), "%s",
			  clip_error_get_message(e));
		clip_error_free(e);
	}
	/* A peer that goes away is the end of the stream, not an error. */
	close(sv[0]);
	assert_errno(proto_recv(sv[1], &m, NULL), -ECONNRESET);
	close(sv[1]);
}
