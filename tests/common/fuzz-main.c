/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Corpus replay when the fuzzers are not built with libFuzzer: each
 * argument is a file or a directory of files, each file one input to
 * LLVMFuzzerTestOneInput(). Speaks TAP so that meson counts every input;
 * an input that crashes shows as the last "# running" line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* libFuzzer's default -max_len is far below this; a bigger seed is a mistake. */
#define INPUT_MAX (1024 * 1024)

struct inputs {
	char **paths;
	size_t n, allocated;
};

static int
inputs_add(struct inputs *in, const char *path)
{
	char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	if (in->n == in->allocated) {
		size_t n = in->allocated ? 2 * in->allocated : 64;
		char **p = realloc(in->paths, n * sizeof(*p));

		if (!p) {
			free(copy);
			return -ENOMEM;
		}
		in->paths = p;
		in->allocated = n;
	}
	in->paths[in->n++] = copy;
	return 0;
}

static int
skip_hidden(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* A directory's regular files in a stable order, or @path itself. */
static int
inputs_collect(struct inputs *in, const char *path)
{
	struct dirent **entries;
	struct stat st;
	int n, r = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode))
		return inputs_add(in, path);
	n = scandir(path, &entries, skip_hidden, alphasort);
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -errno;
	}
	for (int i = 0; i < n; i++) {
		char *child = NULL;

		if (r >= 0 && asprintf(&child, "%s/%s", path, entries[i]->d_name) < 0)
			r = -ENOMEM;
		if (r >= 0)
			r = inputs_add(in, child);
		free(child);
		free(entries[i]);
	}
	free(entries);
	return r;
}

/* The whole file into a buffer of exactly its size (ASan sees overreads). */
static int
read_input(const char *path, uint8_t **ret, size_t *ret_size)
{
	uint8_t *buf, *exact;
	size_t size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	buf = malloc(INPUT_MAX + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n = read(fd, buf + size, INPUT_MAX + 1 - size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			free(buf);
			close(fd);
			return r;
		}
		if (n == 0)
			break;
		size += (size_t)n;
		if (size > INPUT_MAX) {
			free(buf);
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	exact = malloc(size ? size : 1);
	if (!exact) {
		free(buf);
		return -ENOMEM;
	}
	memcpy(exact, buf, size);
	free(buf);
	*ret = exact;
	*ret_size = size;
	return 0;
}

int
main(int argc, char *argv[])
{
	struct inputs in = { 0 };
	int failed = 0;

	for (int i = 1; i < argc; i++)
		if (inputs_collect(&in, argv[i]) < 0)
			return EXIT_FAILURE;
	if (in.n == 0) {
		printf("1..0 # SKIP no corpus given\n");
		return EXIT_SUCCESS;
	}
	printf("1..%zu\n", in.n);
	for (size_t i = 0; i < in.n; i++) {
		uint8_t *data = NULL;
		size_t size = 0;
		int r = read_input(in.paths[i], &data, &size);

		if (r < 0) {
			printf("not ok %zu - %s # %s\n", i + 1, in.paths[i], strerror(-r));
			failed = 1;
		} else {
			printf("# running %s (%zu bytes)\n", in.paths[i], size);
			fflush(stdout);
			LLVMFuzzerTestOneInput(data, size);
			printf("ok %zu - %s\n", i + 1, in.paths[i]);
		}
		free(data);
		free(in.paths[i]);
	}
	free(in.paths);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
