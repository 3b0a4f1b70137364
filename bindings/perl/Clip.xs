/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Clip: the Perl binding of libclip's public API (levels, labels, exec
 * checks, the transfer client, the audit log, the context). It links the
 * shared library as any outside user does and includes <clip/clip.h> only.
 *
 * Every handle is a blessed scalar holding the pointer (typemap:
 * T_PTROBJ); DESTROY drops the library's reference, so a handle is freed
 * when its last Perl reference goes, at once (Perl counts references).
 * Errors are croaked as Clip::Error objects (Clip.pm: the class per errno
 * family); the library's message (clip_error_get_message) is kept as it
 * is. Nothing is croaked while the library holds a resource of ours: every
 * fd this file opens is closed, every clip_error freed, before the croak.
 */
#define PERL_NO_GET_CONTEXT
#include "EXTERN.h"
#include "perl.h"
#include "XSUB.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clip/clip.h>

/*
 * Test hooks (doc/threat-model.md): in a -Dtest_hooks=true build,
 * CLIP_TEST_DISABLE (comma-separated names) switches a protection of this
 * module off, as libclip/base/test-hooks.h does inside the library; the
 * module links the public library only, so it reads the variable itself.
 */
#ifdef CLIP_TEST_HOOKS
static bool
test_hook_disabled(const char *what)
{
	const char *list = getenv("CLIP_TEST_DISABLE");
	size_t n = strlen(what);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, what, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}
#else
static inline bool
test_hook_disabled(const char *what)
{
	(void)what;
	return false;
}
#endif

/*
 * Whether a Perl string of @len bytes holds a NUL byte: the library takes C
 * strings, which would end there (a path "doc\0.txt" opened as "doc", a
 * level "s0\0..." parsed as "s0"). Every string argument is refused then.
 */
static bool
has_nul(const char *s, STRLEN len)
{
	return strlen(s) != len && !test_hook_disabled("perl-nul-byte");
}

typedef struct clip_ctx *Clip__Context;
typedef struct clip_level *Clip__Level;
typedef struct clip_range *Clip__Range;
typedef struct clip_level_names *Clip__LevelNames;
typedef struct clip_transfer *Clip__Transfer;
typedef struct clip_audit *Clip__Audit;
typedef struct clip_cage_profile *Clip__Profile;
typedef struct clip_session *Clip__Session;

/*
 * A cage handle: the library's cage, and what its denial function needs.
 * The cage's denial function is this handle's while on_denial holds a
 * code reference, and is detached before the cage's reference goes (a
 * session may keep the cage).
 */
struct perl_cage {
	struct clip_cage *cage;
	SV *on_denial; /* the code reference called with each denial, or NULL */
	bool of_session; /* Clip::Session->cage: its runner reads its denials */
};
typedef struct perl_cage *Clip__Cage;

/*
 * The class of an error by its errno (doc: Clip.pm, ERRORS): the families
 * of the Python binding's exceptions (doc/bindings.md), so that the two
 * bindings sort a refusal alike.
 */
static const char *
error_class(int errnum)
{
	switch (errnum) {
	case EINVAL:
	case E2BIG:
	case ERANGE:
	case ENAMETOOLONG:
	case EILSEQ:
		return "Clip::Error::Invalid";
	case EPERM:
	case EACCES:
	case EROFS:
		return "Clip::Error::Permission";
	case ENOENT:
	case ENODATA:
	case ESRCH:
		return "Clip::Error::NotFound";
	case EBADMSG:
		return "Clip::Error::Integrity";
	case ENOKEY:
		return "Clip::Error::NoKey";
	case EBUSY:
	case EEXIST:
	case ETXTBSY:
		return "Clip::Error::Busy";
	case EBADF:
	case EMEDIUMTYPE:
	case EISDIR:
	case ENOTDIR:
	case ELOOP:
		return "Clip::Error::BadFile";
	case EOPNOTSUPP:
	case ENOSYS:
	case ENODEV:
		return "Clip::Error::Unsupported";
	case ECHILD:
		return "Clip::Error::State";
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
		return "Clip::Error::Connection";
	case ETIMEDOUT:
	case EAGAIN:
		return "Clip::Error::Timeout";
	case ENOMEM:
	case ENOSPC:
	case EDQUOT:
	case EMFILE:
	case ENFILE:
	case EFBIG:
		return "Clip::Error::Resource";
	default:
		return "Clip::Error";
	}
}

/*
 * The statement of the user's program that called into Clip: the current
 * one (PL_curcop, while an XSUB runs), or when that is in Clip.pm's own
 * wrappers, the first caller outside the Clip packages.
 */
static const COP *
user_cop(pTHX)
{
	const COP *cop = PL_curcop;

	for (I32 level = 0;; level++) {
		const char *pkg = CopSTASHPV(cop);
		const PERL_CONTEXT *cx;

		if (!pkg || (strcmp(pkg, "Clip") != 0 && strncmp(pkg, "Clip::", 6) != 0))
			return cop;
		cx = caller_cx(level, NULL);
		if (!cx)
			return cop;
		cop = cx->blk_oldcop;
	}
}

/*
 * Croak a Clip::Error of the class of @errnum with @message (a new SV,
 * taken). The object records where in the Perl program the call was made.
 */
static void __attribute__((noreturn))
throw_message(pTHX_ int errnum, SV *message, int offset, const char *what)
{
	HV *hv = newHV();
	SV *obj = sv_2mortal(newRV_noinc((SV *)hv));
	const char *name = strerrorname_np(errnum);
	const COP *cop = user_cop(aTHX);

	(void)hv_stores(hv, "message", message);
	(void)hv_stores(hv, "errno", newSViv(errnum));
	(void)hv_stores(hv, "name", newSVpv(name ? name : "", 0));
	(void)hv_stores(hv, "offset", newSViv(offset));
	(void)hv_stores(hv, "function", newSVpv(what, 0));
	(void)hv_stores(hv, "file", newSVpv(CopFILE(cop), 0));
	(void)hv_stores(hv, "line", newSVuv(CopLINE(cop)));
	sv_bless(obj, gv_stashpv(error_class(errnum), GV_ADD));
	croak_sv(obj);
}

/*
 * Croak for @r (a negative errno): the message of @e when there is one (@e
 * is freed), else "@what: strerror".
 */
static void __attribute__((noreturn))
throw_error(pTHX_ int r, struct clip_error *e, const char *what)
{
	int errnum = r < 0 ? -r : EIO;
	int offset = e ? clip_error_get_offset(e) : -1;
	SV *message = e && *clip_error_get_message(e) ?
			      newSVpv(clip_error_get_message(e), 0) :
			      newSVpvf("%s: %s", what, strerror(errnum));

	clip_error_free(e);
	throw_message(aTHX_ errnum, message, offset, what);
}

/*
 * @r when it is not an error; croaks otherwise. @e (or NULL) is read only
 * here, after the call that filled it returned (C does not order the
 * evaluation of arguments).
 */
static int
check(pTHX_ int r, struct clip_error **e, const char *what)
{
	struct clip_error *err = e ? *e : NULL;

	if (e)
		*e = NULL;
	if (r < 0)
		throw_error(aTHX_ r, err, what);
	clip_error_free(err);
	return r;
}

/* A Perl filehandle (glob, glob reference, IO object), or NULL. */
static IO *
handle_of(pTHX_ SV *sv)
{
	if (SvROK(sv) && !sv_isobject(sv) && SvTYPE(SvRV(sv)) == SVt_PVGV)
		return GvIO((GV *)SvRV(sv));
	if (SvROK(sv) && SvTYPE(SvRV(sv)) == SVt_PVIO)
		return (IO *)SvRV(sv);
	if (isGV_with_GP(sv))
		return GvIO((GV *)sv);
	return NULL;
}

/*
 * The descriptor of @file: a filehandle's (fileno, not ours: *owned = 0),
 * or a path opened with @flags (ours to close: *owned = 1). Croaks when
 * the handle is closed or the path cannot be opened.
 */
static int
fd_of(pTHX_ SV *file, int flags, int *owned, const char *what)
{
	IO *io = handle_of(aTHX_ file);
	const char *path;
	STRLEN len;
	int fd;

	*owned = 0;
	if (io) {
		PerlIO *fp = IoIFP(io);

		fd = fp ? PerlIO_fileno(fp) : -1;
		if (fd < 0)
			throw_error(aTHX_ - EBADF, NULL, what);
		return fd;
	}
	if (!SvOK(file))
		throw_error(aTHX_ - EINVAL, NULL, what);
	path = SvPV(file, len);
	if (len == 0 || has_nul(path, len))
		throw_message(aTHX_ EINVAL, newSVpvf("%s: a path is 1 or more bytes without NUL", what),
			      -1, what);
	/* A file made here (O_CREAT) is the caller's alone, as the library's own are. */
	fd = open(path, flags | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		int errnum = errno;

		throw_message(aTHX_ errnum,
			      newSVpvf("%s: cannot open '%s': %s", what, path, strerror(errnum)), -1,
			      what);
	}
	*owned = 1;
	return fd;
}

/*
 * A file argument: the descriptor fd_of() gives, and whether it is ours
 * (a path this file opened) for file_done() to close.
 */
struct file_arg {
	int fd;
	int owned;
};

static struct file_arg
file_arg(pTHX_ SV *file, int flags, const char *what)
{
	struct file_arg f;

	f.fd = fd_of(aTHX_ file, flags, &f.owned, what);
	return f;
}

static void
file_done(struct file_arg *f)
{
	if (f->owned)
		close(f->fd);
	f->owned = 0;
}

/* A string argument without NUL bytes (the library takes C strings), or NULL for undef. */
static const char *
cstr(pTHX_ SV *sv, const char *what)
{
	STRLEN len;
	const char *s;

	if (!SvOK(sv))
		return NULL;
	s = SvPV(sv, len);
	if (has_nul(s, len))
		throw_error(aTHX_ - EINVAL, NULL, what);
	return s;
}

/*
 * The text of a parser's argument (undef is ""), refused with @what when it
 * holds a NUL byte.
 */
static const char *
text_arg(pTHX_ SV *sv, const char *what)
{
	STRLEN len;
	const char *s = SvPV(sv, len);

	if (has_nul(s, len))
		throw_error(aTHX_ - EINVAL, NULL, what);
	return s;
}

/* A string the library allocated, as a new SV; frees it. */
static SV *
take_text(pTHX_ char *text)
{
	SV *sv = newSVpv(text, 0);

	free(text);
	return sv;
}

/*
 * A context's getter answered NULL: the context is not usable in this
 * process, which for a live handle means it was created before a fork.
 */
static const char *
ctx_string(pTHX_ const char *s, const char *what)
{
	if (!s)
		throw_message(aTHX_ ECHILD,
			      newSVpvf("%s: the context was created in another process (before a fork)",
				       what),
			      -1, what);
	return s;
}

/*
 * The other operand of a Clip::Level operator: a level (a new reference)
 * or a text parsed as one (croaks when it is none).
 */
static struct clip_level *
level_arg(pTHX_ SV *sv)
{
	struct clip_error *e = NULL;
	struct clip_level *l = NULL;
	const char *s;

	if (sv_isobject(sv) && sv_derived_from(sv, "Clip::Level"))
		return clip_level_ref(INT2PTR(struct clip_level *, SvIV(SvRV(sv))));
	s = text_arg(aTHX_ sv, "clip_level_parse (a NUL byte in the text)");
	check(aTHX_ clip_level_parse(&l, s, &e), &e, "clip_level_parse");
	return l;
}

/* The audit walk's callback: each verified record onto the array. */
static int
collect_record(const char *record, void *userdata)
{
	dTHX;
	AV *av = userdata;

	av_push(av, newSVpv(record, 0));
	return 0;
}

/* A directory argument of the audit functions: undef = the state directory (-1). */
static struct file_arg
dir_arg(pTHX_ SV *dir, const char *what)
{
	struct file_arg d = { -1, 0 };

	if (SvOK(dir))
		d = file_arg(aTHX_ dir, O_RDONLY | O_DIRECTORY, what);
	return d;
}

/* A cage handle holding @cage (a reference taken over), blessed into Clip::Cage. */
static SV *
cage_wrap(pTHX_ struct clip_cage *cage, bool of_session)
{
	struct perl_cage *pc;
	SV *sv = newSV(0);

	Newxz(pc, 1, struct perl_cage);
	pc->cage = cage;
	pc->of_session = of_session;
	sv_setref_pv(sv, "Clip::Cage", pc);
	return sv;
}

/*
 * A session's cage: its runner reads the cage's Landlock denials into the
 * session's feed, and a second reader would take them from it.
 */
static void
denials_ours(pTHX_ struct perl_cage *pc, const char *what)
{
	if (pc->of_session)
		throw_message(aTHX_ EBUSY,
			      newSVpvf("%s: the session reads this cage's Landlock denials into its "
				       "feed: follow them there (clipctl watch)",
				       what),
			      -1, what);
}

/* The errors of the denial fd and reading: which of not running and not read. */
static int
check_denials(pTHX_ int r, const char *what)
{
	if (r == -ECHILD)
		throw_message(aTHX_ ECHILD, newSVpvf("%s: the cage is not running", what), -1, what);
	if (r == -ENODATA)
		throw_message(aTHX_ ENODATA,
			      newSVpvf("%s: the cage's Landlock denials are not read (they need "
				       "Landlock ABI 7, the kernel's audit on and the host's root: "
				       "see missing)",
				       what),
			      -1, what);
	return check(aTHX_ r, NULL, what);
}

/*
 * A Landlock denial of the cage, in the thread that reads them (the one
 * that called read_denials or stop: this interpreter's). The code
 * runs in an eval with $@ localised: its death is a warning, never a
 * croak through the library's frames, and the caller's $@ is kept.
 */
static void
cage_denial(struct clip_cage *cage, const char *what, void *userdata)
{
	dTHX;
	dSP;
	struct perl_cage *pc = userdata;
	SV *fn = pc->on_denial;

	(void)cage;
	if (!fn)
		return;
	/* The code may set on_denial to undef while it runs. */
	SvREFCNT_inc_simple_void_NN(fn);
	ENTER;
	SAVETMPS;
	save_scalar(PL_errgv);
	PUSHMARK(SP);
	XPUSHs(sv_2mortal(newSVpv(what, 0)));
	PUTBACK;
	call_sv(fn, G_DISCARD | G_EVAL);
	if (SvTRUE(ERRSV))
		warn("Clip::Cage on_denial died: %" SVf, SVfARG(ERRSV));
	FREETMPS;
	LEAVE;
	SvREFCNT_dec(fn);
}

/*
 * Keep the handle @self (a Clip::Cage) until the end of the caller's
 * statement: on_denial's code may drop the last Perl reference to it while
 * the library, inside a call on that cage, is still reading.
 */
static void
keep_handle(pTHX_ SV *self)
{
	if (SvROK(self))
		sv_2mortal(SvREFCNT_inc_simple_NN(SvRV(self)));
}

/* Detach this handle's denial function and drop its code reference. */
static void
cage_forget_denials(pTHX_ struct perl_cage *pc)
{
	if (pc->on_denial)
		(void)clip_cage_set_denial_fn(pc->cage, NULL, NULL);
	SvREFCNT_dec(pc->on_denial);
	pc->on_denial = NULL;
}

MODULE = Clip		PACKAGE = Clip		PREFIX = clip_

PROTOTYPES: DISABLE

const char *
clip_version()

int
_constant(name)
	const char *name
    CODE:
	/* The C constants Clip.pm exports (constant subs made there). */
	static const struct {
		const char *name;
		int value;
	} table[] = {
		{ "LEVEL_EQUAL", CLIP_LEVEL_EQUAL },
		{ "LEVEL_DOMINATES", CLIP_LEVEL_DOMINATES },
		{ "LEVEL_DOMINATED", CLIP_LEVEL_DOMINATED },
		{ "LEVEL_INCOMPARABLE", CLIP_LEVEL_INCOMPARABLE },
		{ "LEVEL_SENSITIVITY_MAX", CLIP_LEVEL_SENSITIVITY_MAX },
		{ "LEVEL_CATEGORY_MAX", CLIP_LEVEL_CATEGORY_MAX },
		{ "LABEL_ROOTLESS", CLIP_LABEL_ROOTLESS },
		{ "EXEC_RESTRICT_FILE", CLIP_EXEC_RESTRICT_FILE },
		{ "EXEC_RESTRICT_FILE_LOCKED", CLIP_EXEC_RESTRICT_FILE_LOCKED },
		{ "EXEC_DENY_INTERACTIVE", CLIP_EXEC_DENY_INTERACTIVE },
		{ "EXEC_DENY_INTERACTIVE_LOCKED", CLIP_EXEC_DENY_INTERACTIVE_LOCKED },
		{ "EXEC_SECUREBITS", CLIP_EXEC_SECUREBITS },
		{ "EXEC_OPEN_MAGICLINKS", CLIP_EXEC_OPEN_MAGICLINKS },
		{ "EXEC_CHECK_NATIVE", CLIP_EXEC_CHECK_NATIVE },
		{ "EXEC_CHECK_DEGRADED", CLIP_EXEC_CHECK_DEGRADED },
		{ "TRANSFER_DELIVERED", CLIP_TRANSFER_DELIVERED },
		{ "TRANSFER_DENIED_POLICY", CLIP_TRANSFER_DENIED_POLICY },
		{ "TRANSFER_DENIED_USER", CLIP_TRANSFER_DENIED_USER },
		{ "TRANSFER_FAILED", CLIP_TRANSFER_FAILED },
		{ "AUDIT_SYSLOG", CLIP_AUDIT_SYSLOG },
		{ "AUDIT_WARN_UNANCHORED", CLIP_AUDIT_WARN_UNANCHORED },
		{ "AUDIT_WARN_TORN", CLIP_AUDIT_WARN_TORN },
		{ "AUDIT_WARN_NOT_COUNTED", CLIP_AUDIT_WARN_NOT_COUNTED },
		{ "AUDIT_WARN_COUNTER_LAGS", CLIP_AUDIT_WARN_COUNTER_LAGS },
		{ "TRANSFER_REPORT_EXEC_REFUSED", CLIP_TRANSFER_REPORT_EXEC_REFUSED },
		{ "CAGE_NEW", CLIP_CAGE_NEW },
		{ "CAGE_RUNNING", CLIP_CAGE_RUNNING },
		{ "CAGE_STOPPED", CLIP_CAGE_STOPPED },
		{ "CAGE_MISSING_LANDLOCK_LOG", CLIP_CAGE_MISSING_LANDLOCK_LOG },
	};
	RETVAL = -1;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].name, name) == 0) {
			RETVAL = table[i].value;
			break;
		}
	if (RETVAL < 0)
		croak("Clip: no constant %s", name);
    OUTPUT:
	RETVAL

void
_audit_verify_public(file, public_key)
	SV *file
	SV *public_key
    PPCODE:
	/* (count, records): a collector's check, with the public key only. */
	struct clip_error *e = NULL;
	const char *key = cstr(aTHX_ public_key, "clip_audit_verify_public (public_key)");
	uint64_t count = 0;
	AV *records = newAV();
	struct file_arg f;
	int r;

	sv_2mortal((SV *)records);
	if (!key)
		throw_error(aTHX_ - EINVAL, NULL, "clip_audit_verify_public (no public_key)");
	f = file_arg(aTHX_ file, O_RDONLY, "clip_audit_verify_public");
	r = clip_audit_verify_public(f.fd, key, collect_record, records, &count, &e);
	file_done(&f);
	check(aTHX_ r, &e, "clip_audit_verify_public");
	EXTEND(SP, 2);
	PUSHs(sv_2mortal(newSVuv((UV)count)));
	PUSHs(sv_2mortal(newRV_inc((SV *)records)));

void
_transfer_report(socket, kind, subject, error, text)
	SV *socket
	int kind
	SV *subject
	int error
	SV *text
    CODE:
	/* One way, never blocking: nothing to wait for. */
	struct clip_error *e = NULL;
	const char *path = cstr(aTHX_ socket, "clip_transfer_report (socket)");
	const char *subj = cstr(aTHX_ subject, "clip_transfer_report (subject)");
	const char *t = cstr(aTHX_ text, "clip_transfer_report (text)");

	if (!subj)
		throw_error(aTHX_ - EINVAL, NULL, "clip_transfer_report (no subject)");
	check(aTHX_ clip_transfer_report(path, kind, subj, error, t, &e), &e,
	      "clip_transfer_report");

void
_throw(errnum, message)
	int errnum
	const char *message
    CODE:
	/* Clip::Error->throw: a Perl-side refusal as the library's would be. */
	throw_message(aTHX_ errnum, newSVpv(message, 0), -1, "Clip");

MODULE = Clip		PACKAGE = Clip::Context

Clip::Context
_new(class)
	const char *class
    CODE:
	(void)class;
	check(aTHX_ clip_ctx_new(&RETVAL), NULL, "clip_ctx_new");
    OUTPUT:
	RETVAL

void
DESTROY(ctx)
	Clip::Context ctx
    CODE:
	clip_ctx_unref(ctx);

SV *
state_dir(ctx, ...)
	Clip::Context ctx
    CODE:
	if (items > 1)
		check(aTHX_ clip_ctx_set_state_dir(ctx, cstr(aTHX_ ST(1), "clip_ctx_set_state_dir")),
		      NULL, "clip_ctx_set_state_dir");
	RETVAL = newSVpv(ctx_string(aTHX_ clip_ctx_get_state_dir(ctx), "clip_ctx_get_state_dir"), 0);
    OUTPUT:
	RETVAL

SV *
key_provider(ctx, ...)
	Clip::Context ctx
    CODE:
	if (items > 1)
		check(aTHX_ clip_ctx_set_key_provider(ctx, cstr(aTHX_ ST(1),
				"clip_ctx_set_key_provider")), NULL, "clip_ctx_set_key_provider");
	RETVAL = newSVpv(ctx_string(aTHX_ clip_ctx_get_key_provider(ctx),
				    "clip_ctx_get_key_provider"), 0);
    OUTPUT:
	RETVAL

int
log_priority(ctx, ...)
	Clip::Context ctx
    CODE:
	if (items > 1)
		check(aTHX_ clip_ctx_set_log_priority(ctx, (int)SvIV(ST(1))), NULL,
		      "clip_ctx_set_log_priority");
	RETVAL = check(aTHX_ clip_ctx_get_log_priority(ctx), NULL, "clip_ctx_get_log_priority");
    OUTPUT:
	RETVAL

void
label_set(ctx, file, level, flags = 0)
	Clip::Context ctx
	SV *file
	Clip::Level level
	unsigned flags
    CODE:
	struct clip_error *e = NULL;
	struct file_arg f = file_arg(aTHX_ file, O_RDONLY | O_NONBLOCK, "clip_label_set");
	int r = clip_label_set(ctx, f.fd, level, flags, &e);

	file_done(&f);
	check(aTHX_ r, &e, "clip_label_set");

Clip::Level
label_get(ctx, file, flags = 0)
	Clip::Context ctx
	SV *file
	unsigned flags
    CODE:
	struct clip_error *e = NULL;
	struct file_arg f = file_arg(aTHX_ file, O_RDONLY | O_NONBLOCK, "clip_label_get");
	int r = clip_label_get(ctx, f.fd, flags, &RETVAL, &e);

	file_done(&f);
	check(aTHX_ r, &e, "clip_label_get");
    OUTPUT:
	RETVAL

void
label_verify(ctx, file, flags = 0)
	Clip::Context ctx
	SV *file
	unsigned flags
    ALIAS:
	label_remove = 1
    CODE:
	const char *what = ix ? "clip_label_remove" : "clip_label_verify";
	struct clip_error *e = NULL;
	struct file_arg f = file_arg(aTHX_ file, O_RDONLY | O_NONBLOCK, what);
	int r = ix ? clip_label_remove(ctx, f.fd, flags, &e) :
		     clip_label_verify(ctx, f.fd, flags, &e);

	file_done(&f);
	check(aTHX_ r, &e, what);

int
exec_check_support(ctx)
	Clip::Context ctx
    CODE:
	RETVAL = check(aTHX_ clip_exec_check_support(ctx), NULL, "clip_exec_check_support");
    OUTPUT:
	RETVAL

void
exec_check(ctx, file)
	Clip::Context ctx
	SV *file
    CODE:
	struct clip_error *e = NULL;
	struct file_arg f = file_arg(aTHX_ file, O_PATH, "clip_exec_check_fd");
	int r = clip_exec_check_fd(ctx, f.fd, &e);

	file_done(&f);
	check(aTHX_ r, &e, "clip_exec_check_fd");

unsigned
securebits(ctx)
	Clip::Context ctx
    CODE:
	check(aTHX_ clip_exec_get_securebits(ctx, &RETVAL), NULL, "clip_exec_get_securebits");
    OUTPUT:
	RETVAL

void
set_securebits(ctx, bits)
	Clip::Context ctx
	unsigned bits
    CODE:
	struct clip_error *e = NULL;

	check(aTHX_ clip_exec_set_securebits(ctx, bits, &e), &e, "clip_exec_set_securebits");

int
may_run_file(ctx, file, name = &PL_sv_undef, flags = 0)
	Clip::Context ctx
	SV *file
	SV *name
	unsigned flags
    ALIAS:
	may_run_interactive = 1
    CODE:
	/* may_run_interactive: the file is undef for code given on a command line. */
	const char *fn = ix ? "clip_exec_may_run_interactive" : "clip_exec_may_run_file";
	struct clip_error *e = NULL;
	const char *n = cstr(aTHX_ name, fn);
	struct file_arg f = { -1, 0 };
	int r;

	if (!ix || SvOK(file))
		f = file_arg(aTHX_ file, O_RDONLY | O_NONBLOCK, fn);
	r = ix ? clip_exec_may_run_interactive(ctx, f.fd, n, flags, &e) :
		 clip_exec_may_run_file(ctx, f.fd, n, flags, &e);
	file_done(&f);
	RETVAL = check(aTHX_ r, &e, fn);
    OUTPUT:
	RETVAL

int
_exec_open(ctx, path, flags = 0)
	Clip::Context ctx
	SV *path
	unsigned flags
    CODE:
	struct clip_error *e = NULL;
	const char *p = cstr(aTHX_ path, "clip_exec_open");
	int r;

	if (!p)
		throw_error(aTHX_ - EINVAL, NULL, "clip_exec_open (no path)");
	r = clip_exec_open(ctx, AT_FDCWD, p, flags, &e);
	RETVAL = check(aTHX_ r, &e, "clip_exec_open");
    OUTPUT:
	RETVAL

SV *
exec_read_all(ctx, file, max = 0)
	Clip::Context ctx
	SV *file
	UV max
    CODE:
	struct clip_error *e = NULL;
	char *buf = NULL;
	size_t size = 0;
	struct file_arg f = file_arg(aTHX_ file, O_RDONLY, "clip_exec_read_all");
	int r = clip_exec_read_all(ctx, f.fd, (size_t)max, &buf, &size, &e);

	file_done(&f);
	check(aTHX_ r, &e, "clip_exec_read_all");
	RETVAL = newSVpvn(buf, size);
	free(buf);
    OUTPUT:
	RETVAL

void
_audit_verify(ctx, dir, name, want_records)
	Clip::Context ctx
	SV *dir
	SV *name
	int want_records
    ALIAS:
	_audit_check = 1
    PPCODE:
	/* (count, records), and _audit_check: (count, warnings, records). */
	const char *fn = ix ? "clip_audit_check" : "clip_audit_verify";
	struct clip_error *e = NULL;
	const char *n = cstr(aTHX_ name, fn);
	uint64_t count = 0;
	unsigned warnings = 0;
	AV *records = newAV();
	struct file_arg d;
	int r;

	sv_2mortal((SV *)records);
	d = dir_arg(aTHX_ dir, fn);
	r = ix ? clip_audit_check(ctx, d.fd, n, want_records ? collect_record : NULL, records,
				  &count, &warnings, &e) :
		 clip_audit_verify(ctx, d.fd, n, want_records ? collect_record : NULL, records,
				   &count, &e);
	file_done(&d);
	check(aTHX_ r, &e, fn);
	EXTEND(SP, 3);
	PUSHs(sv_2mortal(newSVuv((UV)count)));
	if (ix)
		PUSHs(sv_2mortal(newSVuv(warnings)));
	PUSHs(sv_2mortal(newRV_inc((SV *)records)));

SV *
audit_public_key(ctx)
	Clip::Context ctx
    CODE:
	struct clip_error *e = NULL;
	char *pem = NULL;

	check(aTHX_ clip_audit_get_public_key(ctx, &pem, &e), &e, "clip_audit_get_public_key");
	RETVAL = take_text(aTHX_ pem);
    OUTPUT:
	RETVAL

int
lsm_load(ctx)
	Clip::Context ctx
    CODE:
	/* 1 loaded now, 0 loaded already (the C API's 0 and 1, as a truth). */
	struct clip_error *e = NULL;

	RETVAL = check(aTHX_ clip_lsm_load(ctx, &e), &e, "clip_lsm_load") == 0;
    OUTPUT:
	RETVAL

int
lsm_status(ctx)
	Clip::Context ctx
    CODE:
	RETVAL = check(aTHX_ clip_lsm_status(ctx), NULL, "clip_lsm_status");
    OUTPUT:
	RETVAL

void
lsm_unload(ctx)
	Clip::Context ctx
    CODE:
	struct clip_error *e = NULL;

	check(aTHX_ clip_lsm_unload(ctx, &e), &e, "clip_lsm_unload");

int
_session_trail(ctx, session, state_dir)
	Clip::Context ctx
	SV *session
	SV *state_dir
    CODE:
	struct clip_error *e = NULL;
	const char *s = cstr(aTHX_ session, "clip_session_get_trail (session)");
	const char *d = cstr(aTHX_ state_dir, "clip_session_get_trail (state_dir)");
	int fd = -1;

	check(aTHX_ clip_session_get_trail(ctx, s, d, &fd, &e), &e, "clip_session_get_trail");
	RETVAL = fd;
    OUTPUT:
	RETVAL

SV *
_session_audit_key(ctx, session, state_dir)
	Clip::Context ctx
	SV *session
	SV *state_dir
    CODE:
	struct clip_error *e = NULL;
	const char *s = cstr(aTHX_ session, "clip_session_get_audit_key (session)");
	const char *d = cstr(aTHX_ state_dir, "clip_session_get_audit_key (state_dir)");
	char *pem = NULL;

	check(aTHX_ clip_session_get_audit_key(ctx, s, d, &pem, &e), &e,
	      "clip_session_get_audit_key");
	RETVAL = take_text(aTHX_ pem);
    OUTPUT:
	RETVAL

int
_session_down(ctx, session, state_dir)
	Clip::Context ctx
	SV *session
	SV *state_dir
    CODE:
	struct clip_error *e = NULL;
	const char *s = cstr(aTHX_ session, "clip_session_down (session)");
	const char *d = cstr(aTHX_ state_dir, "clip_session_down (state_dir)");
	int r = clip_session_down(ctx, s, d, &e);

	check(aTHX_ r, &e, "clip_session_down");
	RETVAL = r;
    OUTPUT:
	RETVAL

MODULE = Clip		PACKAGE = Clip::Level

Clip::Level
parse(class, text)
	const char *class
	SV *text
    CODE:
	struct clip_error *e = NULL;
	const char *s = text_arg(aTHX_ text, "clip_level_parse (a NUL byte in the text)");

	(void)class;
	check(aTHX_ clip_level_parse(&RETVAL, s, &e), &e, "clip_level_parse");
    OUTPUT:
	RETVAL

Clip::Level
_new(class, sensitivity, ...)
	const char *class
	IV sensitivity
    CODE:
	unsigned cats[CLIP_LEVEL_CATEGORY_MAX + 1];
	size_t n = 0;

	(void)class;
	if (sensitivity < 0 || sensitivity > CLIP_LEVEL_SENSITIVITY_MAX)
		throw_error(aTHX_ - EINVAL, NULL, "clip_level_new (sensitivity out of range)");
	for (I32 i = 2; i < items; i++) {
		IV c = SvIV(ST(i));

		if (c < 0 || c > CLIP_LEVEL_CATEGORY_MAX || n >= sizeof(cats) / sizeof(cats[0]))
			throw_error(aTHX_ - EINVAL, NULL, "clip_level_new (category out of range)");
		cats[n++] = (unsigned)c;
	}
	check(aTHX_ clip_level_new(&RETVAL, (unsigned)sensitivity, cats, n), NULL,
	      "clip_level_new");
    OUTPUT:
	RETVAL

void
DESTROY(level)
	Clip::Level level
    CODE:
	clip_level_unref(level);

SV *
format(level, ...)
	Clip::Level level
    CODE:
	/* Extra arguments: overload's (other, swapped) for "". */
	char *text = NULL;

	check(aTHX_ clip_level_format(level, &text), NULL, "clip_level_format");
	RETVAL = take_text(aTHX_ text);
    OUTPUT:
	RETVAL

int
sensitivity(level)
	Clip::Level level
    CODE:
	RETVAL = check(aTHX_ clip_level_get_sensitivity(level), NULL, "clip_level_get_sensitivity");
    OUTPUT:
	RETVAL

int
has_category(level, category)
	Clip::Level level
	IV category
    CODE:
	if (category < 0 || category > CLIP_LEVEL_CATEGORY_MAX)
		throw_error(aTHX_ - EINVAL, NULL, "clip_level_has_category (category out of range)");
	RETVAL = check(aTHX_ clip_level_has_category(level, (unsigned)category), NULL,
		       "clip_level_has_category");
    OUTPUT:
	RETVAL

void
categories(level)
	Clip::Level level
    PPCODE:
	for (unsigned c = 0; c <= CLIP_LEVEL_CATEGORY_MAX; c++)
		if (clip_level_has_category(level, c) > 0)
			XPUSHs(sv_2mortal(newSVuv(c)));

int
compare(a, b)
	Clip::Level a
	Clip::Level b
    CODE:
	RETVAL = check(aTHX_ clip_level_compare(a, b), NULL, "clip_level_compare");
    OUTPUT:
	RETVAL

bool
dominates(a, b)
	Clip::Level a
	Clip::Level b
    CODE:
	RETVAL = check(aTHX_ clip_level_dominates(a, b), NULL, "clip_level_dominates");
    OUTPUT:
	RETVAL

bool
equal(a, b)
	Clip::Level a
	Clip::Level b
    CODE:
	RETVAL = check(aTHX_ clip_level_equal(a, b), NULL, "clip_level_equal");
    OUTPUT:
	RETVAL

SV *
_eq(a, b, swapped, ...)
	Clip::Level a
	SV *b
	SV *swapped
    ALIAS:
	_ne = 1
	_ge = 2
	_le = 3
	_gt = 4
	_lt = 5
	_or = 6
	_and = 7
    CODE:
	/* The overloaded operators (Clip.pm), in C: a text operand parsed. */
	struct clip_level *other = level_arg(aTHX_ b), *x = a, *y = other, *l = NULL;
	int r;

	if (SvTRUE(swapped)) {
		x = other;
		y = a;
	}
	if (ix >= 6) {
		r = ix == 6 ? clip_level_join(&l, x, y) : clip_level_meet(&l, x, y);
		clip_level_unref(other);
		check(aTHX_ r, NULL, ix == 6 ? "clip_level_join" : "clip_level_meet");
		RETVAL = newSV(0);
		sv_setref_pv(RETVAL, "Clip::Level", l);
	} else {
		r = clip_level_compare(x, y);
		clip_level_unref(other);
		check(aTHX_ r, NULL, "clip_level_compare");
		switch (ix) {
		case 0:
			r = r == CLIP_LEVEL_EQUAL;
			break;
		case 1:
			r = r != CLIP_LEVEL_EQUAL;
			break;
		case 2:
			r = r == CLIP_LEVEL_EQUAL || r == CLIP_LEVEL_DOMINATES;
			break;
		case 3:
			r = r == CLIP_LEVEL_EQUAL || r == CLIP_LEVEL_DOMINATED;
			break;
		case 4:
			r = r == CLIP_LEVEL_DOMINATES;
			break;
		default:
			r = r == CLIP_LEVEL_DOMINATED;
			break;
		}
		RETVAL = boolSV(r);
	}
    OUTPUT:
	RETVAL

Clip::Level
join(a, b)
	Clip::Level a
	Clip::Level b
    CODE:
	check(aTHX_ clip_level_join(&RETVAL, a, b), NULL, "clip_level_join");
    OUTPUT:
	RETVAL

Clip::Level
meet(a, b)
	Clip::Level a
	Clip::Level b
    CODE:
	check(aTHX_ clip_level_meet(&RETVAL, a, b), NULL, "clip_level_meet");
    OUTPUT:
	RETVAL

MODULE = Clip		PACKAGE = Clip::Range

Clip::Range
parse(class, text)
	const char *class
	SV *text
    CODE:
	struct clip_error *e = NULL;
	const char *s = text_arg(aTHX_ text, "clip_range_parse (a NUL byte in the text)");

	(void)class;
	check(aTHX_ clip_range_parse(&RETVAL, s, &e), &e, "clip_range_parse");
    OUTPUT:
	RETVAL

Clip::Range
_new(class, low, high)
	const char *class
	Clip::Level low
	Clip::Level high
    CODE:
	(void)class;
	check(aTHX_ clip_range_new(&RETVAL, low, high), NULL, "clip_range_new");
    OUTPUT:
	RETVAL

void
DESTROY(range)
	Clip::Range range
    CODE:
	clip_range_unref(range);

SV *
format(range, ...)
	Clip::Range range
    CODE:
	char *text = NULL;

	check(aTHX_ clip_range_format(range, &text), NULL, "clip_range_format");
	RETVAL = take_text(aTHX_ text);
    OUTPUT:
	RETVAL

Clip::Level
low(range)
	Clip::Range range
    CODE:
	RETVAL = clip_level_ref((struct clip_level *)clip_range_get_low(range));
    OUTPUT:
	RETVAL

Clip::Level
high(range)
	Clip::Range range
    CODE:
	RETVAL = clip_level_ref((struct clip_level *)clip_range_get_high(range));
    OUTPUT:
	RETVAL

bool
contains(range, level)
	Clip::Range range
	Clip::Level level
    CODE:
	RETVAL = check(aTHX_ clip_range_contains(range, level), NULL, "clip_range_contains");
    OUTPUT:
	RETVAL

MODULE = Clip		PACKAGE = Clip::LevelNames

Clip::LevelNames
parse(class, text)
	const char *class
	SV *text
    CODE:
	struct clip_error *e = NULL;
	STRLEN len;
	const char *s = SvPV(text, len);

	(void)class;
	check(aTHX_ clip_level_names_parse(&RETVAL, s, len, &e), &e, "clip_level_names_parse");
    OUTPUT:
	RETVAL

void
DESTROY(names)
	Clip::LevelNames names
    CODE:
	clip_level_names_unref(names);

Clip::Level
level(names, text)
	Clip::LevelNames names
	SV *text
    CODE:
	struct clip_error *e = NULL;
	const char *s = text_arg(aTHX_ text, "clip_level_parse_name (a NUL byte in the text)");

	check(aTHX_ clip_level_parse_name(&RETVAL, names, s, &e), &e, "clip_level_parse_name");
    OUTPUT:
	RETVAL

SV *
name(names, level)
	Clip::LevelNames names
	Clip::Level level
    CODE:
	char *text = NULL;

	check(aTHX_ clip_level_format_name(level, names, &text), NULL, "clip_level_format_name");
	RETVAL = take_text(aTHX_ text);
    OUTPUT:
	RETVAL

MODULE = Clip		PACKAGE = Clip::Transfer

Clip::Transfer
_send(class, socket, file, target, name, note)
	const char *class
	SV *socket
	SV *file
	SV *target
	SV *name
	SV *note
    ALIAS:
	_request = 1
    CODE:
	/* _send waits for the answer; _request returns at once (poll fileno). */
	struct clip_error *e = NULL;
	const char *t = cstr(aTHX_ target, "clip_transfer_send (target)");
	const char *n = cstr(aTHX_ name, "clip_transfer_send (name)");
	const char *no = cstr(aTHX_ note, "clip_transfer_send (note)");
	struct file_arg f;
	int sock = -1, r;

	(void)class;
	f = file_arg(aTHX_ file, O_RDONLY, "clip_transfer_send");
	r = clip_transfer_connect(&sock, cstr(aTHX_ socket, "clip_transfer_connect"), &e);
	if (r >= 0)
		r = ix ? clip_transfer_new(&RETVAL, sock, f.fd, t, n, no, &e) :
			 clip_transfer_send(&RETVAL, sock, f.fd, t, n, no, &e);
	if (sock >= 0)
		close(sock);
	file_done(&f);
	check(aTHX_ r, &e, "clip_transfer_send");
    OUTPUT:
	RETVAL

void
DESTROY(transfer)
	Clip::Transfer transfer
    CODE:
	clip_transfer_unref(transfer);

SV *
status(transfer)
	Clip::Transfer transfer
    CODE:
	/* undef until the answer arrived (-EAGAIN). */
	int r = clip_transfer_get_status(transfer);

	RETVAL = r == -EAGAIN ? &PL_sv_undef : newSViv(check(aTHX_ r, NULL,
							     "clip_transfer_get_status"));
    OUTPUT:
	RETVAL

int
fileno(transfer)
	Clip::Transfer transfer
    CODE:
	RETVAL = check(aTHX_ clip_transfer_get_fd(transfer), NULL, "clip_transfer_get_fd");
    OUTPUT:
	RETVAL

bool
dispatch(transfer)
	Clip::Transfer transfer
    CODE:
	struct clip_error *e = NULL;
	int r = clip_transfer_dispatch(transfer, &e);

	RETVAL = check(aTHX_ r, &e, "clip_transfer_dispatch") == 1;
    OUTPUT:
	RETVAL

bool
wait(transfer, timeout_ms = -1)
	Clip::Transfer transfer
	int timeout_ms
    CODE:
	/* False when no answer came within @timeout_ms (-EAGAIN): not an error. */
	struct clip_error *e = NULL;
	int r = clip_transfer_wait(transfer, timeout_ms, &e);

	if (r == -EAGAIN) {
		clip_error_free(e);
		RETVAL = false;
	} else {
		check(aTHX_ r, &e, "clip_transfer_wait");
		RETVAL = true;
	}
    OUTPUT:
	RETVAL

int
errno(transfer)
	Clip::Transfer transfer
    CODE:
	RETVAL = -clip_transfer_get_error(transfer);
    OUTPUT:
	RETVAL

SV *
message(transfer)
	Clip::Transfer transfer
    CODE:
	const char *m = clip_transfer_get_message(transfer);

	RETVAL = m ? newSVpv(m, 0) : newSVpvs("");
    OUTPUT:
	RETVAL

SV *
name(transfer)
	Clip::Transfer transfer
    CODE:
	const char *m = clip_transfer_get_name(transfer);

	RETVAL = m ? newSVpv(m, 0) : &PL_sv_undef;
    OUTPUT:
	RETVAL

void
digest(transfer)
	Clip::Transfer transfer
    PPCODE:
	uint64_t size = 0;
	uint8_t sha[32];
	char hex[65];
	int encrypted = 0;

	check(aTHX_ clip_transfer_get_digest(transfer, &size, sha, &encrypted), NULL,
	      "clip_transfer_get_digest");
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", sha[i]);
	EXTEND(SP, 3);
	PUSHs(sv_2mortal(newSVuv((UV)size)));
	PUSHs(sv_2mortal(newSVpvn(hex, 64)));
	PUSHs(encrypted ? &PL_sv_yes : &PL_sv_no);

MODULE = Clip		PACKAGE = Clip::Audit

Clip::Audit
_open(class, ctx, dir, name, flags)
	const char *class
	Clip::Context ctx
	SV *dir
	SV *name
	unsigned flags
    CODE:
	struct clip_error *e = NULL;
	const char *n = cstr(aTHX_ name, "clip_audit_open");
	struct file_arg d = dir_arg(aTHX_ dir, "clip_audit_open");
	int r = clip_audit_open(&RETVAL, ctx, d.fd, n, flags, &e);

	(void)class;
	file_done(&d);
	check(aTHX_ r, &e, "clip_audit_open");
    OUTPUT:
	RETVAL

void
DESTROY(audit)
	Clip::Audit audit
    CODE:
	clip_audit_unref(audit);

void
export(audit, file)
	Clip::Audit audit
	SV *file
    CODE:
	/* The signed trail, to a filehandle or a new file (0600). */
	struct clip_error *e = NULL;
	struct file_arg f = file_arg(aTHX_ file, O_WRONLY | O_CREAT | O_EXCL, "clip_audit_export");
	int r = clip_audit_export(audit, f.fd, &e);

	/* A new file made from a path: removed when the export failed, no partial trail left. */
	if (r < 0 && f.owned)
		(void)unlink(SvPV_nolen(file));
	file_done(&f);
	check(aTHX_ r, &e, "clip_audit_export");

void
_append(audit, event, source, source_level, target, target_level, name, length, sha256, decision, decided_by, reason)
	Clip::Audit audit
	SV *event
	SV *source
	SV *source_level
	SV *target
	SV *target_level
	SV *name
	UV length
	SV *sha256
	SV *decision
	SV *decided_by
	SV *reason
    CODE:
	struct clip_error *e = NULL;
	struct clip_audit_entry entry = {
		.size = sizeof(entry),
		.event = cstr(aTHX_ event, "clip_audit_append (event)"),
		.source = cstr(aTHX_ source, "clip_audit_append (source)"),
		.source_level = cstr(aTHX_ source_level, "clip_audit_append (source_level)"),
		.target = cstr(aTHX_ target, "clip_audit_append (target)"),
		.target_level = cstr(aTHX_ target_level, "clip_audit_append (target_level)"),
		.name = cstr(aTHX_ name, "clip_audit_append (name)"),
		.length = length,
		.decision = cstr(aTHX_ decision, "clip_audit_append (decision)"),
		.decided_by = cstr(aTHX_ decided_by, "clip_audit_append (decided_by)"),
		.reason = cstr(aTHX_ reason, "clip_audit_append (reason)"),
	};

	if (SvOK(sha256)) {
		STRLEN len;
		const char *s = SvPV(sha256, len);

		if (len != 32)
			throw_error(aTHX_ - EINVAL, NULL,
				    "clip_audit_append (sha256: 32 bytes, not hex)");
		entry.sha256 = (const uint8_t *)s;
	}
	check(aTHX_ clip_audit_append(audit, &entry, &e), &e, "clip_audit_append");

MODULE = Clip		PACKAGE = Clip::Profile

Clip::Profile
new(class, name)
	const char *class
	SV *name
    CODE:
	struct clip_error *e = NULL;
	const char *n = cstr(aTHX_ name, "clip_cage_profile_new");

	(void)class;
	check(aTHX_ clip_cage_profile_new(&RETVAL, n, &e), &e, "clip_cage_profile_new");
    OUTPUT:
	RETVAL

Clip::Profile
parse(class, text, filename = &PL_sv_undef)
	const char *class
	SV *text
	SV *filename
    CODE:
	struct clip_error *e = NULL;
	const char *f = cstr(aTHX_ filename, "clip_cage_profile_parse (filename)");
	STRLEN len;
	const char *s = SvPV(text, len);

	(void)class;
	check(aTHX_ clip_cage_profile_parse(&RETVAL, f, s, len, &e), &e, "clip_cage_profile_parse");
    OUTPUT:
	RETVAL

void
DESTROY(profile)
	Clip::Profile profile
    CODE:
	clip_cage_profile_unref(profile);

SV *
name(profile)
	Clip::Profile profile
    CODE:
	RETVAL = newSVpv(clip_cage_profile_get_name(profile), 0);
    OUTPUT:
	RETVAL

SV *
format(profile, ...)
	Clip::Profile profile
    CODE:
	char *text = NULL;

	check(aTHX_ clip_cage_profile_format(profile, &text), NULL, "clip_cage_profile_format");
	RETVAL = take_text(aTHX_ text);
    OUTPUT:
	RETVAL

MODULE = Clip		PACKAGE = Clip::Cage

SV *
new(class, ctx, profile)
	const char *class
	Clip::Context ctx
	Clip::Profile profile
    CODE:
	/* The cage holds its own references of the context and the profile. */
	struct clip_error *e = NULL;
	struct clip_cage *c = NULL;

	(void)class;
	check(aTHX_ clip_cage_new(&c, ctx, profile, &e), &e, "clip_cage_new");
	RETVAL = cage_wrap(aTHX_ c, false);
    OUTPUT:
	RETVAL

void
DESTROY(cage)
	Clip::Cage cage
    CODE:
	/* A running cage keeps running (clip_cage_unref()); stop it first. */
	cage_forget_denials(aTHX_ cage);
	clip_cage_unref(cage->cage);
	Safefree(cage);

void
start(cage)
	Clip::Cage cage
    CODE:
	struct clip_error *e = NULL;

	check(aTHX_ clip_cage_start(cage->cage, 0, &e), &e, "clip_cage_start");

int
run(cage, ...)
	Clip::Cage cage
    CODE:
	/*
	 * Spawn ARGV in the running cage, without fds (all closed), and wait
	 * for it: its exit status, or 128 + the signal that killed it.
	 */
	struct clip_error *e = NULL;
	struct clip_cage_spawn_opts opts = { .size = sizeof(opts) };
	const char **argv;
	int pidfd = -1, status = -1, r;

	if (items < 2)
		throw_message(aTHX_ EINVAL, newSVpvs("clip_cage_spawn: no command"), -1,
			      "clip_cage_spawn");
	Newxz(argv, items, const char *);
	SAVEFREEPV(argv);
	for (I32 i = 1; i < items; i++)
		if (!(argv[i - 1] = cstr(aTHX_ ST(i), "clip_cage_spawn (argv)")))
			throw_message(aTHX_ EINVAL, newSVpvs("clip_cage_spawn: an undef argument"),
				      -1, "clip_cage_spawn");
	opts.argv = argv;
	check(aTHX_ clip_cage_spawn(cage->cage, &opts, &pidfd, &e), &e, "clip_cage_spawn");
	r = clip_cage_wait_process(cage->cage, pidfd, &status);
	close(pidfd);
	check(aTHX_ r, NULL, "clip_cage_wait_process");
	RETVAL = status;
    OUTPUT:
	RETVAL

void
stop(cage, grace_ms = 1000)
	Clip::Cage cage
	unsigned grace_ms
    CODE:
	/* The denials left in the kernel's audit are read on the way: on_denial is called. */
	struct clip_error *e = NULL;

	keep_handle(aTHX_ ST(0));
	check(aTHX_ clip_cage_stop(cage->cage, grace_ms, &e), &e, "clip_cage_stop");

int
state(cage)
	Clip::Cage cage
    CODE:
	RETVAL = check(aTHX_ clip_cage_get_state(cage->cage), NULL, "clip_cage_get_state");
    OUTPUT:
	RETVAL

unsigned
missing(cage)
	Clip::Cage cage
    CODE:
	RETVAL = clip_cage_get_missing(cage->cage);
    OUTPUT:
	RETVAL

SV *
on_denial(cage, ...)
	Clip::Cage cage
    CODE:
	/*
	 * With an argument, a code reference told of each denial (replacing
	 * any other handle's of this cage) or undef: the library's log alone.
	 * The code reference (or undef) in effect.
	 */
	if (items > 1) {
		SV *fn = ST(1);
		bool set = SvOK(fn);
		int r;

		if (set && !(SvROK(fn) && SvTYPE(SvRV(fn)) == SVt_PVCV))
			throw_message(aTHX_ EINVAL,
				      newSVpvs("clip_cage_set_denial_fn: on_denial takes a code "
					       "reference or undef"),
				      -1, "clip_cage_set_denial_fn");
		denials_ours(aTHX_ cage, "clip_cage_set_denial_fn");
		r = clip_cage_set_denial_fn(cage->cage, set ? cage_denial : NULL, set ? cage : NULL);
		check(aTHX_ r, NULL, "clip_cage_set_denial_fn");
		SvREFCNT_dec(cage->on_denial);
		cage->on_denial = set ? newSVsv(fn) : NULL;
	}
	RETVAL = cage->on_denial ? newSVsv(cage->on_denial) : &PL_sv_undef;
    OUTPUT:
	RETVAL

int
denial_fileno(cage)
	Clip::Cage cage
    CODE:
	denials_ours(aTHX_ cage, "clip_cage_get_denial_fd");
	RETVAL = check_denials(aTHX_ clip_cage_get_denial_fd(cage->cage), "clip_cage_get_denial_fd");
    OUTPUT:
	RETVAL

int
read_denials(cage)
	Clip::Cage cage
    CODE:
	denials_ours(aTHX_ cage, "clip_cage_read_denials");
	keep_handle(aTHX_ ST(0));
	RETVAL = check_denials(aTHX_ clip_cage_read_denials(cage->cage), "clip_cage_read_denials");
    OUTPUT:
	RETVAL

MODULE = Clip		PACKAGE = Clip::Session

Clip::Session
parse(class, ctx, text, filename = &PL_sv_undef)
	const char *class
	Clip::Context ctx
	SV *text
	SV *filename
    CODE:
	/* Relative Profile= and DataDirectory= paths: against the current directory. */
	struct clip_error *e = NULL;
	const char *f = cstr(aTHX_ filename, "clip_session_parse (filename)");
	STRLEN len;
	const char *s = SvPV(text, len);

	(void)class;
	check(aTHX_ clip_session_parse(&RETVAL, ctx, AT_FDCWD, f, s, len, &e), &e,
	      "clip_session_parse");
    OUTPUT:
	RETVAL

Clip::Session
load(class, ctx, path)
	const char *class
	Clip::Context ctx
	SV *path
    CODE:
	struct clip_error *e = NULL;
	const char *p = cstr(aTHX_ path, "clip_session_load");

	(void)class;
	if (!p)
		throw_error(aTHX_ - EINVAL, NULL, "clip_session_load (no path)");
	check(aTHX_ clip_session_load(&RETVAL, ctx, p, &e), &e, "clip_session_load");
    OUTPUT:
	RETVAL

void
DESTROY(session)
	Clip::Session session
    CODE:
	/* A started session is stopped (clip_session_unref()). */
	clip_session_unref(session);

SV *
name(session)
	Clip::Session session
    CODE:
	RETVAL = newSVpv(clip_session_get_name(session), 0);
    OUTPUT:
	RETVAL

void
set_secret(session, secret)
	Clip::Session session
	SV *secret
    CODE:
	/*
	 * A byte string is passed as it is (the caller's to wipe); a
	 * character string is decoded to its bytes (each character at most
	 * 0xFF, else encode it first) in a copy of ours, wiped. The session
	 * keeps a copy of its own and wipes it.
	 */
	struct clip_error *e = NULL;
	const char *fn = "clip_session_set_secret";
	STRLEN len;
	const char *s;
	char *copy = NULL;
	size_t n = 0;
	int r;

	if (!SvOK(secret) || SvROK(secret))
		throw_message(aTHX_ EINVAL,
			      newSVpvf("%s: a secret is a string of 1 to 4096 bytes, not %s", fn,
				       SvOK(secret) ? "a reference" : "undef"),
			      -1, fn);
	s = SvPV(secret, len);
	if (SvUTF8(secret)) {
		const U8 *p = (const U8 *)s, *end = p + len;

		Newx(copy, len + 1, char);
		while (p < end) {
			STRLEN cl = 0;
			UV c = utf8n_to_uvchr(p, end - p, &cl, 0);

			if (cl == 0 || c > 0xFF) {
				explicit_bzero(copy, len + 1);
				Safefree(copy);
				throw_message(aTHX_ EINVAL,
					      newSVpvf("%s: a wide character in the secret: pass "
						       "bytes (utf8::encode)",
						       fn),
					      -1, fn);
			}
			copy[n++] = (char)c;
			p += cl;
		}
		s = copy;
		len = n;
	}
	r = clip_session_set_secret(session, s, len, &e);
	if (copy) {
		explicit_bzero(copy, n);
		Safefree(copy);
	}
	check(aTHX_ r, &e, fn);

void
start(session)
	Clip::Session session
    CODE:
	struct clip_error *e = NULL;

	check(aTHX_ clip_session_start(session, 0, &e), &e, "clip_session_start");

void
stop(session, grace_ms = 0)
	Clip::Session session
	unsigned grace_ms
    CODE:
	struct clip_error *e = NULL;

	check(aTHX_ clip_session_stop(session, grace_ms, &e), &e, "clip_session_stop");

SV *
cage(session, name)
	Clip::Session session
	SV *name
    CODE:
	/* A handle of its own on a cage of the started session; its denials stay the feed's. */
	const char *n = cstr(aTHX_ name, "clip_session_get_cage");
	struct clip_cage *cage = n ? clip_session_get_cage(session, n) : NULL;

	if (!cage)
		throw_message(aTHX_ ENOENT,
			      newSVpvf("clip_session_get_cage: no cage '%s' in the started session "
				       "'%s'",
				       n ? n : "", clip_session_get_name(session)),
			      -1, "clip_session_get_cage");
	RETVAL = cage_wrap(aTHX_ clip_cage_ref(cage), true);
    OUTPUT:
	RETVAL
