/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cage profiles: the builder, the strict parser of the .nspawn-style text
 * (clip.cage(5)) and its canonical formatter. Pure: no I/O but
 * clip_cage_profile_load(), which reads an fd with a bound.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cap-ng.h>
#include <seccomp.h>

#include <clip/cage.h>

#include "cage-internal.h"
#include "base/macro.h"
#include "base/error.h"
#include "base/ini.h"
#include "base/util.h"

#define CPU_QUOTA_MAX 100000
#define CAP_MAX 63

enum section {
	SECTION_CAGE,
	SECTION_FILES,
	SECTION_NETWORK,
	SECTION_LIMITS,
	SECTION_SECURITY,
	_SECTION_MAX,
};

static const char *const section_names[_SECTION_MAX] = {
	[SECTION_CAGE] = "Cage",     [SECTION_FILES] = "Files",       [SECTION_NETWORK] = "Network",
	[SECTION_LIMITS] = "Limits", [SECTION_SECURITY] = "Security",
};

static bool
name_valid(const char *name)
{
	size_t n = strnlen(name, CLIP_CAGE_NAME_MAX + 1);

	if (n == 0 || n > CLIP_CAGE_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
			return false;
	return true;
}

int
cage_name_check(const char *name, struct clip_error **reterr)
{
	char shown[CAGE_SHOWN_MAX];

	if (!name_valid(name))
		return error_set(reterr, -EINVAL,
				 "'%s' is not a cage name: 1 to %d of A-Z a-z 0-9 _ . -, not "
				 "starting with . or -",
				 cage_shown(name, shown), CLIP_CAGE_NAME_MAX);
	return 0;
}

static bool
path_valid(const char *path)
{
	return !path_fault(path);
}

/* -EINVAL with what is wrong with @path, @what ("bind source"), or 0. */
static int
path_check(const char *what, const char *path, const char *fault, struct clip_error **reterr)
{
	char shown[CAGE_SHOWN_MAX];

	if (!fault)
		return 0;
	return error_set(reterr, -EINVAL, "%s '%s' %s", what, cage_shown(path, shown), fault);
}

const char *
cage_shown(const char *s, char buf[CAGE_SHOWN_MAX])
{
	size_t n = 0;

	for (; s[n] && n < CAGE_SHOWN_MAX - sizeof("..."); n++)
		buf[n] = (unsigned char)s[n] < ' ' || (unsigned char)s[n] >= 0x7f ? '?' : s[n];
	strcpy(buf + n, s[n] ? "..." : "");
	return buf;
}

/* Where nothing may be mounted: the cage makes these itself. NULL, or why not @target. */
static const char *
target_fault(const char *target)
{
	const char *fault = path_fault(target);

	if (fault)
		return fault;
	if (strcmp(target, "/") == 0)
		return "is the cage's root, which Root= sets";
	if (path_is_beneath(target, "/proc") || path_is_beneath(target, "/dev"))
		return "is in /proc or /dev, which the cage mounts itself";
	if (path_is_beneath(target, "/data"))
		return "is in /data, where DataDirectory= goes";
	return NULL;
}

uint32_t
cage_profile_uid_base(const struct clip_cage_profile *p)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	if (p->uid_base)
		return p->uid_base;
	for (const char *c = p->name; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	return CAGE_UID_BASE_MIN + (h % CAGE_UID_BASE_SLOTS) * CAGE_UID_RANGE;
}

static struct clip_cage_profile *
profile_alloc(void)
{
	struct clip_cage_profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->n_ref = 1;
	p->limits.size = sizeof(p->limits);
	if (clip_level_new(&p->level, 0, NULL, 0) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

CLIP_EXPORT int
clip_cage_profile_new(struct clip_cage_profile **ret, const char *name, struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
	int r;

	clip_assert_reterr(reterr);
	cage_assert_arg(ret, reterr, "%s: ret is NULL", __func__);
	cage_assert_arg(name, reterr, "%s: the name is NULL", __func__);
	r = cage_name_check(name, reterr);
	if (r < 0)
		return api_return(r, reterr);

	p = profile_alloc();
	if (!p)
		return api_return(-ENOMEM, reterr);
	p->name = strdup(name);
	if (!p->name)
		return api_return(-ENOMEM, reterr);
	*ret = steal_ptr(p);
	return 0;
}

CLIP_EXPORT struct clip_cage_profile *
clip_cage_profile_ref(struct clip_cage_profile *p)
{
	if (p)
		p->n_ref++;
	return p;
}

CLIP_EXPORT struct clip_cage_profile *
clip_cage_profile_unref(struct clip_cage_profile *p)
{
	if (!p || --p->n_ref > 0)
		return NULL;
	for (size_t i = 0; i < p->n_mounts; i++) {
		free(p->mounts[i].source);
		free(p->mounts[i].target);
	}
	clip_level_unref(p->level);
	free(p->name);
	free(p->root);
	free(p->data_dir);
	free(p->address);
	free(p->bpf);
	free(p);
	return NULL;
}

CLIP_EXPORT const char *
clip_cage_profile_get_name(const struct clip_cage_profile *p)
{
	return p ? p->name : NULL;
}

CLIP_EXPORT const struct clip_level *
clip_cage_profile_get_level(const struct clip_cage_profile *p)
{
	return p ? p->level : NULL;
}

CLIP_EXPORT int
clip_cage_profile_set_level(struct clip_cage_profile *p, const struct clip_level *level,
			    struct clip_error **reterr)
{
	_cleanup_free_ char *text = NULL;
	struct clip_level *copy = NULL;
	int r;

	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(level, reterr, "%s: the level is NULL", __func__);

	/* A private copy: the caller's level is not ours to keep alive. */
	r = clip_level_format(level, &text);
	if (r >= 0)
		r = clip_level_parse(&copy, text, reterr);
	if (r < 0)
		return api_return(r, reterr);
	clip_level_unref(p->level);
	p->level = copy;
	return 0;
}

/* @path, @what of a profile ("root directory"), into *@where. */
static int
set_path(char **where, const char *what, const char *path, struct clip_error **reterr)
{
	char *copy = NULL;
	int r;

	if (path) {
		r = path_check(what, path, path_fault(path), reterr);
		if (r < 0)
			return r;
		copy = strdup(path);
		if (!copy)
			return -ENOMEM;
	}
	free(*where);
	*where = copy;
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_set_root(struct clip_cage_profile *p, const char *path,
			   struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);

	return api_return(set_path(&p->root, "root directory", path, reterr), reterr);
}

CLIP_EXPORT int
clip_cage_profile_set_data_dir(struct clip_cage_profile *p, const char *path,
			       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);

	return api_return(set_path(&p->data_dir, "data directory", path, reterr), reterr);
}

CLIP_EXPORT const char *
clip_cage_profile_get_data_dir(const struct clip_cage_profile *p)
{
	return p ? p->data_dir : NULL;
}

/* A bind of @source (a tmpfs when NULL) at @target: -EINVAL or -E2BIG with what is wrong. */
static int
mount_add(struct clip_cage_profile *p, const char *source, const char *target, bool rw,
	  struct clip_error **reterr)
{
	const char *what = source ? "bind target" : "tmpfs target";
	char shown[CAGE_SHOWN_MAX];
	struct cage_mount *m;
	int r;

	r = source ? path_check("bind source", source, path_fault(source), reterr) : 0;
	if (r >= 0)
		r = path_check(what, target, target_fault(target), reterr);
	if (r < 0)
		return r;
	for (size_t i = 0; i < p->n_mounts; i++)
		if (strcmp(p->mounts[i].target, target) == 0)
			return error_set(reterr, -EINVAL, "%s '%s' is already a %s target", what,
					 cage_shown(target, shown),
					 p->mounts[i].source ? "bind" : "tmpfs");
	if (p->n_mounts >= CLIP_CAGE_BINDS_MAX)
		return error_set(reterr, -E2BIG, "%s '%s': more than %d binds and tmpfs", what,
				 cage_shown(target, shown), CLIP_CAGE_BINDS_MAX);
	m = &p->mounts[p->n_mounts];
	*m = (struct cage_mount){ .rw = rw };
	m->target = strdup(target);
	if (source)
		m->source = strdup(source);
	if (!m->target || (source && !m->source)) {
		free(m->target);
		free(m->source);
		return -ENOMEM;
	}
	p->n_mounts++;
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_add_bind(struct clip_cage_profile *p, const char *source, const char *target,
			   unsigned flags, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(source, reterr, "%s: the source is NULL", __func__);
	cage_assert_arg((flags & ~CLIP_CAGE_BIND_RW) == 0, reterr,
			"%s: flags 0x%x: only CLIP_CAGE_BIND_RW (0x%x) is known", __func__, flags,
			CLIP_CAGE_BIND_RW);

	return api_return(
		mount_add(p, source, target ? target : source, flags & CLIP_CAGE_BIND_RW, reterr),
		reterr);
}

CLIP_EXPORT int
clip_cage_profile_get_bind(const struct clip_cage_profile *p, size_t i, const char **ret_source,
			   const char **ret_target, unsigned *ret_flags)
{
	clip_assert_return(p, -EINVAL);
	for (size_t k = 0; k < p->n_mounts; k++) {
		const struct cage_mount *m = &p->mounts[k];

		if (!m->source || i-- > 0)
			continue;
		if (ret_source)
			*ret_source = m->source;
		if (ret_target)
			*ret_target = m->target;
		if (ret_flags)
			*ret_flags = m->rw ? CLIP_CAGE_BIND_RW : 0;
		return 0;
	}
	return -ENOENT;
}

CLIP_EXPORT int
clip_cage_profile_add_tmpfs(struct clip_cage_profile *p, const char *target,
			    struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(target, reterr, "%s: the target is NULL", __func__);

	return api_return(mount_add(p, NULL, target, true, reterr), reterr);
}

static int
address_parse(const char *text, uint32_t *ret_addr, unsigned *ret_prefix)
{
	char buf[INET_ADDRSTRLEN];
	const char *slash = strchr(text, '/');
	struct in_addr a;
	unsigned prefix = 0;
	size_t n;

	if (!slash || (size_t)(slash - text) >= sizeof(buf))
		return -EINVAL;
	n = (size_t)(slash - text);
	memcpy(buf, text, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -EINVAL;
	/* 1 to 2 digits, no leading zero, 8..30: room for the host's end. */
	if (!isdigit((unsigned char)slash[1]) || slash[1] == '0')
		return -EINVAL;
	for (const char *c = slash + 1; *c; c++) {
		if (!isdigit((unsigned char)*c) || c - slash > 2)
			return -EINVAL;
		prefix = prefix * 10 + (unsigned)(*c - '0');
	}
	if (prefix < 8 || prefix > 30)
		return -EINVAL;
	*ret_addr = a.s_addr;
	*ret_prefix = prefix;
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_set_network(struct clip_cage_profile *p, int mode, const char *address,
			      struct clip_error **reterr)
{
	char shown[CAGE_SHOWN_MAX];
	uint32_t addr = 0;
	unsigned prefix = 0;
	char *copy = NULL;

	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(mode >= CLIP_CAGE_NET_NONE && mode <= CLIP_CAGE_NET_VETH, reterr,
			"%s: mode %d is not CLIP_CAGE_NET_NONE, _LOOPBACK or _VETH", __func__,
			mode);
	cage_assert_arg(mode != CLIP_CAGE_NET_VETH || address, reterr,
			"%s: CLIP_CAGE_NET_VETH needs the cage's address", __func__);
	cage_assert_arg(mode == CLIP_CAGE_NET_VETH || !address, reterr,
			"%s: an address is for CLIP_CAGE_NET_VETH only", __func__);

	if (address) {
		if (address_parse(address, &addr, &prefix) < 0)
			return api_return(error_set(reterr, -EINVAL,
						    "address '%s' is not an IPv4 address with a "
						    "prefix of 8 to 30 bits (10.7.0.2/24)",
						    cage_shown(address, shown)),
					  reterr);
		copy = strdup(address);
		if (!copy)
			return api_return(-ENOMEM, reterr);
	}
	free(p->address);
	p->address = copy;
	p->net_mode = mode;
	p->addr_be = addr;
	p->prefix = prefix;
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_set_limits(struct clip_cage_profile *p, const struct clip_cage_limits *limits,
			     struct clip_error **reterr)
{
	struct clip_cage_limits l;
	int r;

	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(limits, reterr, "%s: the limits are NULL", __func__);

	/*
	 * The caller's version of the struct (the rule of struct_copy_in()):
	 * an older, shorter one leaves the limits it lacks at 0, "no limit";
	 * a newer one may not ask for a limit this version cannot set. The
	 * smallest accepted ends after the CPU quota, as it always did.
	 */
	r = struct_copy_in(&l, sizeof(l), limits, offsetof(struct clip_cage_limits, memory_max),
			   "struct clip_cage_limits", reterr);
	if (r < 0)
		return api_return(r, reterr);
	if (l.cpu_quota_percent > CPU_QUOTA_MAX)
		return api_return(error_set(reterr, -EINVAL,
					    "CPU quota %u%%: more than %d%% (1000 CPUs)",
					    l.cpu_quota_percent, CPU_QUOTA_MAX),
				  reterr);
	p->limits = l;
	return 0;
}

/* "CAP_SYS_ADMIN", "cap_sys_admin" or "sys_admin" -> 21. */
static int
capability_parse(const char *name)
{
	char buf[64];
	size_t n = strnlen(name, sizeof(buf));
	int cap;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	for (size_t i = 0; i <= n; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	cap = capng_name_to_capability(strncmp(buf, "cap_", 4) == 0 ? buf + 4 : buf);
	if (cap < 0 || cap > CAP_MAX)
		return -EINVAL;
	/* libcap-ng also reads numbers; a profile names capabilities. */
	if (isdigit((unsigned char)buf[0]))
		return -EINVAL;
	return cap;
}

CLIP_EXPORT int
clip_cage_profile_add_capability(struct clip_cage_profile *p, const char *name,
				 struct clip_error **reterr)
{
	char shown[CAGE_SHOWN_MAX];
	int cap;

	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(name, reterr, "%s: the name is NULL", __func__);

	cap = capability_parse(name);
	if (cap < 0)
		return api_return(error_set(reterr, -EINVAL,
					    "'%s' is not a capability (CAP_NET_BIND_SERVICE or "
					    "net_bind_service)",
					    cage_shown(name, shown)),
				  reterr);
	p->caps |= UINT64_C(1) << cap;
	return 0;
}

static int
syscall_parse(const char *name)
{
	int nr;

	if (strnlen(name, 64) >= 64 || !name[0])
		return -EINVAL;
	for (const char *c = name; *c; c++)
		if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '_')
			return -EINVAL;
	nr = seccomp_syscall_resolve_name(name);
	/* Negative: unknown, or a pseudo-number for a call this architecture lacks. */
	return nr < 0 ? -EINVAL : nr;
}

CLIP_EXPORT int
clip_cage_profile_add_syscall_deny(struct clip_cage_profile *p, const char *name,
				   struct clip_error **reterr)
{
	char shown[CAGE_SHOWN_MAX];
	int nr;

	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(name, reterr, "%s: the name is NULL", __func__);

	nr = syscall_parse(name);
	if (nr < 0)
		return api_return(error_set(reterr, -EINVAL,
					    "'%s' is not a system call of this architecture",
					    cage_shown(name, shown)),
				  reterr);
	for (size_t i = 0; i < p->n_syscalls; i++)
		if (p->syscalls[i] == nr)
			return 0;
	if (p->n_syscalls >= CLIP_CAGE_SYSCALLS_MAX)
		return api_return(error_set(reterr, -E2BIG,
					    "system call %s: more than %d denied in a profile",
					    name, CLIP_CAGE_SYSCALLS_MAX),
				  reterr);
	p->syscalls[p->n_syscalls++] = nr;
	/* The filter is compiled again on next use. */
	free(p->bpf);
	p->bpf = NULL;
	return 0;
}

/*
 * A base of 65536 host ids: not 0 (root's), a multiple of the range, and
 * below 2^32 - 65536, so that the range neither wraps nor reaches
 * (uid_t)-1, which no process can have.
 */
static bool
uid_base_valid(uint64_t base)
{
	return base != 0 && base % CAGE_UID_RANGE == 0 &&
	       base < (UINT64_C(1) << 32) - CAGE_UID_RANGE;
}

CLIP_EXPORT int
clip_cage_profile_set_uid_base(struct clip_cage_profile *p, uint32_t base,
			       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	if (!uid_base_valid(base))
		return api_return(error_set(reterr, -EINVAL,
					    "uid base %" PRIu32 ": not a non-zero multiple of %u "
					    "below 2^32 - %u (%" PRIu64 ")",
					    base, CAGE_UID_RANGE, CAGE_UID_RANGE,
					    (UINT64_C(1) << 32) - CAGE_UID_RANGE),
				  reterr);

	p->uid_base = base;
	return 0;
}

CLIP_EXPORT uint32_t
clip_cage_profile_get_uid_base(const struct clip_cage_profile *p)
{
	return p ? cage_profile_uid_base(p) : 0;
}

CLIP_EXPORT int
clip_cage_profile_has_uid_base(const struct clip_cage_profile *p)
{
	return p && p->uid_base ? 1 : 0;
}

CLIP_EXPORT int
clip_cage_profile_set_wx(struct clip_cage_profile *p, int on, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(on == 0 || on == 1, reterr, "%s: on is %d, not 1 or 0", __func__, on);

	p->wx = on;
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_set_measure(struct clip_cage_profile *p, int on, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(on == 0 || on == 1, reterr, "%s: on is %d, not 1 or 0", __func__, on);

	p->measure = on;
	return 0;
}

/* @port into the sorted list @ports of @n: 0, or -E2BIG. */
static int
port_insert(uint16_t *ports, size_t *n, uint16_t port)
{
	size_t i = 0;

	while (i < *n && ports[i] < port)
		i++;
	if (i < *n && ports[i] == port)
		return 0;
	if (*n >= CLIP_CAGE_PORTS_MAX)
		return -E2BIG;
	memmove(ports + i + 1, ports + i, (*n - i) * sizeof(ports[0]));
	ports[i] = port;
	(*n)++;
	return 0;
}

static int
port_add(struct clip_cage_profile *p, unsigned kind, unsigned port)
{
	int r = 0;

	if (port == 0 || port > UINT16_MAX)
		return -EINVAL;
	if (kind & CLIP_CAGE_PORT_BIND)
		r = port_insert(p->bind_ports, &p->n_bind_ports, (uint16_t)port);
	if (r == 0 && (kind & CLIP_CAGE_PORT_CONNECT))
		r = port_insert(p->connect_ports, &p->n_connect_ports, (uint16_t)port);
	return r;
}

CLIP_EXPORT int
clip_cage_profile_add_port(struct clip_cage_profile *p, unsigned kind, unsigned port,
			   struct clip_error **reterr)
{
	const unsigned kinds = CLIP_CAGE_PORT_BIND | CLIP_CAGE_PORT_CONNECT;
	int r;

	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	cage_assert_arg(kind != 0 && (kind & ~kinds) == 0, reterr,
			"%s: kind 0x%x is not CLIP_CAGE_PORT_BIND or _CONNECT", __func__, kind);

	r = port_add(p, kind, port);
	if (r == -EINVAL)
		return api_return(error_set(reterr, r, "TCP port %u is not from 1 to 65535", port),
				  reterr);
	if (r < 0)
		return api_return(error_set(reterr, r, "TCP port %u: more than %d ports of a kind",
					    port, CLIP_CAGE_PORTS_MAX),
				  reterr);
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_set_landlock_min_abi(struct clip_cage_profile *p, unsigned abi,
				       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	if (abi > CLIP_CAGE_LANDLOCK_ABI_MAX)
		return api_return(error_set(reterr, -EINVAL,
					    "Landlock ABI %u: libclip knows ABIs 1 to %d", abi,
					    CLIP_CAGE_LANDLOCK_ABI_MAX),
				  reterr);

	p->landlock_min_abi = abi;
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_set_start_timeout(struct clip_cage_profile *p, unsigned seconds,
				    struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	if (seconds > CAGE_START_TIMEOUT_MAX_S)
		return api_return(error_set(reterr, -EINVAL,
					    "start timeout %u s: more than %u s (an hour)", seconds,
					    CAGE_START_TIMEOUT_MAX_S),
				  reterr);

	p->start_timeout_s = seconds == CAGE_START_TIMEOUT_S ? 0 : seconds;
	return 0;
}

unsigned
cage_profile_start_timeout_ms(const struct clip_cage_profile *p)
{
	return (p->start_timeout_s ? p->start_timeout_s : CAGE_START_TIMEOUT_S) * 1000u;
}

/* -- the parser ------------------------------------------------------ */

/* The profile being read. */
static struct clip_cage_profile *
pp(struct ini *ps)
{
	return ps->userdata;
}

/* The next space-separated word of *s, NUL-terminated in place; NULL at the end. */
static char *
next_word(char **s)
{
	char *w = *s, *e;

	while (*w == ' ' || *w == '\t')
		w++;
	if (!*w)
		return NULL;
	e = w;
	while (*e && *e != ' ' && *e != '\t')
		e++;
	if (*e)
		*e++ = '\0';
	*s = e;
	return w;
}

static int
parse_name(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	if (!name_valid(value))
		return ini_error(ps, k, offset, -EINVAL,
				 "'%.40s' is not a name (1 to %d of A-Z a-z 0-9 _ . -)", value,
				 CLIP_CAGE_NAME_MAX);
	pp(ps)->name = strdup(value);
	return pp(ps)->name ? 0 : -ENOMEM;
}

static int
parse_level(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	struct clip_level *level = NULL;
	struct clip_error *e = NULL;
	int r;

	r = clip_level_parse(&level, value, &e);
	if (r == -ENOMEM) {
		clip_error_free(e);
		return r;
	}
	if (r < 0) {
		int at = clip_error_get_offset(e);

		r = ini_error(ps, k, offset + (at > 0 ? (size_t)at : 0), -EINVAL, "%s",
			      clip_error_get_message(e));
		clip_error_free(e);
		return r;
	}
	clip_level_unref(pp(ps)->level);
	pp(ps)->level = level;
	return 0;
}

static int
parse_one_path(struct ini *ps, const struct ini_key *k, char *value, size_t offset, char **where)
{
	if (!path_valid(value))
		return ini_error(
			ps, k, offset, -EINVAL,
			"'%.40s' is not an absolute, normalised path without ':' or spaces", value);
	return set_path(where, k->name, value, NULL);
}

static int
parse_root(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	return parse_one_path(ps, k, value, offset, &pp(ps)->root);
}

static int
parse_data(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	return parse_one_path(ps, k, value, offset, &pp(ps)->data_dir);
}

/* Decimal without sign or leading zero, at most @max. */
static int
parse_u64(const char *s, uint64_t max, uint64_t *ret, const char **end)
{
	uint64_t v = 0;
	const char *c = s;

	if (!isdigit((unsigned char)*c) || (c[0] == '0' && isdigit((unsigned char)c[1])))
		return -EINVAL;
	for (; isdigit((unsigned char)*c); c++) {
		unsigned d = (unsigned)(*c - '0');

		if (v > (max - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*ret = v;
	*end = c;
	return 0;
}

static int
parse_uid_base(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	const char *end;
	uint64_t v;

	if (parse_u64(value, UINT32_MAX, &v, &end) < 0 || *end || !uid_base_valid(v))
		return ini_error(ps, k, offset, -EINVAL,
				 "'%.40s' is not a non-zero multiple of %u below 2^32 - %u", value,
				 CAGE_UID_RANGE, CAGE_UID_RANGE);
	pp(ps)->uid_base = (uint32_t)v;
	return 0;
}

static int
parse_start_timeout(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	const char *end;
	uint64_t v;

	if (parse_u64(value, CAGE_START_TIMEOUT_MAX_S, &v, &end) < 0 || *end || v == 0)
		return ini_error(ps, k, offset, -EINVAL,
				 "'%.40s' is not a number of seconds from 1 to %u", value,
				 CAGE_START_TIMEOUT_MAX_S);
	pp(ps)->start_timeout_s = v == CAGE_START_TIMEOUT_S ? 0 : (unsigned)v;
	return 0;
}

/* One word of a list-valued key: 0, -E2BIG (too many) or -EINVAL. */
typedef int (*word_fn)(struct clip_cage_profile *p, const struct ini_key *k, char *word);

static int
parse_words(struct ini *ps, const struct ini_key *k, char *value, size_t offset, size_t skip,
	    word_fn add, int max, const char *bad)
{
	char *s = value + skip, *w;
	int r;

	while ((w = next_word(&s))) {
		size_t at = offset + (size_t)(w - value);

		r = add(pp(ps), k, w);
		if (r == -E2BIG)
			return ini_error(ps, k, at, r, "more than %d entries", max);
		if (r < 0)
			return ini_error(ps, k, at, r, "'%.40s' %s", w, bad);
	}
	return 0;
}

static int
add_bind(struct clip_cage_profile *p, const struct ini_key *k, char *word)
{
	char *colon = strchr(word, ':');

	if (colon)
		*colon = '\0';
	return mount_add(p, word, colon ? colon + 1 : word, strcmp(k->name, "Bind") == 0, NULL);
}

static int
parse_binds(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	return parse_words(ps, k, value, offset, 0, add_bind, CLIP_CAGE_BINDS_MAX,
			   "is not SOURCE[:TARGET] with absolute, normalised paths, a target not "
			   "/, /proc, /dev or /data, nor one given twice");
}

static int
add_tmpfs(struct clip_cage_profile *p, const struct ini_key *k, char *word)
{
	return mount_add(p, NULL, word, true, NULL);
}

static int
parse_tmpfs(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	return parse_words(ps, k, value, offset, 0, add_tmpfs, CLIP_CAGE_BINDS_MAX,
			   "is not a valid target");
}

static int
parse_net_mode(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	static const char *const modes[] = { "none", "loopback", "veth" };

	for (size_t i = 0; i < ELEMENTSOF(modes); i++)
		if (strcmp(value, modes[i]) == 0) {
			pp(ps)->net_mode = (int)i;
			return 0;
		}
	return ini_error(ps, k, offset, -EINVAL, "'%.40s' is not none, loopback or veth", value);
}

static int
parse_address(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	if (address_parse(value, &pp(ps)->addr_be, &pp(ps)->prefix) < 0)
		return ini_error(ps, k, offset, -EINVAL,
				 "'%.40s' is not an IPv4 address with a prefix of 8 to 30 bits",
				 value);
	pp(ps)->address = strdup(value);
	return pp(ps)->address ? 0 : -ENOMEM;
}

static int
add_port(struct clip_cage_profile *p, const struct ini_key *k, char *word)
{
	const char *end;
	uint64_t v;

	if (parse_u64(word, UINT32_MAX, &v, &end) < 0 || *end || v == 0 || v > UINT16_MAX)
		return -EINVAL;
	return port_add(p,
			strcmp(k->name, "TCPBindPorts") == 0 ? CLIP_CAGE_PORT_BIND
							     : CLIP_CAGE_PORT_CONNECT,
			(unsigned)v);
}

static int
parse_ports(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	return parse_words(ps, k, value, offset, 0, add_port, CLIP_CAGE_PORTS_MAX,
			   "is not a TCP port from 1 to 65535");
}

static int
parse_memory(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	static const char units[] = "KMGT";
	const char *end, *u;
	uint64_t v, mult = 1;

	if (parse_u64(value, UINT64_MAX, &v, &end) < 0)
		goto bad;
	if (*end) {
		u = strchr(units, *end);
		if (!u || !*u || end[1])
			goto bad;
		for (const char *x = units; x <= u; x++)
			mult *= 1024;
	}
	if (v == 0 || v > UINT64_MAX / mult || v * mult < 4096 * 16)
		goto bad;
	pp(ps)->limits.memory_max = v * mult;
	return 0;
bad:
	return ini_error(ps, k, offset, -EINVAL,
			 "'%.40s' is not a size of at least 64K (bytes, or with K, M, G, T)",
			 value);
}

static int
parse_tasks(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	const char *end;
	uint64_t v;

	if (parse_u64(value, 4194304, &v, &end) < 0 || *end || v == 0)
		return ini_error(ps, k, offset, -EINVAL,
				 "'%.40s' is not a number from 1 to 4194304", value);
	pp(ps)->limits.tasks_max = v;
	return 0;
}

static int
parse_cpu(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	const char *end;
	uint64_t v;

	if (parse_u64(value, CPU_QUOTA_MAX, &v, &end) < 0 || strcmp(end, "%") != 0 || v == 0)
		return ini_error(ps, k, offset, -EINVAL,
				 "'%.40s' is not a percentage from 1%% to %d%%", value,
				 CPU_QUOTA_MAX);
	pp(ps)->limits.cpu_quota_percent = (uint32_t)v;
	return 0;
}

static int
add_cap(struct clip_cage_profile *p, const struct ini_key *k, char *word)
{
	return clip_cage_profile_add_capability(p, word, NULL);
}

static int
parse_caps(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	return parse_words(ps, k, value, offset, 0, add_cap, CAP_MAX + 1, "is not a capability");
}

static int
add_syscall(struct clip_cage_profile *p, const struct ini_key *k, char *word)
{
	return clip_cage_profile_add_syscall_deny(p, word, NULL);
}

static int
parse_syscalls(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	if (value[0] != '~')
		return ini_error(ps, k, offset, -EINVAL,
				 "only additions to the deny-list are supported: write ~NAME...");
	return parse_words(ps, k, value, offset, 1, add_syscall, CLIP_CAGE_SYSCALLS_MAX,
			   "is not a system call of this architecture");
}

static int
parse_yes_no(struct ini *ps, const struct ini_key *k, char *value, size_t offset, bool *where)
{
	if (strcmp(value, "yes") == 0)
		*where = true;
	else if (strcmp(value, "no") == 0)
		*where = false;
	else
		return ini_error(ps, k, offset, -EINVAL, "'%.40s' is not yes or no", value);
	return 0;
}

static int
parse_wx(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	return parse_yes_no(ps, k, value, offset, &pp(ps)->wx);
}

static int
parse_measure(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	return parse_yes_no(ps, k, value, offset, &pp(ps)->measure);
}

static int
parse_landlock_abi(struct ini *ps, const struct ini_key *k, char *value, size_t offset)
{
	const char *end;
	uint64_t v;

	if (parse_u64(value, 255, &v, &end) < 0 || *end || v == 0 || v > CLIP_CAGE_LANDLOCK_ABI_MAX)
		return ini_error(ps, k, offset, -EINVAL,
				 "'%.40s' is not a Landlock ABI from 1 to %d", value,
				 CLIP_CAGE_LANDLOCK_ABI_MAX);
	pp(ps)->landlock_min_abi = (unsigned)v;
	return 0;
}

static const struct ini_key keys[] = {
	{ SECTION_CAGE, "Name", parse_name, false },
	{ SECTION_CAGE, "Level", parse_level, false },
	{ SECTION_CAGE, "Root", parse_root, false },
	{ SECTION_CAGE, "DataDirectory", parse_data, false },
	{ SECTION_CAGE, "UidBase", parse_uid_base, false },
	{ SECTION_CAGE, "StartTimeoutSec", parse_start_timeout, false },
	{ SECTION_FILES, "BindReadOnly", parse_binds, false },
	{ SECTION_FILES, "Bind", parse_binds, false },
	{ SECTION_FILES, "TemporaryFileSystem", parse_tmpfs, false },
	{ SECTION_NETWORK, "Mode", parse_net_mode, false },
	{ SECTION_NETWORK, "Address", parse_address, false },
	{ SECTION_NETWORK, "TCPBindPorts", parse_ports, false },
	{ SECTION_NETWORK, "TCPConnectPorts", parse_ports, false },
	{ SECTION_LIMITS, "MemoryMax", parse_memory, false },
	{ SECTION_LIMITS, "TasksMax", parse_tasks, false },
	{ SECTION_LIMITS, "CPUQuota", parse_cpu, false },
	{ SECTION_SECURITY, "Capability", parse_caps, false },
	{ SECTION_SECURITY, "SystemCallFilter", parse_syscalls, false },
	{ SECTION_SECURITY, "WriteXorExecute", parse_wx, false },
	{ SECTION_SECURITY, "Measure", parse_measure, false },
	{ SECTION_SECURITY, "LandlockMinimumABI", parse_landlock_abi, false },
};

static int
profile_parse(struct clip_cage_profile **ret, const char *filename, const char *untrusted_data,
	      size_t size, struct clip_error **reterr)
{
	_cleanup_(clip_cage_profile_unrefp) struct clip_cage_profile *p = NULL;
	struct ini ps = {
		.filename = filename ? filename : "profile",
		.what = "profiles",
		.sections = section_names,
		.n_sections = _SECTION_MAX,
		.keys = keys,
		.n_keys = ELEMENTSOF(keys),
		.reterr = reterr,
	};
	int r;

	if (size > CLIP_CAGE_PROFILE_SIZE_MAX)
		return error_setf(reterr, -E2BIG, CLIP_CAGE_PROFILE_SIZE_MAX,
				  "%s: longer than %d bytes", ps.filename,
				  CLIP_CAGE_PROFILE_SIZE_MAX);
	p = ps.userdata = profile_alloc();
	if (!p)
		return -ENOMEM;
	r = ini_parse(&ps, untrusted_data, size);
	if (r < 0)
		return r;
	if (!p->name)
		return error_setf(reterr, -EINVAL, (int)size, "%s: no Name= in [Cage]",
				  ps.filename);
	if ((p->net_mode == CLIP_CAGE_NET_VETH) != !!p->address)
		return error_setf(reterr, -EINVAL, (int)size,
				  "%s: [Network] Address= is needed with Mode=veth, and only then",
				  ps.filename);
	if (p->net_mode == CLIP_CAGE_NET_NONE && (p->n_bind_ports || p->n_connect_ports))
		return error_setf(reterr, -EINVAL, (int)size,
				  "%s: [Network] TCPBindPorts= and TCPConnectPorts= need "
				  "Mode=loopback or veth",
				  ps.filename);
	*ret = steal_ptr(p);
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_parse(struct clip_cage_profile **ret, const char *filename, const char *data,
			size_t size, struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(ret, reterr, "%s: ret is NULL", __func__);
	cage_assert_arg(data || size == 0, reterr, "%s: data is NULL and size is %zu", __func__,
			size);

	return api_return(profile_parse(ret, filename, data ? data : "", size, reterr), reterr);
}

static int
profile_load(struct clip_cage_profile **ret, int fd, const char *filename,
	     struct clip_error **reterr)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t n = 0;
	int r;

	if (fstat(fd, &st) < 0)
		return error_set_errno(reterr, -errno, "%s: fd %d", filename, fd);
	if (!S_ISREG(st.st_mode))
		return error_set(reterr, -EMEDIUMTYPE, "%s: not a regular file", filename);
	r = ini_read_fd(fd, CLIP_CAGE_PROFILE_SIZE_MAX, filename, &buf, &n, reterr);
	if (r < 0)
		return r;
	return profile_parse(ret, filename, buf, n, reterr);
}

CLIP_EXPORT int
clip_cage_profile_load(struct clip_cage_profile **ret, int fd, const char *filename,
		       struct clip_error **reterr)
{
	clip_assert_reterr(reterr);
	cage_assert_arg(ret, reterr, "%s: ret is NULL", __func__);
	clip_assert_return(fd >= 0,
			   api_return(error_set(reterr, -EBADF,
						"%s: fd %d is not a file descriptor", __func__, fd),
				      reterr));

	return api_return(profile_load(ret, fd, filename ? filename : "profile", reterr), reterr);
}

/* -- the formatter --------------------------------------------------- */

static int
cmp_target(const void *a, const void *b)
{
	const struct cage_mount *const *x = a, *const *y = b;

	return strcmp((*x)->target, (*y)->target);
}

void
cage_profile_sorted_mounts(const struct clip_cage_profile *p,
			   const struct cage_mount *sorted[CLIP_CAGE_BINDS_MAX])
{
	for (size_t i = 0; i < p->n_mounts; i++)
		sorted[i] = &p->mounts[i];
	qsort(sorted, p->n_mounts, sizeof(sorted[0]), cmp_target);
}

static int
cmp_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* In the order of their targets: the order of the file does not show (canonical text). */
static void
format_mounts(FILE *f, const struct clip_cage_profile *p, const char *key, int kind)
{
	const struct cage_mount *sorted[CLIP_CAGE_BINDS_MAX];
	bool first = true;

	cage_profile_sorted_mounts(p, sorted);
	for (size_t i = 0; i < p->n_mounts; i++) {
		const struct cage_mount *m = sorted[i];
		int k = !m->source ? 2 : m->rw ? 1 : 0;

		if (k != kind)
			continue;
		fprintf(f, "%s%s", first ? key : " ", m->source ? m->source : m->target);
		if (m->source && strcmp(m->source, m->target) != 0)
			fprintf(f, ":%s", m->target);
		first = false;
	}
	if (!first)
		fputc('\n', f);
}

/* Sorted, each once (port_insert()): canonical text. */
static void
format_ports(FILE *f, const char *key, const uint16_t *ports, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%u", i ? " " : key, ports[i]);
	if (n)
		fputc('\n', f);
}

static int
profile_format(const struct clip_cage_profile *p, char **ret)
{
	static const char *const modes[] = { "none", "loopback", "veth" };
	_cleanup_free_ char *level = NULL;
	char *text = NULL;
	size_t size = 0;
	FILE *f;
	int r;

	r = clip_level_format(p->level, &level);
	if (r < 0)
		return r;
	f = open_memstream(&text, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "[Cage]\nName=%s\nLevel=%s\n", p->name, level);
	if (p->root)
		fprintf(f, "Root=%s\n", p->root);
	if (p->data_dir)
		fprintf(f, "DataDirectory=%s\n", p->data_dir);
	if (p->uid_base)
		fprintf(f, "UidBase=%u\n", p->uid_base);
	if (p->start_timeout_s)
		fprintf(f, "StartTimeoutSec=%u\n", p->start_timeout_s);
	fputs("\n[Files]\n", f);
	format_mounts(f, p, "BindReadOnly=", 0);
	format_mounts(f, p, "Bind=", 1);
	format_mounts(f, p, "TemporaryFileSystem=", 2);
	fprintf(f, "\n[Network]\nMode=%s\n", modes[p->net_mode]);
	if (p->address)
		fprintf(f, "Address=%s\n", p->address);
	format_ports(f, "TCPBindPorts=", p->bind_ports, p->n_bind_ports);
	format_ports(f, "TCPConnectPorts=", p->connect_ports, p->n_connect_ports);
	fputs("\n[Limits]\n", f);
	if (p->limits.memory_max)
		fprintf(f, "MemoryMax=%llu\n", (unsigned long long)p->limits.memory_max);
	if (p->limits.tasks_max)
		fprintf(f, "TasksMax=%llu\n", (unsigned long long)p->limits.tasks_max);
	if (p->limits.cpu_quota_percent)
		fprintf(f, "CPUQuota=%u%%\n", p->limits.cpu_quota_percent);
	fputs("\n[Security]\n", f);
	if (p->caps) {
		const char *sep = "Capability=";

		for (unsigned c = 0; c <= CAP_MAX; c++) {
			if (!(p->caps & (UINT64_C(1) << c)))
				continue;
			fprintf(f, "%scap_%s", sep, capng_capability_to_name(c));
			sep = " ";
		}
		fputc('\n', f);
	}
	if (p->n_syscalls) {
		/* Sorted by name, like the capabilities: canonical text. */
		char *names[CLIP_CAGE_SYSCALLS_MAX];
		size_t n = 0;

		for (size_t i = 0; i < p->n_syscalls; i++) {
			names[n] =
				seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, p->syscalls[i]);
			if (!names[n]) {
				r = -ENOMEM;
				break;
			}
			n++;
		}
		qsort(names, n, sizeof(names[0]), cmp_string);
		fputs("SystemCallFilter=~", f);
		for (size_t i = 0; i < n; i++) {
			fprintf(f, "%s%s", i ? " " : "", names[i]);
			free(names[i]);
		}
		fputc('\n', f);
	}
	fprintf(f, "WriteXorExecute=%s\n", p->wx ? "yes" : "no");
	fprintf(f, "Measure=%s\n", p->measure ? "yes" : "no");
	/* Only when set: the canonical text of a profile without it is unchanged. */
	if (p->landlock_min_abi)
		fprintf(f, "LandlockMinimumABI=%u\n", p->landlock_min_abi);
	if (fclose(f) != 0 || r < 0) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	return 0;
}

CLIP_EXPORT int
clip_cage_profile_format(const struct clip_cage_profile *p, char **ret)
{
	clip_assert_return(p && ret, -EINVAL);
	return profile_format(p, ret);
}

/*
 * A copy through the canonical text: whatever a profile holds, the text
 * holds (it is what the TPM measures), so the copy cannot miss a member
 * that a later version adds.
 */
CLIP_EXPORT int
clip_cage_profile_dup(struct clip_cage_profile **ret, const struct clip_cage_profile *p,
		      const char *name, struct clip_error **reterr)
{
	_cleanup_free_ char *text = NULL, *renamed = NULL;
	const char *rest;
	int r;

	clip_assert_reterr(reterr);
	cage_assert_arg(ret, reterr, "%s: ret is NULL", __func__);
	cage_assert_arg(p, reterr, "%s: the profile is NULL", __func__);
	if (name) {
		r = cage_name_check(name, reterr);
		if (r < 0)
			return api_return(r, reterr);
	}
	r = profile_format(p, &text);
	if (r < 0)
		return api_return(r, reterr);
	/* The text starts "[Cage]\nName=NAME\n" (profile_format()). */
	rest = strchr(text + sizeof("[Cage]\nName=") - 1, '\n');
	if (!rest)
		return api_return(-EFAULT, reterr);
	if (asprintf(&renamed, "[Cage]\nName=%s%s", name ? name : p->name, rest) < 0)
		return api_return(-ENOMEM, reterr);
	r = clip_cage_profile_parse(ret, p->name, renamed, strlen(renamed), reterr);
	return api_return(r == -EINVAL ? -EFAULT : r, reterr);
}
