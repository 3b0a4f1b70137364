/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Delivery into an inbox: what it refuses, the names it makes, the one
 * pass that copies and hashes, and the envelope of an encrypted transfer.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clip/clip.h>
#include <openssl/evp.h>

#include "helpers.h"
#include "transfer/transfer-internal.h"

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
		/* What the mediator refuses, mended here as well (doc/transfer.md). */
		{ "a\xe2\x80\x8d"
		  "b",
		  "a_b" },
		{ "x\xef\xbc\x8fy", "x_y" },
		{ "x\xe2\x80\xa4pdf", "x_pdf" },
		{ "\xf3\xa0\x81\x81tag", "_tag" },
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

Test(deliver, only_regular_files_within_the_limit)
{
	char *dir = test_tmpdir("tmpfs"), path[600];
	int inbox, p[2], sv[2], fd;
	struct delivery d;
	struct clip_error *e = NULL;

	/* The inbox in a directory of its own, so that the test's files are beside it. */
	snprintf(path, sizeof(path), "%s/inbox", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	inbox = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
	fd = test_file(dir, "big", "0123456789");
	assert_errno(deliver_receive(inbox, fd, 9, NULL, "", &d, &e), -EFBIG);
	clip_error_free(e), e = NULL;
	close(fd);
	cr_assert(test_dir_is_empty(inbox), "nothing is left behind");
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
		cr_assert(test_dir_is_empty(inbox), "%s: nothing is left behind", *fs);
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
	cr_assert(test_dir_is_empty(inbox), "nothing is left behind");
	close(src);
	close(inbox);
	free(dir);
}

Test(deliver, envelope_round_trip_and_tamper)
{
	char *dir = test_tmpdir("tmpfs"), path[512], name[DELIVER_NAME_MAX + 1];
	int inbox, src, fd;
	uint8_t key[CLIP_KEY_SIZE], buf[256], out[256];
	struct clip_level *level = test_level("s0");
	struct clip_ctx *ctx;
	struct delivery d;
	ssize_t n;

	/* State, inbox and source side by side in the test's directory. */
	snprintf(path, sizeof(path), "%s/state", dir);
	ctx = test_ctx(path);
	snprintf(path, sizeof(path), "%s/inbox", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	inbox = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	src = test_file(dir, "source", "top secret text");
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
	close(src);
	close(inbox);
	clip_level_unref(level);
	clip_ctx_unref(ctx);
	free(dir);
}
