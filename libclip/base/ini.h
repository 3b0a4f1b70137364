/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reader of the library's INI files, clip.cage(5) and clip.session(5):
 * "[Section]" and "Key=Value" lines, blank lines and comments ('#', ';'),
 * spaces and tabs around keys and values ignored, ASCII only, lines of at
 * most INI_LINE_MAX bytes. Strict: an unknown section or key, a section or
 * a key given twice (unless repeatable), an empty value or a key before
 * any section is refused. Every refusal is "FILE:LINE: [Section] Key: why"
 * (or "FILE:LINE: why") with the offset of the offending byte.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

struct clip_error;
struct ini;

#define INI_LINE_MAX 4096
#define INI_SECTIONS_MAX 8
#define INI_KEYS_MAX 32

struct ini_key {
	int section;
	const char *name;
	/* @value is NUL-terminated and trimmed, not empty; @offset is its own. */
	int (*parse)(struct ini *ini, const struct ini_key *k, char *value, size_t offset);
	bool repeatable;
};

struct ini {
	/* Set by the caller. */
	const char *filename;
	const char *what; /* "profiles": in "byte 0xNN: profiles are ASCII" */
	const char *const *sections; /* their names, n_sections of them */
	int n_sections;
	unsigned repeatable_sections; /* bit N: section N may be given again */
	const struct ini_key *keys;
	size_t n_keys;
	/*
	 * Called at each section header, before its keys (optional), while
	 * ini->section is still the one before (-1 at the first).
	 */
	int (*section_start)(struct ini *ini, int section, size_t offset);
	void *userdata;
	struct clip_error **reterr;

	/* The reader's. */
	unsigned line; /* of the line being read */
	int section; /* -1 before the first header */
	bool section_seen[INI_SECTIONS_MAX];
	bool key_seen[INI_KEYS_MAX]; /* in the current section */
};

/* "FILE:LINE: [Section] Key: message" (@k NULL: "FILE:LINE: message") at @offset; @error. */
int ini_error(struct ini *ini, const struct ini_key *k, size_t offset, int error,
	      const char *format, ...) _printf_(5, 6);

/* Read @size bytes of @data (not NUL-terminated): 0, or what a callback or a refusal says. */
int ini_parse(struct ini *ini, const char *data, size_t size);

/*
 * Read @fd to its end, at most @max + 1 bytes (one more than allowed, so
 * that the parser sees the file too long) into a new buffer (*@ret,
 * free()), its length in *@ret_size. 0, or -ENOMEM, or -EIO with a message
 * naming @filename.
 */
int ini_read_fd(int fd, size_t max, const char *filename, char **ret, size_t *ret_size,
		struct clip_error **reterr);
