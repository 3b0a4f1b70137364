/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip.session(5): the strict parser and the canonical formatter. The
 * style of clip.cage(5) (libclip/cage/cage-profile.c): every refusal is
 * "FILE:LINE: [Section] Key: why" with the offset of the offending byte.
 *
 * Relative paths (Profile=, DataDirectory=) resolve against the session
 * file's directory: its path is what /proc/self/fd tells of @dirfd (or the
 * working directory for AT_FDCWD), and the session keeps them absolute, so
 * that the formatted text means the same wherever it is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <clip/cage.h>
#include <clip/level.h>
#include <clip/policy.h>
#include <clip/session.h>

#include "base/ctx-internal.h"
#include "base/error.h"
#include "base/macro.h"
#include "base/util.h"
#include "session-internal.h"

#define LINE_MAX_BYTES 4096
#define CONFIRM_TIMEOUT_MAX_S 3600

enum section {
	SECTION_SESSION,
	SECTION_CAGE,
	SECTION_TRANSFER,
	_SECTION_MAX,
};

static const char *const section_names[_SECTION_MAX] = {
	[SECTION_SESSION] = "Session",
	[SECTION_CAGE] = "Cage",
	[SECTION_TRANSFER] = "Transfer",
};

static const char *const restart_names[] = {
	[CLIP_SESSION_RESTART_NO] = "no",
	[CLIP_SESSION_RESTART_ON_FAILURE] = "on-failure",
	[CLIP_SESSION_RESTART_ALWAYS] = "always",
};

/* A [Cage] as read, before the session is built. */
struct file_cage {
	unsigned line; /* of its [Cage] header */
	size_t offset;
	char *name;
	struct clip_level *level;
	struct clip_cage_profile *profile;
	char *profile_path; /* absolute */
	char *data_dir; /* absolute */
	int restart;
};

struct file_rule {
	unsigned line;
	size_t offset; /* of the value in the session file */
	char *text;
};

struct parser {
	const char *filename;
	int dirfd;
	const char *dir; /* the absolute path of dirfd, or NULL when unknown */
	unsigned line;
	int section;
	bool section_seen[_SECTION_MAX];
	bool seen[16]; /* the keys of the current section */

	char *name;
	char *state_dir;
	struct file_cage cages[CLIP_SESSION_CAGES_MAX];
	size_t n_cages;
	struct file_rule *rules;
	size_t n_rules;
	uint32_t confirm_timeout_ms;
	struct clip_error **reterr;
};

struct key {
	enum section section;
	const char *name;
	int (*parse)(struct parser *ps, const struct key *k, char *value, size_t offset);
};

/* "FILE:LINE: [Section] Key: message", the offset at the culprit. */
static int _printf_(5, 6) key_error(struct parser *ps, const struct key *k, size_t offset,
				    int error, const char *format, ...)
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
		return error_setf(ps->reterr, error, (int)offset, "%s:%u: [%s] %s: %s",
				  ps->filename, ps->line, section_names[k->section], k->name, text);
	return error_setf(ps->reterr, error, (int)offset, "%s:%u: %s", ps->filename, ps->line,
			  text);
}

static struct file_cage *
cage_current(struct parser *ps)
{
	return &ps->cages[ps->n_cages - 1];
}

static int
name_error(struct parser *ps, const struct key *k, const char *value, size_t offset)
{
	return key_error(ps, k, offset, -EINVAL,
			 "'%.40s' is not a name (1 to %d of a-z 0-9 _ -, starting with a letter "
			 "or a digit)",
			 value, CLIP_SESSION_NAME_MAX);
}

static int
parse_session_name(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	if (!session_name_valid(value))
		return name_error(ps, k, value, offset);
	ps->name = strdup(value);
	return ps->name ? 0 : -ENOMEM;
}

/*
 * @value as an absolute path: as it is when absolute, else joined to the
 * session file's directory. Checked as every path of the library
 * (path_fault()).
 */
static int
parse_path(struct parser *ps, const struct key *k, char *value, size_t offset, bool relative,
	   char **ret)
{
	_cleanup_free_ char *path = NULL;
	const char *fault;

	if (value[0] == '/' || !relative)
		path = strdup(value);
	else if (!ps->dir)
		return key_error(ps, k, offset, -EINVAL,
				 "'%.40s' is relative, and the directory it would be relative to "
				 "has no known path (/proc is not mounted)",
				 value);
	else if (asprintf(&path, "%s/%s", strcmp(ps->dir, "/") == 0 ? "" : ps->dir, value) < 0)
		path = NULL;
	if (!path)
		return -ENOMEM;
	fault = path_fault(path);
	if (fault)
		return key_error(ps, k, offset, -EINVAL, "'%.40s' %s%s", value,
				 value[0] == '/' ? "" : "once relative to the file's directory ",
				 fault);
	*ret = steal_ptr(path);
	return 0;
}

static int
parse_state_dir(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	return parse_path(ps, k, value, offset, false, &ps->state_dir);
}

static int
parse_cage_name(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	struct file_cage *c = cage_current(ps);

	if (!session_name_valid(value))
		return name_error(ps, k, value, offset);
	c->name = strdup(value);
	return c->name ? 0 : -ENOMEM;
}

static int
parse_level(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	struct clip_error *e = NULL;
	int r;

	r = clip_level_parse(&cage_current(ps)->level, value, &e);
	if (r < 0 && r != -ENOMEM) {
		int at = clip_error_get_offset(e);

		r = key_error(ps, k, offset + (at > 0 ? (size_t)at : 0), -EINVAL, "%s",
			      clip_error_get_message(e));
	}
	clip_error_free(e);
	return r;
}

static int
parse_profile(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	struct file_cage *c = cage_current(ps);
	struct clip_error *e = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	r = parse_path(ps, k, value, offset, true, &c->profile_path);
	if (r < 0)
		return r;
	/* The last component is not followed: the file is the one named. */
	fd = open_regular(value[0] == '/' ? AT_FDCWD : ps->dirfd, value, 0, NULL, &e);
	if (fd >= 0)
		r = clip_cage_profile_load(&c->profile, fd, c->profile_path, &e);
	else
		r = fd;
	if (r == -ENOENT && !e)
		r = key_error(ps, k, offset, r, "'%.40s': no such file", value);
	else if (r == -ENOMEM)
		;
	else if (r < 0)
		r = key_error(ps, k, offset, r == -EACCES ? r : -EINVAL, "%s",
			      clip_error_get_message(e));
	clip_error_free(e);
	return r;
}

static int
parse_data_dir(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	return parse_path(ps, k, value, offset, true, &cage_current(ps)->data_dir);
}

static int
parse_restart(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	for (size_t i = 0; i < ELEMENTSOF(restart_names); i++)
		if (strcmp(value, restart_names[i]) == 0) {
			cage_current(ps)->restart = (int)i;
			return 0;
		}
	return key_error(ps, k, offset, -EINVAL, "'%.40s' is not no, on-failure or always", value);
}

static int
parse_rule(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	struct file_rule *rules;

	if (value[0] == '#')
		return key_error(ps, k, offset, -EINVAL,
				 "a rule is SOURCE TARGET ACTION [option=value...], not a comment");
	rules = reallocarray(ps->rules, ps->n_rules + 1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	ps->rules = rules;
	rules[ps->n_rules] = (struct file_rule){ ps->line, offset, strdup(value) };
	if (!rules[ps->n_rules].text)
		return -ENOMEM;
	ps->n_rules++;
	return 0;
}

static int
parse_confirm_timeout(struct parser *ps, const struct key *k, char *value, size_t offset)
{
	unsigned v = 0;

	for (const char *c = value; *c; c++) {
		if (*c < '0' || *c > '9' || (c == value && *c == '0') || v > CONFIRM_TIMEOUT_MAX_S)
			goto bad;
		v = v * 10 + (unsigned)(*c - '0');
	}
	if (v == 0 || v > CONFIRM_TIMEOUT_MAX_S)
		goto bad;
	ps->confirm_timeout_ms = v * 1000u;
	return 0;
bad:
	return key_error(ps, k, offset, -EINVAL, "'%.40s' is not a number of seconds from 1 to %d",
			 value, CONFIRM_TIMEOUT_MAX_S);
}

/* In the formatter's order. At most ELEMENTSOF(parser.seen) per section. */
static const struct key keys[] = {
	{ SECTION_SESSION, "Name", parse_session_name },
	{ SECTION_SESSION, "StateDirectory", parse_state_dir },
	{ SECTION_CAGE, "Name", parse_cage_name },
	{ SECTION_CAGE, "Level", parse_level },
	{ SECTION_CAGE, "Profile", parse_profile },
	{ SECTION_CAGE, "DataDirectory", parse_data_dir },
	{ SECTION_CAGE, "Restart", parse_restart },
	{ SECTION_TRANSFER, "ConfirmTimeoutSec", parse_confirm_timeout },
	{ SECTION_TRANSFER, "Rule", parse_rule },
};

static bool
key_repeatable(const struct key *k)
{
	return k->parse == parse_rule;
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

/* The end of a [Cage]: what it must have. */
static int
cage_end(struct parser *ps)
{
	static const char *const required[] = { "Name", "Level", "DataDirectory" };
	const struct file_cage *c;

	if (ps->section != SECTION_CAGE)
		return 0;
	c = cage_current(ps);
	for (size_t i = 0; i < ELEMENTSOF(required); i++)
		if ((i == 0 && !c->name) || (i == 1 && !c->level) || (i == 2 && !c->data_dir))
			return error_setf(ps->reterr, -EINVAL, (int)c->offset,
					  "%s:%u: [Cage] has no %s=", ps->filename, c->line,
					  required[i]);
	for (size_t i = 0; i + 1 < ps->n_cages; i++)
		if (strcmp(ps->cages[i].name, c->name) == 0)
			return error_setf(ps->reterr, -EINVAL, (int)c->offset,
					  "%s:%u: [Cage] '%s' is also the cage of line %u",
					  ps->filename, c->line, c->name, ps->cages[i].line);
	return 0;
}

static int
parse_section(struct parser *ps, char *line, size_t n, size_t offset)
{
	int r;

	if (n < 3 || line[n - 1] != ']')
		return key_error(ps, NULL, offset, -EINVAL, "a section header is '[Name]'");
	line[n - 1] = '\0';
	for (int i = 0; i < _SECTION_MAX; i++) {
		if (strcmp(line + 1, section_names[i]) != 0)
			continue;
		if (ps->section_seen[i] && i != SECTION_CAGE)
			return key_error(ps, NULL, offset, -EINVAL, "section [%s] given twice",
					 section_names[i]);
		r = cage_end(ps);
		if (r < 0)
			return r;
		if (i == SECTION_CAGE) {
			if (ps->n_cages == CLIP_SESSION_CAGES_MAX)
				return key_error(ps, NULL, offset, -E2BIG, "more than %d [Cage]",
						 CLIP_SESSION_CAGES_MAX);
			ps->cages[ps->n_cages++] =
				(struct file_cage){ .line = ps->line, .offset = offset };
		}
		ps->section_seen[i] = true;
		ps->section = i;
		memset(ps->seen, 0, sizeof(ps->seen));
		return 0;
	}
	return key_error(ps, NULL, offset, -EINVAL,
			 "unknown section [%.40s] (Session, Cage, Transfer)", line + 1);
}

static int
parse_assignment(struct parser *ps, char *line, size_t n, size_t offset)
{
	char *eq = memchr(line, '=', n), *key = line, *value;
	size_t kn, vn, nth = 0;

	if (!eq)
		return key_error(ps, NULL, offset, -EINVAL,
				 "expected '[Section]', 'Key=Value' or a comment");
	if (ps->section < 0)
		return key_error(ps, NULL, offset, -EINVAL, "a key before any section");
	kn = (size_t)(eq - line);
	value = eq + 1;
	vn = n - kn - 1;
	trim(&key, &kn);
	trim(&value, &vn);
	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		const struct key *k = &keys[i];
		size_t voffset = offset + (size_t)(value - line);

		if ((int)k->section != ps->section)
			continue;
		if (strcmp(k->name, key) != 0) {
			nth++;
			continue;
		}
		if (ps->seen[nth] && !key_repeatable(k))
			return key_error(ps, k, offset, -EINVAL, "given twice");
		ps->seen[nth] = true;
		if (vn == 0)
			return key_error(ps, k, voffset, -EINVAL, "empty value");
		return k->parse(ps, k, value, voffset);
	}
	return key_error(ps, NULL, offset, -EINVAL, "[%s] has no key '%.40s'",
			 section_names[ps->section], key);
}

static void
parser_done(struct parser *ps)
{
	for (size_t i = 0; i < ps->n_cages; i++) {
		struct file_cage *c = &ps->cages[i];

		free(c->name);
		clip_level_unref(c->level);
		clip_cage_profile_unref(c->profile);
		free(c->profile_path);
		free(c->data_dir);
	}
	for (size_t i = 0; i < ps->n_rules; i++)
		free(ps->rules[i].text);
	free(ps->rules);
	free(ps->name);
	free(ps->state_dir);
}

/*
 * The policy of the Rule= lines: each at its own line number, the others
 * blank, so that the policy's messages name the session file's lines. A
 * message of the policy parser ("FILE:LINE:COLUMN: what") is said again in
 * the session file's form, with the offset moved into the session file.
 */
static int
rules_policy(struct parser *ps, struct clip_policy **ret)
{
	_cleanup_free_ char *text = NULL;
	size_t *starts = NULL, size = 0, at;
	struct clip_error *e = NULL;
	unsigned line = 1;
	FILE *f;
	int r;

	starts = calloc(ps->n_rules, sizeof(*starts));
	f = open_memstream(&text, &size);
	if (!starts || !f) {
		if (f)
			fclose(f);
		free(starts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ps->n_rules; i++) {
		for (; line < ps->rules[i].line; line++)
			fputc('\n', f);
		fflush(f);
		starts[i] = size;
		fputs(ps->rules[i].text, f);
	}
	if (fclose(f) != 0) {
		free(starts);
		return -ENOMEM;
	}
	r = clip_policy_parse(ret, text, size, ps->filename, &e);
	if (r < 0 && r != -ENOMEM) {
		int off = clip_error_get_offset(e);
		const char *m = clip_error_get_message(e), *what = m;
		size_t k = 0;

		/* "FILE:LINE:COLUMN: what": past the file name and two numbers. */
		if (strncmp(m, ps->filename, strlen(ps->filename)) == 0) {
			what = m + strlen(ps->filename);
			for (int colons = 0; *what && colons < 3; what++)
				colons += *what == ':';
			what += *what == ' ';
		}
		while (off >= 0 && k + 1 < ps->n_rules && starts[k + 1] <= (size_t)off)
			k++;
		at = ps->rules[k].offset +
		     (off >= 0 && (size_t)off >= starts[k] ? (size_t)off - starts[k] : 0);
		if (at > ps->rules[k].offset + strlen(ps->rules[k].text))
			at = ps->rules[k].offset;
		ps->line = ps->rules[k].line;
		r = key_error(ps, &keys[ELEMENTSOF(keys) - 1], at, r, "%s", what);
	}
	clip_error_free(e);
	free(starts);
	return r;
}

/* The session of a parser that read the whole file. */
static int
session_build(struct parser *ps, struct clip_session **ret, struct clip_ctx *ctx, size_t size)
{
	_cleanup_(clip_session_unrefp) struct clip_session *s = NULL;
	_cleanup_(clip_policy_unrefp) struct clip_policy *policy = NULL;
	struct clip_error *e = NULL;
	int r;

	if (!ps->name)
		return error_setf(ps->reterr, -EINVAL, (int)size,
				  "%s: no [Session] with Name=", ps->filename);
	if (ps->n_cages == 0)
		return error_setf(ps->reterr, -EINVAL, (int)size, "%s: no [Cage]", ps->filename);
	r = clip_session_new(&s, ctx, ps->name, &e);
	if (r >= 0 && ps->state_dir)
		r = clip_session_set_state_dir(s, ps->state_dir, &e);
	if (r < 0 && r != -ENOMEM)
		r = error_set(ps->reterr, r, "%s: [Session] %s", ps->filename,
			      clip_error_get_message(e));
	clip_error_free(e);
	for (size_t i = 0; r >= 0 && i < ps->n_cages; i++) {
		struct file_cage *c = &ps->cages[i];
		struct clip_session_cage in = {
			.size = sizeof(in),
			.name = c->name,
			.level = c->level,
			.profile = c->profile,
			.data_dir = c->data_dir,
			.restart = c->restart,
		};

		e = NULL;
		r = clip_session_add_cage(s, &in, &e);
		if (r < 0 && r != -ENOMEM)
			r = error_setf(ps->reterr, r, (int)c->offset, "%s:%u: [Cage] %s",
				       ps->filename, c->line, clip_error_get_message(e));
		clip_error_free(e);
		if (r >= 0 && c->profile_path) {
			struct session_cage *sc = session_find_cage(s, c->name);

			sc->profile_path = steal_ptr(c->profile_path);
		}
	}
	if (r >= 0 && ps->n_rules > 0) {
		r = rules_policy(ps, &policy);
		if (r >= 0)
			r = clip_session_set_policy(s, policy, NULL);
	}
	if (r >= 0 && ps->n_rules > 0) {
		s->rules = calloc(ps->n_rules + 1, sizeof(*s->rules));
		if (!s->rules)
			return -ENOMEM;
		for (size_t i = 0; i < ps->n_rules; i++)
			s->rules[i] = steal_ptr(ps->rules[i].text);
	}
	s->mediator_opts.confirm_timeout_ms = ps->confirm_timeout_ms;
	if (r >= 0) {
		e = NULL;
		r = clip_session_check(s, &e);
		/* The policy's messages start with the file's name already. */
		if (r < 0 && r != -ENOMEM)
			r = error_set(ps->reterr, r, "%s%s%s",
				      strncmp(clip_error_get_message(e), ps->filename,
					      strlen(ps->filename)) == 0
					      ? ""
					      : ps->filename,
				      strncmp(clip_error_get_message(e), ps->filename,
					      strlen(ps->filename)) == 0
					      ? ""
					      : ": ",
				      clip_error_get_message(e));
		clip_error_free(e);
	}
	if (r < 0)
		return r;
	*ret = steal_ptr(s);
	return 0;
}

static int
session_parse(struct clip_session **ret, struct clip_ctx *ctx, int dirfd, const char *dir,
	      const char *filename, const char *untrusted_data, size_t size,
	      struct clip_error **reterr)
{
	struct parser ps = {
		.filename = filename ? filename : "session",
		.dirfd = dirfd,
		.dir = dir,
		.section = -1,
		.reterr = reterr,
	};
	char line[LINE_MAX_BYTES + 1];
	size_t pos = 0;
	int r = 0;

	if (size > CLIP_SESSION_SIZE_MAX)
		return error_setf(reterr, -E2BIG, CLIP_SESSION_SIZE_MAX, "%s: longer than %d bytes",
				  ps.filename, CLIP_SESSION_SIZE_MAX);
	while (pos < size && r >= 0) {
		const char *nl = memchr(untrusted_data + pos, '\n', size - pos);
		size_t n = nl ? (size_t)(nl - (untrusted_data + pos)) : size - pos;
		char *s = line;

		ps.line++;
		if (n > LINE_MAX_BYTES) {
			r = key_error(&ps, NULL, pos + LINE_MAX_BYTES, -EINVAL,
				      "line longer than %d bytes", LINE_MAX_BYTES);
			break;
		}
		memcpy(line, untrusted_data + pos, n);
		line[n] = '\0';
		for (size_t i = 0; i < n && r >= 0; i++)
			if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
				r = key_error(&ps, NULL, pos + i, -EINVAL,
					      "control character 0x%02x", (unsigned char)line[i]);
			else if ((unsigned char)line[i] >= 0x7f)
				r = key_error(&ps, NULL, pos + i, -EINVAL,
					      "byte 0x%02x: session files are ASCII",
					      (unsigned char)line[i]);
		if (r < 0)
			break;
		trim(&s, &n);
		if (n == 0 || s[0] == '#' || s[0] == ';')
			r = 0;
		else if (s[0] == '[')
			r = parse_section(&ps, s, n, pos + (size_t)(s - line));
		else
			r = parse_assignment(&ps, s, n, pos + (size_t)(s - line));
		pos = nl ? (size_t)(nl - untrusted_data) + 1 : size;
	}
	if (r >= 0)
		r = cage_end(&ps);
	if (r >= 0)
		r = session_build(&ps, ret, ctx, size);
	parser_done(&ps);
	return r;
}

/* The absolute path of the directory @dirfd (AT_FDCWD: the working one), or NULL. */
static char *
dir_path(int dirfd)
{
	char proc[64], *buf;
	ssize_t n;

	if (dirfd == AT_FDCWD)
		return getcwd(NULL, 0);
	buf = malloc(PATH_BYTES_MAX);
	if (!buf)
		return NULL;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", dirfd);
	n = readlink(proc, buf, PATH_BYTES_MAX - 1);
	if (n <= 0 || buf[0] != '/') {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

CLIP_EXPORT int
clip_session_parse(struct clip_session **ret, struct clip_ctx *ctx, int dirfd, const char *filename,
		   const char *data, size_t size, struct clip_error **reterr)
{
	_cleanup_free_ char *dir = NULL;

	clip_assert_reterr(reterr);
	clip_assert_return(
		ret, api_return(error_set(reterr, -EINVAL, "%s: ret is NULL", __func__), reterr));
	ctx_assert_return_error(ctx, reterr);
	clip_assert_return(data || size == 0,
			   api_return(error_set(reterr, -EINVAL, "%s: data is NULL and size is %zu",
						__func__, size),
				      reterr));
	clip_assert_return(dirfd >= 0 || dirfd == AT_FDCWD,
			   api_return(error_set(reterr, -EINVAL,
						"%s: dirfd %d is neither a descriptor nor AT_FDCWD",
						__func__, dirfd),
				      reterr));

	dir = dir_path(dirfd);
	return api_return(
		session_parse(ret, ctx, dirfd, dir, filename, data ? data : "", size, reterr),
		reterr);
}

static int
session_load(struct clip_session **ret, struct clip_ctx *ctx, const char *path,
	     struct clip_error **reterr)
{
	_cleanup_free_ char *buf = NULL, *copy = strdup(path), *dir = NULL;
	_cleanup_close_ int fd = -1, dirfd = -1;
	const char *slash;
	struct stat st;
	size_t n = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return error_set_errno(reterr, -errno, "cannot open %.200s", path);
	if (fstat(fd, &st) < 0)
		return error_set_errno(reterr, -errno, "cannot stat %.200s", path);
	if (!S_ISREG(st.st_mode))
		return error_set(reterr, -EMEDIUMTYPE, "%.200s is %s, not a regular file", path,
				 file_type_name(st.st_mode));
	/* Its directory, for relative paths: the one it was found in. */
	slash = strrchr(copy, '/');
	if (slash == copy)
		copy[1] = '\0';
	else if (slash)
		copy[slash - copy] = '\0';
	dirfd = open(slash ? copy : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return error_set_errno(reterr, -errno, "cannot open the directory of %.200s", path);
	dir = dir_path(dirfd);
	buf = malloc(CLIP_SESSION_SIZE_MAX + 1);
	if (!buf)
		return -ENOMEM;
	/* One byte more than allowed, so that the parser sees a file too long. */
	while (n <= CLIP_SESSION_SIZE_MAX) {
		ssize_t k = read(fd, buf + n, CLIP_SESSION_SIZE_MAX + 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return error_set_errno(reterr, -EIO, "%.200s: cannot read", path);
		if (k == 0)
			break;
		n += (size_t)k;
	}
	return session_parse(ret, ctx, dirfd, dir, path, buf, n, reterr);
}

CLIP_EXPORT int
clip_session_load(struct clip_session **ret, struct clip_ctx *ctx, const char *path,
		  struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	clip_assert_return(
		ret, api_return(error_set(reterr, -EINVAL, "%s: ret is NULL", __func__), reterr));
	ctx_assert_return_error(ctx, reterr);
	clip_assert_return(
		path,
		api_return(error_set(reterr, -EINVAL, "%s: the path is NULL", __func__), reterr));

	return api_return(session_load(ret, ctx, path, reterr), reterr);
}

/* -- the formatter --------------------------------------------------- */

static int
cmp_cage(const void *a, const void *b)
{
	return strcmp((*(struct session_cage *const *)a)->name,
		      (*(struct session_cage *const *)b)->name);
}

/* Whether @c's profile is what clip_cage_profile_new() makes: 1, 0 or -errno. */
static int
profile_is_default(const struct session_cage *c)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *d = NULL;
	_cleanup_free_ char *a = NULL, *b = NULL;
	int r;

	r = clip_cage_profile_new(&d, c->cage_name, NULL);
	if (r >= 0)
		r = clip_cage_profile_format(d, &a);
	if (r >= 0)
		r = clip_cage_profile_format(c->profile, &b);
	return r < 0 ? r : strcmp(a, b) == 0;
}

static int
session_format(const struct clip_session *s, char **ret)
{
	struct session_cage *sorted[CLIP_SESSION_CAGES_MAX];
	char *text = NULL;
	size_t size = 0;
	FILE *f;
	int r = 0;

	if (s->policy && !s->rules)
		return -EOPNOTSUPP; /* set through the API: no text to write */
	for (size_t i = 0; i < s->n_cages; i++) {
		sorted[i] = s->cages[i];
		if (!sorted[i]->profile_path) {
			r = profile_is_default(sorted[i]);
			if (r <= 0)
				return r < 0 ? r : -EOPNOTSUPP;
		}
	}
	qsort(sorted, s->n_cages, sizeof(sorted[0]), cmp_cage);
	f = open_memstream(&text, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "[Session]\nName=%s\n", s->name);
	if (s->state_dir)
		fprintf(f, "StateDirectory=%s\n", s->state_dir);
	for (size_t i = 0; i < s->n_cages && r >= 0; i++) {
		const struct session_cage *c = sorted[i];
		_cleanup_free_ char *level = NULL;

		r = clip_level_format(c->level, &level);
		if (r < 0)
			break;
		fprintf(f, "\n[Cage]\nName=%s\nLevel=%s\n", c->name, level);
		if (c->profile_path)
			fprintf(f, "Profile=%s\n", c->profile_path);
		fprintf(f, "DataDirectory=%s\n", c->data_dir);
		if (c->restart != CLIP_SESSION_RESTART_NO)
			fprintf(f, "Restart=%s\n", restart_names[c->restart]);
	}
	if (s->rules || s->mediator_opts.confirm_timeout_ms)
		fputs("\n[Transfer]\n", f);
	if (s->mediator_opts.confirm_timeout_ms)
		fprintf(f, "ConfirmTimeoutSec=%u\n", s->mediator_opts.confirm_timeout_ms / 1000u);
	for (size_t i = 0; s->rules && s->rules[i]; i++)
		fprintf(f, "Rule=%s\n", s->rules[i]);
	if (fclose(f) != 0 || r < 0) {
		free(text);
		return r < 0 ? r : -ENOMEM;
	}
	*ret = text;
	return 0;
}

CLIP_EXPORT int
clip_session_format(const struct clip_session *s, char **ret)
{
	clip_assert_return(s && ret, -EINVAL);
	return session_format(s, ret);
}
