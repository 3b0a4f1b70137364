/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Delivery into an inbox: what it refuses, the names it makes, the one
 * pass that copies and hashes, and the envelope of an encrypted transfer.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
	assert_errno(deliver_receive(inbox, sv[0], 100, NULL, "", &d, &e), -EMEDIUMTYPE);
	cr_assert(strstr(clip_error_get_message(e), "is a UNIX socket:"));
	clip_error_free(e), e = NULL;
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_errno(deliver_receive(inbox, fd, 100, NULL, "", &d, &e), -EMEDIUMTYPE);
	cr_assert(strstr(clip_error_get_message(e), "is a character device:"));
	clip_error_free(e), e = NULL;
	close(fd);
	/* Issue 14, finding 12: an epoll fd is named as such, not "a socket". */
	fd = epoll_create1(EPOLL_CLOEXEC);
	assert_errno(deliver_receive(inbox, fd, 100, NULL, "", &d, &e), -EMEDIUMTYPE);
	cr_assert(strstr(clip_error_get_message(e), "is an epoll instance:"), "%s",
		  clip_error_get_message(e));
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

/*
 * A sparse document (16 MiB and a bit, a few bytes at its start, in its
 * middle at an odd offset, and at its end) keeps its holes in the inbox, on
 * ext4 and on tmpfs: a few blocks, not 16 MiB of them; the hash is that of
 * the whole logical content, and the sender's file offset is left as it was.
 */
Test(deliver, a_sparse_document_keeps_its_holes, .timeout = 120)
{
	const uint64_t size = (UINT64_C(16) << 20) + 123;
	static const struct {
		uint64_t at;
		const char *bytes;
	} marks[] = { { 0, "head" },
		      { (UINT64_C(8) << 20) + 1, "middle" },
		      { (UINT64_C(16) << 20) + 119, "tail" } };

	for (const char *const *fs = (const char *const[]){ "ext4", "tmpfs", NULL }; *fs; fs++) {
		char *dir = test_tmpdir(*fs), path[600];
		uint8_t want[32], buf[16];
		unsigned wlen = 0;
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		int inbox, src;
		struct delivery d;
		struct clip_error *e = NULL;
		struct stat st;
		uint64_t off = 0;

		cr_assert(dir && md);
		inbox = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/sparse", dir);
		src = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		cr_assert_geq(src, 0);
		cr_assert_eq(ftruncate(src, (off_t)size), 0);
		for (size_t i = 0; i < ELEMENTSOF(marks); i++)
			cr_assert_eq(pwrite(src, marks[i].bytes, strlen(marks[i].bytes),
					    (off_t)marks[i].at),
				     (ssize_t)strlen(marks[i].bytes));
		/* The expected hash, by reading every byte. */
		cr_assert(EVP_DigestInit_ex(md, EVP_sha256(), NULL));
		while (off < size) {
			static uint8_t chunk[1 << 20];
			ssize_t n = pread(src, chunk, sizeof(chunk), (off_t)off);

			cr_assert_gt(n, 0);
			cr_assert(EVP_DigestUpdate(md, chunk, (size_t)n));
			off += (uint64_t)n;
		}
		cr_assert(EVP_DigestFinal_ex(md, want, &wlen));
		EVP_MD_CTX_free(md);
		cr_assert_eq(lseek(src, 5, SEEK_SET), 5);
		cr_assert_eq(deliver_receive(inbox, src, size, NULL, "", &d, &e), 0, "%s: %s", *fs,
			     clip_error_get_message(e));
		cr_assert_eq(lseek(src, 0, SEEK_CUR), 5, "%s: the sender's offset is left alone",
			     *fs);
		cr_assert_eq(d.size, size);
		cr_assert_arr_eq(d.sha256, want, 32, "%s: the hash of the logical content", *fs);
		cr_assert_eq(fstat(d.fd, &st), 0);
		cr_assert_eq((uint64_t)st.st_size, size);
		cr_assert_leq((uint64_t)st.st_blocks * 512, UINT64_C(1) << 20,
			      "%s: %llu bytes of blocks for a document of 3 marks", *fs,
			      (unsigned long long)st.st_blocks * 512);
		for (size_t i = 0; i < ELEMENTSOF(marks); i++) {
			size_t n = strlen(marks[i].bytes);

			cr_assert_eq(pread(d.fd, buf, n, (off_t)marks[i].at), (ssize_t)n);
			cr_assert_arr_eq(buf, marks[i].bytes, n, "%s: mark %zu", *fs, i);
		}
		cr_assert_eq(lseek(d.fd, 0, SEEK_CUR), (off_t)size);
		close(src);
		unlink(path);
		deliver_abort(&d);
		cr_assert(test_dir_is_empty(inbox), "%s: the unnamed file is gone", *fs);
		close(inbox);
		free(dir);
	}
}

/*
 * The attack of issue 14 (finding 12): a process rewrites both ends of the
 * document while it is read, and sets its mtime back after each write, so
 * that size and mtime never change. The delivery is refused, never made
 * of the old head and a new tail.
 */
Test(deliver, a_document_rewritten_with_its_mtime_set_back_is_refused, .timeout = 120)
{
	const size_t size = 32 << 20;
	char *dir = test_tmpdir("tmpfs"), path[600];
	int inbox = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), src, refused = 0;
	uint8_t *data = malloc(size);
	struct stat st;
	pid_t pid;

	cr_assert(data);
	memset(data, 'a', size);
	snprintf(path, sizeof(path), "%s/moving", dir);
	src = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_eq(write(src, data, size), (ssize_t)size);
	cr_assert_eq(fstat(src, &st), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		const struct timespec times[2] = { st.st_atim, st.st_mtim };

		for (uint8_t k = 0;; k++) {
			memset(data, k, 4096);
			if (pwrite(src, data, 4096, 0) != 4096 ||
			    pwrite(src, data, 4096, (off_t)(size - 4096)) != 4096 ||
			    futimens(src, times) < 0)
				_exit(1);
			usleep(200);
		}
	}
	/* A few tries: each must be refused. */
	for (int i = 0; i < 3; i++) {
		struct delivery d;
		struct clip_error *e = NULL;
		int r = deliver_receive(inbox, src, size, NULL, "", &d, &e);

		if (r == 0)
			deliver_abort(&d);
		cr_expect_eq(r, -EBUSY, "try %d: %d (%s)", i, r,
			     e ? clip_error_get_message(e) : "");
		refused += r == -EBUSY;
		clip_error_free(e);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert_eq(refused, 3, "refused every time");
	close(src);
	unlink(path);
	cr_assert(test_dir_is_empty(inbox), "nothing is left behind");
	close(inbox);
	free(data);
	free(dir);
}
