/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mediated transfer, piece by piece: the wire decoder's refusals, the
 * policy's rules, the audit chain against each kind of tampering, the
 * delivery's refusals and names, then a mediator and its clients in one
 * process (the end-to-end tests with real processes are in
 * tests/integration/transfer-e2e.sh).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <clip/clip.h>
#include <openssl/evp.h>

#include "helpers.h"
#include "transfer/proto.h"
#include "transfer/transfer-internal.h"

/* --- wire --- */

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

/* --- policy --- */

static struct clip_policy *
policy(const char *text)
{
	struct clip_policy *p = NULL;
	struct clip_error *e = NULL;

	cr_assert_eq(clip_policy_parse(&p, text, strlen(text), "test.policy", &e), 0, "%s",
		     e ? clip_error_get_message(e) : "");
	return p;
}

static void
policy_refused(const char *text, const char *where, const char *why)
{
	struct clip_policy *p = NULL;
	struct clip_error *e = NULL;

	assert_errno(clip_policy_parse(&p, text, strlen(text), "test.policy", &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), where), "'%s' lacks '%s'",
		  clip_error_get_message(e), where);
	cr_assert(strstr(clip_error_get_message(e), why), "'%s' lacks '%s'",
		  clip_error_get_message(e), why);
	clip_error_free(e);
}

static struct clip_level *
lv(const char *text)
{
	struct clip_level *l = NULL;

	cr_assert_eq(clip_level_parse(&l, text, NULL), 0);
	return l;
}

Test(policy, downgrades_are_never_allow)
{
	policy_refused("s2 s1 allow\n", "test.policy:1:1:", "downgrade can never be allowed");
	policy_refused("# c\ns1:c0 s1:c1 allow\n", "test.policy:2:1:", "does not dominate");
	policy_refused("low high allow direction=down", "test.policy:1:1:", "downgrade");
	policy_refused("@any high allow\n", ":1:1:", "needs direction=up");
	policy_refused("low high ask\nlow high permit\n", "test.policy:2:10:", "unknown action");
	policy_refused("low high ask max-size=1X\n", "test.policy:1:24:", "unknown size suffix");
	policy_refused("low high ask\r\n", "test.policy:1:13:", "byte 0x0d");
	policy_refused("high low ask filter=/bin/true encrypt\n", ":1:1:", "cannot be combined");
}

Test(policy, first_match_wins_default_deny_incomparable_needs_names)
{
	struct clip_policy *p = policy("low high ask\n"
				       "@any @any allow direction=up max-size=1K\n"
				       "left right ask encrypt\n"
				       "s2 s0 ask encrypt\n");
	struct clip_level *s0 = lv("s0"), *s1 = lv("s1"), *s2 = lv("s2"), *l = lv("s1:c0"),
			  *r = lv("s1:c1");
	const struct policy_rule *rule;

	rule = policy_match(p, "low", s0, "high", s2);
	cr_assert(rule && rule->action == POLICY_ASK && rule->line == 1);
	rule = policy_match(p, "low", s0, "mid", s1);
	cr_assert(rule && rule->action == POLICY_ALLOW && rule->max_size == 1024);
	cr_assert_null(policy_match(p, "mid", s1, "low", s0), "down: default deny");
	cr_assert_null(policy_match(p, "right", r, "left", l), "incomparable via @any: deny");
	rule = policy_match(p, "left", l, "right", r);
	cr_assert(rule && rule->line == 3 && rule->encrypt);
	rule = policy_match(p, "high", s2, "low", s0);
	cr_assert(rule && rule->line == 4 && rule->action == POLICY_ASK);
	cr_assert_eq(policy_direction(s0, s2), PROTO_DIRECTION_UP);
	cr_assert_eq(policy_direction(l, r), PROTO_DIRECTION_INCOMPARABLE);
	clip_policy_unref(p);
	clip_level_unref(s0), clip_level_unref(s1), clip_level_unref(s2);
	clip_level_unref(l), clip_level_unref(r);
}

Test(policy, name_rules_are_checked_against_the_cages)
{
	struct clip_policy *p = policy("# names\nhigh low allow\n");
	struct clip_level *levels[] = { lv("s0"), lv("s2") };
	const char *names[] = { "low", "high" };
	struct clip_error *e = NULL;

	assert_errno(policy_check_cages(p, names, (const struct clip_level *const *)levels, 2, &e),
		     -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "test.policy:2:"));
	cr_assert(strstr(clip_error_get_message(e), "cage 'high' sending to cage 'low'"));
	clip_error_free(e);
	clip_policy_unref(p);
	p = policy("low high allow\n");
	cr_assert_eq(
		policy_check_cages(p, names, (const struct clip_level *const *)levels, 2, NULL), 0);
	clip_policy_unref(p);
	clip_level_unref(levels[0]), clip_level_unref(levels[1]);
}

/* --- audit --- */

struct log_fixture {
	char *dir;
	struct clip_ctx *ctx;
	int dfd;
};

static void
log_setup(struct log_fixture *f, unsigned n)
{
	char state[512];
	struct clip_audit *a = NULL;

	f->dir = test_tmpdir("tmpfs");
	snprintf(state, sizeof(state), "%s/state", f->dir);
	f->ctx = test_ctx(state);
	f->dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(clip_audit_open(&a, f->ctx, f->dfd, "t.log", 0, NULL), 0);
	for (unsigned i = 0; i < n; i++) {
		char name[32];
		struct clip_audit_entry e = { .size = sizeof(e),
					      .event = "request",
					      .source = "low",
					      .target = "high",
					      .name = name,
					      .length = i };

		snprintf(name, sizeof(name), "doc %u", i);
		cr_assert_eq(clip_audit_append(a, &e, NULL), 0);
	}
	clip_audit_unref(a);
}

static void
log_teardown(struct log_fixture *f)
{
	close(f->dfd);
	clip_ctx_unref(f->ctx);
	free(f->dir);
}

static char *
slurp(int dfd, const char *name)
{
	char *buf = calloc(1, 1 << 20);
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_geq(read(fd, buf, (1 << 20) - 1), 0);
	close(fd);
	return buf;
}

static void
spit(int dfd, const char *name, const char *text)
{
	int fd = openat(dfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void
verify_fails(struct log_fixture *f, const char *why)
{
	struct clip_error *e = NULL;

	assert_errno(clip_audit_verify(f->ctx, f->dfd, "t.log", NULL, NULL, NULL, &e), -EBADMSG);
	cr_assert(strstr(clip_error_get_message(e), why), "'%s' lacks '%s'",
		  clip_error_get_message(e), why);
	clip_error_free(e);
}

Test(audit, verifies_and_counts)
{
	struct log_fixture f;
	uint64_t n = 0;

	log_setup(&f, 5);
	cr_assert_eq(clip_audit_verify(f.ctx, f.dfd, "t.log", NULL, NULL, &n, NULL), 0);
	cr_assert_eq(n, 5);
	log_teardown(&f);
}

Test(audit, an_edit_is_detected)
{
	struct log_fixture f;
	char *text, *p;

	log_setup(&f, 3);
	text = slurp(f.dfd, "t.log");
	p = strstr(text, "doc%201");
	cr_assert_not_null(p);
	p[4] = '7';
	spit(f.dfd, "t.log", text);
	verify_fails(&f, "record 2 does not verify");
	free(text);
	log_teardown(&f);
}

Test(audit, reordering_deletion_and_truncation_are_detected)
{
	struct log_fixture f;
	char *text, *l2, *l3, *swapped;
	size_t n1, n2, n3;

	log_setup(&f, 3);
	text = slurp(f.dfd, "t.log");
	l2 = strchr(text, '\n') + 1;
	l3 = strchr(l2, '\n') + 1;
	n1 = (size_t)(l2 - text), n2 = (size_t)(l3 - l2), n3 = strlen(l3);
	swapped = calloc(1, strlen(text) + 1);
	/* 1 3 2 */
	memcpy(swapped, text, n1);
	memcpy(swapped + n1, l3, n3);
	memcpy(swapped + n1 + n3, l2, n2);
	spit(f.dfd, "t.log", swapped);
	verify_fails(&f, "record 2 is not the record expected");
	/* 1 3 */
	memcpy(swapped + n1, l3, n3);
	swapped[n1 + n3] = '\0';
	spit(f.dfd, "t.log", swapped);
	verify_fails(&f, "record 2 is not the record expected");
	/* 1 2: a truncated tail, caught by the anchor */
	memcpy(swapped, text, n1 + n2);
	swapped[n1 + n2] = '\0';
	spit(f.dfd, "t.log", swapped);
	verify_fails(&f, "truncated: 2 records, the anchor says 3");
	/* the whole log, anchor deleted */
	spit(f.dfd, "t.log", text);
	cr_assert_eq(clip_audit_verify(f.ctx, f.dfd, "t.log", NULL, NULL, NULL, NULL), 0);
	cr_assert_eq(unlinkat(f.dfd, "t.log.head", 0), 0);
	verify_fails(&f, "anchor t.log.head is missing");
	free(swapped);
	free(text);
	log_teardown(&f);
}

Test(audit, a_deleted_log_is_detected_by_its_anchor)
{
	struct log_fixture f;

	log_setup(&f, 2);
	cr_assert_eq(unlinkat(f.dfd, "t.log", 0), 0);
	verify_fails(&f, "the audit log t.log was deleted: its anchor says 2 records");
	log_teardown(&f);
}

Test(audit, a_torn_tail_is_cut_on_open_and_the_chain_goes_on)
{
	struct log_fixture f;
	struct clip_audit *a = NULL;
	struct clip_audit_entry e = { .size = sizeof(e), .event = "decision" };
	char *text;
	uint64_t n = 0;
	int fd;

	log_setup(&f, 2);
	fd = openat(f.dfd, "t.log", O_WRONLY | O_APPEND | O_CLOEXEC);
	cr_assert_eq(write(fd, "v1 seq=3 time=1 event=req", 25), 25);
	close(fd);
	cr_assert_eq(clip_audit_verify(f.ctx, f.dfd, "t.log", NULL, NULL, &n, NULL), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(clip_audit_open(&a, f.ctx, f.dfd, "t.log", 0, NULL), 0);
	cr_assert_eq(clip_audit_append(a, &e, NULL), 0);
	clip_audit_unref(a);
	cr_assert_eq(clip_audit_verify(f.ctx, f.dfd, "t.log", NULL, NULL, &n, NULL), 0);
	cr_assert_eq(n, 3);
	text = slurp(f.dfd, "t.log");
	cr_assert_null(strstr(text, "event=req "));
	free(text);
	log_teardown(&f);
}

Test(audit, another_key_does_not_verify_and_one_writer_only)
{
	struct log_fixture f;
	struct clip_ctx *other;
	struct clip_audit *a = NULL, *b = NULL;
	char state[512];
	struct clip_error *e = NULL;

	log_setup(&f, 1);
	snprintf(state, sizeof(state), "%s/other", f.dir);
	other = test_ctx(state);
	cr_assert_eq(clip_audit_open(&a, other, f.dfd, "other.log", 0, NULL), 0);
	assert_errno(clip_audit_verify(other, f.dfd, "t.log", NULL, NULL, NULL, &e), -EBADMSG);
	clip_error_free(e);
	assert_errno(clip_audit_open(&b, other, f.dfd, "other.log", 0, NULL), -EBUSY);
	clip_audit_unref(a);
	clip_ctx_unref(other);
	log_teardown(&f);
}

/* --- delivery --- */

Test(deliver, names_are_sanitised)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "report.pdf", "report.pdf" },
		{ "../../etc/passwd", "_._.._etc_passwd" },
		{ ".bashrc", "_bashrc" },
		{ "-rf", "_rf" },
		{ "invoice\xe2\x80\xaexod.exe", "invoice_xod.exe" },
		{ "bad\xff\xfe.txt", "bad__.txt" },
		{ "tab\there", "tab_here" },
		{ "", "document" },
		{ "///", "document" },
		{ "r\xc3\xa9sum\xc3\xa9.odt", "r\xc3\xa9sum\xc3\xa9.odt" },
		{ "trailing. ", "trailing" },
	};
	char out[DELIVER_NAME_MAX + 1], big[10240];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		deliver_sanitize_name(cases[i].in, out);
		cr_expect_str_eq(out, cases[i].out, "case %zu", i);
	}
	memset(big, 0xc3, sizeof(big) - 1);
	for (size_t i = 1; i < sizeof(big) - 1; i += 2)
		big[i] = (char)0xa9;
	big[sizeof(big) - 1] = '\0';
	deliver_sanitize_name(big, out);
	cr_assert_leq(strlen(out), DELIVER_NAME_MAX - 8);
	cr_assert_eq(strlen(out) % 2, 0, "cut on a character boundary");
}

static bool
dir_is_empty(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(fd);
	struct dirent *de;
	bool empty = true;

	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

Test(deliver, only_regular_files_within_the_limit)
{
	char *dir = test_tmpdir("tmpfs");
	int inbox = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), p[2], sv[2], fd;
	struct delivery d;
	struct clip_error *e = NULL;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_errno(deliver_receive(inbox, inbox, 100, NULL, "", &d, &e), -EMEDIUMTYPE);
	cr_assert(strstr(clip_error_get_message(e), "a directory"));
	clip_error_free(e), e = NULL;
	assert_errno(deliver_receive(inbox, p[0], 100, NULL, "", &d, &e), -EMEDIUMTYPE);
	cr_assert(strstr(clip_error_get_message(e), "a pipe"));
	clip_error_free(e), e = NULL;
	assert_errno(deliver_receive(inbox, sv[0], 100, NULL, "", &d, NULL), -EMEDIUMTYPE);
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_errno(deliver_receive(inbox, fd, 100, NULL, "", &d, &e), -EMEDIUMTYPE);
	cr_assert(strstr(clip_error_get_message(e), "a device"));
	clip_error_free(e), e = NULL;
	close(fd);
	fd = test_file(dir,
		       "../"
		       "big",
		       "0123456789");
	assert_errno(deliver_receive(inbox, fd, 9, NULL, "", &d, &e), -EFBIG);
	clip_error_free(e), e = NULL;
	close(fd);
	cr_assert(dir_is_empty(inbox), "nothing is left behind");
	close(p[0]), close(p[1]), close(sv[0]), close(sv[1]);
	close(inbox);
	free(dir);
}

/*
 * One pass, on a file system that takes O_DIRECT (ext4) and on tmpfs: the
 * delivered bytes and the hash are those of the source for sizes around
 * the alignment and the chunk, and the file is left buffered at its end.
 */
Test(deliver, one_pass_copies_and_hashes_exactly)
{
	static const size_t sizes[] = {
		0, 1, 4095, 4096, 4097, 1 << 20, (1 << 20) + 1, (3 << 20) + 4096, (3 << 20) + 123
	};
	const size_t max = (3 << 20) + 4096;
	uint8_t *data = malloc(max), *back = malloc(max), want[32];

	cr_assert(data && back);
	for (size_t i = 0; i < max; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	for (const char *const *fs = (const char *const[]){ "ext4", "tmpfs", NULL }; *fs; fs++) {
		char *dir = test_tmpdir(*fs), path[600];
		int inbox;

		cr_assert(dir, "a %s directory", *fs);
		inbox = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/src", dir);
		for (size_t k = 0; k < ELEMENTSOF(sizes); k++) {
			size_t n = sizes[k];
			int src = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			struct delivery d;
			struct clip_error *e = NULL;
			unsigned wlen = 0;

			cr_assert_geq(src, 0);
			cr_assert_eq(write(src, data, n), (ssize_t)n);
			cr_assert_eq(deliver_receive(inbox, src, n, NULL, "", &d, &e), 0,
				     "%s, %zu bytes: %s", *fs, n, clip_error_get_message(e));
			cr_assert_eq(d.size, n);
			cr_assert(EVP_Digest(data, n, want, &wlen, EVP_sha256(), NULL));
			cr_assert_arr_eq(d.sha256, want, 32, "%s, %zu bytes: the hash", *fs, n);
			cr_assert_eq(pread(d.fd, back, max, 0), (ssize_t)n);
			cr_assert_arr_eq(back, data, n, "%s, %zu bytes: the content", *fs, n);
			cr_assert_eq(lseek(d.fd, 0, SEEK_CUR), (off_t)n);
			cr_assert_eq(fcntl(d.fd, F_GETFL) & O_DIRECT, 0, "left buffered");
			deliver_abort(&d);
			close(src);
		}
		unlink(path);
		cr_assert(dir_is_empty(inbox), "%s: nothing is left behind", *fs);
		close(inbox);
		free(dir);
	}
	free(data);
	free(back);
}

/*
 * A file that holds fewer bytes than its size says (a sysfs attribute: 4096
 * by fstat(), a few when read) is refused as shrinking, and nothing is left.
 */
Test(deliver, a_document_shorter_than_its_size_is_refused)
{
	char *dir = test_tmpdir("tmpfs");
	int inbox = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
	    src = open("/sys/kernel/uevent_seqnum", O_RDONLY | O_CLOEXEC);
	struct delivery d;
	struct clip_error *e = NULL;
	struct stat st;

	if (src < 0)
		cr_skip_test("no /sys/kernel/uevent_seqnum here");
	cr_assert_eq(fstat(src, &st), 0);
	cr_assert_gt(st.st_size, 64, "its size promises more than it holds");
	assert_errno(deliver_receive(inbox, src, 1 << 20, NULL, "", &d, &e), -EBUSY);
	cr_assert(strstr(clip_error_get_message(e), "shrank"), "%s", clip_error_get_message(e));
	clip_error_free(e);
	cr_assert(dir_is_empty(inbox), "nothing is left behind");
	close(src);
	close(inbox);
	free(dir);
}

Test(deliver, envelope_round_trip_and_tamper)
{
	char *dir = test_tmpdir("tmpfs"), state[512], name[DELIVER_NAME_MAX + 1];
	int inbox = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), src, fd;
	uint8_t key[CLIP_KEY_SIZE], buf[256], out[256];
	struct clip_level *level = lv("s0");
	struct clip_ctx *ctx;
	struct delivery d;
	ssize_t n;

	snprintf(state, sizeof(state), "%s-state", dir);
	ctx = test_ctx(state);
	src = test_file("/tmp", "clip-test-envelope-src", "top secret text");
	cr_assert_eq(envelope_key(ctx, "low", key, NULL), 0);
	cr_assert_eq(deliver_receive(inbox, src, 100, key, "low", &d, NULL), 0);
	cr_assert_eq(d.size, 15);
	cr_assert(d.encrypted);
	cr_assert_eq(deliver_commit(ctx, &d, inbox, "secret.txt", level,
				    test_is_root() ? 0 : CLIP_LABEL_ROOTLESS, name, NULL),
		     0);
	cr_assert_str_eq(name, "secret.txt");
	fd = openat(inbox, name, O_RDONLY | O_CLOEXEC);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	cr_assert_eq(n, 8 + 12 + 15 + 16);
	cr_assert_null(memmem(buf, (size_t)n, "secret", 6), "no clear text in the envelope");
	cr_assert_eq(envelope_open(key, "low", buf, (size_t)n, out), 15);
	cr_assert_eq(memcmp(out, "top secret text", 15), 0);
	cr_assert_eq(envelope_open(key, "high", buf, (size_t)n, out), -EBADMSG);
	buf[25] ^= 1;
	cr_assert_eq(envelope_open(key, "low", buf, (size_t)n, out), -EBADMSG);
	/* A second document of the same name gets a suffix. */
	cr_assert_eq(deliver_receive(inbox, src, 100, NULL, "", &d, NULL), 0);
	cr_assert_eq(deliver_commit(ctx, &d, inbox, "secret.txt", level,
				    test_is_root() ? 0 : CLIP_LABEL_ROOTLESS, name, NULL),
		     0);
	cr_assert_str_eq(name, "secret-1.txt");
	unlink("/tmp/clip-test-envelope-src");
	close(src);
	close(inbox);
	clip_level_unref(level);
	clip_ctx_unref(ctx);
	free(dir);
}

/* --- a mediator and its clients in one process --- */

struct world {
	char *dir;
	struct clip_ctx *ctx;
	struct clip_audit *audit;
	struct clip_mediator *m;
	int dfd, inbox[2], agent;
	char sock[2][512];
};

static int
listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", path);
	cr_assert_eq(listen(fd, 64), 0);
	return fd;
}

static void
pump(struct world *w)
{
	while (clip_mediator_dispatch(w->m, NULL) > 0)
		;
}

static void
world_setup_opts(struct world *w, const char *policy_text, struct clip_mediator_opts opts)
{
	static const char *const names[] = { "low", "high" }, *const levels[] = { "s0", "s2" };
	struct clip_policy *p = policy(policy_text);
	char path[600];
	int agent_listen;

	memset(w, 0, sizeof(*w));
	w->dir = test_tmpdir("tmpfs");
	snprintf(path, sizeof(path), "%s/state", w->dir);
	w->ctx = test_ctx(path);
	w->dfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_eq(clip_audit_open(&w->audit, w->ctx, w->dfd, "audit.log", 0, NULL), 0);
	opts.label_flags = test_is_root() ? 0 : CLIP_LABEL_ROOTLESS;
	cr_assert_eq(clip_mediator_new(&w->m, w->ctx, p, w->audit, &opts, NULL), 0);
	clip_policy_unref(p);
	for (int i = 0; i < 2; i++) {
		struct clip_level *l = lv(levels[i]);
		struct clip_mediator_cage c = { .size = sizeof(c), .name = names[i], .level = l };
		struct clip_error *e = NULL;

		snprintf(path, sizeof(path), "%s/%s", w->dir, names[i]);
		cr_assert_eq(mkdir(path, 0755), 0);
		w->inbox[i] = c.inbox_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(w->sock[i], sizeof(w->sock[i]), "%s/%s.sock", w->dir, names[i]);
		c.socket_fd = listen_at(w->sock[i]);
		cr_assert_eq(clip_mediator_add_cage(w->m, &c, &e), 0, "%s",
			     e ? clip_error_get_message(e) : "");
		close(c.socket_fd);
		clip_level_unref(l);
	}
	snprintf(path, sizeof(path), "%s/agent.sock", w->dir);
	agent_listen = listen_at(path);
	cr_assert_eq(clip_mediator_add_agent_socket(w->m, agent_listen, NULL), 0);
	close(agent_listen);
	cr_assert_eq(clip_transfer_connect(&w->agent, path, NULL), 0);
	pump(w);
	{
		struct proto_msg hello;

		cr_assert_eq(proto_recv(w->agent, &hello, NULL), 0, "the agent is greeted");
		cr_assert_eq(hello.type, PROTO_HELLO);
	}
}

static void
world_setup(struct world *w, const char *policy_text, uint32_t timeout_ms)
{
	struct clip_mediator_opts opts = { .size = sizeof(opts), .confirm_timeout_ms = timeout_ms };

	world_setup_opts(w, policy_text, opts);
}

static void
world_teardown(struct world *w)
{
	close(w->agent);
	close(w->inbox[0]), close(w->inbox[1]);
	close(w->dfd);
	clip_mediator_unref(w->m);
	clip_audit_unref(w->audit);
	clip_ctx_unref(w->ctx);
	free(w->dir);
}

/* Send @content from cage @from to @to; the agent answers @answer (-1: never). */
static struct clip_transfer *
run(struct world *w, int from, const char *to, const char *content, int answer)
{
	struct clip_transfer *t = NULL;
	int sock, src;

	cr_assert_eq(clip_transfer_connect(&sock, w->sock[from], NULL), 0);
	src = test_file(w->dir, "source", content);
	cr_assert_eq(clip_transfer_new(&t, sock, src, to, "doc.txt", "a note", NULL), 0);
	close(sock);
	close(src);
	while (clip_transfer_dispatch(t, NULL) == 0) {
		struct proto_msg msg;

		pump(w);
		if (answer >= 0 && proto_recv(w->agent, &msg, NULL) == 0) {
			struct proto_msg a = { .type = PROTO_ANSWER, .fd = -1 };

			cr_assert_eq(msg.type, PROTO_PROMPT);
			cr_assert_str_eq(msg.prompt.name, "doc.txt");
			cr_assert_eq(msg.prompt.size, strlen(content));
			a.answer.id = msg.prompt.id;
			a.answer.allow = (uint8_t)answer;
			cr_assert_eq(proto_send(w->agent, &a, NULL), 0);
		}
		{
			struct pollfd p[3] = {
				{ .fd = clip_mediator_get_fd(w->m), .events = POLLIN },
				{ .fd = clip_transfer_get_fd(t), .events = POLLIN },
				{ .fd = w->agent, .events = POLLIN },
			};

			/* The timer of a question is in the mediator's fd: no sleep needed. */
			cr_assert_geq(poll(p, 3, 5000), 0);
		}
	}
	return t;
}

static int
count_records(const char *record, void *userdata)
{
	(*(int *)userdata)++;
	return 0;
}

Test(mediator, up_ask_yes_delivers_labelled_and_audited)
{
	struct world w;
	struct clip_transfer *t;
	struct clip_level *got = NULL;
	int fd, n = 0;
	char buf[64] = { 0 };

	world_setup(&w, "low high ask\n", 60000);
	t = run(&w, 0, "high", "hello up", 1);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DELIVERED, "%s",
		     clip_transfer_get_message(t));
	cr_assert_str_eq(clip_transfer_get_name(t), "doc.txt");
	fd = openat(w.inbox[1], "doc.txt", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(read(fd, buf, sizeof(buf)), 8);
	cr_assert_str_eq(buf, "hello up");
	cr_assert_eq(
		clip_label_get(w.ctx, fd, test_is_root() ? 0 : CLIP_LABEL_ROOTLESS, &got, NULL), 0);
	cr_assert_eq(clip_level_get_sensitivity(got), 2);
	clip_level_unref(got);
	close(fd);
	clip_transfer_unref(t);
	cr_assert_eq(clip_audit_verify(w.ctx, w.dfd, "audit.log", count_records, &n, NULL, NULL),
		     0);
	cr_assert_eq(n, 2, "a request and a decision");
	world_teardown(&w);
}

Test(mediator, ask_no_timeout_and_default_deny)
{
	struct world w;
	struct clip_transfer *t;

	world_setup(&w, "low high ask\n", 200);
	t = run(&w, 0, "high", "no", 0);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DENIED_USER);
	cr_assert_str_eq(clip_transfer_get_message(t), "refused by the user");
	clip_transfer_unref(t);
	t = run(&w, 0, "high", "silence", -1);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DENIED_USER);
	cr_assert(strstr(clip_transfer_get_message(t), "no answer within 200 ms"));
	clip_transfer_unref(t);
	t = run(&w, 1, "low", "down", -1);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DENIED_POLICY);
	clip_transfer_unref(t);
	cr_assert(dir_is_empty(w.inbox[0]) && dir_is_empty(w.inbox[1]));
	world_teardown(&w);
}

Test(mediator, allow_rule_downgrade_is_refused_at_load)
{
	struct world w;
	struct clip_mediator *m = NULL;
	struct clip_policy *p = policy("high low allow\n");
	struct clip_level *l = lv("s5");
	struct clip_mediator_cage c = { .size = sizeof(c), .name = "high", .level = l };
	struct clip_error *e = NULL;
	char path[600];

	world_setup(&w, "", 1000);
	cr_assert_eq(clip_mediator_new(&m, w.ctx, p, w.audit, NULL, NULL), 0);
	c.inbox_fd = w.inbox[1];
	snprintf(path, sizeof(path), "%s/x.sock", w.dir);
	c.socket_fd = listen_at(path);
	cr_assert_eq(clip_mediator_add_cage(m, &c, NULL), 0);
	c.name = "low";
	l = clip_level_unref(l);
	c.level = l = lv("s0");
	assert_errno(clip_mediator_add_cage(m, &c, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "test.policy:1:"));
	clip_error_free(e);
	close(c.socket_fd);
	clip_level_unref(l);
	clip_mediator_unref(m);
	clip_policy_unref(p);
	world_teardown(&w);
}

/* --- deliveries off the loop, and the rate of requests --- */

#define BIG_SIZE (256u << 20)

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A document of BIG_SIZE bytes, not all alike (no shortcut for zeros). */
static int
big_file(struct world *w)
{
	char path[600];
	uint8_t *buf = malloc(1 << 20);
	int fd;

	cr_assert(buf);
	snprintf(path, sizeof(path), "%s/big", w->dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	for (unsigned i = 0; i < BIG_SIZE >> 20; i++) {
		memset(buf, (int)i, 1 << 20);
		cr_assert_eq(write(fd, buf, 1 << 20), 1 << 20);
	}
	free(buf);
	return fd;
}

/* Send @fd from cage @from to @to without waiting. */
static struct clip_transfer *
start(struct world *w, int from, const char *to, int fd, const char *name)
{
	struct clip_transfer *t = NULL;
	int sock;

	cr_assert_eq(clip_transfer_connect(&sock, w->sock[from], NULL), 0);
	cr_assert_eq(clip_transfer_new(&t, sock, fd, to, name, "", NULL), 0);
	close(sock);
	return t;
}

/* Run the mediator until @t is answered. */
static void
wait_for(struct world *w, struct clip_transfer *t)
{
	while (clip_transfer_dispatch(t, NULL) == 0) {
		struct pollfd p[2] = {
			{ .fd = clip_mediator_get_fd(w->m), .events = POLLIN },
			{ .fd = clip_transfer_get_fd(t), .events = POLLIN },
		};

		pump(w);
		cr_assert_geq(poll(p, 2, 120000), 1, "the mediator does not answer");
	}
}

static unsigned
count_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	unsigned n = 0;

	cr_assert(d, "%s", path);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

Test(mediator, a_big_delivery_does_not_hold_another_cages_request, .timeout = 600)
{
	struct world w;
	struct clip_transfer *big, *small;
	uint64_t t0, t_small = 0, t_big = 0, size = 0;
	int src, small_src, order = 0, small_rank = 0, big_rank = 0;

	world_setup(&w, "low high allow\nhigh high allow\n", 60000);
	src = big_file(&w);
	small_src = test_file(w.dir, "small", "small document");
	t0 = now_us();
	big = start(&w, 0, "high", src, "big");
	/* The mediator takes the big request and returns while the copy goes on. */
	pump(&w);
	cr_assert_eq(clip_transfer_dispatch(big, NULL), 0, "the big one is not answered yet");
	small = start(&w, 1, "high", small_src, "small");
	while (!big_rank || !small_rank) {
		struct pollfd p[3] = {
			{ .fd = clip_mediator_get_fd(w.m), .events = POLLIN },
			{ .fd = clip_transfer_get_fd(big), .events = POLLIN },
			{ .fd = clip_transfer_get_fd(small), .events = POLLIN },
		};

		cr_assert_geq(poll(p, 3, 120000), 1, "no answer within 120 s");
		pump(&w);
		/* The big one first: when both are there, it counts as the first. */
		if (!big_rank && clip_transfer_dispatch(big, NULL) == 1) {
			big_rank = ++order;
			t_big = now_us() - t0;
		}
		if (!small_rank && clip_transfer_dispatch(small, NULL) == 1) {
			small_rank = ++order;
			t_small = now_us() - t0;
		}
	}
	cr_assert_eq(clip_transfer_get_status(small), CLIP_TRANSFER_DELIVERED, "%s",
		     clip_transfer_get_message(small));
	cr_assert_eq(clip_transfer_get_status(big), CLIP_TRANSFER_DELIVERED, "%s",
		     clip_transfer_get_message(big));
	cr_assert_eq(small_rank, 1,
		     "the small transfer is answered first (%.1f ms, the big one %.1f ms)",
		     t_small / 1e3, t_big / 1e3);
	cr_assert_eq(clip_transfer_get_digest(big, &size, NULL, NULL), 0);
	cr_assert_eq(size, BIG_SIZE);
	cr_log_info("a small transfer answered in %.1f ms while a %u MiB one took %.1f ms",
		    t_small / 1e3, BIG_SIZE >> 20, t_big / 1e3);
	clip_transfer_unref(small);
	clip_transfer_unref(big);
	close(src), close(small_src);
	world_teardown(&w);
}

static unsigned
count_fds(void)
{
	return count_entries("/proc/self/fd");
}

Test(mediator, unref_cancels_a_delivery_in_flight_and_leaves_nothing, .timeout = 600)
{
	struct world w;
	struct clip_transfer *t;
	char inbox[600];
	uint64_t t0, full, cancel;
	unsigned fds, threads;
	int src, n = 0;

	fds = count_fds();
	threads = count_entries("/proc/self/task");
	world_setup(&w, "low high allow\n", 60000);
	snprintf(inbox, sizeof(inbox), "%s/high", w.dir);
	src = big_file(&w);
	/* How long a whole delivery takes here. */
	t0 = now_us();
	t = start(&w, 0, "high", src, "big");
	wait_for(&w, t);
	full = now_us() - t0;
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DELIVERED);
	clip_transfer_unref(t);
	cr_assert_eq(unlinkat(w.inbox[1], "big", 0), 0);

	t = start(&w, 0, "high", src, "big");
	pump(&w);
	cr_assert_gt(count_entries("/proc/self/task"), threads, "a worker reads the document");
	t0 = now_us();
	w.m = clip_mediator_unref(w.m);
	cancel = now_us() - t0;
	cr_log_info("a whole delivery: %.1f ms; unref in the middle of one: %.1f ms", full / 1e3,
		    cancel / 1e3);
	cr_assert_lt(cancel, full / 2, "the copy is cancelled, not waited for (%.1f ms vs %.1f ms)",
		     cancel / 1e3, full / 1e3);
	cr_assert_eq(count_entries(inbox), 0, "nothing is left in the inbox");
	cr_assert_eq(count_entries("/proc/self/task"), threads, "no thread is left");
	/* The requester is told the mediator went away. */
	assert_errno(clip_transfer_wait(t, 5000, NULL), -ECONNRESET);
	clip_transfer_unref(t);
	/* Two requests and one decision: the cancelled one has none. */
	cr_assert_eq(clip_audit_verify(w.ctx, w.dfd, "audit.log", count_records, &n, NULL, NULL),
		     0);
	cr_assert_eq(n, 3);
	close(src);
	world_teardown(&w);
	cr_assert_eq(count_fds(), fds, "no fd is left");
}

Test(mediator, a_requester_leaving_mid_delivery_is_survived, .timeout = 600)
{
	struct world w;
	struct clip_transfer *t;
	unsigned threads = count_entries("/proc/self/task");
	int src, n = 0;

	world_setup(&w, "low high allow\n", 60000);
	src = big_file(&w);
	t = start(&w, 0, "high", src, "big");
	pump(&w);
	/* Gone while its document is read: the sole fd of its connection closes. */
	clip_transfer_unref(t);
	close(src);
	t = run(&w, 0, "high", "after", -1);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DELIVERED, "%s",
		     clip_transfer_get_message(t));
	clip_transfer_unref(t);
	/* The big one is finished and audited, answered to no one. */
	while (count_entries("/proc/self/task") > threads) {
		struct pollfd p = { .fd = clip_mediator_get_fd(w.m), .events = POLLIN };

		cr_assert_eq(poll(&p, 1, 120000), 1, "the delivery never ends");
		pump(&w);
	}
	cr_assert_eq(clip_audit_verify(w.ctx, w.dfd, "audit.log", count_records, &n, NULL, NULL),
		     0);
	cr_assert_eq(n, 4, "two requests, two decisions");
	world_teardown(&w);
}

struct limited_count {
	int records, limited;
	char summary[256];
};

static int
count_limited(const char *record, void *userdata)
{
	struct limited_count *c = userdata;
	const char *s = strstr(record, "reason=");

	c->records++;
	if (strstr(record, "event=limited")) {
		c->limited++;
		if (s)
			snprintf(c->summary, sizeof(c->summary), "%s", s);
	}
	return 0;
}

Test(mediator, a_flood_is_refused_over_the_rate_and_audited_boundedly)
{
	struct clip_mediator_opts opts = {
		.size = sizeof(opts), .confirm_timeout_ms = 60000, .rate_per_s = 4, .rate_burst = 5
	};
	struct limited_count c = { 0 };
	struct world w;
	struct clip_transfer *t;
	unsigned passed = 0, refused = 0;
	uint64_t t0, elapsed;
	char want[64];

	world_setup_opts(&w, "low high allow\nhigh high allow\n", opts);
	t0 = now_us();
	for (int i = 0; i < 40; i++) {
		t = run(&w, 0, "high", "flood", -1);
		if (clip_transfer_get_status(t) == CLIP_TRANSFER_DELIVERED)
			passed++;
		else {
			refused++;
			cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_FAILED);
			assert_errno(clip_transfer_get_error(t), -EAGAIN);
			cr_assert(strstr(clip_transfer_get_message(t),
					 "over the rate limit of cage 'low' (4 requests per "
					 "second, 5 at once): try again in "),
				  "%s", clip_transfer_get_message(t));
		}
		clip_transfer_unref(t);
	}
	elapsed = now_us() - t0;
	/* The burst, then what the rate refilled while the flood went on. */
	cr_assert_geq(passed, 5);
	cr_assert_leq(passed, 5 + 4 * elapsed / 1000000 + 1, "%u passed in %.0f ms", passed,
		      elapsed / 1e3);
	cr_assert_geq(refused, 20, "%u refused in %.0f ms", refused, elapsed / 1e3);
	/* Another cage has its own bucket. */
	t = run(&w, 1, "high", "other", -1);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DELIVERED, "%s",
		     clip_transfer_get_message(t));
	clip_transfer_unref(t);
	/* Once a token is back (1/4 s), the cage is served again. */
	usleep(300000);
	t = run(&w, 0, "high", "later", -1);
	cr_assert_eq(clip_transfer_get_status(t), CLIP_TRANSFER_DELIVERED, "%s",
		     clip_transfer_get_message(t));
	clip_transfer_unref(t);
	/* One record for the first refusal; the rest are counted, not written. */
	cr_assert_eq(clip_audit_verify(w.ctx, w.dfd, "audit.log", count_limited, &c, NULL, NULL),
		     0);
	cr_assert_eq(c.limited, 1);
	cr_assert_eq(c.records, 2 * ((int)passed + 2) + 1);
	/* The count is recorded when the mediator goes (or after the window). */
	w.m = clip_mediator_unref(w.m);
	memset(&c, 0, sizeof(c));
	cr_assert_eq(clip_audit_verify(w.ctx, w.dfd, "audit.log", count_limited, &c, NULL, NULL),
		     0);
	cr_assert_eq(c.limited, 2);
	snprintf(want, sizeof(want), "reason=%u%%20more%%20requests%%20refused", refused - 1);
	cr_assert(strstr(c.summary, want), "'%s' lacks '%s'", c.summary, want);
	world_teardown(&w);
}
