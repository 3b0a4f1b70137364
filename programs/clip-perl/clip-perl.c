/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip-perl: perl (Debian's libperl 5.36, embedded) that runs only code the
 * system would execute, as the exec securebits say.
 *
 *  - the main script is opened and checked here, read once into a sealed
 *    memfd (with a #line directive, so that messages name the real file)
 *    and handed to the parser as /dev/fd/N;
 *  - a code reference at the head of @INC resolves every require, use and
 *    do FILE against the rest of @INC (other hooks included), opens and
 *    checks the file, and returns the open handle;
 *  - require and do of an absolute or ./ ../ path never look at @INC: a
 *    wrapper of the require op checks the file itself and loads it the
 *    same way as the main script (5.36 has no ${^HOOK}{require__before});
 *    the wrapper also keeps the hook first in @INC (use lib unshifts);
 *  - the command line, PERL5OPT and the program's #! line are read as
 *    perl 5.36 reads them (perl-switches.c), so that the program checked
 *    is the one perl runs; one perl would refuse, or that cannot be read
 *    so, is refused under either securebit;
 *  - -e/-E, every form of the debugger (-d, -dt, -d:Mod, in PERL5OPT or
 *    on the #! line), PERL5DB, code in -M/-m or -F, and a script on
 *    standard input that fails the check are refused under
 *    SECBIT_EXEC_DENY_INTERACTIVE.
 *
 * See clip-perl(1) and doc/exec.md.
 */
#include <EXTERN.h>
#include <perl.h>
#include <XSUB.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <clip/clip.h>

#include "base/test-hooks.h"
#include "launcher.h"
#include "perl-switches.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

#define EXIT_REFUSED 126

EXTERN_C void boot_DynaLoader(pTHX_ CV *cv);

static struct clip_ctx *ctx;
static Perl_ppaddr_t orig_require, orig_dofile;
static SV *hook_rv;
static const char *script_name; /* for $0 */
static bool in_do; /* the require being resolved is a do FILE */

/* Said, and reported to the core (launcher_report_refusal()). */
static int
refuse(const char *what, struct clip_error *error)
{
	fprintf(stderr, "clip-perl: %s\n", clip_error_get_message(error));
	launcher_report_refusal(what, -clip_error_get_errno(error), clip_error_get_message(error));
	clip_error_free(error);
	return EXIT_REFUSED;
}

/* The refusals of interactive code; 0 to go on, else the exit code. */
static int
check_interactive(const struct perl_switches *s)
{
	struct clip_error *error = NULL;
	const char *db = getenv("PERL5DB");
	char what[96];

	if (s->source == PERL_SOURCE_CODE &&
	    clip_exec_may_run_interactive(ctx, -1, "-e", 0, &error) < 0)
		return refuse("-e", error);
	if (s->debugger) {
		snprintf(what, sizeof(what), "%s (the debugger, which runs what it reads)",
			 s->debugger);
		if (clip_exec_may_run_interactive(ctx, -1, what, 0, &error) < 0)
			return refuse(what, error);
	}
	/* Perl runs PERL5DB as the debugger's code: code from the environment. */
	if (db && !test_hook_disabled("perl-debugger") &&
	    clip_exec_may_run_interactive(ctx, -1, "PERL5DB (code from the environment)", 0,
					  &error) < 0)
		return refuse("PERL5DB", error);
	if (s->code_switch) {
		snprintf(what, sizeof(what), "%s with code after the module or pattern",
			 s->code_switch);
		if (clip_exec_may_run_interactive(ctx, -1, what, 0, &error) < 0)
			return refuse(what, error);
	}
	return 0;
}

/*
 * A command line perl would refuse, or that the scanner cannot read as perl
 * does: under an exec securebit, refused rather than handed on, since what
 * perl would then run is unknown. 0 to go on.
 */
static int
check_understood(const struct perl_switches *s)
{
	unsigned bits = 0;

	if (!s->failure[0] || test_hook_disabled("perl-switch-scan"))
		return 0;
	if (clip_exec_get_securebits(ctx, &bits) < 0 ||
	    !(bits & (CLIP_EXEC_RESTRICT_FILE | CLIP_EXEC_DENY_INTERACTIVE)))
		return 0;
	fprintf(stderr,
		"clip-perl: perl would not accept the switch '%s', or clip-perl cannot tell "
		"where perl's switches end: refused (%s)\n",
		s->failure,
		bits & CLIP_EXEC_RESTRICT_FILE ? "SECBIT_EXEC_RESTRICT_FILE"
					       : "SECBIT_EXEC_DENY_INTERACTIVE");
	return EXIT_REFUSED;
}

/*
 * @data with "#line N "NAME"" inserted where the parser starts reading
 * it, so that __FILE__, warn and die name the real file: after a #! line
 * (whose switches perl still reads) or, with -x, after the #!perl line.
 */
static int
memfd_with_line(const char *name, const char *data, size_t size, bool extract)
{
	size_t head = 0, line = 1;
	char directive[64 + PATH_MAX];
	int fd, n = 0;

	if (!strpbrk(name, "\"\n") && strlen(name) < PATH_MAX) {
		for (const char *p = data; extract && p && p < data + size;) {
			const char *nl = memchr(p, '\n', (size_t)(data + size - p));
			size_t len = nl ? (size_t)(nl - p) : (size_t)(data + size - p);

			/* find_beginning(): "#!" first, then "perl" or "PERL". */
			if (len > 2 && p[0] == '#' && p[1] == '!' &&
			    (memmem(p, len, "perl", 4) || memmem(p, len, "PERL", 4))) {
				head = (size_t)(p - data) + len + (nl ? 1 : 0);
				line++;
				break;
			}
			line++;
			p += len + 1;
		}
		if (!extract && size > 2 && data[0] == '#' && data[1] == '!') {
			const char *nl = memchr(data, '\n', size);

			head = nl ? (size_t)(nl - data) + 1 : size;
			line = 2;
		}
		if (extract && head == 0)
			line = 1;
		n = snprintf(directive, sizeof(directive), "%s#line %zu \"%s\"\n",
			     head > 0 && data[head - 1] != '\n' ? "\n" : "", line, name);
	}
	fd = memfd_create("clip-perl-script", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL)
		fd = memfd_create("clip-perl-script", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (write(fd, data, head) != (ssize_t)head || write(fd, directive, (size_t)n) != n ||
	    write(fd, data + head, size - head) != (ssize_t)(size - head) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
	    lseek(fd, 0, SEEK_SET) < 0) {
		int r = -errno;

		close(fd);
		return r ? r : -EIO;
	}
	return fd;
}

/*
 * Open, check and copy a file to run; the memfd, or -errno with *error set.
 * For the main program, @sw gets the switches of its #! line.
 */
static int
load_file(const char *path, bool extract, struct perl_switches *sw, struct clip_error **error)
{
	char *data = NULL;
	size_t size = 0;
	int fd, r;

	(void)launcher_ctx(&ctx);
	fd = clip_exec_open(ctx, AT_FDCWD, path, 0, error);
	if (fd < 0)
		return fd;
	r = clip_exec_read_all(ctx, fd, 0, &data, &size, error);
	close(fd);
	if (r < 0)
		return r;
	if (sw)
		perl_scan_shebang(sw, data, size);
	r = memfd_with_line(path, data, size, extract);
	free(data);
	return r;
}

static SV *
handle_from_fd(pTHX_ int fd)
{
	PerlIO *f = PerlIO_fdopen(fd, "r");
	GV *gv;
	IO *io;
	SV *rv;

	if (!f)
		return NULL;
	gv = newGVgen_flags("Clip::Exec", 0);
	io = GvIOn(gv);
	IoIFP(io) = f;
	IoTYPE(io) = IoTYPE_RDONLY;
	rv = newRV_inc((SV *)gv);
	/* Anonymous: the glob lives as long as the reference perl reads from. */
	(void)hv_delete(GvSTASH(gv), GvNAME(gv), GvNAMELEN(gv), G_DISCARD);
	return rv;
}

static bool
is_hook(SV *entry)
{
	return SvROK(entry) && SvRV(entry) == SvRV(hook_rv);
}

/* Another hook of @INC (code, array or object), called as perl would. */
static AV *
call_foreign_hook(pTHX_ SV *entry, SV *name)
{
	AV *out = newAV();
	SV *code = entry;
	int count;

	if (SvTYPE(SvRV(entry)) == SVt_PVAV && !sv_isobject(entry)) {
		SV **first = av_fetch((AV *)SvRV(entry), 0, 0);

		if (!first)
			return out;
		code = *first;
	}
	{
		dSP;

		ENTER;
		SAVETMPS;
		PUSHMARK(SP);
		XPUSHs(entry);
		XPUSHs(name);
		PUTBACK;
		if (sv_isobject(entry) && SvTYPE(SvRV(entry)) != SVt_PVCV)
			count = call_method("INC", G_LIST);
		else
			count = call_sv(code, G_LIST);
		SPAGAIN;
		av_extend(out, count);
		for (int i = count - 1; i >= 0; i--)
			av_store(out, i, newSVsv(POPs));
		PUTBACK;
		FREETMPS;
		LEAVE;
	}
	return out;
}

static void
croak_not_found(pTHX_ const char *name)
{
	AV *inc = GvAVn(PL_incgv);
	SV *dirs = sv_2mortal(newSVpvs(""));
	SV *hint = sv_2mortal(newSVpvs(""));
	size_t len = strlen(name);

	for (SSize_t i = 0; i <= av_top_index(inc); i++) {
		SV **e = av_fetch(inc, i, 0);

		if (e && !is_hook(*e))
			sv_catpvf(dirs, " %" SVf, SVfARG(*e));
	}
	if (len > 3 && strcmp(name + len - 3, ".pm") == 0) {
		sv_catpvs(hint, " (you may need to install the ");
		for (const char *p = name; p < name + len - 3; p++)
			if (*p == '/')
				sv_catpvs(hint, "::");
			else
				sv_catpvn(hint, p, 1);
		sv_catpvs(hint, " module)");
	} else if (len > 2 && strcmp(name + len - 2, ".h") == 0)
		sv_catpvs(hint, " (change .h to .ph maybe?) (did you run h2ph?)");
	else if (len > 3 && strcmp(name + len - 3, ".ph") == 0)
		sv_catpvs(hint, " (did you run h2ph?)");
	Perl_croak(aTHX_ "Can't locate %s in @INC%" SVf " (@INC contains:%" SVf ")", name,
		   SVfARG(hint), SVfARG(dirs));
}

/*
 * The file @name refused (-@err, @error's message): reported to the core, and perl dies with
 * the message; die's exit status is $!: 13 for a refusal, as for an unreadable file.
 */
static void __attribute__((noreturn))
croak_refused(pTHX_ const char *name, int err, struct clip_error *error)
{
	SV *msg = sv_2mortal(newSVpv(clip_error_get_message(error), 0));

	launcher_report_refusal(name, err, clip_error_get_message(error));
	clip_error_free(error);
	errno = err;
	Perl_croak(aTHX_ "Can't run %s: %" SVf, name, SVfARG(msg));
}

/* Try @dir/@name (and its .pmc first, as perl does); -ENOENT to go on. */
static int
try_dir(pTHX_ const char *dir, const char *name, SV **ret_path, struct clip_error **error)
{
	size_t len = strlen(name);
	bool pm = len > 3 && strcmp(name + len - 3, ".pm") == 0;

	(void)launcher_ctx(&ctx);
	for (int pmc = pm; pmc >= 0; pmc--) {
		SV *path = sv_2mortal(newSVpvf("%s/%s%s", dir, name, pmc ? "c" : ""));
		int fd = clip_exec_open(ctx, AT_FDCWD, SvPVX(path), 0, error);

		if (fd >= 0) {
			*ret_path = path;
			return fd;
		}
		if (fd != -ENOENT && fd != -ENOTDIR && fd != -EISDIR && fd != -ENAMETOOLONG)
			return fd;
		*error = clip_error_free(*error);
	}
	return -ENOENT;
}

/* The @INC hook: (\"#line 1 \"PATH\"\n", $fh), or what another hook gives. */
static XSPROTO(inc_hook)
{
	dXSARGS;
	AV *inc = GvAVn(PL_incgv);
	const char *name;
	SV *namesv;

	if (items < 2)
		XSRETURN_EMPTY;
	namesv = ST(1);
	name = SvPV_nolen(namesv);
	for (SSize_t i = 0; i <= av_top_index(inc); i++) {
		struct clip_error *error = NULL;
		SV **e = av_fetch(inc, i, 0), *path = NULL, *fh, *prefix;
		int fd;

		if (!e || is_hook(*e))
			continue;
		if (SvROK(*e)) {
			AV *out = call_foreign_hook(aTHX_ * e, namesv);
			SSize_t n = av_top_index(out) + 1;

			sv_2mortal((SV *)out);
			if (n == 0)
				continue;
			SP = PL_stack_base + ax - 1;
			EXTEND(SP, n);
			for (SSize_t j = 0; j < n; j++)
				PUSHs(sv_2mortal(SvREFCNT_inc(*av_fetch(out, j, 0))));
			PUTBACK;
			return;
		}
		fd = try_dir(aTHX_ SvPV_nolen(*e), name, &path, &error);
		if (fd == -ENOENT)
			continue;
		if (fd < 0)
			croak_refused(aTHX_ name, -fd, error);
		fh = handle_from_fd(aTHX_ fd);
		if (!fh) {
			close(fd);
			Perl_croak(aTHX_ "Can't read %" SVf ": %s", SVfARG(path), strerror(errno));
		}
		/* %INC names the file, not the hook; perl keeps an entry a hook made. */
		(void)hv_store(GvHVn(PL_incgv), name, (I32)strlen(name), newSVsv(path), 0);
		prefix = strpbrk(SvPVX(path), "\"\n")
				 ? newSVpvs("")
				 : newSVpvf("#line 1 \"%" SVf "\"\n", SVfARG(path));
		SP = PL_stack_base + ax - 1;
		EXTEND(SP, 2);
		PUSHs(sv_2mortal(newRV_noinc(prefix)));
		PUSHs(sv_2mortal(fh));
		PUTBACK;
		return;
	}
	if (in_do)
		XSRETURN_EMPTY;
	croak_not_found(aTHX_ name);
}

static void
ensure_hook_first(pTHX)
{
	AV *inc = GvAVn(PL_incgv), *rest;
	SV **first = av_fetch(inc, 0, 0);

	if (first && is_hook(*first))
		return;
	/* use lib, local @INC or @INC = (...) moved or dropped it. */
	rest = newAV();
	for (SSize_t i = 0; i <= av_top_index(inc); i++) {
		SV **e = av_fetch(inc, i, 0);

		if (!e || !is_hook(*e))
			av_push(rest, e ? SvREFCNT_inc(*e) : newSV(0));
	}
	av_clear(inc);
	av_push(inc, SvREFCNT_inc(hook_rv));
	for (SSize_t i = 0; i <= av_top_index(rest); i++)
		av_push(inc, SvREFCNT_inc(*av_fetch(rest, i, 0)));
	SvREFCNT_dec((SV *)rest);
}

/* What an explicit require leaves to undo when perl dies in it. */
struct pending {
	int fd;
	char key[32];
	char *name;
	bool is_do;
};

static void
pending_cleanup(pTHX_ void *p)
{
	struct pending *pd = p;
	HV *inc = GvHVn(PL_incgv);

	if (pd->fd >= 0) {
		close(pd->fd);
		/* Compilation failed: perl marks its file as failed; ours is @name. */
		if (hv_exists(inc, pd->key, (I32)strlen(pd->key))) {
			(void)hv_delete(inc, pd->key, (I32)strlen(pd->key), G_DISCARD);
			if (!pd->is_do)
				(void)hv_store(inc, pd->name, (I32)strlen(pd->name), newSV(0), 0);
		}
	}
	free(pd->name);
	free(pd);
}

static bool
is_explicit_path(const char *name)
{
	return name[0] == '/' || strncmp(name, "./", 2) == 0 || strncmp(name, "../", 3) == 0;
}

/* require/do of a path perl opens without @INC: checked here. */
static OP *
require_explicit(pTHX_ const char *name, bool is_do, Perl_ppaddr_t orig)
{
	dSP;
	struct clip_error *error = NULL;
	struct pending *pd;
	HV *inc = GvHVn(PL_incgv);
	OP *next;
	int fd;

	fd = load_file(name, false, NULL, &error);
	if (fd == -ENOENT || fd == -ENOTDIR || fd == -EISDIR) {
		clip_error_free(error);
		if (!is_do)
			Perl_croak(aTHX_ "Can't locate %s", name);
		SETs(&PL_sv_undef);
		PUTBACK;
		errno = -fd;
		return NORMAL;
	}
	if (fd < 0)
		croak_refused(aTHX_ name, -fd, error);
	pd = calloc(1, sizeof(*pd));
	if (!pd || !(pd->name = strdup(name))) {
		close(fd);
		free(pd);
		Perl_croak(aTHX_ "Out of memory in require");
	}
	pd->fd = fd;
	pd->is_do = is_do;
	snprintf(pd->key, sizeof(pd->key), "/dev/fd/%d", fd);
	SAVEDESTRUCTOR_X(pending_cleanup, pd);
	SETs(sv_2mortal(newSVpv(pd->key, 0)));
	PUTBACK;
	next = orig(aTHX);
	/* Compiled: the file's own name in %INC, as perl would have stored it. */
	if (hv_exists(inc, pd->key, (I32)strlen(pd->key))) {
		(void)hv_delete(inc, pd->key, (I32)strlen(pd->key), G_DISCARD);
		(void)hv_store(inc, name, (I32)strlen(name), newSVpv(name, 0), 0);
	}
	close(pd->fd);
	pd->fd = -1;
	return next;
}

static OP *
pp_clip_require(pTHX)
{
	dSP;
	bool is_do = PL_op->op_type == OP_DOFILE, saved = in_do;
	Perl_ppaddr_t orig = is_do ? orig_dofile : orig_require;
	SV *sv = TOPs;
	const char *name;
	STRLEN len;
	OP *next;

	ensure_hook_first(aTHX);
	/* A tied name is fetched once, here: perl then sees what was checked. */
	if (SvGMAGICAL(sv)) {
		sv = sv_mortalcopy(sv);
		SETs(sv);
	}
	/* require VERSION, or no name: perl's own handling. */
	if ((!is_do && (SvNIOKp(sv) || SvVOK(sv))) || !SvOK(sv))
		return orig(aTHX);
	name = SvPV_const(sv, len);
	if (len == 0 || memchr(name, '\0', len))
		return orig(aTHX);
	if (is_explicit_path(name)) {
		if (!is_do && hv_exists(GvHVn(PL_incgv), name, (I32)len))
			return orig(aTHX);
		return require_explicit(aTHX_ name, is_do, orig);
	}
	in_do = is_do;
	next = orig(aTHX);
	in_do = saved;
	return next;
}

static void
xs_init(pTHX)
{
	CV *cv;

	newXS("DynaLoader::boot_DynaLoader", boot_DynaLoader, __FILE__);
	/* $0 is set from this after xs_init: the script's name, not /dev/fd/N. */
	if (script_name) {
		Safefree(PL_origfilename);
		PL_origfilename = savepv(script_name);
	}
	cv = newXS("Clip::Exec::INC", inc_hook, __FILE__);
	hook_rv = newRV_inc((SV *)cv);
	av_unshift(GvAVn(PL_incgv), 1);
	av_store(GvAVn(PL_incgv), 0, SvREFCNT_inc(hook_rv));
	/* Before the program is compiled: ops take their function at creation. */
	orig_require = PL_ppaddr[OP_REQUIRE];
	orig_dofile = PL_ppaddr[OP_DOFILE];
	PL_ppaddr[OP_REQUIRE] = pp_clip_require;
	PL_ppaddr[OP_DOFILE] = pp_clip_require;
}

/* Open and check the script; its memfd, or -1 with *exitcode set. */
static int
open_script(const char *arg, struct perl_switches *s, char **ret_name, int *exitcode)
{
	struct clip_error *error = NULL;
	char *name = s->search ? perl_search_path(arg) : strdup(arg);
	int fd;

	if (!name) {
		/* perl's own words (util.c, find_script), and its exit status. */
		fprintf(stderr, "Can't find %s on PATH.\n", arg);
		*exitcode = 2;
		return -1;
	}
	fd = load_file(name, s->extract, s, &error);
	if (fd == -EACCES || fd == -EPERM || fd == -ETXTBSY) {
		fprintf(stderr, "clip-perl: can't run perl script \"%s\": %s\n", name,
			clip_error_get_message(error));
		launcher_report_refusal(name, -fd, clip_error_get_message(error));
		*exitcode = EXIT_REFUSED;
	} else if (fd < 0) {
		fprintf(stderr, "Can't open perl script \"%s\": %s\n", name, strerror(-fd));
		*exitcode = 2;
	}
	clip_error_free(error);
	if (fd < 0) {
		free(name);
		return -1;
	}
	*ret_name = name;
	return fd;
}

/*
 * A program on standard input that passed the check (a regular file): the
 * switches of its #! line, read where perl will start reading, without
 * moving the offset. Anything else perl reads there was refused, or is
 * not enforced.
 */
static void
scan_stdin_shebang(struct perl_switches *s)
{
	struct stat st;
	char *data = NULL;
	size_t size = 0;
	off_t off = lseek(STDIN_FILENO, 0, SEEK_CUR);

	if (off < 0 || fstat(STDIN_FILENO, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= off)
		return;
	size = (size_t)(st.st_size - off);
	data = malloc(size);
	if (data) {
		ssize_t n = pread(STDIN_FILENO, data, size, off);

		if (n > 0)
			perl_scan_shebang(s, data, (size_t)n);
	}
	free(data);
}

int
main(int argc, char **argv, char **env)
{
	struct clip_error *error = NULL;
	PerlInterpreter *my_perl;
	struct perl_switches s;
	char **args = NULL, *name = NULL, fdpath[32];
	int exitcode = 0, fd = -1;

	if (launcher_ctx_new("clip-perl", &ctx) < 0) {
		fprintf(stderr, "clip-perl: cannot create a libclip context\n");
		return 1;
	}
	perl_scan_args(&s, argc, argv, getenv("PERL5OPT"));
	exitcode = check_understood(&s);
	if (exitcode)
		goto out;
	args = calloc((size_t)argc + 1, sizeof(char *));
	if (!args) {
		exitcode = 1;
		goto out;
	}
	memcpy(args, argv, (size_t)argc * sizeof(char *));
	/* perl refuses the command line, or prints and exits: it runs nothing. */
	if (s.failure[0] || s.source == PERL_SOURCE_EXIT)
		goto run;
	if (s.source == PERL_SOURCE_SCRIPT) {
		fd = open_script(argv[s.script], &s, &name, &exitcode);
		if (fd < 0)
			goto out;
		snprintf(fdpath, sizeof(fdpath), "/dev/fd/%d", fd);
		args[s.script] = fdpath;
		script_name = name;
	} else if (s.source == PERL_SOURCE_STDIN) {
		if (clip_exec_may_run_interactive(ctx, STDIN_FILENO, "standard input", 0, &error) <
		    0) {
			exitcode = refuse("standard input", error);
			goto out;
		}
		scan_stdin_shebang(&s);
	}
	exitcode = check_interactive(&s);
	if (exitcode)
		goto out;

run:
	PERL_SYS_INIT3(&argc, &args, &env);
	my_perl = perl_alloc();
	perl_construct(my_perl);
	/* As perl's own main: no full teardown at exit (a threaded perl defaults to one). */
	PL_perl_destruct_level = 0;
	PL_exit_flags |= PERL_EXIT_DESTRUCT_END;
	if (!perl_parse(my_perl, xs_init, argc, args, env))
		perl_run(my_perl);
	exitcode = perl_destruct(my_perl);
	perl_free(my_perl);
	PERL_SYS_TERM();
	/* After perl's version, the library's: what runs the checks. */
	if (s.version && exitcode == 0)
		printf("clip-perl (libclip) %s\n", clip_version());
out:
	/* perl reads "/dev/fd/N" from that very descriptor, and closes it. */
	free(name);
	free(args);
	clip_ctx_unref(ctx);
	return exitcode;
}
