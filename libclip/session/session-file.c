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
#include "base/ini.h"
#include "base/macro.h"
#include "base/util.h"
#include "session-internal.h"

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
	int data_encryption; /* CLIP_SESSION_DATA_* */
};

struct file_rule {
	unsigned line;
	size_t offset; /* of the value in the session file */
	char *text;
};

struct parser {
	struct ini ini; /* first: the callbacks' struct ini * is the parser */
	int dirfd;
	const char *dir; /* the absolute path of dirfd, or NULL when unknown */

	char *name;
	char *state_dir;
	struct file_cage cages[CLIP_SESSION_CAGES_MAX];
	size_t n_cages;
	struct file_rule *rules;
	size_t n_rules;
	uint32_t confirm_timeout_ms;
	uint32_t role_gid[SESSION_ROLES]; /* AdminGroup=, AuditGroup= (session-roles.c) */
	bool role_set[SESSION_ROLES];

	bool require_lsm;
};

static struct parser *
parser_of(struct ini *ini)
{
	return (struct parser *)ini;
}

static struct file_cage *
cage_current(struct parser *ps)
{
	return &ps->cages[ps->n_cages - 1];
}

static int
name_error(struct parser *ps, const struct ini_key *k, const char *value, size_t offset)
{
	return ini_error(&ps->ini, k, offset, -EINVAL,
			 "'%.40s' is not a name (1 to %d of a-z 0-9 _ -, starting with a letter "
			 "or a digit)",
			 value, CLIP_SESSION_NAME_MAX);
}

static int
parse_session_name(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);

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
parse_path(struct parser *ps, const struct ini_key *k, char *value, size_t offset, bool relative,
	   char **ret)
{
	_cleanup_free_ char *path = NULL;
	const char *fault;

	if (value[0] == '/' || !relative)
		path = strdup(value);
	else if (!ps->dir)
		return ini_error(&ps->ini, k, offset, -EINVAL,
				 "'%.40s' is relative, and the directory it would be relative to "
				 "has no known path (/proc is not mounted)",
				 value);
	else if (asprintf(&path, "%s/%s", strcmp(ps->dir, "/") == 0 ? "" : ps->dir, value) < 0)
		path = NULL;
	if (!path)
		return -ENOMEM;
	fault = path_fault(path);
	if (fault)
		return ini_error(&ps->ini, k, offset, -EINVAL, "'%.40s' %s%s", value,
				 value[0] == '/' ? "" : "once relative to the file's directory ",
				 fault);
	*ret = steal_ptr(path);
	return 0;
}

static int
parse_state_dir(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);

	return parse_path(ps, k, value, offset, false, &ps->state_dir);
}

static int
parse_cage_name(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);
	struct file_cage *c = cage_current(ps);

	if (!session_name_valid(value))
		return name_error(ps, k, value, offset);
	c->name = strdup(value);
	return c->name ? 0 : -ENOMEM;
}

static int
parse_level(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);
	struct clip_error *e = NULL;
	int r;

	r = clip_level_parse(&cage_current(ps)->level, value, &e);
	if (r < 0 && r != -ENOMEM) {
		int at = clip_error_get_offset(e);

		r = ini_error(&ps->ini, k, offset + (at > 0 ? (size_t)at : 0), -EINVAL, "%s",
			      clip_error_get_message(e));
	}
	clip_error_free(e);
	return r;
}

static int
parse_profile(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);
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
		r = ini_error(&ps->ini, k, offset, r, "'%.40s': no such file", value);
	else if (r == -ENOMEM)
		;
	else if (r < 0)
		r = ini_error(&ps->ini, k, offset, r == -EACCES ? r : -EINVAL, "%s",
			      clip_error_get_message(e));
	clip_error_free(e);
	return r;
}

static int
parse_data_dir(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);

	return parse_path(ps, k, value, offset, true, &cage_current(ps)->data_dir);
}

static int
parse_restart(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);

	for (size_t i = 0; i < ELEMENTSOF(restart_names); i++)
		if (strcmp(value, restart_names[i]) == 0) {
			cage_current(ps)->restart = (int)i;
			return 0;
		}
	return ini_error(&ps->ini, k, offset, -EINVAL, "'%.40s' is not no, on-failure or always",
			 value);
}

static int
parse_data_encryption(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);

	if (strcmp(value, "fscrypt") == 0)
		cage_current(ps)->data_encryption = CLIP_SESSION_DATA_FSCRYPT;
	else if (strcmp(value, "none") == 0)
		cage_current(ps)->data_encryption = CLIP_SESSION_DATA_NONE;
	else
		return ini_error(&ps->ini, k, offset, -EINVAL, "'%.40s' is not fscrypt or none",
				 value);
	return 0;
}

static int
parse_rule(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);
	struct file_rule *rules;

	if (value[0] == '#')
		return ini_error(&ps->ini, k, offset, -EINVAL,
				 "a rule is SOURCE TARGET ACTION [option=value...], not a comment");
	rules = reallocarray(ps->rules, ps->n_rules + 1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	ps->rules = rules;
	rules[ps->n_rules] = (struct file_rule){ ps->ini.line, offset, strdup(value) };
	if (!rules[ps->n_rules].text)
		return -ENOMEM;
	ps->n_rules++;
	return 0;
}

static int
parse_confirm_timeout(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);
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
	return ini_error(&ps->ini, k, offset, -EINVAL,
			 "'%.40s' is not a number of seconds from 1 to %d", value,
			 CONFIRM_TIMEOUT_MAX_S);
}

static int
parse_role_group(struct ini *ini, const struct ini_key *k, char *value, size_t offset, int role)
{
	struct parser *ps = parser_of(ini);
	char why[128];
	int r;

	r = session_group_parse(value, &ps->role_gid[role], why, sizeof(why));
	if (r < 0)
		return ini_error(&ps->ini, k, offset, r, "%s", why);
	ps->role_set[role] = true;
	return 0;
}

static int
parse_admin_group(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	return parse_role_group(ini, k, value, offset, CLIP_SESSION_ROLE_ADMIN);
}

static int
parse_audit_group(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	return parse_role_group(ini, k, value, offset, CLIP_SESSION_ROLE_AUDIT);
}

static int
parse_require_lsm(struct ini *ini, const struct ini_key *k, char *value, size_t offset)
{
	struct parser *ps = parser_of(ini);

	if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
		return ini_error(&ps->ini, k, offset, -EINVAL, "'%.40s' is not yes or no", value);
	ps->require_lsm = strcmp(value, "yes") == 0;
	return 0;
}

/* In the formatter's order. */
static const struct ini_key keys[] = {
	{ SECTION_SESSION, "Name", parse_session_name, false },
	{ SECTION_SESSION, "StateDirectory", parse_state_dir, false },
	{ SECTION_SESSION, "AdminGroup", parse_admin_group, false },
	{ SECTION_SESSION, "AuditGroup", parse_audit_group, false },

	{ SECTION_SESSION, "RequireLSM", parse_require_lsm, false },
	{ SECTION_CAGE, "Name", parse_cage_name, false },
	{ SECTION_CAGE, "Level", parse_level, false },
	{ SECTION_CAGE, "Profile", parse_profile, false },
	{ SECTION_CAGE, "DataDirectory", parse_data_dir, false },
	{ SECTION_CAGE, "Restart", parse_restart, false },
	{ SECTION_CAGE, "DataEncryption", parse_data_encryption, false },
	{ SECTION_TRANSFER, "ConfirmTimeoutSec", parse_confirm_timeout, false },
	{ SECTION_TRANSFER, "Rule", parse_rule, true },
};

/* The end of a [Cage]: what it must have. */
static int
cage_end(struct parser *ps)
{
	static const char *const required[] = { "Name", "Level", "DataDirectory" };
	const struct file_cage *c;

	if (ps->ini.section != SECTION_CAGE)
		return 0;
	c = cage_current(ps);
	for (size_t i = 0; i < ELEMENTSOF(required); i++)
		if ((i == 0 && !c->name) || (i == 1 && !c->level) || (i == 2 && !c->data_dir))
			return error_setf(ps->ini.reterr, -EINVAL, (int)c->offset,
					  "%s:%u: [Cage] has no %s=", ps->ini.filename, c->line,
					  required[i]);
	for (size_t i = 0; i + 1 < ps->n_cages; i++)
		if (strcmp(ps->cages[i].name, c->name) == 0)
			return error_setf(ps->ini.reterr, -EINVAL, (int)c->offset,
					  "%s:%u: [Cage] '%s' is also the cage of line %u",
					  ps->ini.filename, c->line, c->name, ps->cages[i].line);
	return 0;
}

/* A section header: the [Cage] before it ends, a new one starts. */
static int
section_start(struct ini *ini, int section, size_t offset)
{
	struct parser *ps = parser_of(ini);
	int r = cage_end(ps);

	if (r < 0 || section != SECTION_CAGE)
		return r;
	if (ps->n_cages == CLIP_SESSION_CAGES_MAX)
		return ini_error(ini, NULL, offset, -E2BIG, "more than %d [Cage]",
				 CLIP_SESSION_CAGES_MAX);
	ps->cages[ps->n_cages++] = (struct file_cage){ .line = ini->line, .offset = offset };
	return 0;
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
	r = clip_policy_parse(ret, text, size, ps->ini.filename, &e);
	if (r < 0 && r != -ENOMEM) {
		int off = clip_error_get_offset(e);
		const char *m = clip_error_get_message(e), *what = m;
		size_t k = 0;

		/* "FILE:LINE:COLUMN: what": past the file name and two numbers. */
		if (strncmp(m, ps->ini.filename, strlen(ps->ini.filename)) == 0) {
			what = m + strlen(ps->ini.filename);
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
		ps->ini.line = ps->rules[k].line;
		r = ini_error(&ps->ini, &keys[ELEMENTSOF(keys) - 1], at, r, "%s", what);
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
		return error_setf(ps->ini.reterr, -EINVAL, (int)size,
				  "%s: no [Session] with Name=", ps->ini.filename);
	if (ps->n_cages == 0)
		return error_setf(ps->ini.reterr, -EINVAL, (int)size, "%s: no [Cage]",
				  ps->ini.filename);
	r = clip_session_new(&s, ctx, ps->name, &e);
	if (r >= 0 && ps->state_dir)
		r = clip_session_set_state_dir(s, ps->state_dir, &e);
	for (int role = 0; r >= 0 && role < SESSION_ROLES; role++)
		if (ps->role_set[role])
			r = clip_session_set_role_group(s, role, ps->role_gid[role], &e);
	if (r < 0 && r != -ENOMEM)
		r = error_set(ps->ini.reterr, r, "%s: [Session] %s", ps->ini.filename,
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
			.data_encryption = c->data_encryption,
		};

		e = NULL;
		r = clip_session_add_cage(s, &in, &e);
		if (r < 0 && r != -ENOMEM)
			r = error_setf(ps->ini.reterr, r, (int)c->offset, "%s:%u: [Cage] %s",
				       ps->ini.filename, c->line, clip_error_get_message(e));
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
	s->require_lsm = ps->require_lsm;
	if (r >= 0) {
		e = NULL;
		r = clip_session_check(s, &e);
		/* The policy's messages start with the file's name already. */
		if (r < 0 && r != -ENOMEM)
			r = error_set(ps->ini.reterr, r, "%s%s%s",
				      strncmp(clip_error_get_message(e), ps->ini.filename,
					      strlen(ps->ini.filename)) == 0
					      ? ""
					      : ps->ini.filename,
				      strncmp(clip_error_get_message(e), ps->ini.filename,
					      strlen(ps->ini.filename)) == 0
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
		.ini = {
			.filename = filename ? filename : "session",
			.what = "session files",
			.sections = section_names,
			.n_sections = _SECTION_MAX,
			.repeatable_sections = 1u << SECTION_CAGE,
			.keys = keys,
			.n_keys = ELEMENTSOF(keys),
			.section_start = section_start,
			.reterr = reterr,
		},
		.dirfd = dirfd,
		.dir = dir,
	};
	int r;

	if (size > CLIP_SESSION_SIZE_MAX)
		return error_setf(reterr, -E2BIG, CLIP_SESSION_SIZE_MAX, "%s: longer than %d bytes",
				  ps.ini.filename, CLIP_SESSION_SIZE_MAX);
	r = ini_parse(&ps.ini, untrusted_data, size);
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
	int r;

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
	r = ini_read_fd(fd, CLIP_SESSION_SIZE_MAX, path, &buf, &n, reterr);
	if (r < 0)
		return r;
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

	int r = api_return(session_load(ret, ctx, path, reterr), reterr);

	if (r >= 0)
		session_remember_file(*ret, path);
	return r;
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
	session_roles_format(s, f);

	if (s->require_lsm)
		fputs("RequireLSM=yes\n", f);
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
		if (c->data_encryption == CLIP_SESSION_DATA_NONE)
			fputs("DataEncryption=none\n", f);
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
