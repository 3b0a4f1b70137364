/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The audit chain against each kind of tampering, and one writer at a time. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <clip/clip.h>

#include "base/util.h"
#include "helpers.h"
#include "sync-fault.h"
#include "transfer/transfer-internal.h"

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

/* A line longer than any record is refused whole, not read as several. */
Test(audit, a_line_over_the_record_size_is_refused)
{
	struct log_fixture f;
	size_t n = 70000;
	char *junk = malloc(n + 1);
	int fd;

	log_setup(&f, 2);
	memset(junk, 'x', n);
	junk[n] = '\n';
	fd = openat(f.dfd, "t.log", O_WRONLY | O_APPEND | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, junk, n + 1), (ssize_t)n + 1);
	close(fd);
	verify_fails(&f, "record 3 is over 65536 bytes");
	free(junk);
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

/* What leaves a log valid but proves less is returned, not only logged. */
Test(audit, check_returns_a_stale_anchor_and_a_torn_tail)
{
	struct log_fixture f;
	struct clip_audit *a = NULL;
	struct clip_audit_entry e = { .size = sizeof(e), .event = "decision" };
	char *head;
	unsigned warnings = ~0u;
	uint64_t n = 0;
	int fd;

	log_setup(&f, 2);
	cr_assert_eq(clip_audit_check(f.ctx, f.dfd, "t.log", NULL, NULL, &n, &warnings, NULL), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(warnings, 0);
	/* A stale anchor put back under a newer record. */
	head = slurp(f.dfd, "t.log.head");
	cr_assert_eq(clip_audit_open(&a, f.ctx, f.dfd, "t.log", 0, NULL), 0);
	cr_assert_eq(clip_audit_append(a, &e, NULL), 0);
	clip_audit_unref(a);
	cr_assert_eq(write_file_atomic(f.dfd, "t.log.head", head, strlen(head), 0600, true), 0);
	cr_assert_eq(clip_audit_check(f.ctx, f.dfd, "t.log", NULL, NULL, &n, &warnings, NULL), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(warnings, CLIP_AUDIT_WARN_UNANCHORED);
	/* And a torn tail. */
	fd = openat(f.dfd, "t.log", O_WRONLY | O_APPEND | O_CLOEXEC);
	cr_assert_eq(write(fd, "v1 seq=4 time=1", 15), 15);
	close(fd);
	cr_assert_eq(clip_audit_check(f.ctx, f.dfd, "t.log", NULL, NULL, &n, &warnings, NULL), 0);
	cr_assert_eq(warnings, CLIP_AUDIT_WARN_UNANCHORED | CLIP_AUDIT_WARN_TORN);
	/* The file key provider: no TPM counter to compare, none expected. */
	cr_assert_eq(warnings & CLIP_AUDIT_WARN_NOT_COUNTED, 0);
	assert_errno(clip_audit_check(f.ctx, f.dfd, "t.log", NULL, NULL, &n, NULL, NULL), -EINVAL);
	free(head);
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

/* What a newer header would pass: ours, then one more field. */
struct newer_entry {
	struct clip_audit_entry e;
	const char *more;
};

Test(audit, a_newer_entry_whose_new_field_is_zero_is_recorded)
{
	struct log_fixture f;
	struct clip_audit *a = NULL;
	struct newer_entry n;
	uint64_t count = 0;

	log_setup(&f, 1);
	cr_assert_eq(clip_audit_open(&a, f.ctx, f.dfd, "t.log", 0, NULL), 0);
	memset(&n, 0, sizeof(n));
	n.e.size = sizeof(n);
	n.e.event = "request";
	assert_errno(clip_audit_append(a, &n.e, NULL), 0);
	clip_audit_unref(a);
	cr_assert_eq(clip_audit_verify(f.ctx, f.dfd, "t.log", NULL, NULL, &count, NULL), 0);
	cr_assert_eq(count, 2);
	log_teardown(&f);
}

Test(audit, a_newer_entry_whose_new_field_is_set_is_refused_and_not_recorded)
{
	struct log_fixture f;
	struct clip_audit *a = NULL;
	struct clip_error *e = NULL;
	struct newer_entry n;
	uint64_t count = 0;

	log_setup(&f, 1);
	cr_assert_eq(clip_audit_open(&a, f.ctx, f.dfd, "t.log", 0, NULL), 0);
	memset(&n, 0, sizeof(n));
	n.e.size = sizeof(n);
	n.e.event = "request";
	((uint8_t *)&n)[sizeof(n) - 1] = 1;
	assert_errno(clip_audit_append(a, &n.e, &e), -E2BIG);
	cr_assert(strstr(clip_error_get_message(e), "struct clip_audit_entry"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	clip_audit_unref(a);
	cr_assert_eq(clip_audit_verify(f.ctx, f.dfd, "t.log", NULL, NULL, &count, NULL), 0);
	cr_assert_eq(count, 1, "nothing is recorded");
	log_teardown(&f);
}

/* Today's entry is the first version: a smaller one is no version at all. */
Test(audit, an_entry_smaller_than_the_first_version_is_refused)
{
	struct log_fixture f;
	struct clip_audit *a = NULL;
	struct clip_audit_entry e = { .size = offsetof(struct clip_audit_entry, reason),
				      .event = "request" };
	uint64_t count = 0;

	log_setup(&f, 1);
	cr_assert_eq(clip_audit_open(&a, f.ctx, f.dfd, "t.log", 0, NULL), 0);
	assert_errno(clip_audit_append(a, &e, NULL), -EINVAL);
	clip_audit_unref(a);
	cr_assert_eq(clip_audit_verify(f.ctx, f.dfd, "t.log", NULL, NULL, &count, NULL), 0);
	cr_assert_eq(count, 1, "nothing is recorded");
	log_teardown(&f);
}

/* The stream of @f's log (clip_audit_export()) in a memfd, at its start. */
static int
exported(struct log_fixture *f)
{
	struct clip_audit *a = NULL;
	int fd = memfd_create("trail", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(clip_audit_open(&a, f->ctx, f->dfd, "t.log", 0, NULL), 0);
	cr_assert_eq(clip_audit_export(a, fd, NULL), 0);
	clip_audit_unref(a);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static int
count_record(const char *record, void *userdata)
{
	cr_assert_eq(strncmp(record, "v1 seq=", 7), 0, "%s", record);
	(*(unsigned *)userdata)++;
	return 0;
}

Test(audit, the_exported_stream_verifies_with_the_public_key_alone)
{
	struct log_fixture f;
	struct clip_error *e = NULL;
	char *pem = NULL;
	uint64_t n = 0;
	unsigned seen = 0;
	int fd;

	log_setup(&f, 3);
	cr_assert_eq(clip_audit_get_public_key(f.ctx, &pem, NULL), 0);
	cr_assert_eq(strncmp(pem, "-----BEGIN PUBLIC KEY-----\n", 27), 0, "%s", pem);
	fd = exported(&f);
	cr_assert_eq(clip_audit_verify_public(fd, pem, count_record, &seen, &n, NULL), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(seen, 3);
	close(fd);
	/* Not a key: refused before the stream is read. */
	fd = exported(&f);
	assert_errno(clip_audit_verify_public(fd, "-----BEGIN PUBLIC KEY-----\nAAAA\n", NULL, NULL,
					      NULL, &e),
		     -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "not an Ed25519 key"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	assert_errno(clip_audit_verify_public(-1, pem, NULL, NULL, NULL, NULL), -EINVAL);
	assert_errno(clip_audit_verify_public(fd, NULL, NULL, NULL, NULL, NULL), -EINVAL);
	close(fd);
	free(pem);
	log_teardown(&f);
}

/*
 * The signature an export ends with is the one verified when the log was
 * opened: an anchor put in its place afterwards (another log's, signed by
 * another key) is not read again.
 */
Test(audit, an_anchor_swapped_after_the_open_is_not_exported)
{
	struct log_fixture f;
	struct clip_audit *a = NULL, *o = NULL;
	struct clip_ctx *other;
	char state[512], *pem = NULL, *foreign;
	uint64_t n = 0;
	int fd = memfd_create("trail", MFD_CLOEXEC);

	log_setup(&f, 2);
	snprintf(state, sizeof(state), "%s/other", f.dir);
	other = test_ctx(state);
	cr_assert_eq(clip_audit_open(&o, other, f.dfd, "o.log", 0, NULL), 0);
	clip_audit_unref(o);
	foreign = slurp(f.dfd, "o.log.head");
	cr_assert_eq(clip_audit_open(&a, f.ctx, f.dfd, "t.log", 0, NULL), 0);
	cr_assert_eq(write_file_atomic(f.dfd, "t.log.head", foreign, strlen(foreign), 0600, true),
		     0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(clip_audit_export(a, fd, NULL), 0);
	clip_audit_unref(a);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	cr_assert_eq(clip_audit_get_public_key(f.ctx, &pem, NULL), 0);
	cr_assert_eq(clip_audit_verify_public(fd, pem, NULL, NULL, &n, NULL), 0,
		     "the export carries the anchor swapped in after the open");
	cr_assert_eq(n, 2);
	close(fd);
	free(pem);
	free(foreign);
	clip_ctx_unref(other);
	log_teardown(&f);
}

Test(audit, a_stream_of_another_machine_does_not_verify)
{
	struct log_fixture f, g;
	struct clip_error *e = NULL;
	char *pem = NULL;
	int fd;

	log_setup(&f, 2);
	log_setup(&g, 2);
	cr_assert_eq(clip_audit_get_public_key(g.ctx, &pem, NULL), 0);
	fd = exported(&f);
	assert_errno(clip_audit_verify_public(fd, pem, NULL, NULL, NULL, &e), -EBADMSG);
	cr_assert(strstr(clip_error_get_message(e), "not by the key given"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	close(fd);
	free(pem);
	log_teardown(&f);
	log_teardown(&g);
}

/*
 * What the log sends to syslog, seen from inside: syslog(3) (and its
 * fortified twin, which the library calls) are this file's while @on.
 */
static struct {
	bool on;
	char sent[1 << 16];
	size_t n;
} sys;

static void
sent_add(const char *fmt, va_list ap)
{
	int k;

	if (!sys.on)
		return;
	k = vsnprintf(sys.sent + sys.n, sizeof(sys.sent) - sys.n, fmt, ap);
	if (k > 0 && sys.n + (size_t)k + 1 < sizeof(sys.sent)) {
		sys.n += (size_t)k;
		sys.sent[sys.n++] = '\n';
		sys.sent[sys.n] = '\0';
	}
}

void
syslog(int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sent_add(fmt, ap);
	va_end(ap);
	(void)priority;
}

void
__syslog_chk(int priority, int flag, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sent_add(fmt, ap);
	va_end(ap);
	(void)priority;
	(void)flag;
}

static unsigned
count_in(const char *text, const char *what)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/*
 * A record whose sync failed is cut from the log, and the next one takes
 * its number: a collector that had received it would hold two records of
 * that number, and refuse the whole stream. Records go to syslog once on
 * disk, then the signature that covers them.
 */
Test(audit, a_record_cut_by_a_failed_sync_never_reaches_syslog)
{
	struct log_fixture f = { 0 };
	struct clip_audit *a = NULL;
	const char *names[] = { "docA", "docB", "docC" };

	log_setup(&f, 0);
	cr_assert_eq(clip_audit_open(&a, f.ctx, f.dfd, "s.log", CLIP_AUDIT_SYSLOG, NULL), 0);
	sys = (__typeof__(sys)){ .on = true };
	for (int i = 0; i < 3; i++) {
		struct clip_audit_entry e = { .size = sizeof(e),
					      .event = "request",
					      .source = "low",
					      .target = "high",
					      .name = names[i] };

		test_sync_fault.fail = i == 1;
		assert_errno(clip_audit_append(a, &e, NULL), i == 1 ? -EIO : 0);
	}
	sys.on = false;
	cr_assert_eq(count_in(sys.sent, "name=docA "), 1, "sent:\n%s", sys.sent);
	cr_assert_eq(count_in(sys.sent, "name=docB "), 0, "the cut record was sent:\n%s", sys.sent);
	cr_assert_eq(count_in(sys.sent, "name=docC "), 1, "sent:\n%s", sys.sent);
	cr_assert_eq(count_in(sys.sent, " seq=2 "), 1, "two records numbered 2 were sent:\n%s",
		     sys.sent);
	/* Each record, then the signature that covers it: two commits, two signatures. */
	cr_assert_eq(count_in(sys.sent, "clip-audit: s1 count="), 2, "sent:\n%s", sys.sent);
	cr_assert_not_null(strstr(sys.sent, "s1 count=2 "));
	cr_assert_lt(strstr(sys.sent, "name=docC "), strstr(sys.sent, "s1 count=2 "), "sent:\n%s",
		     sys.sent);
	clip_audit_unref(a);
	log_teardown(&f);
}

/*
 * A batch written and not synced yet (as the mediator's group commit
 * leaves it between two flushes): the export syncs and signs it first, so
 * that the signature it ships covers every record it ships.
 */
Test(audit, the_export_covers_the_records_not_synced_yet)
{
	struct clip_audit_entry e = { .size = sizeof(e),
				      .event = "request",
				      .source = "low",
				      .target = "high",
				      .name = "deferred" };
	struct log_fixture f;
	struct clip_audit *a = NULL;
	struct clip_error *err = NULL;
	char *pem = NULL;
	uint64_t n = 0;
	unsigned seen = 0;
	int fd = memfd_create("trail", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	log_setup(&f, 2);
	cr_assert_eq(clip_audit_get_public_key(f.ctx, &pem, NULL), 0);
	cr_assert_eq(clip_audit_open(&a, f.ctx, f.dfd, "t.log", 0, NULL), 0);
	cr_assert_eq(audit_append_deferred(a, &e, NULL), 0);
	cr_assert_eq(clip_audit_export(a, fd, NULL), 0);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	cr_assert_eq(clip_audit_verify_public(fd, pem, count_record, &seen, &n, &err), 0, "%s",
		     err ? clip_error_get_message(err) : "");
	cr_assert_eq(n, 3, "the signed records: %" PRIu64, n);
	cr_assert_eq(seen, 3);
	clip_audit_unref(a);
	close(fd);
	free(pem);
	log_teardown(&f);
}
