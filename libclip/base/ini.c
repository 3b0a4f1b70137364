/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The reader of the library's INI files: see ini.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "ini.h"
#include "macro.h"

int
ini_error(struct ini *ini, const struct ini_key *k, size_t offset, int error, const char *format,
	  ...)
{
	_cleanup_free_ char *text = NULL;
	va_list ap;
	int n;

	va_start(ap, format);
	n = vasprintf(&text, format, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	if (k)
		return error_setf(ini->reterr, error, (int)offset, "%s:%u: [%s] %s: %s",
				  ini->filename, ini->line, ini->sections[k->section], k->name,
				  text);
	return error_setf(ini->reterr, error, (int)offset, "%s:%u: %s", ini->filename, ini->line,
			  text);
}

static void
trim(char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
	(*s)[*n] = '\0';
}

static int
parse_section(struct ini *ini, char *line, size_t n, size_t offset)
{
	char names[INI_SECTIONS_MAX * 24] = "";
	int r;

	if (n < 3 || line[n - 1] != ']')
		return ini_error(ini, NULL, offset, -EINVAL, "a section header is '[Name]'");
	line[n - 1] = '\0';
	for (int i = 0; i < ini->n_sections; i++) {
		if (strcmp(line + 1, ini->sections[i]) != 0)
			continue;
		if (ini->section_seen[i] && !(ini->repeatable_sections & (1u << i)))
			return ini_error(ini, NULL, offset, -EINVAL, "section [%s] given twice",
					 ini->sections[i]);
		r = ini->section_start ? ini->section_start(ini, i, offset) : 0;
		if (r < 0)
			return r;
		ini->section_seen[i] = true;
		ini->section = i;
		memset(ini->key_seen, 0, sizeof(ini->key_seen));
		return 0;
	}
	for (int i = 0; i < ini->n_sections; i++) {
		strncat(names, i ? ", " : "", sizeof(names) - strlen(names) - 1);
		strncat(names, ini->sections[i], sizeof(names) - strlen(names) - 1);
	}
	return ini_error(ini, NULL, offset, -EINVAL, "unknown section [%.40s] (%s)", line + 1,
			 names);
}

static int
parse_assignment(struct ini *ini, char *line, size_t n, size_t offset)
{
	char *eq = memchr(line, '=', n), *key = line, *value;
	size_t kn, vn;

	if (!eq)
		return ini_error(ini, NULL, offset, -EINVAL,
				 "expected '[Section]', 'Key=Value' or a comment");
	if (ini->section < 0)
		return ini_error(ini, NULL, offset, -EINVAL, "a key before any section");
	kn = (size_t)(eq - line);
	value = eq + 1;
	vn = n - kn - 1;
	trim(&key, &kn);
	trim(&value, &vn);
	for (size_t i = 0; i < ini->n_keys; i++) {
		const struct ini_key *k = &ini->keys[i];
		size_t voffset = offset + (size_t)(value - line);

		if (k->section != ini->section || strcmp(k->name, key) != 0)
			continue;
		if (ini->key_seen[i] && !k->repeatable)
			return ini_error(ini, k, offset, -EINVAL, "given twice");
		ini->key_seen[i] = true;
		if (vn == 0)
			return ini_error(ini, k, voffset, -EINVAL, "empty value");
		return k->parse(ini, k, value, voffset);
	}
	return ini_error(ini, NULL, offset, -EINVAL, "[%s] has no key '%.40s'",
			 ini->sections[ini->section], key);
}

int
ini_parse(struct ini *ini, const char *untrusted_data, size_t size)
{
	char line[INI_LINE_MAX + 1];
	size_t pos = 0;
	int r;

	if (ini->n_sections > INI_SECTIONS_MAX || ini->n_keys > INI_KEYS_MAX)
		return -EINVAL;
	ini->line = 0;
	ini->section = -1;
	while (pos < size) {
		const char *nl = memchr(untrusted_data + pos, '\n', size - pos);
		size_t n = nl ? (size_t)(nl - (untrusted_data + pos)) : size - pos;
		char *s = line;

		ini->line++;
		if (n > INI_LINE_MAX)
			return ini_error(ini, NULL, pos + INI_LINE_MAX, -EINVAL,
					 "line longer than %d bytes", INI_LINE_MAX);
		memcpy(line, untrusted_data + pos, n);
		line[n] = '\0';
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
				return ini_error(ini, NULL, pos + i, -EINVAL,
						 "control character 0x%02x",
						 (unsigned char)line[i]);
			else if ((unsigned char)line[i] >= 0x7f)
				return ini_error(ini, NULL, pos + i, -EINVAL,
						 "byte 0x%02x: %s are ASCII",
						 (unsigned char)line[i], ini->what);
		trim(&s, &n);
		if (n == 0 || s[0] == '#' || s[0] == ';')
			r = 0;
		else if (s[0] == '[')
			r = parse_section(ini, s, n, pos + (size_t)(s - line));
		else
			r = parse_assignment(ini, s, n, pos + (size_t)(s - line));
		if (r < 0)
			return r;
		pos = nl ? (size_t)(nl - untrusted_data) + 1 : size;
	}
	return 0;
}

int
ini_read_fd(int fd, size_t max, const char *filename, char **ret, size_t *ret_size,
	    struct clip_error **reterr)
{
	_cleanup_free_ char *buf = malloc(max + 1);
	size_t n = 0;

	if (!buf)
		return -ENOMEM;
	while (n <= max) {
		ssize_t k = read(fd, buf + n, max + 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return error_set_errno(reterr, -EIO, "%s: cannot read", filename);
		if (k == 0)
			break;
		n += (size_t)k;
	}
	*ret = steal_ptr(buf);
	*ret_size = n;
	return 0;
}
