/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cage profiles: every refusal of the parser names file, line and key;
 * the builder refuses the same things; the canonical text reads back to
 * itself; the seccomp filter compiles once. Then the lifecycle through the
 * API: start, spawn, wait, signal, stop, and the misuse of each.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <syslog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <seccomp.h>

#include <clip/tpm.h>

#include "cage/cage-internal.h"
#include "config.h"
#include "helpers.h"
#include "base/util.h"

static const char valid[] = "# a full profile\n"
			    "[Cage]\n"
			    "Name=secret-1\n"
			    "Level = s2:c1.c3\n"
			    "Root=/srv/root\n"
			    "DataDirectory=/var/lib/clip/s2\n"
			    "UidBase=655360\n"
			    "StartTimeoutSec=5\n"
			    "\n"
			    "[Files]\n"
			    "BindReadOnly=/opt /usr/share/doc:/doc\n"
			    "Bind=/var/spool/x:/spool\n"
			    "TemporaryFileSystem=/var/tmp /home\n"
			    "[Network]\n"
			    "Mode=veth\n"
			    "Address=10.7.0.2/24\n"
			    "[Limits]\n"
			    "MemoryMax=512M\n"
			    "TasksMax=100\n"
			    "CPUQuota=50%\n"
			    "[Security]\n"
			    "; comment\n"
			    "Capability=CAP_NET_BIND_SERVICE chown\n"
			    "SystemCallFilter=~mknod chmod\n"
			    "WriteXorExecute=yes\n";

static struct clip_cage_profile *
parse_ok(const char *text)
{
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL;
	int r = clip_cage_profile_parse(&p, "t.cage", text, strlen(text), &e);

	cr_assert_eq(r, 0, "parse failed: %s", clip_error_get_message(e));
	return p;
}

/* @expr, which fills e, fails with @err and a message that contains @want. */
#define assert_refused(expr, err, want) \
	do { \
		assert_errno(expr, err); \
		cr_assert(e &&strstr(clip_error_get_message(e), want), \
			  "%s: message '%s', want '%s'", #expr, \
			  e ? clip_error_get_message(e) : "(none)", want); \
		e = clip_error_free(e); \
	} while (0)

Test(cage_profile, valid_full)
{
	struct clip_cage_profile *p = parse_ok(valid);
	char *text = NULL;

	cr_assert_str_eq(clip_cage_profile_get_name(p), "secret-1");
	cr_assert_eq(clip_level_get_sensitivity(clip_cage_profile_get_level(p)), 2);
	cr_assert_str_eq(p->root, "/srv/root");
	cr_assert_str_eq(p->data_dir, "/var/lib/clip/s2");
	cr_assert_eq(p->uid_base, 655360);
	cr_assert_eq(cage_profile_uid_base(p), 655360);
	cr_assert_eq(cage_profile_start_timeout_ms(p), 5000);
	cr_assert_eq(p->n_mounts, 5);
	cr_assert_str_eq(p->mounts[1].target, "/doc");
	cr_assert_eq(p->mounts[2].rw, true);
	cr_assert_null(p->mounts[3].source);
	cr_assert_eq(p->net_mode, CLIP_CAGE_NET_VETH);
	cr_assert_eq(p->prefix, 24);
	cr_assert_eq(p->limits.memory_max, 512ull << 20);
	cr_assert_eq(p->limits.tasks_max, 100);
	cr_assert_eq(p->limits.cpu_quota_percent, 50);
	cr_assert_eq(p->caps, (1ull << 10) | (1ull << 0));
	cr_assert_eq(p->n_syscalls, 2);
	cr_assert(p->wx);
	cr_assert_eq(clip_cage_profile_format(p, &text), 0);
	cr_assert(strstr(text, "Capability=cap_chown cap_net_bind_service\n"), "%s", text);
	/* Sorted by target: /doc before /opt. */
	cr_assert(strstr(text, "BindReadOnly=/usr/share/doc:/doc /opt\n"), "%s", text);
	cr_assert(strstr(text, "SystemCallFilter=~chmod mknod\n"), "%s", text);
	cr_assert(strstr(text, "WriteXorExecute=yes\nMeasure=no\n"), "%s", text);
	cr_assert(strstr(text, "UidBase=655360\nStartTimeoutSec=5\n"), "%s", text);
	free(text);
	clip_cage_profile_unref(p);
}

Test(cage_profile, format_reads_back)
{
	struct clip_cage_profile *p = parse_ok(valid), *q;
	char *a = NULL, *b = NULL;

	cr_assert_eq(clip_cage_profile_format(p, &a), 0);
	q = parse_ok(a);
	cr_assert_eq(clip_cage_profile_format(q, &b), 0);
	cr_assert_str_eq(a, b);
	free(a);
	free(b);
	clip_cage_profile_unref(p);
	clip_cage_profile_unref(q);
}

Test(cage_profile, minimal_defaults)
{
	struct clip_cage_profile *p = parse_ok("[Cage]\nName=a\n");

	cr_assert_eq(clip_level_get_sensitivity(p->level), 0);
	cr_assert_eq(p->net_mode, CLIP_CAGE_NET_NONE);
	cr_assert_eq(p->caps, 0);
	cr_assert_not(p->wx);
	cr_assert_not(p->measure);
	/* Derived uid ranges: aligned, in systemd's container range. */
	cr_assert_eq(cage_profile_uid_base(p) % CAGE_UID_RANGE, 0);
	cr_assert_geq(cage_profile_uid_base(p), CAGE_UID_BASE_MIN);
	clip_cage_profile_unref(p);
}

Test(cage_profile, measure_accepted_values)
{
	struct clip_cage_profile *p = parse_ok("[Cage]\nName=a\n[Security]\nMeasure=yes\n");
	struct clip_cage_profile *q = parse_ok("[Security]\nMeasure = no\n[Cage]\nName=a\n");
	char *text = NULL;

	cr_assert(p->measure);
	cr_assert_not(q->measure);
	cr_assert_eq(clip_cage_profile_format(p, &text), 0);
	cr_assert(strstr(text, "\nMeasure=yes\n"), "%s", text);
	free(text);
	cr_assert_eq(clip_cage_profile_format(q, &text), 0);
	cr_assert(strstr(text, "\nMeasure=no\n"), "%s", text);
	free(text);
	/* The builder says the same. */
	cr_assert_eq(clip_cage_profile_set_measure(q, 1, NULL), 0);
	cr_assert(q->measure);
	cr_assert_eq(clip_cage_profile_set_measure(q, 0, NULL), 0);
	cr_assert_not(q->measure);
	clip_cage_profile_unref(p);
	clip_cage_profile_unref(q);
}

/* What a cage with Measure=yes measures: the same for the same profile, however written. */
Test(cage_profile, format_is_canonical)
{
	static const char a[] =
		"[Cage]\nName=c\nLevel=s2:c1,c3\n"
		"[Files]\nBindReadOnly=/opt /usr/share/doc:/doc\n"
		"Bind=/srv/b:/b /srv/a:/a\nTemporaryFileSystem=/var/tmp /home\n"
		"[Network]\nMode=loopback\nTCPBindPorts=8080 443\nTCPConnectPorts=53\n"
		"[Limits]\nMemoryMax=1G\nTasksMax=10\n"
		"[Security]\nCapability=CAP_NET_BIND_SERVICE chown\n"
		"SystemCallFilter=~mknod chmod\nWriteXorExecute=yes\nMeasure=yes\n"
		"LandlockMinimumABI=6\n";
	static const char b[] = "# the same profile, written otherwise\n"
				"[Security]\n  Measure = yes\n"
				"SystemCallFilter =~chmod   mknod mknod\n"
				"Capability=cap_chown\tnet_bind_service\n"
				"WriteXorExecute=yes\nLandlockMinimumABI = 6\n\n"
				"[Limits]\nTasksMax=10\nMemoryMax=1048576K\n"
				"[Files]\nTemporaryFileSystem=/home /var/tmp\n"
				"Bind=/srv/a:/a\t/srv/b:/b\n"
				"BindReadOnly=/usr/share/doc:/doc /opt\n"
				"; comment\n[Network]\nMode = loopback\nTCPConnectPorts=53 53\n"
				"TCPBindPorts=443\t8080 443\n"
				"[Cage]\nLevel=s2:c1,c3\nName=c";
	struct clip_cage_profile *p = parse_ok(a), *q = parse_ok(b);
	char *ta = NULL, *tb = NULL;

	cr_assert_eq(clip_cage_profile_format(p, &ta), 0);
	cr_assert_eq(clip_cage_profile_format(q, &tb), 0);
	cr_assert_str_eq(ta, tb);
	cr_assert(strstr(ta, "Bind=/srv/a:/a /srv/b:/b\n"), "%s", ta);
	cr_assert(strstr(ta, "TemporaryFileSystem=/home /var/tmp\n"), "%s", ta);
	cr_assert(strstr(ta, "TCPBindPorts=443 8080\nTCPConnectPorts=53\n"), "%s", ta);
	cr_assert(strstr(ta, "LandlockMinimumABI=6\n"), "%s", ta);
	free(ta);
	free(tb);
	clip_cage_profile_unref(p);
	clip_cage_profile_unref(q);
}

struct refusal {
	const char *text;
	int error;
	const char *message; /* a substring of the message */
	int offset; /* -1: not checked */
};

#define H "[Cage]\nName=a\n"
static const struct refusal refusals[] = {
	{ "", -EINVAL, "t.cage: no Name= in [Cage]", -1 },
	{ "[Cage]\n", -EINVAL, "no Name=", -1 },
	{ "Name=a\n", -EINVAL, "t.cage:1: a key before any section", 0 },
	{ "[Cage]\nName=a\nName=b\n", -EINVAL, "t.cage:3: [Cage] Name: given twice", 14 },
	{ H "Colour=blue\n", -EINVAL, "t.cage:3: [Cage] has no key 'Colour'", 14 },
	{ H "[Cage]\n", -EINVAL, "t.cage:3: section [Cage] given twice", 14 },
	{ H "[Other]\n", -EINVAL, "t.cage:3: unknown section [Other]", -1 },
	{ H "[Files\n", -EINVAL, "a section header is", -1 },
	{ H "just words\n", -EINVAL, "t.cage:3: expected", -1 },
	{ "[Cage]\nName=a b\n", -EINVAL, "[Cage] Name: 'a b' is not a name", 12 },
	{ "[Cage]\nName=.a\n", -EINVAL, "[Cage] Name:", -1 },
	{ "[Cage]\nName=abcdefghijabcdefghijabcdefghijabc\n", -EINVAL, "[Cage] Name:", -1 },
	{ "[Cage]\nName=\n", -EINVAL, "t.cage:2: [Cage] Name: empty value", 12 },
	{ H "Level=s16\n", -EINVAL, "t.cage:3: [Cage] Level:", -1 },
	{ H "Level=s1:c2,c1\n", -EINVAL, "[Cage] Level:", -1 },
	{ H "Root=relative\n", -EINVAL, "t.cage:3: [Cage] Root: 'relative' is not", 19 },
	{ H "Root=/a/../b\n", -EINVAL, "[Cage] Root:", -1 },
	{ H "Root=/a/\n", -EINVAL, "[Cage] Root:", -1 },
	{ H "Root=/a//b\n", -EINVAL, "[Cage] Root:", -1 },
	{ H "Root=/a/./b\n", -EINVAL, "[Cage] Root:", -1 },
	{ H "DataDirectory=/a:b\n", -EINVAL, "[Cage] DataDirectory:", -1 },
	{ H "UidBase=1000\n", -EINVAL, "[Cage] UidBase: '1000' is not a non-zero multiple", -1 },
	{ H "UidBase=0\n", -EINVAL, "[Cage] UidBase:", -1 },
	{ H "UidBase=4294901760\n", -EINVAL, "[Cage] UidBase:", -1 },
	{ H "UidBase=065536\n", -EINVAL, "[Cage] UidBase:", -1 },
	{ H "StartTimeoutSec=0\n", -EINVAL,
	  "t.cage:3: [Cage] StartTimeoutSec: '0' is not a number of seconds from 1 to 3600", 30 },
	{ H "StartTimeoutSec=3601\n", -EINVAL, "[Cage] StartTimeoutSec:", -1 },
	{ H "StartTimeoutSec=5s\n", -EINVAL, "[Cage] StartTimeoutSec:", -1 },
	{ H "StartTimeoutSec=-1\n", -EINVAL, "[Cage] StartTimeoutSec:", -1 },
	{ H "[Files]\nBindReadOnly=/a:/proc/x\n", -EINVAL, "t.cage:4: [Files] BindReadOnly:", -1 },
	{ H "[Files]\nBind=/a:/\n", -EINVAL, "[Files] Bind: '/a' is not SOURCE[:TARGET]", -1 },
	{ H "[Files]\nBind=/a:/dev/shm\n", -EINVAL, "[Files] Bind:", -1 },
	{ H "[Files]\nBind=/a:/data\n", -EINVAL, "[Files] Bind:", -1 },
	{ H "[Files]\nBind=/x /y:/x\n", -EINVAL, "[Files] Bind: '/y'", 30 },
	{ H "[Files]\nBind=a\n", -EINVAL, "[Files] Bind:", -1 },
	{ H "[Files]\nTemporaryFileSystem=/proc\n", -EINVAL, "[Files] TemporaryFileSystem:", -1 },
	{ H "[Network]\nMode=bridge\n", -EINVAL, "[Network] Mode: 'bridge' is not none", -1 },
	{ H "[Network]\nMode=veth\n", -EINVAL, "Address= is needed with Mode=veth", -1 },
	{ H "[Network]\nAddress=10.0.0.1/24\n", -EINVAL, "Address= is needed", -1 },
	{ H "[Network]\nMode=veth\nAddress=10.0.0.1\n", -EINVAL, "[Network] Address:", -1 },
	{ H "[Network]\nMode=veth\nAddress=10.0.0.256/24\n", -EINVAL, "[Network] Address:", -1 },
	{ H "[Network]\nMode=veth\nAddress=10.0.0.1/31\n", -EINVAL, "[Network] Address:", -1 },
	{ H "[Network]\nMode=veth\nAddress=10.0.0.1/024\n", -EINVAL, "[Network] Address:", -1 },
	/* TCP ports for Landlock (issue 21): each refusal with its message. */
	{ H "[Network]\nMode=loopback\nTCPBindPorts=0\n", -EINVAL,
	  "t.cage:5: [Network] TCPBindPorts: '0' is not a TCP port from 1 to 65535", 51 },
	{ H "[Network]\nMode=loopback\nTCPConnectPorts=65536\n", -EINVAL,
	  "[Network] TCPConnectPorts: '65536' is not a TCP port from 1 to 65535", -1 },
	{ H "[Network]\nMode=loopback\nTCPBindPorts=80 http\n", -EINVAL,
	  "[Network] TCPBindPorts: 'http' is not a TCP port", -1 },
	{ H "[Network]\nMode=loopback\nTCPBindPorts=080\n", -EINVAL,
	  "[Network] TCPBindPorts: '080' is not a TCP port", -1 },
	{ H "[Network]\nMode=loopback\nTCPBindPorts=-1\n", -EINVAL,
	  "[Network] TCPBindPorts: '-1' is not a TCP port", -1 },
	{ H "[Network]\nMode=loopback\nTCPConnectPorts=8000-8080\n", -EINVAL,
	  "[Network] TCPConnectPorts: '8000-8080' is not a TCP port", -1 },
	{ H "[Network]\nMode=loopback\nTCPBindPorts=\n", -EINVAL,
	  "[Network] TCPBindPorts: empty value", -1 },
	{ H "[Network]\nMode=loopback\nTCPBindPorts=80\nTCPBindPorts=81\n", -EINVAL,
	  "t.cage:6: [Network] TCPBindPorts: given twice", -1 },
	{ H "[Network]\nTCPBindPorts=80\n", -EINVAL,
	  "t.cage: [Network] TCPBindPorts= and TCPConnectPorts= need Mode=loopback or veth", -1 },
	{ H "[Network]\nMode=none\nTCPConnectPorts=80\n", -EINVAL,
	  "TCPConnectPorts= need Mode=loopback or veth", -1 },
	{ H "[Security]\nLandlockMinimumABI=0\n", -EINVAL,
	  "t.cage:4: [Security] LandlockMinimumABI: '0' is not a Landlock ABI from 1 to 7", -1 },
	{ H "[Security]\nLandlockMinimumABI=8\n", -EINVAL,
	  "[Security] LandlockMinimumABI: '8' is not a Landlock ABI from 1 to 7", -1 },
	{ H "[Security]\nLandlockMinimumABI=v6\n", -EINVAL, "[Security] LandlockMinimumABI: 'v6'",
	  -1 },
	{ H "[Limits]\nMemoryMax=1K\n", -EINVAL, "[Limits] MemoryMax: '1K' is not a size", -1 },
	{ H "[Limits]\nMemoryMax=12Q\n", -EINVAL, "[Limits] MemoryMax:", -1 },
	{ H "[Limits]\nMemoryMax=99999999999999999999\n", -EINVAL, "[Limits] MemoryMax:", -1 },
	{ H "[Limits]\nMemoryMax=20000000T\n", -EINVAL, "[Limits] MemoryMax:", -1 },
	{ H "[Limits]\nMemoryMax=-1\n", -EINVAL, "[Limits] MemoryMax:", -1 },
	{ H "[Limits]\nTasksMax=0\n", -EINVAL, "[Limits] TasksMax:", -1 },
	{ H "[Limits]\nTasksMax=4194305\n", -EINVAL, "[Limits] TasksMax:", -1 },
	{ H "[Limits]\nCPUQuota=50\n", -EINVAL, "[Limits] CPUQuota:", -1 },
	{ H "[Limits]\nCPUQuota=0%\n", -EINVAL, "[Limits] CPUQuota:", -1 },
	{ H "[Limits]\nCPUQuota=100001%\n", -EINVAL, "[Limits] CPUQuota:", -1 },
	{ H "[Security]\nCapability=CAP_FLY\n", -EINVAL, "[Security] Capability: 'CAP_FLY'", -1 },
	{ H "[Security]\nCapability=21\n", -EINVAL, "[Security] Capability:", -1 },
	{ H "[Security]\nSystemCallFilter=mount\n", -EINVAL, "only additions to the deny-list",
	  -1 },
	{ H "[Security]\nSystemCallFilter=~no_such_call\n", -EINVAL,
	  "[Security] SystemCallFilter: 'no_such_call'", -1 },
	{ H "[Security]\nSystemCallFilter=~MOUNT\n", -EINVAL, "SystemCallFilter:", -1 },
	{ H "[Security]\nWriteXorExecute=maybe\n", -EINVAL, "[Security] WriteXorExecute:", -1 },
	{ H "[Security]\nwritexorexecute=yes\n", -EINVAL, "has no key 'writexorexecute'", -1 },
	{ H "[Security]\nMeasure=maybe\n", -EINVAL,
	  "t.cage:4: [Security] Measure: 'maybe' is not yes or no", 33 },
	{ H "[Security]\nMeasure=Yes\n", -EINVAL, "[Security] Measure: 'Yes' is not yes or no",
	  -1 },
	{ H "[Security]\nMeasure=1\n", -EINVAL, "[Security] Measure: '1' is not yes or no", -1 },
	{ H "[Security]\nMeasure=yes please\n", -EINVAL, "[Security] Measure:", -1 },
	{ H "[Security]\nMeasure=\n", -EINVAL, "[Security] Measure: empty value", -1 },
	{ H "[Security]\nMeasure=yes\nMeasure=no\n", -EINVAL,
	  "t.cage:5: [Security] Measure: given twice", -1 },
	{ H "[Security]\nmeasure=yes\n", -EINVAL, "has no key 'measure'", -1 },
	{ H "Measure=yes\n", -EINVAL, "t.cage:3: [Cage] has no key 'Measure'", -1 },
	{ H "Level=s1\rx\n", -EINVAL, "t.cage:3: control character 0x0d", 22 },
	{ H "Level=s1\0\n", -EINVAL, "control character 0x00", -1 },
	{ H "Level=s\xc3\xa9\n", -EINVAL, "profiles are ASCII", -1 },
};

Test(cage_profile, refusals)
{
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		const struct refusal *t = &refusals[i];
		struct clip_cage_profile *p = NULL;
		struct clip_error *e = NULL;
		/* Embedded NULs count: the length is the literal's, up to its last newline. */
		size_t n = strlen(t->text);
		int r;

		if (strstr(t->message, "0x00"))
			n += strlen(t->text + n + 1) + 1;
		r = clip_cage_profile_parse(&p, "t.cage", t->text, n, &e);
		cr_expect_eq(r, t->error, "#%zu: got %d for %s", i, r, t->text);
		cr_expect_null(p, "#%zu: profile set on failure", i);
		cr_expect(strstr(clip_error_get_message(e), t->message),
			  "#%zu: message '%s', want '%s'", i, clip_error_get_message(e),
			  t->message);
		if (t->offset >= 0)
			cr_expect_eq(clip_error_get_offset(e), t->offset,
				     "#%zu: offset %d, want %d", i, clip_error_get_offset(e),
				     t->offset);
		clip_error_free(e);
		clip_cage_profile_unref(p);
	}
}

Test(cage_profile, bounded_input)
{
	size_t n = CLIP_CAGE_PROFILE_SIZE_MAX + 1;
	char *big = malloc(n);
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL;

	memset(big, '#', n);
	assert_errno(clip_cage_profile_parse(&p, "big", big, n, &e), -E2BIG);
	cr_assert(strstr(clip_error_get_message(e), "big: longer than"));
	clip_error_free(e);
	e = NULL;
	/* A line longer than 4096 bytes within the bound. */
	memcpy(big, "[Cage]\nName=a\n#", 15);
	big[5000] = '\n';
	assert_errno(clip_cage_profile_parse(&p, "big", big, 6000, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "big:3: line longer than"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	free(big);
}

Test(cage_profile, api_misuse)
{
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL, *set = (struct clip_error *)1;

	assert_refused(clip_cage_profile_parse(NULL, "x", "", 0, &e), -EINVAL, "ret is NULL");
	assert_refused(clip_cage_profile_parse(&p, "x", NULL, 3, &e), -EINVAL,
		       "data is NULL and size is 3");
	/* reterr must point to NULL. */
	assert_errno(clip_cage_profile_parse(&p, "x", "", 0, &set), -EINVAL);
	assert_refused(clip_cage_profile_load(&p, -1, "x", &e), -EBADF,
		       "fd -1 is not a file descriptor");
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_refused(clip_cage_profile_load(&p, fd, "null", &e), -EMEDIUMTYPE,
		       "null: not a regular file");
	close(fd);
	cr_assert_null(clip_cage_profile_unref(NULL));
	cr_assert_null(clip_cage_profile_get_name(NULL));
}

/* Each refusal of the builder: its errno, and a message that names the culprit and why. */
Test(cage_builder, refusals)
{
	struct clip_cage_profile *p = NULL;
	struct clip_cage_limits l = { .size = sizeof(l) };
	struct clip_error *e = NULL;
	char target[32];

	assert_refused(clip_cage_profile_new(&p, "", &e), -EINVAL, "'' is not a cage name");
	assert_refused(clip_cage_profile_new(&p, "a/b", &e), -EINVAL, "'a/b' is not a cage name");
	assert_refused(clip_cage_profile_new(&p, "-x", &e), -EINVAL, "'-x' is not a cage name");
	assert_refused(clip_cage_profile_new(&p, "a\nb", &e), -EINVAL, "'a?b' is not a cage name");
	assert_refused(clip_cage_profile_new(NULL, "a", &e), -EINVAL, "ret is NULL");
	assert_refused(clip_cage_profile_new(&p, NULL, &e), -EINVAL, "the name is NULL");
	cr_assert_null(p, "a profile on failure");
	cr_assert_eq(clip_cage_profile_new(&p, "b", &e), 0);

	/* Each fault of a path, named, whichever setter. */
	assert_refused(clip_cage_profile_set_root(p, "rel", &e), -EINVAL,
		       "root directory 'rel' is not absolute");
	assert_refused(clip_cage_profile_set_root(p, "", &e), -EINVAL,
		       "root directory '' is empty");
	assert_refused(clip_cage_profile_set_data_dir(p, "/a/..", &e), -EINVAL,
		       "data directory '/a/..' has a '..' component");
	assert_refused(clip_cage_profile_set_data_dir(p, "/a/./b", &e), -EINVAL,
		       "data directory '/a/./b' has a '.' component");
	assert_refused(clip_cage_profile_add_bind(p, "/x/", NULL, 0, &e), -EINVAL,
		       "bind source '/x/' ends with a slash");
	assert_refused(clip_cage_profile_add_bind(p, "/a", "/x/", 0, &e), -EINVAL,
		       "bind target '/x/' ends with a slash");
	assert_refused(clip_cage_profile_add_bind(p, "/a//b", NULL, 0, &e), -EINVAL,
		       "bind source '/a//b' has an empty component");
	assert_refused(clip_cage_profile_add_bind(p, "/a b", NULL, 0, &e), -EINVAL,
		       "bind source '/a b' has a space, a control character");
	assert_refused(clip_cage_profile_add_bind(p, "/a\033[1m", NULL, 0, &e), -EINVAL,
		       "bind source '/a?[1m' has a space, a control character");
	assert_refused(clip_cage_profile_add_bind(p, "/a:b", NULL, 0, &e), -EINVAL,
		       "bind source '/a:b' has a ':'");
	assert_refused(clip_cage_profile_add_bind(p, "/a", "/proc", 0, &e), -EINVAL,
		       "bind target '/proc' is in /proc or /dev");
	assert_refused(clip_cage_profile_add_bind(p, "/a", "/dev/x", 0, &e), -EINVAL,
		       "bind target '/dev/x' is in /proc or /dev");
	assert_refused(clip_cage_profile_add_bind(p, "/a", "/data/x", 0, &e), -EINVAL,
		       "bind target '/data/x' is in /data");
	assert_refused(clip_cage_profile_add_bind(p, "/a", NULL, 2, &e), -EINVAL, "flags 0x2");
	assert_refused(clip_cage_profile_add_bind(p, NULL, "/a", 0, &e), -EINVAL,
		       "the source is NULL");
	assert_refused(clip_cage_profile_add_tmpfs(p, "/", &e), -EINVAL,
		       "tmpfs target '/' is the cage's root");
	assert_refused(clip_cage_profile_add_tmpfs(p, NULL, &e), -EINVAL, "the target is NULL");
	for (int i = 0; i < CLIP_CAGE_BINDS_MAX; i++) {
		snprintf(target, sizeof(target), "/m%d", i);
		cr_assert_eq(clip_cage_profile_add_tmpfs(p, target, NULL), 0);
	}
	assert_refused(clip_cage_profile_add_tmpfs(p, "/one-more", &e), -E2BIG,
		       "tmpfs target '/one-more': more than 64 binds and tmpfs");
	assert_refused(clip_cage_profile_add_bind(p, "/a", "/m0", 0, &e), -EINVAL,
		       "bind target '/m0' is already a tmpfs target");

	assert_refused(clip_cage_profile_set_network(p, 3, NULL, &e), -EINVAL, "mode 3");
	assert_refused(clip_cage_profile_set_network(p, CLIP_CAGE_NET_VETH, NULL, &e), -EINVAL,
		       "CLIP_CAGE_NET_VETH needs the cage's address");
	assert_refused(clip_cage_profile_set_network(p, CLIP_CAGE_NET_NONE, "10.0.0.1/24", &e),
		       -EINVAL, "an address is for CLIP_CAGE_NET_VETH only");
	assert_refused(clip_cage_profile_set_network(p, CLIP_CAGE_NET_VETH, "10.0.0.1/40", &e),
		       -EINVAL, "address '10.0.0.1/40' is not an IPv4 address with a prefix");
	cr_assert_eq(clip_cage_profile_set_network(p, CLIP_CAGE_NET_VETH, "10.0.0.1/16", NULL), 0);

	l.size = 4;
	assert_refused(clip_cage_profile_set_limits(p, &l, &e), -EINVAL, "struct clip_cage_limits");
	l.size = sizeof(l);
	l.cpu_quota_percent = 100001;
	assert_refused(clip_cage_profile_set_limits(p, &l, &e), -EINVAL,
		       "CPU quota 100001%: more than 100000%");
	assert_refused(clip_cage_profile_set_limits(p, NULL, &e), -EINVAL, "the limits are NULL");
	/* An older, shorter struct: the missing fields are 0. */
	l = (struct clip_cage_limits){
		.size = 16, .cpu_quota_percent = 5, .memory_max = 1 << 20, .tasks_max = 7
	};
	cr_assert_eq(clip_cage_profile_set_limits(p, &l, NULL), 0);
	cr_assert_eq(p->limits.tasks_max, 0);
	cr_assert_eq(p->limits.memory_max, 1 << 20);

	assert_refused(clip_cage_profile_add_capability(p, "cap_none", &e), -EINVAL,
		       "'cap_none' is not a capability");
	assert_refused(clip_cage_profile_add_capability(p, "12", &e), -EINVAL,
		       "'12' is not a capability");
	cr_assert_eq(clip_cage_profile_add_capability(p, "CAP_KILL", NULL), 0);
	assert_refused(clip_cage_profile_add_syscall_deny(p, "nope", &e), -EINVAL,
		       "'nope' is not a system call of this architecture");
	assert_refused(clip_cage_profile_set_wx(p, 2, &e), -EINVAL, "on is 2, not 1 or 0");
	assert_refused(clip_cage_profile_set_measure(p, 2, &e), -EINVAL, "on is 2, not 1 or 0");
	assert_refused(clip_cage_profile_set_measure(p, -1, &e), -EINVAL, "on is -1, not 1 or 0");
	assert_refused(clip_cage_profile_set_measure(NULL, 1, &e), -EINVAL,
		       "clip_cage_profile_set_measure: the profile is NULL");
	assert_refused(clip_cage_profile_set_level(p, NULL, &e), -EINVAL, "the level is NULL");
	assert_refused(clip_cage_profile_set_start_timeout(p, 3601, &e), -EINVAL,
		       "start timeout 3601 s: more than 3600 s");
	assert_refused(clip_cage_profile_set_start_timeout(NULL, 5, &e), -EINVAL,
		       "the profile is NULL");
	cr_assert_eq(cage_profile_start_timeout_ms(p), 30000, "30 s by default");
	cr_assert_eq(clip_cage_profile_set_start_timeout(p, 2, NULL), 0);
	cr_assert_eq(cage_profile_start_timeout_ms(p), 2000);
	cr_assert_eq(clip_cage_profile_set_start_timeout(p, 0, NULL), 0);
	cr_assert_eq(cage_profile_start_timeout_ms(p), 30000, "0: the default again");
	/* Without a reterr, the same refusal. */
	assert_errno(clip_cage_profile_add_bind(p, "/a", "/x/", 0, NULL), -EINVAL);
	clip_cage_profile_unref(p);
}

/*
 * The uid base: derived from the name until set, the same as a profile
 * text without UidBase= gets; once set, the one formatted; the parser's
 * refusals, with the value in the message, and nothing changed by them.
 */
/* Landlock's TCP ports and minimum ABI (issue 21), set by a program. */
Test(cage_builder, ports_and_landlock_abi)
{
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL;
	char *text = NULL;

	cr_assert_eq(clip_cage_profile_new(&p, "b", &e), 0);
	assert_refused(clip_cage_profile_add_port(p, CLIP_CAGE_PORT_BIND, 0, &e), -EINVAL,
		       "TCP port 0 is not from 1 to 65535");
	assert_refused(clip_cage_profile_add_port(p, CLIP_CAGE_PORT_CONNECT, 65536, &e), -EINVAL,
		       "TCP port 65536 is not from 1 to 65535");
	assert_refused(
		clip_cage_profile_add_port(p, 4, 80, &e), -EINVAL,
		"clip_cage_profile_add_port: kind 0x4 is not CLIP_CAGE_PORT_BIND or _CONNECT");
	assert_refused(clip_cage_profile_add_port(NULL, CLIP_CAGE_PORT_BIND, 80, &e), -EINVAL,
		       "the profile is NULL");
	for (unsigned i = 1; i <= CLIP_CAGE_PORTS_MAX; i++)
		cr_assert_eq(clip_cage_profile_add_port(p, CLIP_CAGE_PORT_BIND, 1000 + i, &e), 0);
	cr_assert_eq(clip_cage_profile_add_port(p, CLIP_CAGE_PORT_BIND, 1001, &e), 0,
		     "a port given again is kept once");
	assert_refused(clip_cage_profile_add_port(p, CLIP_CAGE_PORT_BIND, 80, &e), -E2BIG,
		       "TCP port 80: more than 64 ports of a kind");
	cr_assert_eq(clip_cage_profile_add_port(p, CLIP_CAGE_PORT_BIND | CLIP_CAGE_PORT_CONNECT,
						1064, &e),
		     0);
	assert_refused(clip_cage_profile_set_landlock_min_abi(p, 8, &e), -EINVAL,
		       "Landlock ABI 8: libclip knows ABIs 1 to 7");
	cr_assert_eq(clip_cage_profile_set_landlock_min_abi(p, 4, &e), 0);
	cr_assert_eq(clip_cage_profile_format(p, &text), 0);
	cr_assert(strstr(text, "TCPBindPorts=1001 1002 "), "%s", text);
	cr_assert(strstr(text, "\nTCPConnectPorts=1064\n"), "%s", text);
	cr_assert(strstr(text, "\nLandlockMinimumABI=4\n"), "%s", text);
	free(text);
	clip_cage_profile_unref(p);
}

Test(cage_builder, uid_base_set_and_got)
{
	static const uint32_t refused[] = { 0, 1, 65537, 4294901760u, 4294967295u };
	struct clip_cage_profile *p = NULL, *q = parse_ok("[Cage]\nName=a\n"), *r;
	struct clip_error *e = NULL;
	uint32_t derived;
	char *text = NULL, want[96];

	cr_assert_eq(clip_cage_profile_new(&p, "a", NULL), 0);
	derived = clip_cage_profile_get_uid_base(p);
	cr_assert_eq(derived, clip_cage_profile_get_uid_base(q), "the parser's default");
	cr_assert(derived >= 0x80000 && derived % 65536 == 0, "%u", derived);
	cr_assert_eq(clip_cage_profile_get_uid_base(NULL), 0);
	cr_assert_eq(clip_cage_profile_format(p, &text), 0);
	cr_assert_null(strstr(text, "UidBase="), "a derived base is not written: %s", text);
	free(text);

	cr_assert_eq(clip_cage_profile_set_uid_base(p, 655360, &e), 0);
	cr_assert_eq(clip_cage_profile_get_uid_base(p), 655360);
	cr_assert_eq(clip_cage_profile_set_uid_base(p, 4294836224u, &e), 0, "the highest");
	cr_assert_eq(clip_cage_profile_set_uid_base(p, 655360, &e), 0);
	cr_assert_eq(clip_cage_profile_format(p, &text), 0);
	cr_assert(strstr(text, "UidBase=655360\n"), "%s", text);
	r = parse_ok(text);
	cr_assert_eq(clip_cage_profile_get_uid_base(r), 655360, "read back");
	free(text);
	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		snprintf(want, sizeof(want), "uid base %u: not a non-zero multiple of 65536",
			 refused[i]);
		assert_refused(clip_cage_profile_set_uid_base(p, refused[i], &e), -EINVAL, want);
		cr_assert_eq(clip_cage_profile_get_uid_base(p), 655360, "changed by a refusal");
	}
	assert_refused(clip_cage_profile_set_uid_base(NULL, 655360, &e), -EINVAL,
		       "the profile is NULL");
	clip_cage_profile_unref(p);
	clip_cage_profile_unref(q);
	clip_cage_profile_unref(r);
}

/* A quoted value is bounded: a long path is cut, with "..." after. */
Test(cage_builder, long_values_are_cut_in_messages)
{
	struct clip_cage_profile *p = NULL;
	struct clip_error *e = NULL;
	char path[1024];

	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 2] = '/';
	path[sizeof(path) - 1] = '\0';
	cr_assert_eq(clip_cage_profile_new(&p, "b", NULL), 0);
	assert_errno(clip_cage_profile_set_root(p, path, &e), -EINVAL);
	cr_assert(strstr(clip_error_get_message(e), "aaa...' ends with a slash"), "%s",
		  clip_error_get_message(e));
	cr_assert_lt(strlen(clip_error_get_message(e)), 300);
	clip_error_free(e);
	clip_cage_profile_unref(p);
}

/*
 * Option structs that grow (struct_copy_in()): a caller built against
 * another <clip/cage.h> passes a smaller or a larger struct. What lies past
 * the caller's size is garbage, so that a read past it shows.
 */
struct limits_newer {
	struct clip_cage_limits l;
	uint64_t added; /* a member of a later version */
};

Test(cage_builder, limits_from_an_older_caller_are_zero_filled)
{
	struct clip_cage_limits full = {
		.size = sizeof(full), .cpu_quota_percent = 9, .memory_max = 9, .tasks_max = 9
	};
	struct clip_cage_profile *p = NULL;
	struct clip_cage_limits old;

	cr_assert_eq(clip_cage_profile_new(&p, "a", NULL), 0);
	cr_assert_eq(clip_cage_profile_set_limits(p, &full, NULL), 0);
	/* The smallest accepted: the CPU quota only. */
	memset(&old, 0xaa, sizeof(old));
	old.size = offsetof(struct clip_cage_limits, memory_max);
	old.cpu_quota_percent = 5;
	cr_assert_eq(clip_cage_profile_set_limits(p, &old, NULL), 0);
	cr_assert_eq(p->limits.cpu_quota_percent, 5);
	cr_assert_eq(p->limits.memory_max, 0, "a limit the caller does not know was set");
	cr_assert_eq(p->limits.tasks_max, 0, "a limit the caller does not know was set");
	cr_assert_eq(p->limits.size, sizeof(struct clip_cage_limits));
	old.size = offsetof(struct clip_cage_limits, memory_max) - 1;
	old.cpu_quota_percent = 6;
	assert_errno(clip_cage_profile_set_limits(p, &old, NULL), -EINVAL);
	cr_assert_eq(p->limits.cpu_quota_percent, 5, "a refused struct changed the limits");
	clip_cage_profile_unref(p);
}

Test(cage_builder, limits_from_a_newer_caller_that_adds_nothing_are_taken)
{
	struct clip_cage_profile *p = NULL;
	struct limits_newer n;

	cr_assert_eq(clip_cage_profile_new(&p, "a", NULL), 0);
	memset(&n, 0, sizeof(n));
	n.l.size = sizeof(n);
	n.l.tasks_max = 7;
	assert_errno(clip_cage_profile_set_limits(p, &n.l, NULL), 0);
	cr_assert_eq(p->limits.tasks_max, 7);
	cr_assert_eq(p->limits.size, sizeof(struct clip_cage_limits));
	clip_cage_profile_unref(p);
}

Test(cage_builder, limits_from_a_newer_caller_that_sets_more_are_refused)
{
	struct clip_cage_limits l = { .size = sizeof(l), .tasks_max = 7 };
	struct clip_cage_profile *p = NULL;
	struct limits_newer n;

	cr_assert_eq(clip_cage_profile_new(&p, "a", NULL), 0);
	cr_assert_eq(clip_cage_profile_set_limits(p, &l, NULL), 0);
	memset(&n, 0, sizeof(n));
	n.l.size = sizeof(n);
	n.l.tasks_max = 8;
	/* One byte past ours: a limit this version cannot set. */
	((unsigned char *)&n)[sizeof(n) - 1] = 1;
	assert_errno(clip_cage_profile_set_limits(p, &n.l, NULL), -E2BIG);
	cr_assert_eq(p->limits.tasks_max, 7, "a refused struct changed the limits");
	clip_cage_profile_unref(p);
}

/*
 * In a child: libseccomp probes the kernel with seccomp(2) on first use,
 * which valgrind does not know; a forked child's valgrind stays silent.
 */
static int
seccomp_checks(void)
{
	struct clip_cage_profile *p = NULL, *none = NULL;
	struct sock_filter *first;
	struct sock_fprog def;
	const char text[] = H "[Security]\nSystemCallFilter=~chmod\n";

	if (clip_cage_profile_parse(&p, "t", text, strlen(text), NULL) < 0 ||
	    clip_cage_profile_parse(&none, "t", H, strlen(H), NULL) < 0)
		return 10;
	if (cage_seccomp_default().filter)
		return 15; /* before any compilation */
	if (cage_seccomp_compile(p, NULL) < 0 || !p->bpf || p->bpf_len < 4)
		return 11;
	def = cage_seccomp_default();
	/* The default list is long; the additions, one rule, much shorter. */
	if (!def.filter || def.len <= 50 || p->bpf_len >= def.len)
		return 16;
	first = p->bpf;
	if (cage_seccomp_compile(p, NULL) < 0 || p->bpf != first ||
	    cage_seccomp_default().filter != def.filter)
		return 12; /* compiled twice */
	/* No additions, no second filter. */
	if (cage_seccomp_compile(none, NULL) < 0 || none->bpf)
		return 17;
	clip_cage_profile_unref(none);
	if (!cage_seccomp_is_default_denied(SCMP_SYS(mount)) ||
	    !cage_seccomp_is_default_denied(SCMP_SYS(bpf)) ||
	    !cage_seccomp_is_default_denied(SCMP_SYS(open_by_handle_at)) ||
	    cage_seccomp_is_default_denied(SCMP_SYS(read)))
		return 13;
	/* An addition invalidates the cache. */
	if (clip_cage_profile_add_syscall_deny(p, "mknod", NULL) < 0 || p->bpf)
		return 14;
	clip_cage_profile_unref(p);
	return 0;
}

Test(cage_seccomp, compiled_once_and_denies)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(seccomp_checks());
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "check %d failed", WEXITSTATUS(status));
}

/* -- the lifecycle ----------------------------------------------------- */

static bool
userns_available(void)
{
	return test_is_root() || access("/proc/self/ns/user", F_OK) == 0;
}

/* valgrind 3.19 (Debian 12) answers ENOSYS to open_tree, pidfd_send_signal, landlock. */
static bool
under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	return preload && strstr(preload, "vgpreload");
}

/* A new cage from @text, or the test skipped where cages cannot run. */
static struct clip_cage *
new_or_skip(struct clip_ctx **ctx, const char *text)
{
	struct clip_cage_profile *p = parse_ok(text);
	struct clip_cage *c = NULL;

	if (!userns_available())
		cr_skip_test("no user namespaces");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	*ctx = test_ctx("/nonexistent");
	cr_assert_eq(clip_cage_new(&c, *ctx, p, NULL), 0);
	clip_cage_profile_unref(p);
	return c;
}

static struct clip_cage *
started(struct clip_ctx **ctx, const char *text)
{
	struct clip_cage *c = new_or_skip(ctx, text);
	struct clip_error *e = NULL;

	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start: %s", clip_error_get_message(e));
	return c;
}

static int
spawn(struct clip_cage *c, const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_error *e = NULL;
	int pidfd = -1;

	cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, &e), 0, "spawn: %s", clip_error_get_message(e));
	return pidfd;
}

Test(cage_life, run_wait_stop)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started(&ctx, H);
	int pidfd, status = -1, *pids = NULL;
	size_t n = 0;

	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_RUNNING);
	pidfd = spawn(c, "exit 7");
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 7);
	/* Collected once only. */
	assert_errno(clip_cage_wait_process(c, pidfd, &status), -ECHILD);
	close(pidfd);
	cr_assert_eq(clip_cage_get_pids(c, &pids, &n), 0);
	cr_assert_eq(n, 1, "only init is left");
	free(pids);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_STOPPED);
	assert_errno(clip_cage_stop(c, 0, NULL), -ECHILD);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_life, stop_kills_the_tree_and_the_fd_polls)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started(&ctx, H);
	struct pollfd pfd = { .events = POLLIN };
	int pidfd, status = -1, *pids = NULL;
	size_t n = 0;

	/* A process that ignores SIGTERM, with children; and one that obeys. */
	pidfd = spawn(c, "trap '' TERM; sleep 1000 & sleep 1000 & echo ready; wait");
	int obeys = spawn(c, "exec sleep 1000");
	do {
		free(pids);
		pids = NULL;
		cr_assert_eq(clip_cage_get_pids(c, &pids, &n), 0);
	} while (n < 5);
	free(pids);
	pfd.fd = clip_cage_get_fd(c);
	cr_assert_geq(pfd.fd, 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0, "the cage fd is not readable while running");
	cr_assert_geq(clip_cage_signal(c, 0), 4);
	cr_assert_eq(clip_cage_stop(c, 200, NULL), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 1, "the cage fd is readable once stopped");
	cr_assert_eq(clip_cage_wait_process(c, obeys, &status), 0);
	cr_assert_eq(status, 128 + SIGTERM);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 128 + SIGKILL);
	close(pidfd);
	close(obeys);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/* A descriptor number that is not open: that of one just closed. */
static int
closed_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	close(fd);
	return fd;
}

/* Each refusal of a spawn names the culprit: the command, the fd, the uid, the cwd. */
Test(cage_life, spawn_refusals)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started(&ctx, H);
	const char *argv[] = { "no-such-command", NULL };
	const char *path[] = { "/no/such/file", NULL };
	const char *dir[] = { "/etc", NULL };
	const char *empty[] = { NULL };
	int fds[] = { closed_fd(), 1, 2 };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_error *e = NULL;
	int pidfd = -1;

	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -ENOENT,
		       "a: cannot execute 'no-such-command' (looked for in "
		       "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin): No such file or directory");
	o.argv = path;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -ENOENT,
		       "a: cannot execute '/no/such/file': No such file or directory");
	o.argv = dir;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EACCES,
		       "a: cannot execute '/etc': Permission denied");
	o.argv = empty;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL, "argv is empty: no command");
	o.argv = NULL;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL, "argv is NULL: no command");
	o.argv = argv;
	/* A closed stdin. */
	o.fds = fds;
	o.n_fds = 3;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EBADF,
		       "fds[0], the process's fd 0 (stdin), is");
	fds[0] = 0;
	fds[2] = -1;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EBADF,
		       "fds[2], the process's fd 2 (stderr), is -1, which is not an open "
		       "descriptor");
	o.n_fds = 65;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL, "n_fds is 65, more than 64");
	o.fds = NULL;
	o.n_fds = 1;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL, "n_fds is 1 and fds is NULL");
	o.n_fds = 0;
	o.cwd = "tmp";
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL,
		       "cwd 'tmp' is not an absolute path");
	o.cwd = NULL;
	o.uid = 70000;
	assert_refused(
		clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL,
		clip_ctx_get_cage_mode(ctx) == CLIP_CAGE_MODE_ROOT
			? "uid 70000, gid 0: a cage maps uids and gids 0 to 65535"
			: "uid 70000, gid 0: cage a is rootless, it maps only uid and gid 0");
	o.uid = 0;
	o.size = 4;
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -EINVAL, "struct clip_cage_spawn_opts");
	o.size = sizeof(o);
	assert_refused(clip_cage_spawn(c, NULL, &pidfd, &e), -EINVAL,
		       "clip_cage_spawn: opts is NULL");
	assert_refused(clip_cage_spawn(c, &o, NULL, &e), -EINVAL,
		       "clip_cage_spawn: ret_pidfd is NULL");
	cr_assert_eq(pidfd, -1);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	assert_refused(clip_cage_spawn(c, &o, &pidfd, &e), -ECHILD,
		       "cage a is not running (stopped)");
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/* Spawn options as a caller built against a newer <clip/cage.h> lays them out. */
struct spawn_opts_newer {
	struct clip_cage_spawn_opts o;
	uint64_t added; /* a member of a later version */
};

Test(cage_life, spawn_opts_from_an_older_caller_are_zero_filled)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started(&ctx, H);
	const char *argv[] = { "/bin/sh", "-c", "[ \"$(pwd)\" = / ] && exit 5", NULL };
	struct clip_cage_spawn_opts old;
	struct clip_error *e = NULL;
	int pidfd = -1, status = -1;

	/* The smallest accepted ends before cwd: garbage where ours has cwd, uid and gid. */
	memset(&old, 0xaa, sizeof(old));
	old.size = offsetof(struct clip_cage_spawn_opts, cwd);
	old.n_fds = 0;
	old.argv = argv;
	old.envp = NULL;
	old.fds = NULL;
	cr_assert_eq(clip_cage_spawn(c, &old, &pidfd, &e), 0, "spawn: %s",
		     clip_error_get_message(e));
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 5, "the process did not run in / (status %d)", status);
	close(pidfd);
	old.size = offsetof(struct clip_cage_spawn_opts, cwd) - 1;
	assert_errno(clip_cage_spawn(c, &old, &pidfd, NULL), -EINVAL);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_life, spawn_opts_from_a_newer_caller_that_adds_nothing_are_taken)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started(&ctx, H);
	const char *argv[] = { "/bin/sh", "-c", "exit 6", NULL };
	struct spawn_opts_newer n;
	struct clip_error *e = NULL;
	int pidfd = -1, status = -1;

	memset(&n, 0, sizeof(n));
	n.o.size = sizeof(n);
	n.o.argv = argv;
	assert_errno(clip_cage_spawn(c, &n.o, &pidfd, &e), 0);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 6);
	close(pidfd);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_life, spawn_opts_from_a_newer_caller_that_sets_more_are_refused)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = new_or_skip(&ctx, H);
	const char *argv[] = { "/bin/sh", "-c", "exit 0", NULL };
	struct spawn_opts_newer n;
	struct clip_error *e = NULL;
	int pidfd = -1, *pids = NULL;
	size_t count = 0;

	memset(&n, 0, sizeof(n));
	n.o.size = sizeof(n);
	n.o.argv = argv;
	/* One byte past ours: something this version cannot do. */
	((unsigned char *)&n)[sizeof(n) - 1] = 1;
	assert_errno(clip_cage_start_spawn(c, 0, &n.o, &pidfd, &e), -E2BIG);
	cr_assert(strstr(clip_error_get_message(e), "sets a member past the"), "%s",
		  clip_error_get_message(e));
	e = clip_error_free(e);
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW, "the cage started");
	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start: %s", clip_error_get_message(e));
	assert_errno(clip_cage_spawn(c, &n.o, &pidfd, NULL), -E2BIG);
	cr_assert_eq(clip_cage_get_pids(c, &pids, &count), 0);
	cr_assert_eq(count, 1, "a process was spawned beside init");
	free(pids);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/* A new cage and its first process, forked by init, with @flags: as clipctl cage run. */
static struct clip_cage *
started_with_flags(struct clip_ctx **ctx, const char *text, unsigned flags, const char *script,
		   const int *fds, unsigned n_fds, int *ret_pidfd)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct clip_cage_spawn_opts o = {
		.size = sizeof(o), .argv = argv, .fds = fds, .n_fds = n_fds
	};
	struct clip_cage *c = new_or_skip(ctx, text);
	struct clip_error *e = NULL;

	cr_assert_eq(clip_cage_start_spawn(c, flags, &o, ret_pidfd, &e), 0, "start: %s",
		     clip_error_get_message(e));
	return c;
}

static struct clip_cage *
started_with(struct clip_ctx **ctx, const char *text, const char *script, const int *fds,
	     unsigned n_fds, int *ret_pidfd)
{
	return started_with_flags(ctx, text, 0, script, fds, n_fds, ret_pidfd);
}

Test(cage_life, start_spawn_runs_the_first_process_restricted)
{
	struct clip_ctx *ctx = NULL;
	struct pollfd pfd = { .events = POLLIN };
	int p[2], q[2], status = -1, fds[2], pidfd;
	struct clip_cage *c;
	char buf[256] = "";
	ssize_t n;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(q, O_CLOEXEC), 0);
	fds[0] = q[0];
	fds[1] = p[1];
	/* Its pid (not init's), its ids, no capability, W^X locked, SIGCHLD not blocked. */
	c = started_with(
		&ctx, H "[Security]\nWriteXorExecute=yes\n",
		"echo $$ $(id -u) $(grep -E '^(CapEff|SigBlk)' /proc/self/status | tr -d '\\t\\n');"
		" read x; exit 7",
		fds, 2, &pidfd);
	close(p[1]);
	close(fds[0]);
	n = read(p[0], buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	/* Not pid 1 (the init), uid 0, ... */
	cr_assert(buf[0] != '1' || buf[1] != ' ', "%s", buf);
	cr_assert(strstr(buf, " 0 SigBlk:0000000000000000CapEff:0000000000000000"), "%s", buf);
	pfd.fd = pidfd;
	cr_assert_eq(poll(&pfd, 1, 0), 0, "its pidfd is not readable while it runs");
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_RUNNING);
	/* Its stdin closes: the read ends, the process exits 7. */
	close(q[1]);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 7);
	cr_assert_eq(poll(&pfd, 1, 0), 1, "its pidfd is readable once it has exited");
	assert_errno(clip_cage_wait_process(c, pidfd, &status), -ECHILD);
	close(pidfd);
	/* The cage goes on without it; a process spawned from outside still runs. */
	pidfd = spawn(c, "exit 3");
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 3);
	close(pidfd);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	close(p[0]);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * A seccomp filter on this (test) process, which clones the cage: system
 * call @nr waits for a listener that never answers. The listener, to keep
 * open while the call should hang.
 */
static int
hang_syscall(int nr)
{
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	int fd;

	cr_assert(f);
	cr_assert_eq(seccomp_rule_add(f, SCMP_ACT_NOTIFY, nr, 0), 0);
	cr_assert_eq(seccomp_load(f), 0);
	fd = seccomp_notify_fd(f);
	cr_assert_geq(fd, 0);
	seccomp_release(f);
	return fd;
}

/* Whether this process has a child left, zombie or not, the cage's (clone children) included. */
static bool
has_children(void)
{
	siginfo_t si = { 0 };

	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0;
}

/*
 * A set-up that hangs (here the init's sethostname(), held by a seccomp
 * listener that never answers) fails the start after StartTimeoutSec=,
 * and leaves no process behind.
 */
Test(cage_life, a_start_that_hangs_times_out)
{
	struct clip_ctx *ctx = NULL;
	struct clip_error *e = NULL;
	struct clip_cage *c = new_or_skip(&ctx, H "StartTimeoutSec=1\n");
	int listener = hang_syscall(SCMP_SYS(sethostname));
	long long t0 = now_ms(), ms;

	assert_errno(clip_cage_start(c, 0, &e), -ETIMEDOUT);
	ms = now_ms() - t0;
	cr_assert(ms >= 1000 && ms < 10000, "%lld ms", ms);
	cr_assert(strstr(clip_error_get_message(e), "within 1 s (StartTimeoutSec=)"), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW, "not started");
	cr_assert_not(has_children(), "the init is killed and reaped");
	close(listener);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/* The same for a spawned process that hangs before its execve(): killed, the cage unharmed. */
Test(cage_life, a_spawn_that_hangs_times_out)
{
	const char *argv[] = { "/bin/true", NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	struct clip_ctx *ctx = NULL;
	struct clip_error *e = NULL;
	struct clip_cage *c = started(&ctx, H "StartTimeoutSec=1\n");
	int listener = hang_syscall(SCMP_SYS(execve)), pidfd = -1, *pids = NULL;
	size_t n = 0;

	assert_errno(clip_cage_spawn(c, &o, &pidfd, &e), -ETIMEDOUT);
	cr_assert(strstr(clip_error_get_message(e), "StartTimeoutSec="), "%s",
		  clip_error_get_message(e));
	clip_error_free(e);
	cr_assert_eq(pidfd, -1);
	cr_assert_eq(clip_cage_get_pids(c, &pids, &n), 0);
	free(pids);
	cr_assert_eq(n, 1, "only the init is left");
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert_not(has_children());
	close(listener);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * With CLIP_CAGE_START_END_WITH_FIRST the cage ends with its first process:
 * what that process left running (here a sleep holding a pipe open) is
 * killed without a stop, and the cage's init exits.
 */
Test(cage_life, start_spawn_can_end_with_the_first_process)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c;
	int p[2], status = -1, pidfd;
	struct pollfd pfd = { .events = POLLIN };
	char buf[8];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	c = started_with_flags(&ctx, H, CLIP_CAGE_START_END_WITH_FIRST, "sleep 1000 >&3 & exit 5",
			       (int[]){ 0, 1, 2, p[1] }, 4, &pidfd);
	close(p[1]);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 5);
	close(pidfd);
	/* The sleep's end of the pipe closes: it is dead, and no one stopped the cage. */
	pfd.fd = p[0];
	cr_assert_eq(poll(&pfd, 1, 10000), 1, "what the first process left is killed");
	cr_assert_eq(read(p[0], buf, sizeof(buf)), 0);
	pfd.fd = clip_cage_get_fd(c);
	cr_assert_eq(poll(&pfd, 1, 10000), 1, "the init exits");
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_STOPPED);
	/* Reaped, its cgroups removed, as after a stop. */
	cr_assert_eq(clip_cage_wait(c, 10000), 0);
	assert_errno(clip_cage_stop(c, 0, NULL), -ECHILD);
	close(p[0]);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_life, start_spawn_first_process_killed_with_the_cage)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c;
	int status = -1, pidfd;

	c = started_with(&ctx, H, "exec sleep 1000", NULL, 0, &pidfd);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 128 + SIGKILL);
	close(pidfd);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_life, start_spawn_refusals_leave_no_cage)
{
	struct clip_cage_profile *p = parse_ok(H);
	struct clip_ctx *ctx = NULL;
	const char *argv[] = { "no-such-command", NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv };
	int fds[] = { 1000 }, pidfd = -1;
	struct clip_cage *c = new_or_skip(&ctx, H);
	struct clip_error *e = NULL;

	assert_refused(clip_cage_start_spawn(c, 0, &o, &pidfd, &e), -ENOENT,
		       "a: cannot execute 'no-such-command' (looked for in ");
	cr_assert_eq(pidfd, -1);
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW, "not started");
	assert_errno(clip_cage_get_fd(c), -ECHILD);
	clip_cage_unref(c);
	c = NULL;
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	o.fds = fds;
	o.n_fds = 1;
	assert_refused(clip_cage_start_spawn(c, 0, &o, &pidfd, &e), -EBADF,
		       "fds[0], the process's fd 0 (stdin), is 1000");
	o.n_fds = 0;
	o.uid = 70000;
	assert_refused(clip_cage_start_spawn(c, 0, &o, &pidfd, &e), -EINVAL, "uid 70000");
	o.uid = 0;
	assert_refused(clip_cage_start_spawn(c, 1u << 7, &o, &pidfd, &e), -EINVAL,
		       "clip_cage_start_spawn: flags 0x80");
	/* Without a first process, nothing to end with. */
	assert_refused(clip_cage_start(c, CLIP_CAGE_START_END_WITH_FIRST, &e), -EINVAL,
		       "CLIP_CAGE_START_END_WITH_FIRST needs clip_cage_start_spawn()");
	assert_refused(clip_cage_start_spawn(c, 0, NULL, &pidfd, &e), -EINVAL, "opts is NULL");
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW);
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
}

/* The line of /proc/@pid/status that starts with @key, without its newline; "" if none. */
static void
status_line(pid_t pid, const char *key, char *buf, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	cr_assert(f, "%s", path);
	buf[0] = '\0';
	while (fgets(buf, (int)size, f))
		if (strncmp(buf, key, strlen(key)) == 0)
			break;
	if (strncmp(buf, key, strlen(key)) != 0)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/*
 * The default filter and the profile's additions hold for the first
 * process (which inherits the default filter from init and loads the
 * additions last), for a process spawned from outside (which loads both),
 * and for init itself.
 */
Test(cage_life, both_seccomp_filters_hold_everywhere)
{
	const char *profile = H "[Security]\nSystemCallFilter=~fchmodat chmod\n";
	const char *script = "touch /tmp/f && ! chmod 600 /tmp/f 2>/dev/null &&"
			     " ! unshare -U true 2>/dev/null &&"
			     " grep -q '^Seccomp_filters:.2$' /proc/self/status";
	struct clip_ctx *ctx = NULL;
	int status = -1, pidfd, *pids = NULL;
	char line[128];
	struct clip_cage *c;
	size_t n = 0;

	c = started_with(&ctx, profile, script, NULL, 0, &pidfd);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 0, "the first process: chmod and a user namespace refused");
	close(pidfd);
	pidfd = spawn(c, script);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 0, "a spawned process: the same");
	close(pidfd);
	cr_assert_eq(clip_cage_get_pids(c, &pids, &n), 0);
	cr_assert_geq(n, 1);
	status_line(pids[0], "Seccomp_filters:", line, sizeof(line));
	cr_assert_str_eq(line, "Seccomp_filters:\t2", "init: %s", line);
	status_line(pids[0], "NoNewPrivs:", line, sizeof(line));
	cr_assert_str_eq(line, "NoNewPrivs:\t1");
	status_line(pids[0], "CapEff:", line, sizeof(line));
	cr_assert_str_eq(line, "CapEff:\t0000000000000000");
	free(pids);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * Root=: the cage's root is the given tree, read-only, with a /dev tmpfs of
 * its own (read-only too once its nodes are in), /proc and a writable /tmp
 * mounted on its directories; nothing else of the host's root.
 */
Test(cage_life, a_root_tree_of_its_own)
{
	static const char *const dirs[] = { "usr", "proc", "dev", "tmp", "run", "etc" };
	static const char *const links[][2] = { { "usr/bin", "bin" },
						{ "usr/lib", "lib" },
						{ "usr/lib64", "lib64" } };
	char *dir = test_tmpdir("tmpfs"), text[1024], path[600];
	struct clip_ctx *ctx = NULL;
	int status = -1, pidfd;
	struct clip_cage *c;

	snprintf(path, sizeof(path), "%s/root", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		snprintf(path, sizeof(path), "%s/root/%s", dir, dirs[i]);
		cr_assert_eq(mkdir(path, 0755), 0);
	}
	for (size_t i = 0; i < ELEMENTSOF(links); i++) {
		snprintf(path, sizeof(path), "%s/root/%s", dir, links[i][1]);
		cr_assert_eq(symlink(links[i][0], path), 0);
	}
	snprintf(path, sizeof(path), "%s/root", dir);
	close(test_file(path, "marker", "in the tree\n"));
	snprintf(text, sizeof(text), "[Cage]\nName=a\nRoot=%s/root\n[Files]\nBindReadOnly=/usr\n",
		 dir);
	c = started_with(&ctx, text,
			 "grep -q 'in the tree' /marker && test ! -e /home && test ! -e /var &&"
			 " test -c /dev/null && test -L /dev/fd && ! touch /dev/x 2>/dev/null &&"
			 " ! touch /x 2>/dev/null && touch /tmp/y && touch /dev/shm/y &&"
			 " grep -q '^tmpfs /dev tmpfs ro,' /proc/self/mounts",
			 NULL, 0, &pidfd);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 0, "the tree, its /dev, /tmp and nothing else");
	close(pidfd);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
	free(dir);
}

/* A read-write bind of one file (a socket, a log), not a directory: Landlock takes file rights only. */
Test(cage_life, a_file_bound_read_write)
{
	char *dir = test_tmpdir("tmpfs"), text[1024], path[600], buf[16] = "";
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c;
	int status = -1, pidfd, fd;

	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	cr_assert_geq(fd, 0);
	fchmod(fd, 0666);
	snprintf(text, sizeof(text), H "[Files]\nBind=%s:/run/f\n", path);
	c = started_with(&ctx, text, "echo in >/run/f && ! rm -f /run/f", NULL, 0, &pidfd);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 0, "written through the bind, not removed");
	cr_assert_eq(pread(fd, buf, sizeof(buf) - 1, 0), 3);
	cr_assert_str_eq(buf, "in\n");
	close(pidfd);
	close(fd);
	clip_cage_stop(c, 0, NULL);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
	free(dir);
}

/* Whether, in @cgroups (a /proc/PID/cgroup), @controller's hierarchy puts the process in cage cgt. */
static bool
in_cage_cgroup(const char *cgroups, const char *controller)
{
	char key[32];
	const char *line;

	snprintf(key, sizeof(key), ":%s:", controller);
	line = strstr(cgroups, key);
	if (!line)
		line = strstr(cgroups, "0::"); /* no v1 hierarchy: cgroup2 */
	return line && strstr(line, "/clip-cgt-") &&
	       strstr(line, "/clip-cgt-") < strchrnul(line, '\n');
}

/* The directory of process @pid (0: this one) in the v1 hierarchy of @controller, or "". */
static void
v1_dir(pid_t pid, const char *controller, char *ret, size_t size)
{
	char line[4096], key[32], path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid ? (int)pid : (int)getpid());
	f = fopen(path, "re");

	ret[0] = '\0';
	cr_assert(f);
	snprintf(key, sizeof(key), ":%s:", controller);
	while (fgets(line, sizeof(line), f)) {
		char *k = strstr(line, key);

		if (!k)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(ret, size, "/sys/fs/cgroup/%s%s", controller,
			 strcmp(k + strlen(key), "/") == 0 ? "" : k + strlen(key));
	}
	fclose(f);
}

/* A cgroup directory @name in @dir, @age seconds old. */
static void
leaf_made(char *path, size_t size, const char *dir, const char *name, long age)
{
	struct timespec t[2];

	snprintf(path, size, "%s/%s", dir, name);
	(void)rmdir(path); /* left by a failed run of this test */
	cr_assert_eq(mkdir(path, 0755), 0, "%s: %s", path, strerror(errno));
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age;
	t[1] = t[0];
	cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* The first line of @dir/@file, without its newline. */
static void
first_line(const char *dir, const char *file, char *ret, size_t size)
{
	char path[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "re");
	cr_assert(f, "%s: %s", path, strerror(errno));
	if (!fgets(ret, (int)size, f))
		ret[0] = '\0';
	ret[strcspn(ret, "\n")] = '\0';
	fclose(f);
}

/* The pid behind @pidfd, in our pid namespace (the library's cage_pidfd_pid()). */
static pid_t
pidfd_pid(int pidfd)
{
	pid_t pid = cage_pidfd_pid(pidfd);

	cr_assert_gt(pid, 0);
	return pid;
}

/* What the v1 hierarchies of this host hold for each limit, as the profile says. */
Test(cage_life, each_limit_is_written_where_it_goes)
{
	const char *text = "[Cage]\nName=lim\n[Limits]\nMemoryMax=64M\nTasksMax=16\nCPUQuota=50%\n";
	struct clip_ctx *ctx = NULL;
	char dir[4096], v[64];
	struct clip_cage *c;
	int pidfd;
	pid_t pid;

	if (!test_is_root())
		cr_skip_test("not root: no cgroup limits on this host");
	c = started_with(&ctx, text, "exec sleep 100", NULL, 0, &pidfd);
	pid = pidfd_pid(pidfd);
	v1_dir(pid, "memory", dir, sizeof(dir));
	if (!dir[0] || access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", F_OK) < 0)
		cr_skip_test("no v1 memory and cpu hierarchies on this host");
	first_line(dir, "memory.limit_in_bytes", v, sizeof(v));
	cr_assert_str_eq(v, "67108864");
	if (access("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", F_OK) == 0) {
		first_line(dir, "memory.memsw.limit_in_bytes", v, sizeof(v));
		cr_assert_str_eq(v, "67108864", "swap counted too");
	}
	v1_dir(pid, "pids", dir, sizeof(dir));
	first_line(dir, "pids.max", v, sizeof(v));
	cr_assert_str_eq(v, "16");
	v1_dir(pid, "cpu", dir, sizeof(dir));
	first_line(dir, "cpu.cfs_period_us", v, sizeof(v));
	cr_assert_str_eq(v, "100000");
	first_line(dir, "cpu.cfs_quota_us", v, sizeof(v));
	cr_assert_str_eq(v, "50000", "half a CPU");
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	close(pidfd);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * As root, a cage @name with TasksMax= (a v1 cgroup here) whose first
 * process sleeps: its pidfd, and the pid of its init.
 */
static struct clip_cage *
started_limited(struct clip_ctx **ctx, const char *name, int *ret_pidfd, pid_t *ret_init)
{
	char text[128];
	struct clip_cage *c;
	int *pids = NULL;
	size_t n = 0;

	if (!test_is_root())
		cr_skip_test("not root: no cgroup limits on this host");
	snprintf(text, sizeof(text), "[Cage]\nName=%s\n[Limits]\nTasksMax=16\n", name);
	c = started_with(ctx, text, "exec sleep 100", NULL, 0, ret_pidfd);
	cr_assert_eq(clip_cage_get_pids(c, &pids, &n), 0);
	cr_assert_geq(n, 2);
	*ret_init = pids[0];
	free(pids);
	return c;
}

/*
 * The launcher steers a new init off its own CPU while it makes the v1
 * cgroups; the init takes the launcher's CPUs back, so that neither it nor
 * the first process keeps the narrower set.
 */
Test(cage_life, the_cage_runs_on_the_launchers_cpus)
{
	struct clip_ctx *ctx = NULL;
	char own[256], init[256], first[256];
	struct clip_cage *c;
	pid_t init_pid;
	int pidfd;

	c = started_limited(&ctx, "cpus", &pidfd, &init_pid);
	if (clip_cage_get_missing(c) & CLIP_CAGE_MISSING_TASKS)
		cr_skip_test("no tasks limit on this host: nothing to steer for");
	status_line(getpid(), "Cpus_allowed_list:", own, sizeof(own));
	status_line(init_pid, "Cpus_allowed_list:", init, sizeof(init));
	status_line(pidfd_pid(pidfd), "Cpus_allowed_list:", first, sizeof(first));
	cr_assert(own[0]);
	cr_assert_str_eq(init, own, "the init's CPUs");
	cr_assert_str_eq(first, own, "the first process's CPUs");
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	close(pidfd);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * The init joins the cage's v1 cgroups only to root its cgroup namespace
 * there and to start the first process in them, then goes back to the
 * launcher's: the cage's cgroups hold the cage's processes alone, so that
 * stopping removes them while the init dies. They are gone after the stop.
 */
Test(cage_life, the_init_leaves_the_v1_cgroups_to_the_processes)
{
	struct clip_ctx *ctx = NULL;
	char own[4096], init_dir[4096], first_dir[4096];
	struct clip_cage *c;
	pid_t init_pid;
	int pidfd;

	v1_dir(0, "pids", own, sizeof(own));
	if (!own[0])
		cr_skip_test("no v1 pids hierarchy on this host");
	c = started_limited(&ctx, "leave", &pidfd, &init_pid);
	v1_dir(init_pid, "pids", init_dir, sizeof(init_dir));
	v1_dir(pidfd_pid(pidfd), "pids", first_dir, sizeof(first_dir));
	cr_assert_str_eq(init_dir, own, "the init is back in the launcher's cgroup");
	cr_assert(strstr(first_dir, "/clip-leave-") && strncmp(first_dir, own, strlen(own)) == 0,
		  "the first process is in the cage's: %s", first_dir);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert(access(first_dir, F_OK) < 0 && errno == ENOENT, "%s: still there", first_dir);
	close(pidfd);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * A start removes the cgroups that launchers which died left beside its
 * own (their pid no longer runs, made over a minute ago), and those only.
 */
Test(cage_life, a_start_removes_what_dead_launchers_left)
{
	char dir[4096], name[64], stale[4200], fresh[4200], alive[4200], other[4200];
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c;
	long pid_max = 0;
	FILE *f;

	if (!test_is_root())
		cr_skip_test("not root: no cgroup limits on this host");
	/* Its skips first, before any directory is made. */
	c = new_or_skip(&ctx, "[Cage]\nName=sweep\n[Limits]\nTasksMax=16\n");
	v1_dir(0, "pids", dir, sizeof(dir));
	if (!dir[0])
		cr_skip_test("no v1 pids hierarchy on this host");
	f = fopen("/proc/sys/kernel/pid_max", "re");
	cr_assert(f && fscanf(f, "%ld", &pid_max) == 1);
	fclose(f);
	/* Above pid_max: a pid that no process can have. */
	snprintf(name, sizeof(name), "clip-old-%ld-0", pid_max + 1);
	leaf_made(stale, sizeof(stale), dir, name, 120);
	snprintf(name, sizeof(name), "clip-new-%ld-1", pid_max + 1);
	leaf_made(fresh, sizeof(fresh), dir, name, 0);
	snprintf(name, sizeof(name), "clip-live-%d-2", (int)getpid());
	leaf_made(alive, sizeof(alive), dir, name, 120);
	snprintf(name, sizeof(name), "notclip-%ld-3", pid_max + 1);
	leaf_made(other, sizeof(other), dir, name, 120);
	cr_assert_eq(clip_cage_start(c, 0, NULL), 0);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
	cr_assert(access(stale, F_OK) < 0, "%s: left by a dead launcher, still there", stale);
	cr_assert_eq(rmdir(fresh), 0, "%s: made a moment ago, removed", fresh);
	cr_assert_eq(rmdir(alive), 0, "%s: its launcher runs, removed", alive);
	cr_assert_eq(rmdir(other), 0, "%s: not a cage's, removed", other);
}

/*
 * A process spawned from outside lands in the cage's cgroups (seen from the
 * host) and in its cgroup namespace (it sees itself at the root), both
 * for the first process and for one spawned later.
 */
Test(cage_life, processes_join_the_cgroups_and_their_namespace)
{
	struct clip_ctx *ctx = NULL;
	char buf[1024] = "", path[64], host[4096] = "";
	int p[2], fds[2], pidfd, status = -1;
	struct clip_cage *c;
	ssize_t len;
	FILE *f;

	if (!test_is_root())
		cr_skip_test("not root: no cgroup limits on this host");
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fds[1] = p[1];
	c = started(&ctx, "[Cage]\nName=cgt\n[Limits]\nTasksMax=16\nMemoryMax=64M\n");
	cr_assert_eq(
		clip_cage_get_missing(c) & (CLIP_CAGE_MISSING_TASKS | CLIP_CAGE_MISSING_MEMORY), 0);
	{
		const char *argv[] = { "/bin/sh", "-c", "cat /proc/self/cgroup; exec sleep 100",
				       NULL };
		struct clip_cage_spawn_opts o = {
			.size = sizeof(o), .argv = argv, .fds = fds, .n_fds = 2
		};

		cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, NULL), 0);
	}
	close(p[1]);
	len = read(p[0], buf, sizeof(buf) - 1);
	cr_assert_gt(len, 0);
	/* Inside: every hierarchy at its root, cgroup2 too ("0::/"). */
	cr_assert(strstr(buf, "0::/\n") && strstr(buf, "pids:/\n") && strstr(buf, "memory:/\n"),
		  "%s", buf);
	/* From the host: the process behind the pidfd is in the cage's own cgroups. */
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pidfd_pid(pidfd));
	host[0] = '\0';
	f = fopen(path, "re");
	cr_assert(f);
	len = (ssize_t)fread(host, 1, sizeof(host) - 1, f);
	fclose(f);
	/* Each limit's hierarchy; cgroup2 only where it holds one (v1 holds both here). */
	cr_assert(in_cage_cgroup(host, "pids") && in_cage_cgroup(host, "memory"), "%s", host);
	if (strstr(host, ":pids:") && strstr(host, ":memory:"))
		cr_assert(!strstr(host, "0::/clip-cgt-"), "a cgroup2 cgroup for nothing: %s", host);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	close(pidfd);
	close(p[0]);
	close(fds[0]);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * -- embedded in an init ------------------------------------------------
 * An init reaps whatever dies under it, with a SIGCHLD handler looping on
 * waitpid(-1, WNOHANG) or a thread blocked in waitpid(-1). Neither may
 * take the status of a process spawned in a cage, nor the cage's init.
 */

#define REAPED_MAX 64

static pid_t reaped[REAPED_MAX];
static unsigned n_reaped; /* atomic: the handler and the thread add */
static bool reaper_done;
static int reaped_fd = -1; /* an eventfd, told of each */

static void
reaped_add(pid_t pid)
{
	unsigned i = __atomic_fetch_add(&n_reaped, 1, __ATOMIC_SEQ_CST);

	if (i < REAPED_MAX)
		reaped[i] = pid;
	(void)!write(reaped_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
}

static void
on_sigchld(int sig)
{
	int saved = errno, status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		reaped_add(pid);
	errno = saved;
}

/* Blocked in waitpid(-1) while the decoy lives: woken by every child's exit. */
static void *
reaper_thread(void *userdata)
{
	int status;

	while (!__atomic_load_n(&reaper_done, __ATOMIC_SEQ_CST)) {
		pid_t pid = waitpid(-1, &status, 0);

		if (pid > 0)
			reaped_add(pid);
		else if (errno == ECHILD)
			sched_yield();
	}
	return NULL;
}

/* Until @fd polls readable (a pidfd: its process has exited); then SIGCHLD, as an init gets. */
static void
exited_then_sigchld(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (poll(&pfd, 1, 10000) < 0 && errno == EINTR)
		;
	cr_assert(pfd.revents & POLLIN, "not exited within 10 s");
	cr_assert_eq(raise(SIGCHLD), 0);
}

static bool
was_reaped(pid_t pid)
{
	unsigned n = __atomic_load_n(&n_reaped, __ATOMIC_SEQ_CST);

	for (unsigned i = 0; i < n && i < REAPED_MAX; i++)
		if (reaped[i] == pid)
			return true;
	return false;
}

/* A reaper as an init has: the handler, and a thread blocked in waitpid(-1) beside an ordinary child. */
struct reaper {
	pthread_t thread;
	pid_t decoy;
	int decoy_fd; /* closing it ends the decoy */
};

static void
reaper_start(struct reaper *r)
{
	struct sigaction sa = { .sa_handler = on_sigchld, .sa_flags = SA_RESTART | SA_NOCLDSTOP };
	int p[2];

	reaped_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cr_assert_geq(reaped_fd, 0);
	cr_assert_eq(sigaction(SIGCHLD, &sa, NULL), 0);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	r->decoy = fork();
	cr_assert_geq(r->decoy, 0);
	if (r->decoy == 0) {
		char x;

		close(p[1]);
		_exit(read(p[0], &x, 1) == 0 ? 0 : 1);
	}
	close(p[0]);
	r->decoy_fd = p[1];
	cr_assert_eq(pthread_create(&r->thread, NULL, reaper_thread, NULL), 0);
}

/* The decoy ends and the thread returns: the reaper did reap, and took the decoy. */
static void
reaper_stop(struct reaper *r)
{
	__atomic_store_n(&reaper_done, true, __ATOMIC_SEQ_CST);
	close(r->decoy_fd);
	cr_assert_eq(pthread_join(r->thread, NULL), 0);
	cr_assert(was_reaped(r->decoy), "the reaper did not take its decoy");
	close(reaped_fd);
}

/* Until the reaper has taken @pid (10 s at most). */
static void
wait_reaped(pid_t pid)
{
	struct pollfd pfd = { .fd = reaped_fd, .events = POLLIN };
	long long deadline = now_ms() + 10000;
	uint64_t n;

	while (!was_reaped(pid) && now_ms() < deadline) {
		(void)poll(&pfd, 1, 100);
		(void)!read(reaped_fd, &n, sizeof(n));
	}
	cr_assert(was_reaped(pid), "pid %d not taken by the reaper", (int)pid);
}

/* The pid of @c's init. */
static pid_t
init_pid(struct clip_cage *c)
{
	int *pids = NULL;
	size_t n = 0;
	pid_t pid;

	cr_assert_eq(clip_cage_get_pids(c, &pids, &n), 0);
	cr_assert_geq(n, 1);
	pid = pids[0];
	free(pids);
	return pid;
}

/*
 * A cage's init is a child of the caller that the reaper never sees: not
 * while the cage runs, not when it ends by itself (before clip_cage_wait()),
 * not when clip_cage_stop() kills it. The library reaps it.
 */
Test(cage_life, an_inits_reaper_never_takes_a_cages_init)
{
	struct clip_ctx *ctx = NULL, *ctx2 = NULL;
	struct clip_cage *c, *ended;
	pid_t inits[2];
	struct reaper r;
	int pidfd, first;

	reaper_start(&r);
	c = started(&ctx, H);
	inits[0] = init_pid(c);
	pidfd = spawn(c, "exec sleep 1000");
	/* A cage that ends with its first process: its init exits under the reaper. */
	ended = started_with_flags(&ctx2, H, CLIP_CAGE_START_END_WITH_FIRST, "exit 0", NULL, 0,
				   &first);
	inits[1] = init_pid(ended);
	close(first);
	exited_then_sigchld(clip_cage_get_fd(ended));
	cr_assert_eq(clip_cage_get_state(ended), CLIP_CAGE_STOPPED);
	cr_assert_eq(clip_cage_wait(ended, 10000), 0);
	cr_assert_eq(raise(SIGCHLD), 0);
	cr_assert_eq(clip_cage_stop(c, 100, NULL), 0);
	cr_assert_eq(raise(SIGCHLD), 0);
	close(pidfd);
	reaper_stop(&r);
	cr_assert_not(was_reaped(inits[0]), "the reaper took the init of a running cage");
	cr_assert_not(was_reaped(inits[1]), "the reaper took the init of a cage that ended");
	cr_assert_not(has_children(), "the library reaped what it made");
	clip_cage_unref(c);
	clip_cage_unref(ended);
	clip_ctx_unref(ctx);
	clip_ctx_unref(ctx2);
}

/* Whether the kernel keeps the status of a reaped process for its pidfds (Linux 6.15). */
static bool
kernel_keeps_exit_status(void)
{
	struct {
		uint64_t mask, cgroupid;
		uint32_t ids[11];
		int32_t exit_code;
	} info = { .mask = 1u << 3 };
	pid_t pid = fork();
	int fd, status;

	if (pid == 0)
		_exit(3);
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (ioctl(fd, _IOWR(0xFF, 11, info), &info) < 0 || !(info.mask & (1u << 3))) {
		close(fd);
		return false;
	}
	close(fd);
	return WEXITSTATUS(info.exit_code) == 3;
}

/*
 * A process spawned in a cage is an ordinary child once it has executed
 * its command (execve() gives it an exit signal again): the reaper takes
 * it, and clip_cage_wait_process() answers with its status all the same,
 * from its pidfd.
 */
Test(cage_life, a_process_an_inits_reaper_took_still_reports_its_status)
{
	static const char *const scripts[] = { "read x; exit 0", "read x; exit 10",
					       "read x; exit 255", "read x; kill -TERM $$" };
	static const int want[] = { 0, 10, 255, 128 + SIGTERM };
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c;
	struct reaper r;

	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	if (!kernel_keeps_exit_status())
		cr_skip_test("kernel before 6.15: no status of a reaped process (clip-cage(3))");
	reaper_start(&r);
	c = started(&ctx, H);
	for (size_t i = 0; i < ELEMENTSOF(scripts); i++) {
		const char *argv[] = { "/bin/sh", "-c", scripts[i], NULL };
		struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv, .n_fds = 1 };
		int p[2], pidfd = -1, status = -1;
		struct clip_error *e = NULL;
		pid_t pid;

		/* It runs until its stdin closes: its pid is read while it is alive. */
		cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
		o.fds = &p[0];
		cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, &e), 0, "spawn: %s",
			     clip_error_get_message(e));
		close(p[0]);
		pid = pidfd_pid(pidfd);
		close(p[1]);
		wait_reaped(pid);
		cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0, "%s", scripts[i]);
		cr_assert_eq(status, want[i], "%s: status %d", scripts[i], status);
		assert_errno(clip_cage_wait_process(c, pidfd, &status), -ECHILD);
		close(pidfd);
	}
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	reaper_stop(&r);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/* Run by root, the cage's uid N is host uid base + N: what an init gives its files and sockets. */
Test(cage_life, a_process_runs_as_the_uid_base_plus_its_uid)
{
	const char *argv[] = { "/bin/sh", "-c", "read x; exit 4", NULL };
	struct clip_cage_spawn_opts o = {
		.size = sizeof(o), .argv = argv, .n_fds = 1, .uid = 7, .gid = 9
	};
	struct clip_cage_profile *p = parse_ok(H);
	struct clip_ctx *ctx = NULL;
	struct clip_error *e = NULL;
	struct clip_cage *c = NULL;
	char line[128], want[128];
	int in[2], pidfd = -1, status = -1;

	if (!test_is_root())
		cr_skip_test(
			"not root of the host: a rootless cage maps the caller's uid, not a range");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	cr_assert_eq(clip_cage_profile_set_uid_base(p, 0x5a0000, &e), 0, "%s",
		     clip_error_get_message(e));
	ctx = test_ctx("/nonexistent");
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start: %s", clip_error_get_message(e));
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	o.fds = &in[0];
	cr_assert_eq(clip_cage_spawn(c, &o, &pidfd, &e), 0, "spawn: %s", clip_error_get_message(e));
	close(in[0]);
	status_line(pidfd_pid(pidfd), "Uid:", line, sizeof(line));
	snprintf(want, sizeof(want), "Uid:\t%u\t%u\t%u\t%u", 0x5a0000 + 7, 0x5a0000 + 7,
		 0x5a0000 + 7, 0x5a0000 + 7);
	cr_assert_str_eq(line, want);
	status_line(pidfd_pid(pidfd), "Gid:", line, sizeof(line));
	cr_assert(strncmp(line, "Gid:\t5898249\t", 13) == 0, "%s", line);
	close(in[1]);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	cr_assert_eq(status, 4);
	close(pidfd);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
}

/*
 * A stopped cage starts again, as new: another init in other namespaces,
 * a new fd; a process spawned before still gives its status. A running
 * one is refused, saying so.
 */
Test(cage_life, a_stopped_cage_starts_again)
{
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c = started(&ctx, H);
	struct clip_error *e = NULL;
	struct stat ns1, ns2;
	char path[64];
	int before, after, status = -1;
	pid_t init1, init2;

	init1 = init_pid(c);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init1);
	cr_assert_eq(stat(path, &ns1), 0);
	assert_refused(clip_cage_start(c, 0, &e), -EBUSY,
		       "cage a is running: stop it (clip_cage_stop()) before starting it again");
	before = spawn(c, "exit 3");
	cr_assert_eq(poll(&(struct pollfd){ .fd = before, .events = POLLIN }, 1, 10000), 1);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_STOPPED);

	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "start again: %s", clip_error_get_message(e));
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_RUNNING);
	init2 = init_pid(c);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)init2);
	cr_assert_eq(stat(path, &ns2), 0);
	cr_assert_neq(init2, init1);
	cr_assert_neq(ns2.st_ino, ns1.st_ino, "the old pid namespace");
	cr_assert_geq(clip_cage_get_fd(c), 0);
	cr_assert_eq(clip_cage_wait_process(c, before, &status), 0, "the earlier process");
	cr_assert_eq(status, 3);
	close(before);
	after = spawn(c, "exit 4");
	cr_assert_eq(clip_cage_wait_process(c, after, &status), 0);
	cr_assert_eq(status, 4);
	close(after);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert_not(has_children());
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * A registered cage that ended with its first process, not yet waited
 * for, starts again (with a first process again) under its name, with
 * cgroups of its own: the old ones are gone.
 */
Test(cage_life, a_cage_that_ended_starts_again_registered)
{
	const char *argv[] = { "/bin/sh", "-c", "read x; exit 6", NULL };
	struct clip_cage_spawn_opts o = { .size = sizeof(o), .argv = argv, .n_fds = 1 };
	char *dir = test_tmpdir("tmpfs"), cg1[4096] = "", cg2[4096] = "";
	struct clip_cage_profile *p = parse_ok("[Cage]\nName=again\n[Limits]\nTasksMax=16\n");
	struct clip_ctx *ctx = test_ctx(dir);
	struct clip_cage *c = NULL, *found = NULL;
	struct clip_error *e = NULL;
	int in[2], pidfd = -1, status = -1;

	if (!userns_available())
		cr_skip_test("no user namespaces");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	for (int round = 0; round < 2; round++) {
		char *cg = round ? cg2 : cg1;

		cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
		o.fds = &in[0];
		cr_assert_eq(clip_cage_start_spawn(
				     c, CLIP_CAGE_START_REGISTER | CLIP_CAGE_START_END_WITH_FIRST,
				     &o, &pidfd, &e),
			     0, "round %d: %s", round, clip_error_get_message(e));
		close(in[0]);
		v1_dir(pidfd_pid(pidfd), "pids", cg, 4096);
		cr_assert_eq(clip_cage_attach(&found, ctx, "again", &e), 0, "round %d: %s", round,
			     clip_error_get_message(e));
		found = clip_cage_unref(found);
		close(in[1]);
		cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
		cr_assert_eq(status, 6);
		close(pidfd);
		exited_then_sigchld(clip_cage_get_fd(c));
		cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_STOPPED);
	}
	cr_assert_eq(clip_cage_wait(c, 10000), 0);
	assert_refused(clip_cage_attach(&found, ctx, "again", &e), -ENODATA,
		       "no cage named again is running");
	/* Where the cage has cgroups of its own (not rootless here), each start makes new ones. */
	if (strstr(cg1, "/clip-again-")) {
		cr_assert_str_neq(cg1, cg2, "the same cgroup twice");
		cr_assert(access(cg1, F_OK) < 0 && access(cg2, F_OK) < 0, "%s or %s left", cg1,
			  cg2);
	}
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
	free(dir);
}

/* Landlock's ABIs (issue 21). */
static int
kernel_landlock_abi(void)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, 1u /* VERSION */);

	return abi < 0 ? 0 : (int)abi;
}

/* What the running kernel's Landlock lacks is reported, as a missing cgroup limit. */
Test(cage_life, landlock_rights_the_kernel_lacks_are_reported)
{
	const int abi = kernel_landlock_abi();
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c;
	int m;

	if (abi < 1)
		cr_skip_test("no Landlock");
	c = started(&ctx, H "[Security]\nLandlockMinimumABI=1\n");
	m = clip_cage_get_missing(c);
	cr_assert_eq(!!(m & CLIP_CAGE_MISSING_LANDLOCK), 0);
	cr_assert_eq(!!(m & CLIP_CAGE_MISSING_LANDLOCK_NET), abi < 4, "ABI %d: 0x%x", abi, m);
	cr_assert_eq(!!(m & CLIP_CAGE_MISSING_LANDLOCK_IOCTL), abi < 5, "ABI %d: 0x%x", abi, m);
	cr_assert_eq(!!(m & CLIP_CAGE_MISSING_LANDLOCK_SCOPE), abi < 6, "ABI %d: 0x%x", abi, m);
	/* Before ABI 7 no denial is logged (landlock_denials_reach_the_log: the audit). */
	if (abi < 7)
		cr_assert(m & CLIP_CAGE_MISSING_LANDLOCK_LOG, "0x%x", m);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

/*
 * A kernel without Landlock (landlock_create_ruleset() answers ENOSYS
 * here): a profile's minimum refuses the start and says why; without one
 * the cage starts and reports every Landlock right missing.
 */
Test(cage_life, a_landlock_minimum_abi_the_kernel_lacks_refuses_the_start)
{
	const int all = CLIP_CAGE_MISSING_LANDLOCK | CLIP_CAGE_MISSING_LANDLOCK_NET |
			CLIP_CAGE_MISSING_LANDLOCK_IOCTL | CLIP_CAGE_MISSING_LANDLOCK_SCOPE |
			CLIP_CAGE_MISSING_LANDLOCK_LOG;
	struct clip_ctx *ctx = NULL, *ctx2 = NULL;
	struct clip_cage *c = new_or_skip(&ctx, H "[Security]\nLandlockMinimumABI=1\n"), *c2;
	struct clip_error *e = NULL;
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);

	cr_assert_not_null(f);
	cr_assert_eq(
		seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(landlock_create_ruleset), 0),
		0);
	cr_assert_eq(seccomp_load(f), 0);
	seccomp_release(f);
	assert_refused(clip_cage_start(c, 0, &e), -EOPNOTSUPP,
		       "cage a: its profile requires Landlock ABI 1 (LandlockMinimumABI=), and "
		       "this kernel has no Landlock");
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW);
	cr_assert_not(has_children());

	c2 = started(&ctx2, H);
	cr_assert_eq(clip_cage_get_missing(c2) & all, all, "0x%x", clip_cage_get_missing(c2));
	cr_assert_eq(clip_cage_stop(c2, 0, NULL), 0);
	clip_cage_unref(c2);
	clip_cage_unref(c);
	clip_ctx_unref(ctx2);
	clip_ctx_unref(ctx);
}

struct refused_log {
	bool seen;
	char line[256];
	unsigned n_fn; /* denials passed to the cage's denial function */
	char what[256];
};

static void
capture_refused(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	struct refused_log *l = userdata;

	(void)ctx;
	(void)priority;
	if (strstr(message, " was refused ")) {
		l->seen = true;
		snprintf(l->line, sizeof(l->line), "%s", message);
	}
}

static void
capture_denial(struct clip_cage *cage, const char *what, void *userdata)
{
	struct refused_log *l = userdata;

	l->n_fn++;
	snprintf(l->what, sizeof(l->what), "%s", what);
}

/* The kernel's audit as it was before a test turned it on (-1: untouched). */
static int audit_was = -1;
/* This program's file, locked while a test has the audit on: its tests run in parallel. */
static int audit_lock = -1;

static void
audit_restore(void)
{
	if (audit_was >= 0)
		(void)test_audit_set(audit_was);
	audit_was = -1;
	if (audit_lock >= 0)
		close(audit_lock);
	audit_lock = -1;
}

/* Landlock's denials to read: ABI 7, and the kernel's audit on (turned on for the test). */
static void
audit_on_or_skip(void)
{
	int r;

	if (kernel_landlock_abi() < 7)
		cr_skip_test("Landlock before ABI 7 logs no denial");
	if (!test_is_root())
		cr_skip_test("only the host's root reads the kernel's audit");
	audit_lock = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	cr_assert(audit_lock >= 0 && flock(audit_lock, LOCK_EX) == 0, "%s", strerror(errno));
	r = test_audit_set(1);
	cr_assert_geq(r, 0, "the host's root turns the kernel's audit on: %s", strerror(-r));
	audit_was = r;
}

/*
 * ABI 7: a cage's Landlock denials reach the library's log as "cage NAME
 * was refused X", and its denial function, where the kernel's audit is on
 * and the launcher is the host's root (doc/cage.md, "Landlock"): read as
 * they come by an event loop (clip_cage_get_denial_fd(),
 * clip_cage_read_denials()), and when the cage ends. One test: it turns
 * the host's audit on and back, which tests in parallel would race on.
 */
Test(cage_life, landlock_denials_reach_the_log, .fini = audit_restore)
{
	struct refused_log l = { 0 };
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c;
	struct pollfd p = { .events = POLLIN };
	long long deadline;
	int pidfd, status = -1, n = 0;

	audit_on_or_skip();
	c = started(&ctx, H);
	cr_assert_not(clip_cage_get_missing(c) & CLIP_CAGE_MISSING_LANDLOCK_LOG,
		      "the host's root with the audit on reads the denials");
	cr_assert_eq(clip_ctx_set_log_priority(ctx, LOG_DEBUG), 0);
	cr_assert_eq(clip_ctx_set_log_fn(ctx, capture_refused, &l), 0);
	cr_assert_eq(clip_cage_set_denial_fn(c, capture_denial, &l), 0);
	p.fd = clip_cage_get_denial_fd(c);
	cr_assert_geq(p.fd, 0, "%s", strerror(-p.fd));
	assert_errno(clip_cage_read_denials(c), 0);

	/* A TCP connection to a port the profile does not list (ABI 4): read while it runs. */
	pidfd = spawn(c, "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9' && exit 1; exit 0");
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	close(pidfd);
	cr_assert_eq(status, 0, "the connection was not refused");
	for (deadline = now_ms() + 5000; n == 0 && now_ms() < deadline;)
		if (poll(&p, 1, 100) > 0)
			n = clip_cage_read_denials(c);
	cr_assert_eq(n, 1, "one denial read while the cage runs (%d)", n);
	cr_assert_eq(l.n_fn, 1);
	cr_assert(strstr(l.what, "net.connect_tcp ") && strstr(l.what, "dest=9"), "%s", l.what);
	cr_assert(strstr(l.line, "cage a was refused net.connect_tcp "), "%s", l.line);
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_RUNNING);

	/* A process spawned from outside: its own domain, which may not signal init's. */
	pidfd = spawn(c, "kill -0 1 && exit 1; exit 0");
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	close(pidfd);
	cr_assert_eq(status, 0, "kill -0 1 was not refused");
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	cr_assert(strstr(l.line, "cage a was refused scope.signal "), "read at the end: %s",
		  l.line);
	cr_assert_eq(l.n_fn, 2, "the denial function is told once each");
	cr_assert(strncmp(l.what, "scope.signal ", 13) == 0, "%s", l.what);
	assert_errno(clip_cage_get_denial_fd(c), -ECHILD);
	assert_errno(clip_cage_read_denials(c), -ECHILD);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}

Test(cage_life, misuse_before_start)
{
	struct clip_cage_profile *p = parse_ok(H);
	struct clip_ctx *ctx = test_ctx("/nonexistent");
	struct clip_error *e = NULL;
	struct clip_cage *c = NULL;
	int *pids = NULL;
	size_t n;

	assert_refused(clip_cage_new(&c, NULL, p, &e), -EINVAL,
		       "clip_cage_new: the context is NULL");
	assert_refused(clip_cage_new(&c, ctx, NULL, &e), -EINVAL,
		       "clip_cage_new: the profile is NULL");
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	assert_errno(clip_cage_get_fd(c), -ECHILD);
	assert_errno(clip_cage_wait(c, 0), -ECHILD);
	assert_refused(clip_cage_stop(c, 0, &e), -ECHILD, "cage a is not running (never started)");
	assert_errno(clip_cage_signal(c, SIGTERM), -ECHILD);
	assert_errno(clip_cage_get_pids(c, &pids, &n), -ECHILD);
	assert_refused(clip_cage_start(c, 4, &e), -EINVAL,
		       "clip_cage_start: flags 0x4: only CLIP_CAGE_START_REGISTER (0x1) is known");
	assert_refused(clip_cage_start(NULL, 0, &e), -EINVAL, "clip_cage_start: the cage is NULL");
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW);
	cr_assert_eq(clip_cage_get_missing(c), 0);
	cr_assert_eq(clip_cage_get_profile(c), p);
	assert_refused(clip_cage_attach(&c, ctx, "../x", &e), -EINVAL, "'../x' is not a cage name");
	assert_refused(clip_cage_attach(&c, ctx, NULL, &e), -EINVAL, "the name is NULL");
	assert_refused(clip_cage_list(ctx, NULL, &e), -EINVAL, "clip_cage_list: ret is NULL");
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
}

/* Without the TPM in the build: test-disabled.c. */
#if HAVE_TPM
/* Measure=yes and no TPM: the start is refused, nothing runs; Measure=no never asks the TPM. */
Test(cage_life, measure_without_a_tpm_refuses_the_start)
{
	char *dir = test_tmpdir("tmpfs");
	struct clip_tpm_opts o = { .size = sizeof(o), .tcti = "swtpm:path=/nonexistent/s" };
	struct clip_cage_profile *p = parse_ok(H "[Security]\nMeasure=yes\n");
	struct clip_cage_profile *q = parse_ok(H);
	struct clip_ctx *ctx = test_ctx(dir);
	struct clip_cage *c = NULL;
	struct clip_error *e = NULL;
	int *pids = NULL;
	size_t n;

	if (!userns_available())
		cr_skip_test("no user namespaces");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	cr_assert_eq(clip_ctx_set_tpm_options(ctx, &o), 0);
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	assert_errno(clip_cage_start(c, CLIP_CAGE_START_REGISTER, &e), -ENODEV);
	cr_assert(strstr(clip_error_get_message(e),
			 "cage a not started: its profile says Measure=yes and its start cannot "
			 "be measured: no TPM at 'swtpm:path=/nonexistent/s'"),
		  "%s", clip_error_get_message(e));
	e = clip_error_free(e);
	cr_assert_eq(clip_cage_get_state(c), CLIP_CAGE_NEW);
	assert_errno(clip_cage_get_pids(c, &pids, &n), -ECHILD);
	assert_errno(clip_cage_attach(&c, ctx, "a", NULL), -ENODATA);
	clip_cage_unref(c);

	/* The same context, without Measure: the cage starts. */
	c = NULL;
	cr_assert_eq(clip_cage_new(&c, ctx, q, NULL), 0);
	cr_assert_eq(clip_cage_start(c, 0, &e), 0, "%s", clip_error_get_message(e));
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_cage_profile_unref(q);
	clip_ctx_unref(ctx);
	free(dir);
}
#endif

/*
 * NAME.spawned, the registry's list of the processes spawned into a
 * registered cage (whose Landlock denials are the cage's): a new
 * registration starts with none, whatever a stale list held; and only the
 * registered cage's object writes in it, not another cage of the same
 * name that is not registered (a process of its own would be credited to
 * the registered one).
 */
Test(cage_life, only_the_registered_cage_notes_its_spawned_pids_and_afresh)
{
	char *dir = test_tmpdir("tmpfs"), path[700];
	struct clip_cage_profile *p = parse_ok("[Cage]\nName=noted\n");
	struct clip_ctx *ctx = test_ctx(dir);
	struct clip_cage *c = NULL, *other = NULL;
	struct clip_error *e = NULL;
	uint32_t me = (uint32_t)getpid();
	int fd, pidfd, status = -1;
	pid_t pid;

	if (!userns_available())
		cr_skip_test("no user namespaces");
	if (under_valgrind())
		cr_skip_test("valgrind does not emulate open_tree, clone3 or pidfd_send_signal");
	/* A stale list that names this process. */
	snprintf(path, sizeof(path), "%s/cages", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/cages/noted.spawned", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, &me, sizeof(me), (off_t)(me % 256) * 4), (ssize_t)sizeof(me));
	close(fd);
	cr_assert_eq(clip_cage_new(&c, ctx, p, NULL), 0);
	cr_assert_eq(clip_cage_start(c, CLIP_CAGE_START_REGISTER, &e), 0, "start: %s",
		     clip_error_get_message(e));
	cr_assert(access(path, F_OK) < 0 && errno == ENOENT, "the stale %s is left", path);
	cr_assert_not(cage_registry_spawned(c, getpid()), "a stale pid is credited to the cage");
	/* The registered cage's own process is noted. */
	pidfd = spawn(c, "exit 0");
	pid = pidfd_pid(pidfd);
	cr_assert(cage_registry_spawned(c, pid), "pid %d, spawned into the cage, is not noted",
		  (int)pid);
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	close(pidfd);
	/* Another cage of the name, not registered: its process is not the registered one's. */
	cr_assert_eq(clip_cage_new(&other, ctx, p, NULL), 0);
	cr_assert_eq(clip_cage_start(other, 0, &e), 0, "start: %s", clip_error_get_message(e));
	pidfd = spawn(other, "exit 0");
	pid = pidfd_pid(pidfd);
	cr_assert_not(cage_registry_spawned(c, pid),
		      "pid %d, spawned into an unregistered cage of the name, is credited to the "
		      "registered one",
		      (int)pid);
	cr_assert_eq(clip_cage_wait_process(other, pidfd, &status), 0);
	close(pidfd);
	cr_assert_eq(clip_cage_stop(other, 0, NULL), 0);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(other);
	clip_cage_unref(c);
	clip_cage_profile_unref(p);
	clip_ctx_unref(ctx);
	free(dir);
}

static void
capture_not_read(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	struct refused_log *l = userdata;

	(void)ctx;
	(void)priority;
	if (strstr(message, " were not read ")) {
		l->seen = true;
		snprintf(l->line, sizeof(l->line), "%s", message);
	}
}

/*
 * The audit socket a cage reads its Landlock denials from, not read while
 * the cage makes many (its buffer shrunk to the least, so that a few
 * records fill it): the kernel drops the rest, and the next read says so
 * in the log ("were not read (the audit socket overflowed)") instead of
 * passing over the loss.
 */
Test(cage_life, an_audit_socket_not_read_says_that_denials_were_lost, .fini = audit_restore)
{
	struct refused_log l = { 0 };
	struct clip_ctx *ctx = NULL;
	struct clip_cage *c;
	struct pollfd p = { .events = POLLIN };
	long long deadline;
	int pidfd, status = -1, one = 1;

	audit_on_or_skip();
	c = started(&ctx, H);
	cr_assert_eq(clip_ctx_set_log_fn(ctx, capture_not_read, &l), 0);
	p.fd = clip_cage_get_denial_fd(c);
	cr_assert_geq(p.fd, 0, "%s", strerror(-p.fd));
	cr_assert_eq(setsockopt(p.fd, SOL_SOCKET, SO_RCVBUFFORCE, &one, sizeof(one)), 0, "%s",
		     strerror(errno));
	/* 100 connections refused (ABI 4), nobody reading. */
	pidfd = spawn(c, "bash -c 'for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/9); "
			 "done' 2>/dev/null; exit 0");
	cr_assert_eq(clip_cage_wait_process(c, pidfd, &status), 0);
	close(pidfd);
	cr_assert_eq(status, 0);
	/* The kernel's audit thread delivers them after: until the socket reports its overrun. */
	for (deadline = now_ms() + 5000; now_ms() < deadline;) {
		cr_assert_geq(poll(&p, 1, 100), 0);
		if (p.revents & POLLERR)
			break;
		usleep(10000); /* POLLIN is set long before: poll() would not wait */
	}
	cr_assert(p.revents & POLLERR, "the audit socket did not overflow");
	(void)clip_cage_read_denials(c);
	cr_assert(l.seen, "the loss is not logged");
	cr_assert(strstr(l.line, "cage a: some of its Landlock denials were not read (the audit "
				 "socket overflowed)"),
		  "%s", l.line);
	cr_assert_eq(clip_cage_stop(c, 0, NULL), 0);
	clip_cage_unref(c);
	clip_ctx_unref(ctx);
}
