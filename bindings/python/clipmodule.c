/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The `clip` Python module: the public API of libclip for CPython.
 *
 * Built against the shared library only (dep_libclip, what
 * `pkg-config libclip` gives an outside user): public headers, nothing
 * internal. Every handle is owned by one Python object and freed by its
 * close() (or the `with` block's end) and else by its deallocation; an
 * object that needs another keeps a reference to it (a Cage to its
 * Context, a Process to its cage), so that releasing them in any order
 * never frees a handle in use. Errors raise clip.Error subclasses chosen
 * by errno (errno_class()); doc/bindings.md has the table.
 *
 * Calls that may block (waiting for a cage, a process or the mediator,
 * starting and spawning) release the GIL; the log callback takes it back.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <clip/agent.h>
#include <clip/audit.h>
#include <clip/cage.h>
#include <clip/ctx.h>
#include <clip/exec.h>
#include <clip/feed.h>
#include <clip/keys.h>
#include <clip/label.h>
#include <clip/level.h>
#include <clip/lsm.h>
#include <clip/policy.h>
#include <clip/session.h>
#include <clip/transfer.h>

/* ------------------------------------------------------------------------ */
/* Exceptions */

static PyObject *Error;
static PyObject *InvalidError;
static PyObject *PermissionDenied;
static PyObject *NotFoundError;
static PyObject *IntegrityError;
static PyObject *NoKeyError;
static PyObject *BusyError;
static PyObject *BadFileError;
static PyObject *UnsupportedError;
static PyObject *StateError;
static PyObject *ConnectError;
static PyObject *TimeoutErr;
static PyObject *ResourceError;
static PyObject *TransferDenied;
static PyObject *TransferFailed;

/* The class of an errno; the table is in doc/bindings.md and clip.pyi. */
static PyObject *
errno_class(int e)
{
	switch (e) {
	case EINVAL:
	case E2BIG:
	case ERANGE:
	case ENAMETOOLONG:
	case EILSEQ:
		return InvalidError;
	case EPERM:
	case EACCES:
	case EROFS:
		return PermissionDenied;
	case ENOENT:
	case ENODATA:
	case ESRCH:
		return NotFoundError;
	case EBADMSG:
		return IntegrityError;
	case ENOKEY:
		return NoKeyError;
	case EBUSY:
	case EEXIST:
	case ETXTBSY:
		return BusyError;
	case EBADF:
	case EMEDIUMTYPE:
	case EISDIR:
	case ENOTDIR:
	case ELOOP:
		return BadFileError;
	case EOPNOTSUPP:
	case ENOSYS:
	case ENODEV:
		return UnsupportedError;
	case ECHILD:
	case EALREADY:
		return StateError;
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
	case EPROTO:
		return ConnectError;
	case ETIMEDOUT:
	case EAGAIN:
		return TimeoutErr;
	case ENOMEM:
	case ENOSPC:
	case EDQUOT:
	case EMFILE:
	case ENFILE:
	case EFBIG:
		return ResourceError;
	default:
		return Error;
	}
}

/* Raise the exception of a negative errno @r with @message (strerror when empty). */
static PyObject *
raise_errno_message(PyObject *cls, int r, const char *message, int offset)
{
	int e = r < 0 ? -r : r;
	if (!cls)
		cls = errno_class(e);
	if (!message || !*message)
		message = strerror(e);
	PyObject *exc = PyObject_CallFunction(cls, "is", e, message);
	if (!exc)
		return NULL;
	PyObject *off = offset >= 0 ? PyLong_FromLong(offset) : Py_NewRef(Py_None);
	if (!off || PyObject_SetAttrString(exc, "offset", off) < 0) {
		Py_XDECREF(off);
		Py_DECREF(exc);
		return NULL;
	}
	Py_DECREF(off);
	PyErr_SetObject(cls, exc);
	Py_DECREF(exc);
	return NULL;
}

/* Raise for @r and free @err (which may be NULL). */
static PyObject *
raise_clip(int r, struct clip_error *err)
{
	raise_errno_message(NULL, r, clip_error_get_message(err), clip_error_get_offset(err));
	clip_error_free(err);
	return NULL;
}

static PyObject *
raise_os(int e, const char *what, const char *name)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s '%s': %s", what, name, strerror(e));
	return raise_errno_message(NULL, -e, buf, -1);
}

/*
 * Test hooks (doc/threat-model.md): in a -Dtest_hooks=true build,
 * CLIP_TEST_DISABLE (comma-separated names) switches a protection of this
 * module off, as libclip/base/test-hooks.h does inside the library; the
 * module links the public library only, so it reads the variable itself.
 */
static bool
test_hook_disabled(const char *what)
{
#ifdef CLIP_TEST_HOOKS
	const char *list = getenv("CLIP_TEST_DISABLE");
	size_t n = strlen(what);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, what, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
#endif
	(void)what;
	return false;
}

/*
 * The UTF-8 of a str the binding hands the library itself, refused when it
 * holds a NUL byte: the library takes C strings, which end there (a level
 * "s0\0s15" would be parsed as "s0"). CPython's own converters ("s", "z",
 * PyUnicode_FSConverter) refuse such strings for every other argument.
 */
static const char *
text_arg(PyObject *o, const char *what)
{
	Py_ssize_t size;
	const char *s = PyUnicode_AsUTF8AndSize(o, &size);
	if (s && strlen(s) != (size_t)size && !test_hook_disabled("python-nul-byte")) {
		char buf[160];
		snprintf(buf, sizeof(buf), "%s holds a NUL byte at offset %zu", what, strlen(s));
		raise_errno_message(InvalidError, -EINVAL, buf, (int)strlen(s));
		return NULL;
	}
	return s;
}

/* ------------------------------------------------------------------------ */
/* Calling the library */

/*
 * Run @stmt, a library call that may block (waiting for a cage, a process
 * or the mediator, starting, spawning, opening), with the GIL released.
 */
#define WITHOUT_GIL(stmt) \
	do { \
		Py_BEGIN_ALLOW_THREADS stmt; \
		Py_END_ALLOW_THREADS \
	} while (0)

/* The end of a call that returns nothing: None, or the exception of @r (frees @err). */
static PyObject *
none_or_raise(int r, struct clip_error *err)
{
	if (r < 0)
		return raise_clip(r, err);
	Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ */
/* Arguments: paths, files */

/*
 * A path argument (str, bytes, os.PathLike), converted by PyArg_Parse*'s
 * "O&" with path_converter; NULL while omitted. path_done() releases it.
 */
struct path_arg {
	PyObject *bytes;
};

static int
path_converter(PyObject *o, void *p)
{
	/* PyUnicode_FSConverter's cleanup protocol (o == NULL) passes through. */
	return PyUnicode_FSConverter(o, &((struct path_arg *)p)->bytes);
}

/* path_converter for an argument that may be None, as omitted. */
static int
optional_path_converter(PyObject *o, void *p)
{
	return o == Py_None ? 1 : path_converter(o, p);
}

static const char *
path_str(const struct path_arg *p)
{
	return p->bytes ? PyBytes_AS_STRING(p->bytes) : NULL;
}

static void
path_done(struct path_arg *p)
{
	Py_CLEAR(p->bytes);
}

/*
 * A file argument: an int or an object with fileno() (borrowed), or a path
 * (str, bytes, os.PathLike) opened here (owned: file_done() closes it).
 */
struct file_arg {
	int fd;
	bool owned;
};

/* Open @o as a file argument with @oflags for a path; -1 with an exception set. */
static int
file_open(struct file_arg *f, PyObject *o, int oflags)
{
	f->fd = -1;
	f->owned = false;
	if (PyBool_Check(o)) {
		PyErr_SetString(PyExc_TypeError,
				"a file must be a path, an fd or a file object, not a bool");
		return -1;
	}
	if (PyLong_Check(o) || PyObject_HasAttrString(o, "fileno")) {
		f->fd = PyObject_AsFileDescriptor(o);
		return f->fd < 0 ? -1 : 0;
	}
	struct path_arg path = { NULL };
	if (!path_converter(o, &path))
		return -1;
	int fd;
	/* A file made here (O_CREAT) is the caller's alone, as the library's own are. */
	WITHOUT_GIL(fd = open(path_str(&path), oflags | O_CLOEXEC | O_NOCTTY, 0600));
	if (fd < 0) {
		raise_os(errno, "cannot open", path_str(&path));
		path_done(&path);
		return -1;
	}
	path_done(&path);
	f->fd = fd;
	f->owned = true;
	return 0;
}

/* As file_open(), and None gives @none_fd (-1: the default, AT_FDCWD: here). */
static int
file_open_or_none(struct file_arg *f, PyObject *o, int oflags, int none_fd)
{
	if (!o || o == Py_None) {
		f->fd = none_fd;
		f->owned = false;
		return 0;
	}
	return file_open(f, o, oflags);
}

static void
file_done(struct file_arg *f)
{
	if (f->owned && f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->owned = false;
}

/*
 * After @r of the call that wrote to @f, a new file made from the path @o
 * (O_CREAT | O_EXCL): removed when the call failed, so that no partial
 * file is left; closed either way.
 */
static void
file_done_made(struct file_arg *f, PyObject *o, int r)
{
	struct path_arg path = { NULL };

	if (r < 0 && f->owned) {
		if (path_converter(o, &path))
			(void)unlink(path_str(&path));
		else
			PyErr_Clear();
		path_done(&path);
	}
	file_done(f);
}

/* ------------------------------------------------------------------------ */
/* What the objects that hold a handle or an fd share */

/* __enter__: the object itself. */
static PyObject *
object_enter(PyObject *self, PyObject *unused)
{
	return Py_NewRef(self);
}

/* __exit__ of an object that the end of a `with` block closes: close(), and False. */
static PyObject *
object_exit_close(PyObject *self, PyObject *args)
{
	PyObject *r = PyObject_CallMethod(self, "close", NULL);
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

/* 0 while @handle is set; else -1 with the exception @cls(@e, "@closed"). */
static int
handle_check(const void *handle, PyObject *cls, int e, const char *closed)
{
	if (!handle) {
		raise_errno_message(cls, e, closed, -1);
		return -1;
	}
	return 0;
}

/*
 * An object that owns one fd (TransferClient, Watch, and a Process's pidfd,
 * its first member): -1 once closed. Its dealloc and close() are shared;
 * fileno() and the check before a call take the message naming what is
 * closed.
 */
typedef struct {
	PyObject_HEAD int fd;
} FdObject;

/* A new object of @type owning @fd; @fd is closed when there is no memory. */
static PyObject *
fd_object_new(PyTypeObject *type, int fd)
{
	FdObject *o = (FdObject *)type->tp_alloc(type, 0);
	if (!o) {
		close(fd);
		return NULL;
	}
	o->fd = fd;
	return (PyObject *)o;
}

static void
fd_object_release(FdObject *self)
{
	if (self->fd >= 0)
		close(self->fd);
	self->fd = -1;
}

static void
FdObject_dealloc(FdObject *self)
{
	fd_object_release(self);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
FdObject_close(FdObject *self, PyObject *unused)
{
	fd_object_release(self);
	Py_RETURN_NONE;
}

/* 0 while @self's fd is open; else -1 with BadFileError("@closed"). */
static int
fd_object_check(FdObject *self, const char *closed)
{
	if (self->fd < 0) {
		raise_errno_message(BadFileError, -EBADF, closed, -1);
		return -1;
	}
	return 0;
}

static PyObject *
fd_object_fileno(FdObject *self, const char *closed)
{
	if (fd_object_check(self, closed) < 0)
		return NULL;
	return PyLong_FromLong(self->fd);
}

static PyObject *opt_string(const char *s);

/* A string the library allocated, as str; frees it. */
static PyObject *
take_string(char *s)
{
	PyObject *o = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
	free(s);
	return o;
}

/* The end of a call that formats a string into @s: it as str, or the exception of @r. */
static PyObject *
string_or_raise(int r, char *s)
{
	if (r < 0)
		return raise_clip(r, NULL);
	return take_string(s);
}

/* The repr of Level and Range: "clip.TYPE('text')", the text their str() gives. */
static PyObject *
repr_from_str(PyObject *self, const char *format)
{
	PyObject *s = PyObject_Str(self);
	if (!s)
		return NULL;
	PyObject *r = PyUnicode_FromFormat(format, s);
	Py_DECREF(s);
	return r;
}

/* ------------------------------------------------------------------------ */
/* Level, Range, LevelNames */

typedef struct {
	PyObject_HEAD struct clip_level *level;
} LevelObject;

typedef struct {
	PyObject_HEAD struct clip_range *range;
} RangeObject;

typedef struct {
	PyObject_HEAD struct clip_level_names *names;
} NamesObject;

static PyTypeObject LevelType;
static PyTypeObject RangeType;
static PyTypeObject NamesType;

/* Wrap @level (the reference is taken over). */
static PyObject *
level_wrap(struct clip_level *level)
{
	LevelObject *o = PyObject_New(LevelObject, &LevelType);
	if (!o) {
		clip_level_unref(level);
		return NULL;
	}
	o->level = level;
	return (PyObject *)o;
}

static int
level_check(PyObject *o, const char *what)
{
	if (!PyObject_TypeCheck(o, &LevelType)) {
		PyErr_Format(PyExc_TypeError, "%s must be a clip.Level, not %.100s", what,
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	return 0;
}

static const struct clip_level_names *
names_of(PyObject *o)
{
	if (!o || o == Py_None)
		return NULL;
	if (!PyObject_TypeCheck(o, &NamesType)) {
		PyErr_Format(PyExc_TypeError, "names must be a clip.LevelNames, not %.100s",
			     Py_TYPE(o)->tp_name);
		return (const struct clip_level_names *)-1;
	}
	return ((NamesObject *)o)->names;
}

static PyObject *
Level_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "level", "categories", NULL };
	PyObject *first, *cats = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:Level", kwlist, &first, &cats))
		return NULL;
	struct clip_level *level = NULL;
	struct clip_error *err = NULL;
	int r;
	if (PyUnicode_Check(first)) {
		if (cats) {
			PyErr_SetString(PyExc_TypeError,
					"Level(text) takes no categories: write them in the text");
			return NULL;
		}
		const char *text = text_arg(first, "the level's text");
		if (!text)
			return NULL;
		r = clip_level_parse(&level, text, &err);
	} else if (PyLong_Check(first) && !PyBool_Check(first)) {
		long s = PyLong_AsLong(first);
		if (s == -1 && PyErr_Occurred())
			return NULL;
		if (s < 0 || s > CLIP_LEVEL_SENSITIVITY_MAX)
			return raise_errno_message(InvalidError, -EINVAL,
						   "sensitivity out of 0..15", -1);
		PyObject *seq = cats ? PySequence_Fast(cats, "categories must be a sequence")
				     : PyTuple_New(0);
		if (!seq)
			return NULL;
		Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
		unsigned *c = PyMem_New(unsigned, n ? n : 1);
		if (!c) {
			Py_DECREF(seq);
			return PyErr_NoMemory();
		}
		for (Py_ssize_t i = 0; i < n; i++) {
			long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
			if (v == -1 && PyErr_Occurred()) {
				PyMem_Free(c);
				Py_DECREF(seq);
				return NULL;
			}
			if (v < 0 || v > CLIP_LEVEL_CATEGORY_MAX) {
				PyMem_Free(c);
				Py_DECREF(seq);
				return raise_errno_message(InvalidError, -EINVAL,
							   "category out of 0..1023", -1);
			}
			c[i] = (unsigned)v;
		}
		r = clip_level_new(&level, (unsigned)s, c, (size_t)n);
		PyMem_Free(c);
		Py_DECREF(seq);
	} else {
		PyErr_Format(PyExc_TypeError, "Level() takes a str or a sensitivity, not %.100s",
			     Py_TYPE(first)->tp_name);
		return NULL;
	}
	if (r < 0)
		return raise_clip(r, err);
	return level_wrap(level);
}

static void
Level_dealloc(LevelObject *self)
{
	clip_level_unref(self->level);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Level_parse(PyObject *cls, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "text", "names", NULL };
	const char *text;
	PyObject *names_o = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "s|O:parse", kwlist, &text, &names_o))
		return NULL;
	const struct clip_level_names *names = names_of(names_o);
	if (names == (const void *)-1)
		return NULL;
	struct clip_level *level = NULL;
	struct clip_error *err = NULL;
	int r = clip_level_parse_name(&level, names, text, &err);
	if (r < 0)
		return raise_clip(r, err);
	return level_wrap(level);
}

static PyObject *
Level_format(LevelObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "names", NULL };
	PyObject *names_o = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:format", kwlist, &names_o))
		return NULL;
	const struct clip_level_names *names = names_of(names_o);
	if (names == (const void *)-1)
		return NULL;
	char *s = NULL;
	int r = clip_level_format_name(self->level, names, &s);
	return string_or_raise(r, s);
}

static PyObject *
Level_str(LevelObject *self)
{
	char *s = NULL;
	int r = clip_level_format(self->level, &s);
	return string_or_raise(r, s);
}

static PyObject *
Level_repr(LevelObject *self)
{
	return repr_from_str((PyObject *)self, "clip.Level(%R)");
}

static Py_hash_t
Level_hash(LevelObject *self)
{
	/* Equal levels have the same canonical text. */
	PyObject *s = Level_str(self);
	if (!s)
		return -1;
	Py_hash_t h = PyObject_Hash(s);
	Py_DECREF(s);
	return h;
}

static PyObject *
Level_richcompare(PyObject *a, PyObject *b, int op)
{
	if (!PyObject_TypeCheck(a, &LevelType) || !PyObject_TypeCheck(b, &LevelType))
		Py_RETURN_NOTIMPLEMENTED;
	int c = clip_level_compare(((LevelObject *)a)->level, ((LevelObject *)b)->level);
	if (c < 0)
		return raise_clip(c, NULL);
	bool v;
	switch (op) {
	case Py_EQ:
		v = c == CLIP_LEVEL_EQUAL;
		break;
	case Py_NE:
		v = c != CLIP_LEVEL_EQUAL;
		break;
	case Py_GE:
		v = c == CLIP_LEVEL_EQUAL || c == CLIP_LEVEL_DOMINATES;
		break;
	case Py_GT:
		v = c == CLIP_LEVEL_DOMINATES;
		break;
	case Py_LE:
		v = c == CLIP_LEVEL_EQUAL || c == CLIP_LEVEL_DOMINATED;
		break;
	case Py_LT:
		v = c == CLIP_LEVEL_DOMINATED;
		break;
	default:
		Py_RETURN_NOTIMPLEMENTED;
	}
	return PyBool_FromLong(v);
}

static PyObject *
Level_compare(LevelObject *self, PyObject *other)
{
	if (level_check(other, "other") < 0)
		return NULL;
	int c = clip_level_compare(self->level, ((LevelObject *)other)->level);
	if (c < 0)
		return raise_clip(c, NULL);
	return PyLong_FromLong(c);
}

static PyObject *
Level_dominates(LevelObject *self, PyObject *other)
{
	if (level_check(other, "other") < 0)
		return NULL;
	int c = clip_level_dominates(self->level, ((LevelObject *)other)->level);
	if (c < 0)
		return raise_clip(c, NULL);
	return PyBool_FromLong(c);
}

static PyObject *
level_binop(PyObject *a, PyObject *b, bool join)
{
	if (!PyObject_TypeCheck(a, &LevelType) || !PyObject_TypeCheck(b, &LevelType))
		Py_RETURN_NOTIMPLEMENTED;
	struct clip_level *l = NULL;
	int r = join ? clip_level_join(&l, ((LevelObject *)a)->level, ((LevelObject *)b)->level)
		     : clip_level_meet(&l, ((LevelObject *)a)->level, ((LevelObject *)b)->level);
	if (r < 0)
		return raise_clip(r, NULL);
	return level_wrap(l);
}

static PyObject *
Level_join(PyObject *self, PyObject *other)
{
	if (level_check(other, "other") < 0)
		return NULL;
	return level_binop(self, other, true);
}

static PyObject *
Level_meet(PyObject *self, PyObject *other)
{
	if (level_check(other, "other") < 0)
		return NULL;
	return level_binop(self, other, false);
}

static PyObject *
Level_or(PyObject *a, PyObject *b)
{
	return level_binop(a, b, true);
}

static PyObject *
Level_and(PyObject *a, PyObject *b)
{
	return level_binop(a, b, false);
}

static int
Level_contains(LevelObject *self, PyObject *cat)
{
	long c = PyLong_AsLong(cat);
	if (c == -1 && PyErr_Occurred())
		return -1;
	if (c < 0 || c > CLIP_LEVEL_CATEGORY_MAX)
		return 0;
	int r = clip_level_has_category(self->level, (unsigned)c);
	if (r < 0) {
		raise_clip(r, NULL);
		return -1;
	}
	return r;
}

static PyObject *
Level_get_sensitivity(LevelObject *self, void *closure)
{
	return PyLong_FromLong(clip_level_get_sensitivity(self->level));
}

static PyObject *
Level_get_categories(LevelObject *self, void *closure)
{
	PyObject *list = PyList_New(0);
	if (!list)
		return NULL;
	for (unsigned c = 0; c <= CLIP_LEVEL_CATEGORY_MAX; c++) {
		if (clip_level_has_category(self->level, c) != 1)
			continue;
		PyObject *v = PyLong_FromUnsignedLong(c);
		if (!v || PyList_Append(list, v) < 0) {
			Py_XDECREF(v);
			Py_DECREF(list);
			return NULL;
		}
		Py_DECREF(v);
	}
	PyObject *t = PyList_AsTuple(list);
	Py_DECREF(list);
	return t;
}

static PyObject *
Level_reduce(LevelObject *self, PyObject *unused)
{
	PyObject *s = Level_str(self);
	if (!s)
		return NULL;
	return Py_BuildValue("O(N)", (PyObject *)Py_TYPE(self), s);
}

static PyMethodDef Level_methods[] = {
	{ "parse", (PyCFunction)(void (*)(void))Level_parse,
	  METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	  "parse(text, names=None) -> Level: a level in MCS syntax, or a name of @names." },
	{ "format", (PyCFunction)(void (*)(void))Level_format, METH_VARARGS | METH_KEYWORDS,
	  "format(names=None) -> str: the level's name in @names, else its canonical text." },
	{ "compare", (PyCFunction)Level_compare, METH_O,
	  "compare(other) -> int: LEVEL_EQUAL, LEVEL_DOMINATES, LEVEL_DOMINATED or "
	  "LEVEL_INCOMPARABLE." },
	{ "dominates", (PyCFunction)Level_dominates, METH_O,
	  "dominates(other) -> bool: whether self dominates or equals other (also self >= "
	  "other)." },
	{ "join", (PyCFunction)Level_join, METH_O,
	  "join(other) -> Level: the least upper bound (also self | other)." },
	{ "meet", (PyCFunction)Level_meet, METH_O,
	  "meet(other) -> Level: the greatest lower bound (also self & other)." },
	{ "__reduce__", (PyCFunction)Level_reduce, METH_NOARGS, NULL },
	{ NULL }
};

static PyGetSetDef Level_getset[] = { { "sensitivity", (getter)Level_get_sensitivity, NULL,
					"the sensitivity, 0 to 15", NULL },
				      { "categories", (getter)Level_get_categories, NULL,
					"the categories, ascending (a tuple)", NULL },
				      { NULL } };

static PyNumberMethods Level_as_number = {
	.nb_or = Level_or,
	.nb_and = Level_and,
};

static PySequenceMethods Level_as_sequence = {
	.sq_contains = (objobjproc)Level_contains,
};

static PyTypeObject LevelType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Level",
	.tp_basicsize = sizeof(LevelObject),
	.tp_dealloc = (destructor)Level_dealloc,
	.tp_repr = (reprfunc)Level_repr,
	.tp_str = (reprfunc)Level_str,
	.tp_hash = (hashfunc)Level_hash,
	.tp_richcompare = Level_richcompare,
	.tp_as_number = &Level_as_number,
	.tp_as_sequence = &Level_as_sequence,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Level(text) or Level(sensitivity, categories=()): a confidentiality level.\n\n"
		  "Compared in the dominance order: a >= b when a dominates b, == when equal;\n"
		  "two incomparable levels are neither <= nor >=. `c in level` tests a category.",
	.tp_methods = Level_methods,
	.tp_getset = Level_getset,
	.tp_new = Level_new,
};

static PyObject *
Range_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "low", "high", NULL };
	PyObject *low, *high = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:Range", kwlist, &low, &high))
		return NULL;
	struct clip_range *range = NULL;
	struct clip_error *err = NULL;
	int r;
	if (PyUnicode_Check(low) && !high) {
		const char *text = text_arg(low, "the range's text");
		if (!text)
			return NULL;
		r = clip_range_parse(&range, text, &err);
	} else {
		if (!high)
			high = low;
		if (level_check(low, "low") < 0 || level_check(high, "high") < 0)
			return NULL;
		r = clip_range_new(&range, ((LevelObject *)low)->level,
				   ((LevelObject *)high)->level);
		if (r == -EINVAL)
			return raise_errno_message(
				InvalidError, r,
				"the range's high level does not dominate its low one", -1);
	}
	if (r < 0)
		return raise_clip(r, err);
	RangeObject *o = (RangeObject *)type->tp_alloc(type, 0);
	if (!o) {
		clip_range_unref(range);
		return NULL;
	}
	o->range = range;
	return (PyObject *)o;
}

static void
Range_dealloc(RangeObject *self)
{
	clip_range_unref(self->range);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Range_str(RangeObject *self)
{
	char *s = NULL;
	int r = clip_range_format(self->range, &s);
	return string_or_raise(r, s);
}

static PyObject *
Range_repr(RangeObject *self)
{
	return repr_from_str((PyObject *)self, "clip.Range(%R)");
}

static PyObject *
range_bound(RangeObject *self, bool high)
{
	const struct clip_level *l =
		high ? clip_range_get_high(self->range) : clip_range_get_low(self->range);
	return level_wrap(clip_level_ref((struct clip_level *)l));
}

static PyObject *
Range_get_low(RangeObject *self, void *closure)
{
	return range_bound(self, false);
}

static PyObject *
Range_get_high(RangeObject *self, void *closure)
{
	return range_bound(self, true);
}

static int
Range_contains(RangeObject *self, PyObject *level)
{
	if (level_check(level, "the level") < 0)
		return -1;
	int r = clip_range_contains(self->range, ((LevelObject *)level)->level);
	if (r < 0) {
		raise_clip(r, NULL);
		return -1;
	}
	return r;
}

static PyObject *
Range_richcompare(PyObject *a, PyObject *b, int op)
{
	if (!PyObject_TypeCheck(a, &RangeType) || !PyObject_TypeCheck(b, &RangeType) ||
	    (op != Py_EQ && op != Py_NE))
		Py_RETURN_NOTIMPLEMENTED;
	const struct clip_range *x = ((RangeObject *)a)->range, *y = ((RangeObject *)b)->range;
	int lo = clip_level_equal(clip_range_get_low(x), clip_range_get_low(y));
	int hi = clip_level_equal(clip_range_get_high(x), clip_range_get_high(y));
	return PyBool_FromLong((lo == 1 && hi == 1) == (op == Py_EQ));
}

static PyGetSetDef Range_getset[] = { { "low", (getter)Range_get_low, NULL, "the low level", NULL },
				      { "high", (getter)Range_get_high, NULL, "the high level",
					NULL },
				      { NULL } };

static PySequenceMethods Range_as_sequence = {
	.sq_contains = (objobjproc)Range_contains,
};

static PyTypeObject RangeType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Range",
	.tp_basicsize = sizeof(RangeObject),
	.tp_dealloc = (destructor)Range_dealloc,
	.tp_repr = (reprfunc)Range_repr,
	.tp_str = (reprfunc)Range_str,
	.tp_hash = PyObject_HashNotImplemented,
	.tp_richcompare = Range_richcompare,
	.tp_as_sequence = &Range_as_sequence,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Range(text) or Range(low, high): a clearance; `level in range` when high\n"
		  "dominates level and level dominates low.",
	.tp_getset = Range_getset,
	.tp_new = Range_new,
};

static PyObject *
Names_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "text", NULL };
	const char *text;
	Py_ssize_t size;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "s#:LevelNames", kwlist, &text, &size))
		return NULL;
	struct clip_level_names *names = NULL;
	struct clip_error *err = NULL;
	int r = clip_level_names_parse(&names, text, (size_t)size, &err);
	if (r < 0)
		return raise_clip(r, err);
	NamesObject *o = (NamesObject *)type->tp_alloc(type, 0);
	if (!o) {
		clip_level_names_unref(names);
		return NULL;
	}
	o->names = names;
	return (PyObject *)o;
}

static void
Names_dealloc(NamesObject *self)
{
	clip_level_names_unref(self->names);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Names_parse(NamesObject *self, PyObject *args)
{
	const char *text;
	if (!PyArg_ParseTuple(args, "s:parse", &text))
		return NULL;
	struct clip_level *level = NULL;
	struct clip_error *err = NULL;
	int r = clip_level_parse_name(&level, self->names, text, &err);
	if (r < 0)
		return raise_clip(r, err);
	return level_wrap(level);
}

static PyObject *
Names_format(NamesObject *self, PyObject *level)
{
	if (level_check(level, "level") < 0)
		return NULL;
	char *s = NULL;
	int r = clip_level_format_name(((LevelObject *)level)->level, self->names, &s);
	return string_or_raise(r, s);
}

static PyMethodDef Names_methods[] = {
	{ "parse", (PyCFunction)Names_parse, METH_VARARGS,
	  "parse(text) -> Level: a name of the table, or a level in MCS syntax." },
	{ "format", (PyCFunction)Names_format, METH_O,
	  "format(level) -> str: the level's name, or its canonical text when it has none." },
	{ NULL }
};

static PyTypeObject NamesType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.LevelNames",
	.tp_basicsize = sizeof(NamesObject),
	.tp_dealloc = (destructor)Names_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "LevelNames(text): a translation table in the style of setrans.conf\n"
		  "(\"LEVEL=NAME\" lines).",
	.tp_methods = Names_methods,
	.tp_new = Names_new,
};

/* ------------------------------------------------------------------------ */
/* Context */

typedef struct {
	PyObject_HEAD struct clip_ctx *ctx;
	PyObject *log; /* a callable(priority, message), a logging.Logger, or NULL */
	bool log_is_logger;
} ContextObject;

static PyTypeObject ContextType;

static int
syslog_to_logging(int priority)
{
	if (priority <= 2)
		return 50; /* CRITICAL */
	if (priority == 3)
		return 40; /* ERROR */
	if (priority == 4)
		return 30; /* WARNING */
	if (priority <= 6)
		return 20; /* INFO: notice and info */
	return 10; /* DEBUG */
}

static void
log_callback(struct clip_ctx *ctx, int priority, const char *message, void *userdata)
{
	ContextObject *self = userdata;
	PyGILState_STATE gil = PyGILState_Ensure();
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	if (self->log) {
		PyObject *r = self->log_is_logger
				      ? PyObject_CallMethod(self->log, "log", "is",
							    syslog_to_logging(priority), message)
				      : PyObject_CallFunction(self->log, "is", priority, message);
		if (!r)
			PyErr_WriteUnraisable(self->log);
		Py_XDECREF(r);
	}
	PyErr_Restore(type, value, tb);
	PyGILState_Release(gil);
}

/* Set the handler: None = logging.getLogger("clip"), False = nothing. */
static int
context_set_log(ContextObject *self, PyObject *log)
{
	PyObject *target = NULL;
	bool is_logger = false;
	if (!log || log == Py_None) {
		PyObject *logging = PyImport_ImportModule("logging");
		if (!logging)
			return -1;
		target = PyObject_CallMethod(logging, "getLogger", "s", "clip");
		Py_DECREF(logging);
		if (!target)
			return -1;
		is_logger = true;
	} else if (log == Py_False) {
		target = NULL;
	} else if (PyCallable_Check(log)) {
		target = Py_NewRef(log);
	} else if (PyObject_HasAttrString(log, "log")) {
		target = Py_NewRef(log);
		is_logger = true;
	} else {
		PyErr_SetString(PyExc_TypeError,
				"log must be a callable(priority, message), a logging.Logger, None "
				"or False");
		return -1;
	}
	int r = clip_ctx_set_log_fn(self->ctx, target ? log_callback : NULL, target ? self : NULL);
	if (r < 0) {
		Py_XDECREF(target);
		raise_clip(r, NULL);
		return -1;
	}
	Py_XSETREF(self->log, target);
	self->log_is_logger = is_logger;
	return 0;
}

static int
Context_init(ContextObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "state_dir",    "key_provider", "log",
				  "log_priority", "cage_mode",    NULL };
	struct path_arg state_dir = { NULL };
	PyObject *log = NULL;
	const char *provider = NULL;
	int priority = -1, mode = -1;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$O&zOii:Context", kwlist,
					 optional_path_converter, &state_dir, &provider, &log,
					 &priority, &mode))
		return -1;
	int r = 0;
	if (state_dir.bytes) {
		r = clip_ctx_set_state_dir(self->ctx, path_str(&state_dir));
		if (r < 0) {
			PyObject *msg = PyUnicode_FromFormat("state directory '%s' must be an "
							     "absolute path shorter than PATH_MAX",
							     path_str(&state_dir));
			path_done(&state_dir);
			if (msg) {
				raise_errno_message(NULL, r, PyUnicode_AsUTF8(msg), -1);
				Py_DECREF(msg);
			}
			return -1;
		}
		path_done(&state_dir);
	}
	if (provider && (r = clip_ctx_set_key_provider(self->ctx, provider)) < 0) {
		char buf[128];
		snprintf(buf, sizeof(buf), "unknown key provider '%.64s'", provider);
		raise_errno_message(NULL, r, buf, -1);
		return -1;
	}
	if (priority >= 0 && (r = clip_ctx_set_log_priority(self->ctx, priority)) < 0) {
		raise_errno_message(NULL, r, "log_priority must be 0 (LOG_EMERG) to 7 (LOG_DEBUG)",
				    -1);
		return -1;
	}
	if (priority < -1) {
		raise_errno_message(NULL, -EINVAL,
				    "log_priority must be 0 (LOG_EMERG) to 7 (LOG_DEBUG)", -1);
		return -1;
	}
	if (mode >= 0 && (r = clip_ctx_set_cage_mode(self->ctx, mode)) < 0) {
		raise_errno_message(NULL, r, "cage_mode must be CAGE_MODE_AUTO, _ROOT or _ROOTLESS",
				    -1);
		return -1;
	}
	return context_set_log(self, log);
}

/* All in __new__, so that the signature stubtest sees is Context(**options). */
static PyObject *
Context_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	ContextObject *self = (ContextObject *)type->tp_alloc(type, 0);
	if (!self)
		return NULL;
	int r = clip_ctx_new(&self->ctx);
	if (r < 0) {
		Py_DECREF(self);
		return raise_clip(r, NULL);
	}
	if (Context_init(self, args, kwds) < 0) {
		Py_DECREF(self);
		return NULL;
	}
	return (PyObject *)self;
}

static int
Context_traverse(ContextObject *self, visitproc visit, void *arg)
{
	Py_VISIT(self->log);
	return 0;
}

static int
Context_clear(ContextObject *self)
{
	if (self->ctx)
		clip_ctx_set_log_fn(self->ctx, NULL, NULL);
	Py_CLEAR(self->log);
	return 0;
}

static void
Context_dealloc(ContextObject *self)
{
	PyObject_GC_UnTrack(self);
	Context_clear(self);
	clip_ctx_unref(self->ctx);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Context_get_state_dir(ContextObject *self, void *closure)
{
	const char *s = clip_ctx_get_state_dir(self->ctx);
	if (!s)
		return raise_clip(-EINVAL, NULL);
	return PyUnicode_DecodeFSDefault(s);
}

static PyObject *
Context_get_key_provider(ContextObject *self, void *closure)
{
	const char *s = clip_ctx_get_key_provider(self->ctx);
	if (!s)
		return raise_clip(-EINVAL, NULL);
	return PyUnicode_FromString(s);
}

static PyObject *
Context_get_log_priority(ContextObject *self, void *closure)
{
	int r = clip_ctx_get_log_priority(self->ctx);
	if (r < 0)
		return raise_clip(r, NULL);
	return PyLong_FromLong(r);
}

static PyObject *
Context_get_cage_mode(ContextObject *self, void *closure)
{
	int r = clip_ctx_get_cage_mode(self->ctx);
	if (r < 0)
		return raise_clip(r, NULL);
	return PyLong_FromLong(r);
}

static PyGetSetDef Context_getset[] = {
	{ "state_dir", (getter)Context_get_state_dir, NULL, "the state directory", NULL },
	{ "key_provider", (getter)Context_get_key_provider, NULL,
	  "the key provider's name (\"file\", \"tpm\")", NULL },
	{ "log_priority", (getter)Context_get_log_priority, NULL,
	  "the highest syslog priority passed to the log handler", NULL },
	{ "cage_mode", (getter)Context_get_cage_mode, NULL,
	  "CAGE_MODE_ROOT or CAGE_MODE_ROOTLESS (decided on first use)", NULL },
	{ NULL }
};

/* The four label calls on a file argument, after their own argument parsing. */
enum label_op {
	LABEL_SET,
	LABEL_GET,
	LABEL_VERIFY,
	LABEL_REMOVE
};

static PyObject *
label_call(ContextObject *self, enum label_op op, PyObject *file, PyObject *level, int rootless)
{
	struct file_arg f;
	if (file_open(&f, file, O_RDONLY) < 0)
		return NULL;
	unsigned flags = rootless ? CLIP_LABEL_ROOTLESS : 0;
	struct clip_level *got = NULL;
	struct clip_error *err = NULL;
	int r;
	switch (op) {
	case LABEL_SET:
		r = clip_label_set(self->ctx, f.fd, ((LevelObject *)level)->level, flags, &err);
		break;
	case LABEL_GET:
		r = clip_label_get(self->ctx, f.fd, flags, &got, &err);
		break;
	case LABEL_VERIFY:
		r = clip_label_verify(self->ctx, f.fd, flags, &err);
		break;
	default:
		r = clip_label_remove(self->ctx, f.fd, flags, &err);
		break;
	}
	file_done(&f);
	if (r < 0)
		return raise_clip(r, err);
	return op == LABEL_GET ? level_wrap(got) : Py_NewRef(Py_None);
}

static PyObject *
Context_label_set(ContextObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "file", "level", "rootless", NULL };
	PyObject *file, *level;
	int rootless = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|$p:label_set", kwlist, &file, &level,
					 &rootless))
		return NULL;
	if (level_check(level, "level") < 0)
		return NULL;
	return label_call(self, LABEL_SET, file, level, rootless);
}

static PyObject *
Context_label_get(ContextObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "file", "rootless", NULL };
	PyObject *file;
	int rootless = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$p:label_get", kwlist, &file, &rootless))
		return NULL;
	return label_call(self, LABEL_GET, file, NULL, rootless);
}

static PyObject *
label_simple(ContextObject *self, PyObject *args, PyObject *kwds, enum label_op op)
{
	static char *kwlist[] = { "file", "rootless", NULL };
	PyObject *file;
	int rootless = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$p", kwlist, &file, &rootless))
		return NULL;
	return label_call(self, op, file, NULL, rootless);
}

static PyObject *
Context_label_verify(ContextObject *self, PyObject *args, PyObject *kwds)
{
	return label_simple(self, args, kwds, LABEL_VERIFY);
}

static PyObject *
Context_label_remove(ContextObject *self, PyObject *args, PyObject *kwds)
{
	return label_simple(self, args, kwds, LABEL_REMOVE);
}

static PyObject *
Context_exec_check_support(ContextObject *self, PyObject *unused)
{
	int r = clip_exec_check_support(self->ctx);
	if (r < 0)
		return raise_clip(r, NULL);
	return PyLong_FromLong(r);
}

static PyObject *
Context_exec_check(ContextObject *self, PyObject *file)
{
	struct file_arg f;
	if (file_open(&f, file, O_PATH) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_exec_check_fd(self->ctx, f.fd, &err);
	file_done(&f);
	return none_or_raise(r, err);
}

/* exec_may_run_file() and exec_may_run_interactive(), after their argument parsing. */
static PyObject *
exec_may_run(ContextObject *self, PyObject *file, const char *what, unsigned flags,
	     bool interactive)
{
	struct file_arg f;
	int r = interactive ? file_open_or_none(&f, file, O_RDONLY, -1)
			    : file_open(&f, file, O_RDONLY);
	if (r < 0)
		return NULL;
	struct clip_error *err = NULL;
	r = interactive ? clip_exec_may_run_interactive(self->ctx, f.fd, what, flags, &err)
			: clip_exec_may_run_file(self->ctx, f.fd, what, flags, &err);
	file_done(&f);
	if (r < 0)
		return raise_clip(r, err);
	return PyBool_FromLong(r == 0);
}

static PyObject *
Context_exec_may_run_file(ContextObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "file", "name", "flags", NULL };
	PyObject *file;
	const char *name = NULL;
	unsigned flags = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|zI:exec_may_run_file", kwlist, &file, &name,
					 &flags))
		return NULL;
	return exec_may_run(self, file, name, flags, false);
}

static PyObject *
Context_exec_may_run_interactive(ContextObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "file", "what", "flags", NULL };
	PyObject *file = Py_None;
	const char *what = NULL;
	unsigned flags = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OzI:exec_may_run_interactive", kwlist, &file,
					 &what, &flags))
		return NULL;
	return exec_may_run(self, file, what, flags, true);
}

static PyObject *
Context_exec_open(ContextObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "path", "flags", "dir_fd", NULL };
	struct path_arg path = { NULL };
	PyObject *dir = Py_None;
	unsigned flags = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|I$O:exec_open", kwlist, path_converter,
					 &path, &flags, &dir))
		return NULL;
	struct file_arg d;
	if (file_open_or_none(&d, dir, O_RDONLY | O_DIRECTORY, AT_FDCWD) < 0) {
		path_done(&path);
		return NULL;
	}
	struct clip_error *err = NULL;
	int r = clip_exec_open(self->ctx, d.fd, path_str(&path), flags, &err);
	path_done(&path);
	file_done(&d);
	if (r < 0)
		return raise_clip(r, err);
	return PyLong_FromLong(r);
}

static PyObject *
Context_exec_allow_tree(ContextObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "path", "flags", NULL };
	struct path_arg path = { NULL };
	unsigned flags = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|I:exec_allow_tree", kwlist, path_converter,
					 &path, &flags))
		return NULL;
	struct clip_exec_tree_stats st = { .size = sizeof(st) };
	struct clip_error *err = NULL;
	int r = clip_exec_allow_tree(self->ctx, AT_FDCWD, path_str(&path), flags, &st, &err);
	path_done(&path);
	if (r < 0)
		return raise_clip(r, err);
	return Py_BuildValue(
		"O{sKsKsKsKsK}", r == 0 ? Py_True : Py_False, "files", (unsigned long long)st.files,
		"changed", (unsigned long long)st.changed, "unsafe", (unsigned long long)st.unsafe,
		"noexec", (unsigned long long)st.noexec, "mounts", (unsigned long long)st.mounts);
}

static PyObject *
Context_get_securebits(ContextObject *self, PyObject *unused)
{
	unsigned bits = 0;
	int r = clip_exec_get_securebits(self->ctx, &bits);
	if (r < 0)
		return raise_clip(r, NULL);
	return PyLong_FromUnsignedLong(bits);
}

static PyObject *
Context_set_securebits(ContextObject *self, PyObject *args)
{
	unsigned bits;
	if (!PyArg_ParseTuple(args, "I:set_securebits", &bits))
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_exec_set_securebits(self->ctx, bits, &err);
	return none_or_raise(r, err);
}

static PyObject *
Context_open_envelope(ContextObject *self, PyObject *args)
{
	const char *target;
	PyObject *in, *out;
	if (!PyArg_ParseTuple(args, "sOO:open_envelope", &target, &in, &out))
		return NULL;
	struct file_arg fin, fout;
	if (file_open(&fin, in, O_RDONLY) < 0)
		return NULL;
	if (file_open(&fout, out, O_WRONLY | O_CREAT | O_EXCL) < 0) {
		file_done(&fin);
		return NULL;
	}
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_transfer_open_envelope(self->ctx, target, fin.fd, fout.fd, &err));
	file_done(&fin);
	file_done_made(&fout, out, r);
	return none_or_raise(r, err);
}

/* Audit: verify, check and show share one walk. */
static int
audit_record(const char *record, void *userdata)
{
	PyObject *list = userdata;
	PyObject *s = PyUnicode_FromString(record);
	if (!s || PyList_Append(list, s) < 0) {
		Py_XDECREF(s);
		return -ENOMEM;
	}
	Py_DECREF(s);
	return 0;
}

/* mode 0: verify -> count; 1: show -> records; 2: check -> (count, warnings) */
static PyObject *
audit_walk(ContextObject *self, PyObject *args, PyObject *kwds, int mode)
{
	static char *kwlist[] = { "dir", "name", NULL };
	PyObject *dir = Py_None;
	const char *name = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|Oz", kwlist, &dir, &name))
		return NULL;
	struct file_arg d;
	if (file_open_or_none(&d, dir, O_RDONLY | O_DIRECTORY, -1) < 0)
		return NULL;
	PyObject *list = mode == 1 ? PyList_New(0) : NULL;
	if (mode == 1 && !list) {
		file_done(&d);
		return NULL;
	}
	uint64_t count = 0;
	unsigned warnings = 0;
	struct clip_error *err = NULL;
	int r = mode == 2 ? clip_audit_check(self->ctx, d.fd, name, NULL, NULL, &count, &warnings,
					     &err)
			  : clip_audit_verify(self->ctx, d.fd, name, list ? audit_record : NULL,
					      list, &count, &err);
	file_done(&d);
	if (r < 0) {
		Py_XDECREF(list);
		if (PyErr_Occurred()) {
			clip_error_free(err);
			return NULL;
		}
		return raise_clip(r, err);
	}
	if (mode == 1)
		return list;
	if (mode == 2)
		return Py_BuildValue("KI", (unsigned long long)count, warnings);
	return PyLong_FromUnsignedLongLong(count);
}

static PyObject *
Context_audit_verify(ContextObject *self, PyObject *args, PyObject *kwds)
{
	return audit_walk(self, args, kwds, 0);
}

static PyObject *
Context_audit_show(ContextObject *self, PyObject *args, PyObject *kwds)
{
	return audit_walk(self, args, kwds, 1);
}

static PyObject *
Context_audit_check(ContextObject *self, PyObject *args, PyObject *kwds)
{
	return audit_walk(self, args, kwds, 2);
}

static PyObject *
Context_audit_public_key(ContextObject *self, PyObject *unused)
{
	char *pem = NULL;
	struct clip_error *err = NULL;
	int r = clip_audit_get_public_key(self->ctx, &pem, &err);
	if (r < 0)
		return raise_clip(r, err);
	return take_string(pem);
}

/* The BPF LSM (clip/lsm.h): loading and unloading go to the kernel, without the GIL. */
static PyObject *
Context_lsm_load(ContextObject *self, PyObject *unused)
{
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_lsm_load(self->ctx, &err));
	if (r < 0)
		return raise_clip(r, err);
	return PyBool_FromLong(r == 0);
}

static PyObject *
Context_lsm_status(ContextObject *self, PyObject *unused)
{
	int r = clip_lsm_status(self->ctx);
	if (r == -EOPNOTSUPP)
		return raise_errno_message(UnsupportedError, r,
					   "libclip is built without the BPF LSM (-Dlsm=disabled)",
					   -1);
	if (r < 0)
		return raise_clip(r, NULL);
	return PyBool_FromLong(r);
}

static PyObject *
Context_lsm_unload(ContextObject *self, PyObject *unused)
{
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_lsm_unload(self->ctx, &err));
	return none_or_raise(r, err);
}

/* Which cage: 0 pidfd, 1 pid, 2 socket. */
static PyObject *
context_identify(ContextObject *self, PyObject *arg, int how)
{
	int fd;
	if (how == 1) {
		long pid = PyLong_AsLong(arg);
		if (pid == -1 && PyErr_Occurred())
			return NULL;
		if (pid <= 0 || pid > INT_MAX)
			return raise_errno_message(InvalidError, -EINVAL, "a pid must be positive",
						   -1);
		fd = (int)pid;
	} else if (PyBool_Check(arg) || (fd = PyObject_AsFileDescriptor(arg)) < 0) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_TypeError,
					"an fd or an object with fileno(), not a bool");
		return NULL;
	}
	char *name = NULL;
	struct clip_level *level = NULL;
	unsigned flags = 0;
	struct clip_error *err = NULL;
	int r = how == 0   ? clip_cage_identify_pidfd(self->ctx, fd, &name, &level, &flags, &err)
		: how == 1 ? clip_cage_identify_pid(self->ctx, fd, &name, &level, &flags, &err)
			   : clip_cage_identify_socket(self->ctx, fd, &name, &level, &flags, &err);
	if (r < 0)
		return raise_clip(r, err);
	PyObject *n = name ? take_string(name) : Py_NewRef(Py_None);
	PyObject *l = level ? level_wrap(level) : Py_NewRef(Py_None);
	if (!n || !l) {
		Py_XDECREF(n);
		Py_XDECREF(l);
		return NULL;
	}
	return Py_BuildValue("(NNI)", n, l, flags);
}

static PyObject *
Context_identify_pidfd(ContextObject *self, PyObject *arg)
{
	return context_identify(self, arg, 0);
}

static PyObject *
Context_identify_pid(ContextObject *self, PyObject *arg)
{
	return context_identify(self, arg, 1);
}

static PyObject *
Context_identify_socket(ContextObject *self, PyObject *arg)
{
	return context_identify(self, arg, 2);
}

/* A context has nothing to close: the end of a `with` block leaves it usable. */
static PyObject *
Context_exit(PyObject *self, PyObject *args)
{
	Py_RETURN_FALSE;
}

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

static PyMethodDef Context_methods[] = {
	{ "label_set", KW(Context_label_set),
	  "label_set(file, level, *, rootless=False): label a file (a path, an fd or a file "
	  "object)." },
	{ "label_get", KW(Context_label_get),
	  "label_get(file, *, rootless=False) -> Level: read and verify a file's label." },
	{ "label_verify", KW(Context_label_verify),
	  "label_verify(file, *, rootless=False): raise unless the file's label is valid." },
	{ "label_remove", KW(Context_label_remove),
	  "label_remove(file, *, rootless=False): remove a file's label." },
	{ "exec_check_support", (PyCFunction)Context_exec_check_support, METH_NOARGS,
	  "exec_check_support() -> int: EXEC_CHECK_NATIVE or EXEC_CHECK_DEGRADED." },
	{ "exec_check", (PyCFunction)Context_exec_check, METH_O,
	  "exec_check(file): raise unless the kernel would execute the file." },
	{ "exec_may_run_file", KW(Context_exec_may_run_file),
	  "exec_may_run_file(file, name=None, flags=0) -> bool: True when the check passed, "
	  "False when it failed but nothing enforces it; raises when refused." },
	{ "exec_may_run_interactive", KW(Context_exec_may_run_interactive),
	  "exec_may_run_interactive(file=None, what=None, flags=0) -> bool: as "
	  "exec_may_run_file, for code that is not a file (None: given on the command line)." },
	{ "exec_open", KW(Context_exec_open),
	  "exec_open(path, flags=0, *, dir_fd=None) -> int: open a file to interpret and decide; "
	  "the caller owns (and closes) the returned fd." },
	{ "exec_allow_tree", KW(Context_exec_allow_tree),
	  "exec_allow_tree(path, flags=0) -> (bool, dict): make a library tree pass the check "
	  "(EXEC_TREE_CHECK: only say whether it does)." },
	{ "get_securebits", (PyCFunction)Context_get_securebits, METH_NOARGS,
	  "get_securebits() -> int: the exec securebits of the calling thread." },
	{ "set_securebits", (PyCFunction)Context_set_securebits, METH_VARARGS,
	  "set_securebits(bits): add exec securebits and locks (never removed)." },
	{ "open_envelope", (PyCFunction)Context_open_envelope, METH_VARARGS,
	  "open_envelope(target, infile, outfile): decrypt an envelope delivered to target." },
	{ "audit_verify", KW(Context_audit_verify),
	  "audit_verify(dir=None, name=None) -> int: verify an audit log; the record count." },
	{ "audit_show", KW(Context_audit_show),
	  "audit_show(dir=None, name=None) -> list[str]: the verified records." },
	{ "audit_check", KW(Context_audit_check),
	  "audit_check(dir=None, name=None) -> (int, int): the count and AUDIT_WARN_* flags." },
	{ "audit_public_key", (PyCFunction)Context_audit_public_key, METH_NOARGS,
	  "audit_public_key() -> str: the PEM of the public half of the key that signs the "
	  "audit trail's anchors, for audit_verify_public()." },
	{ "lsm_load", (PyCFunction)Context_lsm_load, METH_NOARGS,
	  "lsm_load() -> bool: load, attach and pin the BPF LSM (root); True when loaded now, "
	  "False when it was already." },
	{ "lsm_status", (PyCFunction)Context_lsm_status, METH_NOARGS,
	  "lsm_status() -> bool: whether the BPF LSM is loaded (False too when its pins are not "
	  "visible to this process)." },
	{ "lsm_unload", (PyCFunction)Context_lsm_unload, METH_NOARGS,
	  "lsm_unload(): remove the BPF LSM's pins (running cages lose it); nothing pinned is "
	  "no error." },
	{ "identify_pidfd", (PyCFunction)Context_identify_pidfd, METH_O,
	  "identify_pidfd(pidfd) -> (name, level, flags): which registered cage a process is in "
	  "((None, None, CAGE_IDENTITY_CORE) for the core), from the kernel, never from a pid." },
	{ "identify_pid", (PyCFunction)Context_identify_pid, METH_O,
	  "identify_pid(pid) -> (name, level, flags): as identify_pidfd() for the process that "
	  "holds pid now (prefer a pidfd or a socket)." },
	{ "identify_socket", (PyCFunction)Context_identify_socket, METH_O,
	  "identify_socket(sock) -> (name, level, flags): as identify_pidfd() for the peer of a "
	  "connected UNIX socket (SO_PEERPIDFD)." },
	{ "__enter__", object_enter, METH_NOARGS, NULL },
	{ "__exit__", Context_exit, METH_VARARGS, NULL },
	{ NULL }
};

static PyTypeObject ContextType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Context",
	.tp_basicsize = sizeof(ContextObject),
	.tp_dealloc = (destructor)Context_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "Context(*, state_dir=None, key_provider=None, log=None, log_priority=None,\n"
		  "        cage_mode=None): a library context.\n\n"
		  "log: None sends the library's messages to logging.getLogger('clip'), False\n"
		  "drops them, a callable is called with (syslog priority, message), an object\n"
		  "with a log() method (a logging.Logger) gets log(level, message).",
	.tp_traverse = (traverseproc)Context_traverse,
	.tp_clear = (inquiry)Context_clear,
	.tp_methods = Context_methods,
	.tp_getset = Context_getset,
	.tp_new = Context_new,
};

static int
context_check(PyObject *o)
{
	if (!PyObject_TypeCheck(o, &ContextType)) {
		PyErr_Format(PyExc_TypeError, "ctx must be a clip.Context, not %.100s",
			     Py_TYPE(o)->tp_name);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* AuditLog */

typedef struct {
	PyObject_HEAD struct clip_audit *audit;
	PyObject *ctx;
} AuditObject;

static PyTypeObject AuditType;

static PyObject *
Audit_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "ctx", "dir", "name", "syslog", NULL };
	PyObject *ctx, *dir = Py_None;
	const char *name = NULL;
	int use_syslog = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|Oz$p:AuditLog", kwlist, &ctx, &dir, &name,
					 &use_syslog))
		return NULL;
	if (context_check(ctx) < 0)
		return NULL;
	struct file_arg d;
	if (file_open_or_none(&d, dir, O_RDONLY | O_DIRECTORY, -1) < 0)
		return NULL;
	struct clip_audit *audit = NULL;
	struct clip_error *err = NULL;
	int r = clip_audit_open(&audit, ((ContextObject *)ctx)->ctx, d.fd, name,
				use_syslog ? CLIP_AUDIT_SYSLOG : 0, &err);
	file_done(&d);
	if (r < 0)
		return raise_clip(r, err);
	AuditObject *o = (AuditObject *)type->tp_alloc(type, 0);
	if (!o) {
		clip_audit_unref(audit);
		return NULL;
	}
	o->audit = audit;
	o->ctx = Py_NewRef(ctx);
	return (PyObject *)o;
}

static PyObject *
Audit_close(AuditObject *self, PyObject *unused)
{
	self->audit = clip_audit_unref(self->audit);
	Py_RETURN_NONE;
}

static void
Audit_dealloc(AuditObject *self)
{
	clip_audit_unref(self->audit);
	Py_XDECREF(self->ctx);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Audit_append(AuditObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "event",        "source",     "source_level", "target",
				  "target_level", "name",       "length",       "sha256",
				  "decision",     "decided_by", "reason",       NULL };
	struct clip_audit_entry e = { .size = sizeof(e) };
	unsigned long long length = 0;
	const char *sha = NULL;
	Py_ssize_t sha_len = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$zzzzzzKy#zzz:append", kwlist, &e.event,
					 &e.source, &e.source_level, &e.target, &e.target_level,
					 &e.name, &length, &sha, &sha_len, &e.decision,
					 &e.decided_by, &e.reason))
		return NULL;
	if (!self->audit)
		return raise_errno_message(StateError, -ECHILD, "the audit log is closed", -1);
	if (sha && sha_len != 32)
		return raise_errno_message(InvalidError, -EINVAL, "sha256 must be 32 bytes", -1);
	e.length = length;
	e.sha256 = (const uint8_t *)sha;
	struct clip_error *err = NULL;
	int r = clip_audit_append(self->audit, &e, &err);
	return none_or_raise(r, err);
}

static PyObject *
Audit_export(AuditObject *self, PyObject *arg)
{
	if (!self->audit)
		return raise_errno_message(StateError, -ECHILD, "the audit log is closed", -1);
	struct file_arg f;
	if (file_open(&f, arg, O_WRONLY | O_CREAT | O_EXCL) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_audit_export(self->audit, f.fd, &err));
	file_done_made(&f, arg, r);
	return none_or_raise(r, err);
}

static PyMethodDef Audit_methods[] = {
	{ "append", KW(Audit_append),
	  "append(*, event=, source=, ..., reason=): append one record, on disk before "
	  "returning." },
	{ "export", (PyCFunction)Audit_export, METH_O,
	  "export(file): write the signed trail (every record, then the anchor's signed line) "
	  "to an fd, a file object or a new file, for audit_verify_public()." },
	{ "close", (PyCFunction)Audit_close, METH_NOARGS, "close(): release the log." },
	{ "__enter__", object_enter, METH_NOARGS, NULL },
	{ "__exit__", object_exit_close, METH_VARARGS, NULL },
	{ NULL }
};

static PyTypeObject AuditType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.AuditLog",
	.tp_basicsize = sizeof(AuditObject),
	.tp_dealloc = (destructor)Audit_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "AuditLog(ctx, dir=None, name=None, *, syslog=False): an audit log open for "
		  "appending.",
	.tp_methods = Audit_methods,
	.tp_new = Audit_new,
};

/* ------------------------------------------------------------------------ */
/* Profile */

typedef struct {
	PyObject_HEAD struct clip_cage_profile *profile;
} ProfileObject;

static PyTypeObject ProfileType;

static PyObject *
profile_wrap(PyTypeObject *type, struct clip_cage_profile *p)
{
	ProfileObject *o = (ProfileObject *)type->tp_alloc(type, 0);
	if (!o) {
		clip_cage_profile_unref(p);
		return NULL;
	}
	o->profile = p;
	return (PyObject *)o;
}

static PyObject *
Profile_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "name", NULL };
	const char *name;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "s:Profile", kwlist, &name))
		return NULL;
	struct clip_cage_profile *p = NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_profile_new(&p, name, &err);
	if (r < 0)
		return raise_clip(r, err);
	return profile_wrap(type, p);
}

static void
Profile_dealloc(ProfileObject *self)
{
	clip_cage_profile_unref(self->profile);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Profile_parse(PyObject *cls, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "text", "filename", NULL };
	const char *text, *filename = NULL;
	Py_ssize_t size;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "s#|z:parse", kwlist, &text, &size, &filename))
		return NULL;
	struct clip_cage_profile *p = NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_profile_parse(&p, filename, text, (size_t)size, &err);
	if (r < 0)
		return raise_clip(r, err);
	return profile_wrap((PyTypeObject *)cls, p);
}

static PyObject *
Profile_load(PyObject *cls, PyObject *args)
{
	PyObject *file;
	if (!PyArg_ParseTuple(args, "O:load", &file))
		return NULL;
	struct file_arg f;
	if (file_open(&f, file, O_RDONLY) < 0)
		return NULL;
	struct path_arg fname = { NULL };
	if (f.owned && !path_converter(file, &fname)) {
		file_done(&f);
		return NULL;
	}
	struct clip_cage_profile *p = NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_profile_load(&p, f.fd, fname.bytes ? path_str(&fname) : "profile", &err);
	path_done(&fname);
	file_done(&f);
	if (r < 0)
		return raise_clip(r, err);
	return profile_wrap((PyTypeObject *)cls, p);
}

static PyObject *
Profile_str(ProfileObject *self)
{
	char *s = NULL;
	int r = clip_cage_profile_format(self->profile, &s);
	return string_or_raise(r, s);
}

static PyObject *
Profile_format(ProfileObject *self, PyObject *unused)
{
	return Profile_str(self);
}

static PyObject *
Profile_dup(ProfileObject *self, PyObject *args)
{
	const char *name = NULL;
	if (!PyArg_ParseTuple(args, "|z:dup", &name))
		return NULL;
	struct clip_cage_profile *p = NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_profile_dup(&p, self->profile, name, &err);
	if (r < 0)
		return raise_clip(r, err);
	return profile_wrap(Py_TYPE(self), p);
}

static PyObject *
Profile_set_level(ProfileObject *self, PyObject *level)
{
	if (level_check(level, "level") < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_profile_set_level(self->profile, ((LevelObject *)level)->level, &err);
	return none_or_raise(r, err);
}

/* setters taking one path or name */
#define PROFILE_STR_SETTER(pyname, fn) \
	static PyObject *Profile_##pyname(ProfileObject *self, PyObject *args) \
	{ \
		const char *s; \
		if (!PyArg_ParseTuple(args, "s:" #pyname, &s)) \
			return NULL; \
		struct clip_error *err = NULL; \
		int r = fn(self->profile, s, &err); \
		return none_or_raise(r, err); \
	}
PROFILE_STR_SETTER(set_root, clip_cage_profile_set_root)
PROFILE_STR_SETTER(set_data_dir, clip_cage_profile_set_data_dir)
PROFILE_STR_SETTER(add_tmpfs, clip_cage_profile_add_tmpfs)
PROFILE_STR_SETTER(add_capability, clip_cage_profile_add_capability)
PROFILE_STR_SETTER(add_syscall_deny, clip_cage_profile_add_syscall_deny)

static PyObject *
Profile_add_bind(ProfileObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "source", "target", "rw", NULL };
	const char *source, *target;
	int rw = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "ss|$p:add_bind", kwlist, &source, &target,
					 &rw))
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_profile_add_bind(self->profile, source, target,
					   rw ? CLIP_CAGE_BIND_RW : 0, &err);
	return none_or_raise(r, err);
}

static PyObject *
Profile_set_network(ProfileObject *self, PyObject *args)
{
	int mode;
	const char *address = NULL;
	if (!PyArg_ParseTuple(args, "i|z:set_network", &mode, &address))
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_profile_set_network(self->profile, mode, address, &err);
	return none_or_raise(r, err);
}

static PyObject *
Profile_set_limits(ProfileObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "cpu_quota_percent", "memory_max", "tasks_max", NULL };
	unsigned cpu = 0;
	unsigned long long mem = 0, tasks = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$IKK:set_limits", kwlist, &cpu, &mem,
					 &tasks))
		return NULL;
	struct clip_cage_limits l = {
		.size = sizeof(l), .cpu_quota_percent = cpu, .memory_max = mem, .tasks_max = tasks
	};
	struct clip_error *err = NULL;
	int r = clip_cage_profile_set_limits(self->profile, &l, &err);
	return none_or_raise(r, err);
}

#define PROFILE_INT_SETTER(pyname, fmt, ctype, fn) \
	static PyObject *Profile_##pyname(ProfileObject *self, PyObject *args) \
	{ \
		ctype v; \
		if (!PyArg_ParseTuple(args, fmt ":" #pyname, &v)) \
			return NULL; \
		struct clip_error *err = NULL; \
		int r = fn(self->profile, v, &err); \
		return none_or_raise(r, err); \
	}
PROFILE_INT_SETTER(set_wx, "p", int, clip_cage_profile_set_wx)
PROFILE_INT_SETTER(set_measure, "p", int, clip_cage_profile_set_measure)
PROFILE_INT_SETTER(set_uid_base, "I", unsigned, clip_cage_profile_set_uid_base)
PROFILE_INT_SETTER(set_start_timeout, "I", unsigned, clip_cage_profile_set_start_timeout)

static PyObject *
Profile_add_port(ProfileObject *self, PyObject *args)
{
	unsigned kind, port;
	if (!PyArg_ParseTuple(args, "II:add_port", &kind, &port))
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_profile_add_port(self->profile, kind, port, &err);
	return none_or_raise(r, err);
}

PROFILE_INT_SETTER(set_landlock_min_abi, "I", unsigned, clip_cage_profile_set_landlock_min_abi)

static PyObject *
Profile_get_data_dir(ProfileObject *self, void *closure)
{
	return opt_string(clip_cage_profile_get_data_dir(self->profile));
}

static PyObject *
Profile_get_binds(ProfileObject *self, void *closure)
{
	PyObject *list = PyList_New(0);
	for (size_t i = 0; list; i++) {
		const char *source = NULL, *target = NULL;
		unsigned flags = 0;
		if (clip_cage_profile_get_bind(self->profile, i, &source, &target, &flags) < 0)
			break;
		PyObject *t = Py_BuildValue("(ssO)", source, target,
					    flags & CLIP_CAGE_BIND_RW ? Py_True : Py_False);
		if (!t || PyList_Append(list, t) < 0) {
			Py_XDECREF(t);
			Py_CLEAR(list);
			break;
		}
		Py_DECREF(t);
	}
	if (!list)
		return NULL;
	PyObject *tuple = PyList_AsTuple(list);
	Py_DECREF(list);
	return tuple;
}

static PyObject *
Profile_get_name(ProfileObject *self, void *closure)
{
	return PyUnicode_FromString(clip_cage_profile_get_name(self->profile));
}

static PyObject *
Profile_get_level(ProfileObject *self, void *closure)
{
	const struct clip_level *l = clip_cage_profile_get_level(self->profile);
	return level_wrap(clip_level_ref((struct clip_level *)l));
}

static PyObject *
Profile_get_uid_base(ProfileObject *self, void *closure)
{
	return PyLong_FromUnsignedLong(clip_cage_profile_get_uid_base(self->profile));
}

static PyMethodDef Profile_methods[] = {
	{ "parse", KW(Profile_parse) | METH_CLASS,
	  "parse(text, filename=None) -> Profile: a profile in clip.cage(5) syntax." },
	{ "load", (PyCFunction)Profile_load, METH_VARARGS | METH_CLASS,
	  "load(file) -> Profile: read and parse a profile file (a path, an fd or a file)." },
	{ "format", (PyCFunction)Profile_format, METH_NOARGS,
	  "format() -> str: the canonical text (also str(profile))." },
	{ "dup", (PyCFunction)Profile_dup, METH_VARARGS,
	  "dup(name=None) -> Profile: a copy, under another name." },
	{ "set_level", (PyCFunction)Profile_set_level, METH_O, "set_level(level)" },
	{ "set_root", (PyCFunction)Profile_set_root, METH_VARARGS, "set_root(path)" },
	{ "set_data_dir", (PyCFunction)Profile_set_data_dir, METH_VARARGS, "set_data_dir(path)" },
	{ "add_bind", KW(Profile_add_bind), "add_bind(source, target, *, rw=False)" },
	{ "add_tmpfs", (PyCFunction)Profile_add_tmpfs, METH_VARARGS, "add_tmpfs(target)" },
	{ "set_network", (PyCFunction)Profile_set_network, METH_VARARGS,
	  "set_network(mode, address=None): CAGE_NET_NONE, _LOOPBACK or _VETH." },
	{ "set_limits", KW(Profile_set_limits),
	  "set_limits(*, cpu_quota_percent=0, memory_max=0, tasks_max=0): 0 is no limit." },
	{ "add_capability", (PyCFunction)Profile_add_capability, METH_VARARGS,
	  "add_capability(name)" },
	{ "add_syscall_deny", (PyCFunction)Profile_add_syscall_deny, METH_VARARGS,
	  "add_syscall_deny(name)" },
	{ "set_wx", (PyCFunction)Profile_set_wx, METH_VARARGS, "set_wx(on)" },
	{ "set_measure", (PyCFunction)Profile_set_measure, METH_VARARGS, "set_measure(on)" },
	{ "set_uid_base", (PyCFunction)Profile_set_uid_base, METH_VARARGS, "set_uid_base(base)" },
	{ "add_port", (PyCFunction)Profile_add_port, METH_VARARGS,
	  "add_port(kind, port): a TCP port the cage may bind or connect to (CAGE_PORT_BIND, "
	  "CAGE_PORT_CONNECT, or both)." },
	{ "set_landlock_min_abi", (PyCFunction)Profile_set_landlock_min_abi, METH_VARARGS,
	  "set_landlock_min_abi(abi): the oldest Landlock ABI the cage may start with (0: none)." },
	{ "set_start_timeout", (PyCFunction)Profile_set_start_timeout, METH_VARARGS,
	  "set_start_timeout(seconds)" },
	{ NULL }
};

static PyGetSetDef Profile_getset[] = {
	{ "name", (getter)Profile_get_name, NULL, "the profile's name", NULL },
	{ "level", (getter)Profile_get_level, NULL, "the cage's level", NULL },
	{ "uid_base", (getter)Profile_get_uid_base, NULL, "the first host uid (root mode)", NULL },
	{ "data_dir", (getter)Profile_get_data_dir, NULL, "the data directory, or None", NULL },
	{ "binds", (getter)Profile_get_binds, NULL,
	  "the binds in the order they were added: (source, target, rw) tuples", NULL },
	{ NULL }
};

static PyTypeObject ProfileType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Profile",
	.tp_basicsize = sizeof(ProfileObject),
	.tp_dealloc = (destructor)Profile_dealloc,
	.tp_str = (reprfunc)Profile_str,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Profile(name): a cage profile with the defaults, to build on; or\n"
		  "Profile.parse(text) / Profile.load(file) from clip.cage(5) text.",
	.tp_methods = Profile_methods,
	.tp_getset = Profile_getset,
	.tp_new = Profile_new,
};

/* ------------------------------------------------------------------------ */
/* Cage and Process */

typedef struct {
	PyObject_HEAD struct clip_cage *cage;
	PyObject *ctx;
	PyObject *on_denial; /* the cage's denial function is ours while set */
	bool of_session; /* Session.get_cage(): its denials are the session's feed's */
} CageObject;

typedef struct {
	FdObject base; /* the pidfd */
	struct clip_cage *cage; /* a reference of its own */
	PyObject *ctx;
	int status; /* -1 until waited for */
} ProcessObject;

static PyTypeObject CageType;
static PyTypeObject ProcessType;

/* Wrap @cage (the reference is taken over), which keeps @ctx alive. */
static PyObject *
cage_wrap(struct clip_cage *cage, PyObject *ctx)
{
	CageObject *o = PyObject_New(CageObject, &CageType);
	if (!o) {
		clip_cage_unref(cage);
		return NULL;
	}
	o->cage = cage;
	o->ctx = Py_NewRef(ctx);
	o->on_denial = NULL;
	o->of_session = false;
	return (PyObject *)o;
}

/* A session's cage: its runner reads its denials into the feed, nobody else. */
static int
denials_ours(CageObject *self)
{
	if (!self->of_session)
		return 0;
	raise_errno_message(BusyError, -EBUSY,
			    "the session reads this cage's Landlock denials into its feed: "
			    "follow them with clip.Watch",
			    -1);
	return -1;
}

static PyObject *
Cage_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "ctx", "profile", NULL };
	PyObject *ctx, *profile;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!:Cage", kwlist, &ctx, &ProfileType,
					 &profile))
		return NULL;
	if (context_check(ctx) < 0)
		return NULL;
	struct clip_cage *cage = NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_new(&cage, ((ContextObject *)ctx)->ctx,
			      ((ProfileObject *)profile)->profile, &err);
	if (r < 0)
		return raise_clip(r, err);
	return cage_wrap(cage, ctx);
}

static PyObject *
Cage_attach(PyObject *cls, PyObject *args)
{
	PyObject *ctx;
	const char *name;
	if (!PyArg_ParseTuple(args, "O!s:attach", &ContextType, &ctx, &name))
		return NULL;
	struct clip_cage *cage = NULL;
	struct clip_error *err = NULL;
	int r = clip_cage_attach(&cage, ((ContextObject *)ctx)->ctx, name, &err);
	if (r < 0)
		return raise_clip(r, err);
	return cage_wrap(cage, ctx);
}

/*
 * Detach the denial function before the handle goes: a cage that another
 * reference keeps (a session, a Process) would else call into a freed object.
 */
static void
cage_release(CageObject *self)
{
	if (self->cage && self->on_denial)
		clip_cage_set_denial_fn(self->cage, NULL, NULL);
	Py_CLEAR(self->on_denial);
	self->cage = clip_cage_unref(self->cage);
}

static void
Cage_dealloc(CageObject *self)
{
	cage_release(self);
	Py_XDECREF(self->ctx);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
cage_open(CageObject *self)
{
	return handle_check(self->cage, StateError, -ECHILD, "the cage object is closed");
}

/* What clip_cage_spawn() needs from Python: argv, envp, fds. */
struct spawn_args {
	struct clip_cage_spawn_opts opts;
	PyObject *keep; /* the bytes objects the pointers point into */
	const char **argv;
	const char **envp;
	int *fds;
};

static void
spawn_args_done(struct spawn_args *a)
{
	Py_XDECREF(a->keep);
	PyMem_Free(a->argv);
	PyMem_Free(a->envp);
	PyMem_Free(a->fds);
}

/* A NULL-terminated array of the strings of @seq (bytes kept in a->keep). */
static const char **
string_array(struct spawn_args *a, PyObject *seq, const char *what)
{
	PyObject *fast = PySequence_Fast(seq, what);
	if (!fast)
		return NULL;
	Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
	const char **v = PyMem_New(const char *, n + 1);
	if (!v) {
		Py_DECREF(fast);
		PyErr_NoMemory();
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *b = NULL;
		if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(fast, i), &b) ||
		    PyList_Append(a->keep, b) < 0) {
			Py_XDECREF(b);
			PyMem_Free(v);
			Py_DECREF(fast);
			return NULL;
		}
		v[i] = PyBytes_AS_STRING(b);
		Py_DECREF(b);
	}
	v[n] = NULL;
	Py_DECREF(fast);
	return v;
}

static int
spawn_args_parse(struct spawn_args *a, PyObject *argv, PyObject *env, PyObject *fds,
		 const char *cwd, unsigned uid, unsigned gid)
{
	memset(a, 0, sizeof(*a));
	a->opts.size = sizeof(a->opts);
	a->keep = PyList_New(0);
	if (!a->keep)
		return -1;
	if (PyUnicode_Check(argv) || PyBytes_Check(argv)) {
		PyErr_SetString(PyExc_TypeError,
				"argv must be a sequence of arguments, not a string");
		return -1;
	}
	if (!(a->argv = string_array(a, argv, "argv must be a sequence")))
		return -1;
	if (env && env != Py_None) {
		PyObject *items = NULL;
		if (PyMapping_Check(env) && !PySequence_Check(env)) {
			PyObject *list = PyList_New(0), *pairs = PyMapping_Items(env);
			if (!list || !pairs) {
				Py_XDECREF(list);
				Py_XDECREF(pairs);
				return -1;
			}
			for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pairs); i++) {
				PyObject *kv = PyList_GET_ITEM(pairs, i);
				PyObject *s = PyUnicode_FromFormat("%S=%S", PyTuple_GET_ITEM(kv, 0),
								   PyTuple_GET_ITEM(kv, 1));
				if (!s || PyList_Append(list, s) < 0) {
					Py_XDECREF(s);
					Py_DECREF(list);
					Py_DECREF(pairs);
					return -1;
				}
				Py_DECREF(s);
			}
			Py_DECREF(pairs);
			items = list;
		} else {
			items = Py_NewRef(env);
		}
		a->envp = string_array(a, items, "env must be a mapping or a sequence");
		Py_DECREF(items);
		if (!a->envp)
			return -1;
	}
	if (fds && fds != Py_None) {
		PyObject *fast = PySequence_Fast(fds, "fds must be a sequence");
		if (!fast)
			return -1;
		Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
		a->fds = PyMem_New(int, n ? n : 1);
		if (!a->fds) {
			Py_DECREF(fast);
			PyErr_NoMemory();
			return -1;
		}
		for (Py_ssize_t i = 0; i < n; i++) {
			int fd = PyObject_AsFileDescriptor(PySequence_Fast_GET_ITEM(fast, i));
			if (fd < 0) {
				Py_DECREF(fast);
				return -1;
			}
			a->fds[i] = fd;
		}
		Py_DECREF(fast);
		a->opts.n_fds = (uint32_t)n;
	}
	a->opts.argv = a->argv;
	a->opts.envp = a->envp;
	a->opts.fds = a->fds;
	a->opts.cwd = cwd;
	a->opts.uid = uid;
	a->opts.gid = gid;
	return 0;
}

/* A Process of @cage (a reference of its own) owning @pidfd, closed when there is no memory. */
static PyObject *
process_wrap(struct clip_cage *cage, PyObject *ctx, int pidfd)
{
	ProcessObject *p = (ProcessObject *)fd_object_new(&ProcessType, pidfd);
	if (!p)
		return NULL;
	p->cage = clip_cage_ref(cage);
	p->ctx = Py_NewRef(ctx);
	p->status = -1;
	return (PyObject *)p;
}

static PyObject *
cage_spawn(CageObject *self, PyObject *args, PyObject *kwds, bool start)
{
	static char *kwlist[] = { "argv",           "env", "fds", "cwd", "uid", "gid", "register",
				  "end_with_first", NULL };
	PyObject *argv, *env = NULL, *fds = NULL;
	const char *cwd = NULL;
	unsigned uid = 0, gid = 0;
	int reg = 0, end_with_first = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$OOzIIpp:spawn", kwlist, &argv, &env, &fds,
					 &cwd, &uid, &gid, &reg, &end_with_first))
		return NULL;
	if (cage_open(self) < 0)
		return NULL;
	if (!start && (reg || end_with_first)) {
		PyErr_SetString(PyExc_TypeError,
				"spawn() takes no register or end_with_first: see start_spawn()");
		return NULL;
	}
	struct spawn_args a;
	if (spawn_args_parse(&a, argv, env, fds, cwd, uid, gid) < 0) {
		spawn_args_done(&a);
		return NULL;
	}
	unsigned flags = (reg ? CLIP_CAGE_START_REGISTER : 0) |
			 (end_with_first ? CLIP_CAGE_START_END_WITH_FIRST : 0);
	int pidfd = -1, r;
	struct clip_error *err = NULL;
	WITHOUT_GIL(r = start ? clip_cage_start_spawn(self->cage, flags, &a.opts, &pidfd, &err)
			      : clip_cage_spawn(self->cage, &a.opts, &pidfd, &err));
	spawn_args_done(&a);
	if (r < 0)
		return raise_clip(r, err);
	return process_wrap(self->cage, self->ctx, pidfd);
}

static PyObject *
Cage_spawn(CageObject *self, PyObject *args, PyObject *kwds)
{
	return cage_spawn(self, args, kwds, false);
}

static PyObject *
Cage_start_spawn(CageObject *self, PyObject *args, PyObject *kwds)
{
	return cage_spawn(self, args, kwds, true);
}

static PyObject *
Cage_start(CageObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "register", NULL };
	int reg = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$p:start", kwlist, &reg))
		return NULL;
	if (cage_open(self) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_cage_start(self->cage, reg ? CLIP_CAGE_START_REGISTER : 0, &err));
	return none_or_raise(r, err);
}

static PyObject *
cage_stop(CageObject *self, unsigned grace_ms)
{
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_cage_stop(self->cage, grace_ms, &err));
	return none_or_raise(r, err);
}

static PyObject *
Cage_stop(CageObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "grace_ms", NULL };
	unsigned grace = 1000;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|I:stop", kwlist, &grace))
		return NULL;
	if (cage_open(self) < 0)
		return NULL;
	return cage_stop(self, grace);
}

static int
timeout_ms(PyObject *timeout, int *ret)
{
	if (!timeout || timeout == Py_None) {
		*ret = -1;
		return 0;
	}
	double t = PyFloat_AsDouble(timeout);
	if (t == -1.0 && PyErr_Occurred())
		return -1;
	if (t < 0 || t > 2e6) {
		raise_errno_message(InvalidError, -EINVAL, "timeout must be 0 to 2e6 seconds", -1);
		return -1;
	}
	*ret = (int)(t * 1000.0);
	return 0;
}

static PyObject *
Cage_wait(CageObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *timeout = NULL;
	int ms;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:wait", kwlist, &timeout) ||
	    timeout_ms(timeout, &ms) < 0 || cage_open(self) < 0)
		return NULL;
	int r;
	WITHOUT_GIL(r = clip_cage_wait(self->cage, ms));
	if (r == -ENODATA)
		return raise_errno_message(TimeoutErr, -ETIMEDOUT,
					   "the cage is still running at the timeout", -1);
	return none_or_raise(r, NULL);
}

static PyObject *
Cage_signal(CageObject *self, PyObject *args)
{
	int sig;
	if (!PyArg_ParseTuple(args, "i:signal", &sig) || cage_open(self) < 0)
		return NULL;
	int r = clip_cage_signal(self->cage, sig);
	if (r < 0)
		return raise_clip(r, NULL);
	return PyLong_FromLong(r);
}

static PyObject *
Cage_fileno(CageObject *self, PyObject *unused)
{
	if (cage_open(self) < 0)
		return NULL;
	int r = clip_cage_get_fd(self->cage);
	if (r < 0)
		return raise_errno_message(StateError, r, "the cage was never started", -1);
	return PyLong_FromLong(r);
}

static PyObject *
Cage_get_pids(CageObject *self, void *closure)
{
	if (cage_open(self) < 0)
		return NULL;
	int *pids = NULL;
	size_t n = 0;
	int r = clip_cage_get_pids(self->cage, &pids, &n);
	if (r < 0)
		return raise_errno_message(StateError, r, "the cage is not running", -1);
	PyObject *t = PyTuple_New((Py_ssize_t)n);
	for (size_t i = 0; t && i < n; i++)
		PyTuple_SET_ITEM(t, (Py_ssize_t)i, PyLong_FromLong(pids[i]));
	free(pids);
	return t;
}

static PyObject *
Cage_get_state(CageObject *self, void *closure)
{
	if (cage_open(self) < 0)
		return NULL;
	return PyLong_FromLong(clip_cage_get_state(self->cage));
}

static PyObject *
Cage_get_missing(CageObject *self, void *closure)
{
	if (cage_open(self) < 0)
		return NULL;
	return PyLong_FromLong(clip_cage_get_missing(self->cage));
}

static PyObject *
Cage_get_profile(CageObject *self, void *closure)
{
	if (cage_open(self) < 0)
		return NULL;
	const struct clip_cage_profile *p = clip_cage_get_profile(self->cage);
	return profile_wrap(&ProfileType, clip_cage_profile_ref((struct clip_cage_profile *)p));
}

static PyObject *
Cage_get_closed(CageObject *self, void *closure)
{
	return PyBool_FromLong(!self->cage);
}

static PyObject *
Cage_close(CageObject *self, PyObject *unused)
{
	cage_release(self);
	Py_RETURN_NONE;
}

/* A Landlock denial of the cage, in the thread that reads them (read_denials(), wait(), stop()). */
static void
cage_denial(struct clip_cage *cage, const char *what, void *userdata)
{
	CageObject *self = userdata;
	PyGILState_STATE gil = PyGILState_Ensure();
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	if (self->on_denial) {
		PyObject *r = PyObject_CallFunction(self->on_denial, "s", what);
		if (!r)
			PyErr_WriteUnraisable(self->on_denial);
		Py_XDECREF(r);
	}
	PyErr_Restore(type, value, tb);
	PyGILState_Release(gil);
}

static PyObject *
Cage_get_on_denial(CageObject *self, void *closure)
{
	return Py_NewRef(self->on_denial ? self->on_denial : Py_None);
}

static int
Cage_set_on_denial(CageObject *self, PyObject *value, void *closure)
{
	if (value && value != Py_None && !PyCallable_Check(value)) {
		PyErr_SetString(PyExc_TypeError, "on_denial must be a callable(what) or None");
		return -1;
	}
	if (cage_open(self) < 0 || denials_ours(self) < 0)
		return -1;
	bool set = value && value != Py_None;
	int r = clip_cage_set_denial_fn(self->cage, set ? cage_denial : NULL, set ? self : NULL);
	if (r < 0) {
		raise_clip(r, NULL);
		return -1;
	}
	Py_XSETREF(self->on_denial, set ? Py_NewRef(value) : NULL);
	return 0;
}

/* The errors of the denial fd and reading: which of not running and not read. */
static PyObject *
raise_denials(int r)
{
	if (r == -ECHILD)
		return raise_errno_message(StateError, r, "the cage is not running", -1);
	if (r == -ENODATA)
		return raise_errno_message(NotFoundError, r,
					   "the cage's Landlock denials are not read (they need "
					   "Landlock ABI 7, the kernel's audit on and the host's "
					   "root: see missing)",
					   -1);
	return raise_clip(r, NULL);
}

static PyObject *
Cage_denial_fileno(CageObject *self, PyObject *unused)
{
	if (cage_open(self) < 0 || denials_ours(self) < 0)
		return NULL;
	int r = clip_cage_get_denial_fd(self->cage);
	if (r < 0)
		return raise_denials(r);
	return PyLong_FromLong(r);
}

static PyObject *
Cage_read_denials(CageObject *self, PyObject *unused)
{
	if (cage_open(self) < 0 || denials_ours(self) < 0)
		return NULL;
	/* With the GIL: it does not wait, and on_denial is called from it. */
	int r = clip_cage_read_denials(self->cage);
	if (r < 0)
		return raise_denials(r);
	return PyLong_FromLong(r);
}

static PyObject *
Cage_exit(CageObject *self, PyObject *args)
{
	if (self->cage && clip_cage_get_state(self->cage) == CLIP_CAGE_RUNNING) {
		PyObject *r = cage_stop(self, 1000);
		if (!r)
			return NULL;
		Py_DECREF(r);
	}
	return object_exit_close((PyObject *)self, args);
}

static PyMethodDef Cage_methods[] = {
	{ "attach", (PyCFunction)Cage_attach, METH_VARARGS | METH_CLASS,
	  "attach(ctx, name) -> Cage: a running, registered cage." },
	{ "start", KW(Cage_start), "start(*, register=False): start the cage." },
	{ "spawn", KW(Cage_spawn),
	  "spawn(argv, *, env=None, fds=None, cwd=None, uid=0, gid=0) -> Process: run a process "
	  "in the running cage; fds[i] becomes its fd i (None: no fd at all)." },
	{ "start_spawn", KW(Cage_start_spawn),
	  "start_spawn(argv, *, ..., register=False, end_with_first=False) -> Process: start "
	  "and run a first process in one step." },
	{ "stop", KW(Cage_stop), "stop(grace_ms=1000): SIGTERM, then SIGKILL, then wait." },
	{ "wait", KW(Cage_wait),
	  "wait(timeout=None): wait until the cage has ended (TimeoutError at the timeout)." },
	{ "signal", (PyCFunction)Cage_signal, METH_VARARGS,
	  "signal(sig) -> int: signal every process but init; the number signalled." },
	{ "fileno", (PyCFunction)Cage_fileno, METH_NOARGS,
	  "fileno() -> int: a pidfd of the init, readable once the cage has ended (owned by the "
	  "cage: register it with selectors, do not close it)." },
	{ "denial_fileno", (PyCFunction)Cage_denial_fileno, METH_NOARGS,
	  "denial_fileno() -> int: an fd readable when the kernel's audit has records for "
	  "read_denials() (owned by the cage: do not close it)." },
	{ "read_denials", (PyCFunction)Cage_read_denials, METH_NOARGS,
	  "read_denials() -> int: read the kernel's audit without waiting; each Landlock denial "
	  "of the cage is logged and passed to on_denial; the number read." },
	{ "close", (PyCFunction)Cage_close, METH_NOARGS,
	  "close(): drop the handle (a running cage keeps running)." },
	{ "__enter__", object_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)Cage_exit, METH_VARARGS, NULL },
	{ NULL }
};

static PyGetSetDef Cage_getset[] = {
	{ "pids", (getter)Cage_get_pids, NULL, "the host pids of its processes, init first", NULL },
	{ "state", (getter)Cage_get_state, NULL, "CAGE_NEW, CAGE_RUNNING or CAGE_STOPPED", NULL },
	{ "missing", (getter)Cage_get_missing, NULL, "CAGE_MISSING_* protections not applied",
	  NULL },
	{ "profile", (getter)Cage_get_profile, NULL, "the cage's profile", NULL },
	{ "closed", (getter)Cage_get_closed, NULL, "whether close() was called", NULL },
	{ "on_denial", (getter)Cage_get_on_denial, (setter)Cage_set_on_denial,
	  "a callable(what) told of each Landlock denial of the cage (read_denials(), wait(), "
	  "stop()), or None",
	  NULL },
	{ NULL }
};

static PyTypeObject CageType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Cage",
	.tp_basicsize = sizeof(CageObject),
	.tp_dealloc = (destructor)Cage_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Cage(ctx, profile): a cage, not started. `with Cage(...) as c:` stops a\n"
		  "running cage and releases the handle at the end of the block.",
	.tp_methods = Cage_methods,
	.tp_getset = Cage_getset,
	.tp_new = Cage_new,
};

static void
Process_dealloc(ProcessObject *self)
{
	fd_object_release(&self->base);
	clip_cage_unref(self->cage);
	Py_XDECREF(self->ctx);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static const char process_closed[] = "the process's pidfd is closed";

static PyObject *
Process_fileno(ProcessObject *self, PyObject *unused)
{
	return fd_object_fileno(&self->base, process_closed);
}

static PyObject *
Process_wait(ProcessObject *self, PyObject *unused)
{
	if (self->status >= 0)
		return PyLong_FromLong(self->status);
	if (fd_object_check(&self->base, process_closed) < 0)
		return NULL;
	int status = -1, r;
	WITHOUT_GIL(r = clip_cage_wait_process(self->cage, self->base.fd, &status));
	if (r < 0)
		return raise_errno_message(
			StateError, r, "not a process spawned in this cage, or waited for already",
			-1);
	self->status = status;
	return PyLong_FromLong(status);
}

static PyObject *
Process_get_returncode(ProcessObject *self, void *closure)
{
	if (self->status < 0)
		Py_RETURN_NONE;
	return PyLong_FromLong(self->status);
}

static PyObject *
Process_get_pidfd(ProcessObject *self, void *closure)
{
	return PyLong_FromLong(self->base.fd);
}

static PyMethodDef Process_methods[] = {
	{ "fileno", (PyCFunction)Process_fileno, METH_NOARGS,
	  "fileno() -> int: the pidfd, readable once the process has exited." },
	{ "wait", (PyCFunction)Process_wait, METH_NOARGS,
	  "wait() -> int: reap the process; its exit status, or 128 + the signal." },
	{ "close", (PyCFunction)FdObject_close, METH_NOARGS, "close(): close the pidfd." },
	{ "__enter__", object_enter, METH_NOARGS, NULL },
	/* close(), and None (not False) as it always did */
	{ "__exit__", (PyCFunction)FdObject_close, METH_VARARGS, NULL },
	{ NULL }
};

static PyGetSetDef Process_getset[] = { { "pidfd", (getter)Process_get_pidfd, NULL,
					  "the pidfd (-1 once closed)", NULL },
					{ "returncode", (getter)Process_get_returncode, NULL,
					  "the status wait() returned, or None", NULL },
					{ NULL } };

static PyTypeObject ProcessType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Process",
	.tp_basicsize = sizeof(ProcessObject),
	.tp_dealloc = (destructor)Process_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A process spawned in a cage (Cage.spawn()); its pidfd (fileno()) polls\n"
		  "readable when it exits: usable with selectors and asyncio.",
	.tp_methods = Process_methods,
	.tp_getset = Process_getset,
};

/* ------------------------------------------------------------------------ */
/* Transfer client */

static PyTypeObject ResultType;
static PyStructSequence_Field result_fields[] = {
	{ "status", "TRANSFER_DELIVERED, _DENIED_POLICY, _DENIED_USER or _FAILED" },
	{ "name", "the name the document got in the target inbox (\"\" unless delivered)" },
	{ "message", "the mediator's reason" },
	{ "error", "the errno of a failure (positive), else 0" },
	{ "size", "the document's size as the mediator read it" },
	{ "sha256", "its SHA-256 (32 bytes)" },
	{ "encrypted", "whether it was delivered in an envelope" },
	{ NULL }
};
static PyStructSequence_Desc result_desc = { "clip.TransferResult",
					     "The mediator's answer to a transfer.", result_fields,
					     7 };

typedef struct {
	PyObject_HEAD struct clip_transfer *transfer;
} TransferObject;

static PyTypeObject ClientType;
static PyTypeObject TransferType;

static const char client_closed[] = "the transfer client is closed";

static PyObject *
Client_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "path", NULL };
	struct path_arg path = { NULL };
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O&:TransferClient", kwlist,
					 optional_path_converter, &path))
		return NULL;
	int sock = -1;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_transfer_connect(&sock, path_str(&path), &err));
	path_done(&path);
	if (r < 0)
		return raise_clip(r, err);
	return fd_object_new(type, sock);
}

static PyObject *
Client_fileno(FdObject *self, PyObject *unused)
{
	return fd_object_fileno(self, client_closed);
}

static PyObject *
transfer_result(struct clip_transfer *t)
{
	PyObject *res = PyStructSequence_New(&ResultType);
	if (!res)
		return NULL;
	uint64_t size = 0;
	uint8_t sha[32] = { 0 };
	int enc = 0;
	clip_transfer_get_digest(t, &size, sha, &enc);
	int e = clip_transfer_get_error(t);
	PyStructSequence_SET_ITEM(res, 0, PyLong_FromLong(clip_transfer_get_status(t)));
	PyStructSequence_SET_ITEM(
		res, 1,
		PyUnicode_DecodeUTF8(clip_transfer_get_name(t),
				     (Py_ssize_t)strlen(clip_transfer_get_name(t)),
				     "surrogateescape"));
	PyStructSequence_SET_ITEM(
		res, 2,
		PyUnicode_DecodeUTF8(clip_transfer_get_message(t),
				     (Py_ssize_t)strlen(clip_transfer_get_message(t)), "replace"));
	PyStructSequence_SET_ITEM(res, 3, PyLong_FromLong(e < 0 ? -e : 0));
	PyStructSequence_SET_ITEM(res, 4, PyLong_FromUnsignedLongLong(size));
	PyStructSequence_SET_ITEM(res, 5, PyBytes_FromStringAndSize((const char *)sha, 32));
	PyStructSequence_SET_ITEM(res, 6, PyBool_FromLong(enc));
	for (int i = 0; i < 7; i++)
		if (!PyStructSequence_GET_ITEM(res, i)) {
			Py_DECREF(res);
			return NULL;
		}
	return res;
}

/* The result, or with @check the exception of a denial or failure. */
static PyObject *
transfer_outcome(struct clip_transfer *t, bool check)
{
	PyObject *res = transfer_result(t);
	if (!res || !check)
		return res;
	int status = clip_transfer_get_status(t);
	if (status == CLIP_TRANSFER_DELIVERED)
		return res;
	PyObject *cls = status == CLIP_TRANSFER_FAILED ? TransferFailed : TransferDenied;
	int e = clip_transfer_get_error(t);
	if (status != CLIP_TRANSFER_FAILED)
		e = -EACCES;
	else if (e >= 0)
		e = -EIO;
	const char *msg = clip_transfer_get_message(t);
	char buf[1200];
	snprintf(buf, sizeof(buf), "%s: %s",
		 status == CLIP_TRANSFER_DENIED_USER     ? "denied by the user"
		 : status == CLIP_TRANSFER_DENIED_POLICY ? "denied by the policy"
							 : "failed",
		 *msg ? msg : strerror(-e));
	PyObject *exc = PyObject_CallFunction(cls, "is", -e, buf);
	if (exc) {
		if (PyObject_SetAttrString(exc, "result", res) == 0 &&
		    PyObject_SetAttrString(exc, "status", PyStructSequence_GET_ITEM(res, 0)) == 0)
			PyErr_SetObject(cls, exc);
		Py_DECREF(exc);
	}
	Py_DECREF(res);
	return NULL;
}

static PyObject *
Client_request(FdObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "file", "target", "name", "note", NULL };
	PyObject *file;
	const char *target, *name, *note = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oss|z:request", kwlist, &file, &target, &name,
					 &note))
		return NULL;
	if (fd_object_check(self, client_closed) < 0)
		return NULL;
	struct file_arg f;
	if (file_open(&f, file, O_RDONLY) < 0)
		return NULL;
	struct clip_transfer *t = NULL;
	struct clip_error *err = NULL;
	int r = clip_transfer_new(&t, self->fd, f.fd, target, name, note, &err);
	file_done(&f);
	if (r < 0)
		return raise_clip(r, err);
	TransferObject *o = PyObject_New(TransferObject, &TransferType);
	if (!o) {
		clip_transfer_unref(t);
		return NULL;
	}
	o->transfer = t;
	return (PyObject *)o;
}

static PyObject *
transfer_wait(TransferObject *self, PyObject *timeout)
{
	int ms;
	if (timeout_ms(timeout, &ms) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_transfer_wait(self->transfer, ms, &err));
	if (r == -EAGAIN) {
		clip_error_free(err);
		return raise_errno_message(TimeoutErr, -ETIMEDOUT,
					   "no answer from the mediator within the timeout", -1);
	}
	return none_or_raise(r, err);
}

static PyObject *
Client_send(FdObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "file", "target", "name", "note", "timeout", "check", NULL };
	PyObject *file, *timeout = Py_None;
	const char *target, *name, *note = NULL;
	int check = 1;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oss|z$Op:send", kwlist, &file, &target, &name,
					 &note, &timeout, &check))
		return NULL;
	PyObject *req_args = Py_BuildValue("(Oss)", file, target, name);
	if (!req_args)
		return NULL;
	PyObject *req_kw = note ? Py_BuildValue("{ss}", "note", note) : NULL;
	TransferObject *t = (TransferObject *)Client_request(self, req_args, req_kw);
	Py_DECREF(req_args);
	Py_XDECREF(req_kw);
	if (!t)
		return NULL;
	PyObject *w = transfer_wait(t, timeout);
	PyObject *res = w ? transfer_outcome(t->transfer, check) : NULL;
	Py_XDECREF(w);
	Py_DECREF(t);
	return res;
}

static PyMethodDef Client_methods[] = {
	{ "send", KW(Client_send),
	  "send(file, target, name, note=None, *, timeout=None, check=True) -> TransferResult: "
	  "ask the mediator to move a document to another cage and wait for the answer. With "
	  "check, a denial raises TransferDenied and a failure TransferFailed." },
	{ "request", KW(Client_request),
	  "request(file, target, name, note=None) -> Transfer: send without waiting." },
	{ "fileno", (PyCFunction)Client_fileno, METH_NOARGS, "fileno() -> int: the socket." },
	{ "close", (PyCFunction)FdObject_close, METH_NOARGS, "close(): close the socket." },
	{ "__enter__", object_enter, METH_NOARGS, NULL },
	{ "__exit__", object_exit_close, METH_VARARGS, NULL },
	{ NULL }
};

static PyTypeObject ClientType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.TransferClient",
	.tp_basicsize = sizeof(FdObject),
	.tp_dealloc = (destructor)FdObject_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "TransferClient(path=None): a connection to the transfer mediator\n"
		  "($CLIP_TRANSFER_SOCKET, then TRANSFER_SOCKET, when path is None).",
	.tp_methods = Client_methods,
	.tp_new = Client_new,
};

static void
Transfer_dealloc(TransferObject *self)
{
	clip_transfer_unref(self->transfer);
	PyObject_Free(self);
}

static PyObject *
Transfer_fileno(TransferObject *self, PyObject *unused)
{
	return PyLong_FromLong(clip_transfer_get_fd(self->transfer));
}

static PyObject *
Transfer_dispatch(TransferObject *self, PyObject *unused)
{
	struct clip_error *err = NULL;
	int r = clip_transfer_dispatch(self->transfer, &err);
	if (r < 0)
		return raise_clip(r, err);
	return PyBool_FromLong(r);
}

static PyObject *
Transfer_wait(TransferObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *timeout = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:wait", kwlist, &timeout))
		return NULL;
	return transfer_wait(self, timeout);
}

static PyObject *
Transfer_result(TransferObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "check", NULL };
	int check = 1;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$p:result", kwlist, &check))
		return NULL;
	if (clip_transfer_get_status(self->transfer) == -EAGAIN)
		return raise_errno_message(TimeoutErr, -EAGAIN, "no answer from the mediator yet",
					   -1);
	return transfer_outcome(self->transfer, check);
}

static PyMethodDef Transfer_methods[] = {
	{ "fileno", (PyCFunction)Transfer_fileno, METH_NOARGS,
	  "fileno() -> int: readable when the answer is there." },
	{ "dispatch", (PyCFunction)Transfer_dispatch, METH_NOARGS,
	  "dispatch() -> bool: read the answer if it is there, without blocking." },
	{ "wait", KW(Transfer_wait), "wait(timeout=None): wait for the answer." },
	{ "result", KW(Transfer_result),
	  "result(*, check=True) -> TransferResult: the answer (with check, a denial or failure "
	  "raises)." },
	{ NULL }
};

static PyTypeObject TransferType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Transfer",
	.tp_basicsize = sizeof(TransferObject),
	.tp_dealloc = (destructor)Transfer_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A transfer in flight (TransferClient.request()).",
	.tp_methods = Transfer_methods,
};

/* ------------------------------------------------------------------------ */
/* Session */

typedef struct {
	PyObject_HEAD struct clip_session *session;
	PyObject *ctx;
	PyObject *on_event; /* a callable(event, cage, status), or NULL */
} SessionObject;

static PyTypeObject SessionType;

static void
session_event(struct clip_session *session, int event, const char *cage, int status, void *userdata)
{
	SessionObject *self = userdata;
	PyGILState_STATE gil = PyGILState_Ensure();
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	if (self->on_event) {
		PyObject *r = PyObject_CallFunction(self->on_event, "izi", event, cage, status);
		if (!r)
			PyErr_WriteUnraisable(self->on_event);
		Py_XDECREF(r);
	}
	PyErr_Restore(type, value, tb);
	PyGILState_Release(gil);
}

static PyObject *
session_wrap(PyTypeObject *type, struct clip_session *session, PyObject *ctx)
{
	SessionObject *o = (SessionObject *)type->tp_alloc(type, 0);
	if (!o) {
		clip_session_unref(session);
		return NULL;
	}
	o->session = session;
	o->ctx = Py_NewRef(ctx);
	clip_session_set_event_fn(session, session_event, o);
	return (PyObject *)o;
}

static PyObject *
Session_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "ctx", "name", NULL };
	PyObject *ctx;
	const char *name;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!s:Session", kwlist, &ContextType, &ctx,
					 &name))
		return NULL;
	struct clip_session *session = NULL;
	struct clip_error *err = NULL;
	int r = clip_session_new(&session, ((ContextObject *)ctx)->ctx, name, &err);
	if (r < 0)
		return raise_clip(r, err);
	return session_wrap(type, session, ctx);
}

static PyObject *
Session_parse(PyObject *cls, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "ctx", "text", "filename", "dir", NULL };
	PyObject *ctx, *dir = Py_None;
	const char *text, *filename = NULL;
	Py_ssize_t size;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!s#|zO:parse", kwlist, &ContextType, &ctx,
					 &text, &size, &filename, &dir))
		return NULL;
	struct file_arg d;
	if (file_open_or_none(&d, dir, O_RDONLY | O_DIRECTORY, AT_FDCWD) < 0)
		return NULL;
	struct clip_session *session = NULL;
	struct clip_error *err = NULL;
	int r = clip_session_parse(&session, ((ContextObject *)ctx)->ctx, d.fd, filename, text,
				   (size_t)size, &err);
	file_done(&d);
	if (r < 0)
		return raise_clip(r, err);
	return session_wrap((PyTypeObject *)cls, session, ctx);
}

static PyObject *
Session_load(PyObject *cls, PyObject *args)
{
	PyObject *ctx;
	struct path_arg path = { NULL };
	if (!PyArg_ParseTuple(args, "O!O&:load", &ContextType, &ctx, path_converter, &path))
		return NULL;
	struct clip_session *session = NULL;
	struct clip_error *err = NULL;
	int r = clip_session_load(&session, ((ContextObject *)ctx)->ctx, path_str(&path), &err);
	path_done(&path);
	if (r < 0)
		return raise_clip(r, err);
	return session_wrap((PyTypeObject *)cls, session, ctx);
}

static void
Session_dealloc(SessionObject *self)
{
	if (self->session) {
		/* The last reference of a running session stops it: without us. */
		clip_session_set_event_fn(self->session, NULL, NULL);
		WITHOUT_GIL(clip_session_unref(self->session));
	}
	Py_XDECREF(self->on_event);
	Py_XDECREF(self->ctx);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
session_open(SessionObject *self)
{
	return handle_check(self->session, StateError, -ECHILD, "the session object is closed");
}

static PyObject *
Session_close(SessionObject *self, PyObject *unused)
{
	if (self->session) {
		struct clip_session *s = self->session;
		self->session = NULL;
		WITHOUT_GIL(clip_session_unref(s));
	}
	Py_RETURN_NONE;
}

static PyObject *
Session_get_name(SessionObject *self, void *closure)
{
	if (session_open(self) < 0)
		return NULL;
	return PyUnicode_FromString(clip_session_get_name(self->session));
}

static PyObject *
Session_format(SessionObject *self, PyObject *unused)
{
	if (session_open(self) < 0)
		return NULL;
	char *s = NULL;
	int r = clip_session_format(self->session, &s);
	if (r == -EOPNOTSUPP)
		return raise_errno_message(UnsupportedError, r,
					   "a session with a profile built through the API has no "
					   "file form",
					   -1);
	return string_or_raise(r, s);
}

static PyObject *
Session_set_state_dir(SessionObject *self, PyObject *args)
{
	struct path_arg path = { NULL };
	if (!PyArg_ParseTuple(args, "O&:set_state_dir", path_converter, &path))
		return NULL;
	if (session_open(self) < 0) {
		path_done(&path);
		return NULL;
	}
	struct clip_error *err = NULL;
	int r = clip_session_set_state_dir(self->session, path_str(&path), &err);
	path_done(&path);
	return none_or_raise(r, err);
}

/*
 * The user secret of the levels' data: bytes-like objects are passed as
 * they are (the caller wipes them: a bytearray can be); a str is encoded
 * into a bytes object of our own, wiped before it is released. The
 * session keeps (and wipes) its own copy.
 */
static PyObject *
Session_set_secret(SessionObject *self, PyObject *arg)
{
	if (session_open(self) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r;
	if (arg == Py_None) {
		r = clip_session_set_secret(self->session, NULL, 0, &err);
		return none_or_raise(r, err);
	}
	if (PyUnicode_Check(arg)) {
		PyObject *b = PyUnicode_AsUTF8String(arg);
		if (!b)
			return NULL;
		r = clip_session_set_secret(self->session, PyBytes_AS_STRING(b),
					    (size_t)PyBytes_GET_SIZE(b), &err);
		/* Wiped when this call holds it alone: CPython shares the bytes objects
		   of one byte (b"a" everywhere in the interpreter), never to be wiped. */
		if (Py_REFCNT(b) == 1)
			explicit_bzero(PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
		Py_DECREF(b);
		return none_or_raise(r, err);
	}
	Py_buffer view;
	if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
		PyErr_Format(PyExc_TypeError,
			     "secret must be bytes-like, a str or None, not %.100s",
			     Py_TYPE(arg)->tp_name);
		return NULL;
	}
	r = clip_session_set_secret(self->session, view.buf, (size_t)view.len, &err);
	PyBuffer_Release(&view);
	return none_or_raise(r, err);
}

static PyObject *
Session_add_cage(SessionObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "name",    "level",           "profile", "data_dir",
				  "restart", "data_encryption", NULL };
	const char *name;
	PyObject *level, *profile = Py_None;
	struct path_arg data_dir = { NULL };
	int restart = CLIP_SESSION_RESTART_NO, data_encryption = CLIP_SESSION_DATA_FSCRYPT;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "sO|$OO&ii:add_cage", kwlist, &name, &level,
					 &profile, optional_path_converter, &data_dir, &restart,
					 &data_encryption))
		return NULL;
	if (level_check(level, "level") < 0 || session_open(self) < 0 ||
	    (profile != Py_None && !PyObject_TypeCheck(profile, &ProfileType) &&
	     !PyErr_Format(PyExc_TypeError, "profile must be a clip.Profile or None"))) {
		path_done(&data_dir);
		return NULL;
	}
	struct clip_session_cage c = {
		.size = sizeof(c),
		.name = name,
		.level = ((LevelObject *)level)->level,
		.profile = profile == Py_None ? NULL : ((ProfileObject *)profile)->profile,
		.data_dir = path_str(&data_dir),
		.restart = restart,
		.data_encryption = data_encryption,
	};
	struct clip_error *err = NULL;
	int r = clip_session_add_cage(self->session, &c, &err);
	path_done(&data_dir);
	return none_or_raise(r, err);
}

static PyObject *
Session_set_policy(SessionObject *self, PyObject *args)
{
	const char *text, *origin = NULL;
	Py_ssize_t size;
	if (!PyArg_ParseTuple(args, "s#|z:set_policy", &text, &size, &origin) ||
	    session_open(self) < 0)
		return NULL;
	struct clip_policy *policy = NULL;
	struct clip_error *err = NULL;
	int r = clip_policy_parse(&policy, text, (size_t)size, origin ? origin : "policy", &err);
	if (r < 0)
		return raise_clip(r, err);
	r = clip_session_set_policy(self->session, policy, &err);
	clip_policy_unref(policy);
	return none_or_raise(r, err);
}

static PyObject *
Session_check(SessionObject *self, PyObject *unused)
{
	if (session_open(self) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_session_check(self->session, &err);
	return none_or_raise(r, err);
}

static PyObject *
Session_start(SessionObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "external_sockets", NULL };
	int external = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$p:start", kwlist, &external) ||
	    session_open(self) < 0)
		return NULL;
	unsigned flags = external ? CLIP_SESSION_START_EXTERNAL_SOCKETS : 0;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_session_start(self->session, flags, &err));
	return none_or_raise(r, err);
}

static PyObject *
session_stop(SessionObject *self, unsigned grace_ms)
{
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_session_stop(self->session, grace_ms, &err));
	if (r == -ECHILD && !err)
		return raise_errno_message(StateError, r, "the session is not started", -1);
	return none_or_raise(r, err);
}

static PyObject *
Session_stop(SessionObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "grace_ms", NULL };
	unsigned grace = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|I:stop", kwlist, &grace) ||
	    session_open(self) < 0)
		return NULL;
	return session_stop(self, grace);
}

static PyObject *
Session_fileno(SessionObject *self, PyObject *unused)
{
	if (session_open(self) < 0)
		return NULL;
	int r = clip_session_get_fd(self->session);
	if (r < 0)
		return raise_errno_message(StateError, r, "the session is not started", -1);
	return PyLong_FromLong(r);
}

static PyObject *
Session_dispatch(SessionObject *self, PyObject *unused)
{
	if (session_open(self) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_session_dispatch(self->session, &err);
	if (r == -ECHILD && !err)
		return raise_errno_message(StateError, r, "the session is not started", -1);
	if (r < 0)
		return raise_clip(r, err);
	return PyBool_FromLong(r);
}

static PyObject *
Session_restart_cage(SessionObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "cage", "grace_ms", NULL };
	const char *cage;
	unsigned grace = 1000;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "s|I:restart_cage", kwlist, &cage, &grace) ||
	    session_open(self) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_session_restart_cage(self->session, cage, grace, &err));
	return none_or_raise(r, err);
}

static PyObject *
Session_get_cage(SessionObject *self, PyObject *args)
{
	const char *name;
	if (!PyArg_ParseTuple(args, "s:get_cage", &name) || session_open(self) < 0)
		return NULL;
	struct clip_cage *cage = clip_session_get_cage(self->session, name);
	if (!cage) {
		char buf[128];
		snprintf(buf, sizeof(buf), "no cage '%.64s' in a started session", name);
		return raise_errno_message(NotFoundError, -ENOENT, buf, -1);
	}
	PyObject *o = cage_wrap(clip_cage_ref(cage), self->ctx);
	if (o)
		((CageObject *)o)->of_session = true;
	return o;
}

static PyObject *
Session_spawn(SessionObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "cage", "argv", "env", "fds", "cwd", "uid", "gid", NULL };
	const char *name;
	PyObject *argv, *env = NULL, *fds = NULL;
	const char *cwd = NULL;
	unsigned uid = 0, gid = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "sO|$OOzII:spawn", kwlist, &name, &argv, &env,
					 &fds, &cwd, &uid, &gid) ||
	    session_open(self) < 0)
		return NULL;
	struct spawn_args a;
	if (spawn_args_parse(&a, argv, env, fds, cwd, uid, gid) < 0) {
		spawn_args_done(&a);
		return NULL;
	}
	int pidfd = -1, r;
	struct clip_error *err = NULL;
	WITHOUT_GIL(r = clip_session_spawn(self->session, name, &a.opts, &pidfd, &err));
	spawn_args_done(&a);
	if (r < 0)
		return raise_clip(r, err);
	return process_wrap(clip_session_get_cage(self->session, name), self->ctx, pidfd);
}

static PyObject *
status_dict(struct clip_session_status *st)
{
	unsigned pending = 0;
	int agent = 0;
	clip_session_status_get_mediator(st, &pending, &agent);
	PyObject *cages = PyDict_New();
	if (!cages)
		return NULL;
	for (size_t i = 0;; i++) {
		int state = 0;
		const char *level = NULL;
		unsigned pids = 0, missing = 0, restarts = 0;
		const char *name = clip_session_status_get_cage(st, i, &state, &level, &pids,
								&missing, &restarts);
		if (!name)
			break;
		PyObject *c =
			Py_BuildValue("{sisssIsIsI}", "state", state, "level", level ? level : "",
				      "pids", pids, "missing", missing, "restarts", restarts);
		if (!c || PyDict_SetItemString(cages, name, c) < 0) {
			Py_XDECREF(c);
			Py_DECREF(cages);
			return NULL;
		}
		Py_DECREF(c);
	}
	return Py_BuildValue("{sNsIsO}", "cages", cages, "pending", pending, "agent",
			     agent ? Py_True : Py_False);
}

static PyObject *
Session_status(SessionObject *self, PyObject *unused)
{
	if (session_open(self) < 0)
		return NULL;
	struct clip_session_status *st = NULL;
	struct clip_error *err = NULL;
	int r = clip_session_get_status(self->session, &st, &err);
	if (r < 0)
		return raise_clip(r, err);
	PyObject *d = status_dict(st);
	clip_session_status_free(st);
	return d;
}

static PyObject *
Session_attach_cage(PyObject *cls, PyObject *args)
{
	PyObject *ctx;
	const char *session, *name;
	if (!PyArg_ParseTuple(args, "O!ss:attach_cage", &ContextType, &ctx, &session, &name))
		return NULL;
	struct clip_cage *cage = NULL;
	struct clip_error *err = NULL;
	int r = clip_session_attach_cage(&cage, ((ContextObject *)ctx)->ctx, session, name, &err);
	if (r < 0)
		return raise_clip(r, err);
	return cage_wrap(cage, ctx);
}

static PyObject *
Session_control(PyObject *cls, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "ctx", "session", "request", "state_dir", NULL };
	PyObject *ctx;
	struct path_arg state_dir = { NULL };
	const char *session, *request;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!ss|O&:control", kwlist, &ContextType, &ctx,
					 &session, &request, optional_path_converter, &state_dir))
		return NULL;
	struct clip_session_status *st = NULL;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_session_control(((ContextObject *)ctx)->ctx, session,
					     path_str(&state_dir), request, &st, &err));
	path_done(&state_dir);
	if (r < 0)
		return raise_clip(r, err);
	if (!st)
		Py_RETURN_NONE;
	PyObject *d = status_dict(st);
	clip_session_status_free(st);
	return d;
}

/*
 * A session's client without a request of its own: 0 the trail (an fd),
 * 1 the public key (a str), the audit role's; 2 the session down (a bool).
 */
static PyObject *
session_client(PyObject *args, PyObject *kwds, int what)
{
	static const char *const formats[] = { "O!s|O&:get_trail", "O!s|O&:get_audit_key",
					       "O!s|O&:down" };
	static char *kwlist[] = { "ctx", "session", "state_dir", NULL };
	PyObject *ctx;
	struct path_arg state_dir = { NULL };
	const char *session;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, formats[what], kwlist, &ContextType, &ctx,
					 &session, optional_path_converter, &state_dir))
		return NULL;
	struct clip_ctx *c = ((ContextObject *)ctx)->ctx;
	struct clip_error *err = NULL;
	char *pem = NULL;
	int fd = -1, r;
	WITHOUT_GIL(
		r = what == 0 ? clip_session_get_trail(c, session, path_str(&state_dir), &fd, &err)
		    : what == 1 ? clip_session_get_audit_key(c, session, path_str(&state_dir), &pem,
							     &err)
				: clip_session_down(c, session, path_str(&state_dir), &err));
	path_done(&state_dir);
	if (r < 0)
		return raise_clip(r, err);
	return what == 0 ? PyLong_FromLong(fd) : what == 1 ? take_string(pem) : PyBool_FromLong(r);
}

static PyObject *
Session_get_trail(PyObject *cls, PyObject *args, PyObject *kwds)
{
	return session_client(args, kwds, 0);
}

static PyObject *
Session_get_audit_key(PyObject *cls, PyObject *args, PyObject *kwds)
{
	return session_client(args, kwds, 1);
}

static PyObject *
Session_down(PyObject *cls, PyObject *args, PyObject *kwds)
{
	return session_client(args, kwds, 2);
}

static PyObject *
Session_get_on_event(SessionObject *self, void *closure)
{
	return Py_NewRef(self->on_event ? self->on_event : Py_None);
}

static int
Session_set_on_event(SessionObject *self, PyObject *value, void *closure)
{
	if (value && value != Py_None && !PyCallable_Check(value)) {
		PyErr_SetString(PyExc_TypeError,
				"on_event must be a callable(event, cage, status)");
		return -1;
	}
	Py_XSETREF(self->on_event, value && value != Py_None ? Py_NewRef(value) : NULL);
	return 0;
}

static PyObject *
Session_exit(SessionObject *self, PyObject *args)
{
	if (self->session && clip_session_get_fd(self->session) >= 0) {
		PyObject *r = session_stop(self, 0);
		if (!r)
			return NULL;
		Py_DECREF(r);
	}
	return object_exit_close((PyObject *)self, args);
}

static PyMethodDef Session_methods[] = {
	{ "parse", KW(Session_parse) | METH_CLASS,
	  "parse(ctx, text, filename=None, dir=None) -> Session: a session in clip.session(5) "
	  "syntax; relative paths resolve against dir (a path or an fd)." },
	{ "load", (PyCFunction)Session_load, METH_VARARGS | METH_CLASS,
	  "load(ctx, path) -> Session: read and parse a session file." },
	{ "attach_cage", (PyCFunction)Session_attach_cage, METH_VARARGS | METH_CLASS,
	  "attach_cage(ctx, session, cage) -> Cage: a cage of a session another process runs." },
	{ "control", KW(Session_control) | METH_CLASS,
	  "control(ctx, session, request, state_dir=None) -> dict | None: ask a session's "
	  "runner (\"status\", \"stop\", \"restart CAGE\")." },
	{ "get_trail", KW(Session_get_trail) | METH_CLASS,
	  "get_trail(ctx, session, state_dir=None) -> int: a read-only, sealed copy of a running "
	  "session's signed trail, as the audit role reads it (the caller owns and closes the "
	  "fd); audit_verify_public() checks it." },
	{ "get_audit_key", KW(Session_get_audit_key) | METH_CLASS,
	  "get_audit_key(ctx, session, state_dir=None) -> str: the PEM public key that signs a "
	  "running session's trail." },
	{ "down", KW(Session_down) | METH_CLASS,
	  "down(ctx, session, state_dir=None) -> bool: take a session down whatever became of "
	  "its runner: False when the runner stopped it, True when none answered and what it "
	  "left (its cages, its levels' keys) was taken down." },
	{ "format", (PyCFunction)Session_format, METH_NOARGS,
	  "format() -> str: the session's file form." },
	{ "set_state_dir", (PyCFunction)Session_set_state_dir, METH_VARARGS,
	  "set_state_dir(path): where the wiring lives." },
	{ "add_cage", KW(Session_add_cage),
	  "add_cage(name, level, *, profile=None, data_dir=None, restart=SESSION_RESTART_NO, "
	  "data_encryption=SESSION_DATA_FSCRYPT)" },
	{ "set_secret", (PyCFunction)Session_set_secret, METH_O,
	  "set_secret(secret): the user secret (1 to 4096 bytes: bytes-like or str; None for "
	  "none) mixed into the keys of the levels' encrypted data; pass a bytearray and wipe "
	  "it after." },
	{ "set_policy", (PyCFunction)Session_set_policy, METH_VARARGS,
	  "set_policy(text, origin=None): the transfer policy, clip.policy(5)." },
	{ "check", (PyCFunction)Session_check, METH_NOARGS, "check(): check the whole wiring." },
	{ "start", KW(Session_start), "start(*, external_sockets=False)" },
	{ "stop", KW(Session_stop), "stop(grace_ms=0): stop everything (0: 5000 ms of grace)." },
	{ "fileno", (PyCFunction)Session_fileno, METH_NOARGS,
	  "fileno() -> int: readable when dispatch() has work (owned by the session)." },
	{ "dispatch", (PyCFunction)Session_dispatch, METH_NOARGS,
	  "dispatch() -> bool: handle one event; False when none was ready." },
	{ "restart_cage", KW(Session_restart_cage), "restart_cage(cage, grace_ms=1000)" },
	{ "get_cage", (PyCFunction)Session_get_cage, METH_VARARGS,
	  "get_cage(name) -> Cage: a cage of the started session." },
	{ "spawn", KW(Session_spawn),
	  "spawn(cage, argv, *, env=None, fds=None, cwd=None, uid=0, gid=0) -> Process" },
	{ "status", (PyCFunction)Session_status, METH_NOARGS,
	  "status() -> dict: each cage's state, level, pids, missing and restarts; the "
	  "mediator's pending questions and agent." },
	{ "close", (PyCFunction)Session_close, METH_NOARGS,
	  "close(): drop the handle (the last one of a running session stops it)." },
	{ "__enter__", object_enter, METH_NOARGS, NULL },
	{ "__exit__", (PyCFunction)Session_exit, METH_VARARGS, NULL },
	{ NULL }
};

static PyGetSetDef Session_getset[] = {
	{ "name", (getter)Session_get_name, NULL, "the session's name", NULL },
	{ "on_event", (getter)Session_get_on_event, (setter)Session_set_on_event,
	  "a callable(event, cage, status) told of SESSION_EVENT_*, or None", NULL },
	{ NULL }
};

static PyTypeObject SessionType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Session",
	.tp_basicsize = sizeof(SessionObject),
	.tp_dealloc = (destructor)Session_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Session(ctx, name): the cages of several levels, their wiring and the\n"
		  "mediator between them, brought up and down together (clip-session(3)).\n"
		  "`with` stops a started session at the end of the block.",
	.tp_methods = Session_methods,
	.tp_getset = Session_getset,
	.tp_new = Session_new,
};

/* ------------------------------------------------------------------------ */
/* Agent: the confirmation agent's side (clip/agent.h) */

typedef struct {
	PyObject_HEAD struct clip_agent *agent;
} AgentObject;

typedef struct {
	PyObject_HEAD struct clip_agent_question *question;
} QuestionObject;

static PyTypeObject AgentType;
static PyTypeObject QuestionType;

static PyObject *
Agent_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "path", NULL };
	struct path_arg path = { NULL };
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O&:Agent", kwlist, optional_path_converter,
					 &path))
		return NULL;
	struct clip_agent *agent = NULL;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_agent_connect(&agent, path_str(&path), NULL, &err));
	path_done(&path);
	if (r < 0)
		return raise_clip(r, err);
	AgentObject *o = (AgentObject *)type->tp_alloc(type, 0);
	if (!o) {
		clip_agent_unref(agent);
		return NULL;
	}
	o->agent = agent;
	return (PyObject *)o;
}

static void
Agent_dealloc(AgentObject *self)
{
	clip_agent_unref(self->agent);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
agent_open(AgentObject *self)
{
	return handle_check(self->agent, ConnectError, -ECONNRESET, "the agent is closed");
}

static PyObject *
Agent_fileno(AgentObject *self, PyObject *unused)
{
	if (agent_open(self) < 0)
		return NULL;
	return PyLong_FromLong(clip_agent_get_fd(self->agent));
}

static PyObject *
Agent_receive(AgentObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *timeout = Py_None;
	int ms;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:receive", kwlist, &timeout) ||
	    timeout_ms(timeout, &ms) < 0 || agent_open(self) < 0)
		return NULL;
	struct clip_agent_question *q = NULL;
	struct clip_error *err = NULL;
	int r;
	WITHOUT_GIL(r = clip_agent_receive(self->agent, ms, &q, &err));
	if (r < 0)
		return raise_clip(r, err);
	if (!q)
		return Py_BuildValue("(iO)", r, Py_None);
	QuestionObject *o = PyObject_New(QuestionObject, &QuestionType);
	if (!o) {
		clip_agent_question_unref(q);
		return NULL;
	}
	o->question = q;
	return Py_BuildValue("(iN)", r, (PyObject *)o);
}

static PyObject *
Agent_answer(AgentObject *self, PyObject *args)
{
	PyObject *q;
	int allow;
	if (!PyArg_ParseTuple(args, "O!p:answer", &QuestionType, &q, &allow) ||
	    agent_open(self) < 0)
		return NULL;
	struct clip_error *err = NULL;
	int r = clip_agent_answer(self->agent, ((QuestionObject *)q)->question, allow, &err);
	return none_or_raise(r, err);
}

static PyObject *
Agent_close(AgentObject *self, PyObject *unused)
{
	self->agent = clip_agent_unref(self->agent);
	Py_RETURN_NONE;
}

static PyMethodDef Agent_methods[] = {
	{ "fileno", (PyCFunction)Agent_fileno, METH_NOARGS,
	  "fileno() -> int: readable when receive() has something (owned by the "
	  "agent)." },
	{ "receive", KW(Agent_receive),
	  "receive(timeout=None) -> (int, Question | None): the next thing the "
	  "mediator says: "
	  "AGENT_NONE, AGENT_READY, AGENT_QUESTION, AGENT_EXPIRED or "
	  "AGENT_WITHDRAWN (timeout 0: "
	  "do not wait)." },
	{ "answer", (PyCFunction)Agent_answer, METH_VARARGS,
	  "answer(question, allow): deliver (True) or refuse (False) a pending "
	  "question." },
	{ "close", (PyCFunction)Agent_close, METH_NOARGS,
	  "close(): disconnect; the mediator denies what is still pending." },
	{ "__enter__", object_enter, METH_NOARGS, NULL },
	{ "__exit__", object_exit_close, METH_VARARGS, NULL },
	{ NULL }
};

static PyTypeObject AgentType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Agent",
	.tp_basicsize = sizeof(AgentObject),
	.tp_dealloc = (destructor)Agent_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Agent(path=None): a confirmation agent connected to the "
		  "mediator's agent\n"
		  "socket ($CLIP_AGENT_SOCKET, then AGENT_SOCKET), clip-agent(3).",
	.tp_methods = Agent_methods,
	.tp_new = Agent_new,
};

static void
Question_dealloc(QuestionObject *self)
{
	clip_agent_question_unref(self->question);
	PyObject_Free(self);
}

static PyObject *
Question_get(QuestionObject *self, void *closure)
{
	const struct clip_agent_question *q = self->question;
	const char *what = closure, *level = NULL, *s;
	if (!strcmp(what, "id"))
		return PyLong_FromUnsignedLongLong(clip_agent_question_get_id(q));
	if (!strcmp(what, "state"))
		return PyLong_FromLong(clip_agent_question_get_state(q));
	if (!strcmp(what, "direction"))
		return PyLong_FromLong(clip_agent_question_get_direction(q));
	if (!strcmp(what, "flags"))
		return PyLong_FromUnsignedLong(clip_agent_question_get_flags(q));
	if (!strcmp(what, "source") || !strcmp(what, "source_level")) {
		s = clip_agent_question_get_source(q, &level);
		return PyUnicode_FromString(what[6] ? level : s);
	}
	if (!strcmp(what, "target") || !strcmp(what, "target_level")) {
		s = clip_agent_question_get_target(q, &level);
		return PyUnicode_FromString(what[6] ? level : s);
	}
	if (!strcmp(what, "size") || !strcmp(what, "sha256")) {
		uint64_t size = 0;
		uint8_t sha[32] = { 0 };
		clip_agent_question_get_digest(q, &size, sha);
		return what[1] == 'i' ? PyLong_FromUnsignedLongLong(size)
				      : PyBytes_FromStringAndSize((const char *)sha, 32);
	}
	if (!strcmp(what, "name") || !strcmp(what, "note"))
		return PyUnicode_FromString(what[1] == 'a' ? clip_agent_question_get_name(q, 1)
							   : clip_agent_question_get_note(q, 1));
	if (!strcmp(what, "raw_name") || !strcmp(what, "raw_note")) {
		s = what[4] == 'n' && what[5] == 'a' ? clip_agent_question_get_name(q, 0)
						     : clip_agent_question_get_note(q, 0);
		return PyBytes_FromString(s);
	}
	uint32_t timeout = 0;
	uint64_t deadline = clip_agent_question_get_deadline(q, &timeout);
	if (!strcmp(what, "deadline"))
		return PyFloat_FromDouble((double)deadline / 1000.0);
	return PyLong_FromUnsignedLong(timeout);
}

#define QUESTION_FIELD(name, doc) \
	{ \
		name, (getter)Question_get, NULL, doc, (void *)name \
	}
static PyGetSetDef Question_getset[] = {
	QUESTION_FIELD("id", "the mediator's id, unique among the pending questions"),
	QUESTION_FIELD("state", "AGENT_PENDING, _ANSWERED, _TIMED_OUT or _GONE"),
	QUESTION_FIELD("source", "the sending cage (checked: shown as it is)"),
	QUESTION_FIELD("source_level", "its level"),
	QUESTION_FIELD("target", "the cage the document would go to"),
	QUESTION_FIELD("target_level", "its level"),
	QUESTION_FIELD("direction", "AGENT_UP, _DOWN, _SAME or _INCOMPARABLE"),
	QUESTION_FIELD("flags", "AGENT_ENCRYPTED, _NAME_ESCAPED, _NOTE_ESCAPED"),
	QUESTION_FIELD("size", "the document's size, as the mediator read it"),
	QUESTION_FIELD("sha256", "its SHA-256 (32 bytes)"),
	QUESTION_FIELD("name", "the name hint, escaped for display (one line)"),
	QUESTION_FIELD("note", "the requester's note, escaped for display"),
	QUESTION_FIELD("raw_name", "the name hint as the cage wrote it (untrusted bytes)"),
	QUESTION_FIELD("raw_note", "the note as the cage wrote it (untrusted bytes)"),
	QUESTION_FIELD("deadline", "when it is denied unless answered: time.monotonic() seconds"),
	QUESTION_FIELD("timeout_ms", "the timeout the mediator gave"),
	{ NULL }
};

static PyTypeObject QuestionType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Question",
	.tp_basicsize = sizeof(QuestionObject),
	.tp_dealloc = (destructor)Question_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A question of the mediator (Agent.receive()): everything the "
		  "prompt shows,\n"
		  "validated by the library, and the deadline.",
	.tp_getset = Question_getset,
};

/* ------------------------------------------------------------------------ */
/* Watch: a session's feed of what the user should see (clip-feed(3)) */

static PyTypeObject EventType;
static PyStructSequence_Field event_fields[] = {
	{ "type", "FEED_TRANSFER_ASKED, ..., FEED_CAGE_REFUSED" },
	{ "type_name", "\"transfer-asked\", \"cage-died\"..." },
	{ "seq", "the event's number in its feed: a gap says how many were dropped" },
	{ "time", "when it was pushed: seconds since the epoch" },
	{ "cage", "the cage it is about (a transfer's source), or None" },
	{ "target", "a transfer's target cage, or None" },
	{ "name", "a document's or file's name (may come from a cage: escape it), or None" },
	{ "text", "why or how (may come from a cage: escape it), or None" },
	{ NULL }
};
static PyStructSequence_Desc event_desc = { "clip.FeedEvent",
					    "An event of a feed: what the user should see.",
					    event_fields, 8 };

static PyObject *
opt_string(const char *s)
{
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

static PyObject *
event_wrap(struct clip_feed_event *e)
{
	PyObject *o = PyStructSequence_New(&EventType);
	if (o) {
		int type = clip_feed_event_get_type(e);
		const char *tn = clip_feed_event_type_name(type);
		PyStructSequence_SET_ITEM(o, 0, PyLong_FromLong(type));
		PyStructSequence_SET_ITEM(o, 1, opt_string(tn));
		PyStructSequence_SET_ITEM(o, 2,
					  PyLong_FromUnsignedLongLong(clip_feed_event_get_seq(e)));
		PyStructSequence_SET_ITEM(
			o, 3, PyFloat_FromDouble((double)clip_feed_event_get_time(e) / 1e6));
		PyStructSequence_SET_ITEM(o, 4, opt_string(clip_feed_event_get_cage(e)));
		PyStructSequence_SET_ITEM(o, 5, opt_string(clip_feed_event_get_target(e)));
		PyStructSequence_SET_ITEM(o, 6, opt_string(clip_feed_event_get_name(e)));
		PyStructSequence_SET_ITEM(o, 7, opt_string(clip_feed_event_get_text(e)));
		for (int i = 0; i < 8; i++)
			if (!PyStructSequence_GET_ITEM(o, i)) {
				Py_CLEAR(o);
				break;
			}
	}
	clip_feed_event_unref(e);
	return o;
}

static PyTypeObject WatchType;

static const char watch_closed[] = "the watch is closed";

static PyObject *
Watch_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "ctx", "session", "state_dir", NULL };
	PyObject *ctx;
	struct path_arg state_dir = { NULL };
	const char *session;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!s|O&:Watch", kwlist, &ContextType, &ctx,
					 &session, optional_path_converter, &state_dir))
		return NULL;
	int fd = -1, r;
	struct clip_error *err = NULL;
	WITHOUT_GIL(r = clip_session_watch(((ContextObject *)ctx)->ctx, session,
					   path_str(&state_dir), &fd, &err));
	path_done(&state_dir);
	if (r < 0)
		return raise_clip(r, err);
	return fd_object_new(type, fd);
}

static PyObject *
Watch_fileno(FdObject *self, PyObject *unused)
{
	return fd_object_fileno(self, watch_closed);
}

static PyObject *
Watch_read(FdObject *self, PyObject *unused)
{
	if (fd_object_check(self, watch_closed) < 0)
		return NULL;
	struct clip_feed_event *e = NULL;
	struct clip_error *err = NULL;
	int r = clip_session_watch_read(self->fd, &e, &err);
	if (r < 0)
		return raise_clip(r, err);
	if (r == 0)
		Py_RETURN_NONE;
	return event_wrap(e);
}

static PyMethodDef Watch_methods[] = {
	{ "fileno", (PyCFunction)Watch_fileno, METH_NOARGS,
	  "fileno() -> int: readable when read() has an event (owned by the watch)." },
	{ "read", (PyCFunction)Watch_read, METH_NOARGS,
	  "read() -> FeedEvent | None: the next event, without waiting." },
	{ "close", (PyCFunction)FdObject_close, METH_NOARGS, "close(): stop watching." },
	{ "__enter__", object_enter, METH_NOARGS, NULL },
	{ "__exit__", object_exit_close, METH_VARARGS, NULL },
	{ NULL }
};

static PyTypeObject WatchType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "clip.Watch",
	.tp_basicsize = sizeof(FdObject),
	.tp_dealloc = (destructor)FdObject_dealloc,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Watch(ctx, session, state_dir=None): follow what the user should see of a\n"
		  "running session (transfers asked, delivered, denied; cages started, stopped,\n"
		  "died) over its control socket, clip_session_watch().",
	.tp_methods = Watch_methods,
	.tp_new = Watch_new,
};

/* ------------------------------------------------------------------------ */
/* Module */

static PyObject *
mod_version(PyObject *self, PyObject *unused)
{
	return PyUnicode_FromString(clip_version());
}

/* A record of audit_verify_public() to its fn; a raised exception stops the walk. */
static int
audit_public_record(const char *record, void *userdata)
{
	PyObject *r = PyObject_CallFunction(userdata, "s", record);
	if (!r)
		return -ECANCELED;
	Py_DECREF(r);
	return 0;
}

static PyObject *
mod_audit_verify_public(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "file", "public_key", "fn", NULL };
	PyObject *file, *key, *fn = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "OU|O:audit_verify_public", kwlist, &file,
					 &key, &fn))
		return NULL;
	if (fn != Py_None && !PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "fn must be a callable(record) or None");
		return NULL;
	}
	const char *pem = text_arg(key, "public_key");
	if (!pem)
		return NULL;
	struct file_arg f;
	if (file_open(&f, file, O_RDONLY) < 0)
		return NULL;
	uint64_t count = 0;
	struct clip_error *err = NULL;
	/* With the GIL: the records go to fn as they are verified. */
	int r = clip_audit_verify_public(f.fd, pem, fn != Py_None ? audit_public_record : NULL,
					 fn != Py_None ? fn : NULL, &count, &err);
	file_done(&f);
	if (r < 0) {
		if (PyErr_Occurred()) {
			clip_error_free(err);
			return NULL;
		}
		return raise_clip(r, err);
	}
	return PyLong_FromUnsignedLongLong(count);
}

static PyObject *
mod_transfer_report(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "subject", "error", "text", "kind", "path", NULL };
	struct path_arg subject = { NULL }, path = { NULL };
	int error = 0, kind = CLIP_TRANSFER_REPORT_EXEC_REFUSED;
	const char *text = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|iz$iO&:transfer_report", kwlist,
					 path_converter, &subject, &error, &text, &kind,
					 optional_path_converter, &path))
		return NULL;
	struct clip_error *err = NULL;
	/* One way and never blocking (a full mediator is EAGAIN): the GIL is kept. */
	int r = clip_transfer_report(path_str(&path), kind, path_str(&subject), error, text, &err);
	path_done(&subject);
	path_done(&path);
	return none_or_raise(r, err);
}

static PyMethodDef module_methods[] = {
	{ "version", mod_version, METH_NOARGS, "version() -> str: the loaded libclip's version." },
	{ "audit_verify_public", KW(mod_audit_verify_public),
	  "audit_verify_public(file, public_key, fn=None) -> int: verify a trail stream "
	  "(AuditLog.export(), Session.get_trail()) with the PEM public key only; the record "
	  "count. fn, when given, is called with each record." },
	{ "transfer_report", KW(mod_transfer_report),
	  "transfer_report(subject, error=0, text=None, *, kind=TRANSFER_REPORT_EXEC_REFUSED, "
	  "path=None): tell the mediator (path, else $CLIP_TRANSFER_SOCKET, else "
	  "TRANSFER_SOCKET) that a file was refused as code; one way, never blocks." },
	{ NULL }
};

static struct PyModuleDef clip_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "clip",
	.m_doc = "libclip for Python: levels, labels, W^X checks, cages, transfers and audit.\n\n"
		 "Errors raise clip.Error (an OSError) subclasses chosen by errno; see\n"
		 "doc/bindings.md for the table.",
	.m_size = -1,
	.m_methods = module_methods,
};

static int
add_exception(PyObject *m, PyObject **slot, const char *name, PyObject *bases, const char *doc)
{
	char full[64];
	snprintf(full, sizeof(full), "clip.%s", name);
	*slot = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
	if (!*slot)
		return -1;
	return PyModule_AddObjectRef(m, name, *slot);
}

/* clip.@name into *@slot: a subclass of @base, and of @builtin unless NULL. */
static int
add_subclass(PyObject *m, PyObject **slot, const char *name, PyObject *base, PyObject *builtin,
	     const char *doc)
{
	PyObject *bases = builtin ? PyTuple_Pack(2, base, builtin) : PyTuple_Pack(1, base);
	if (!bases)
		return -1;
	int r = add_exception(m, slot, name, bases, doc);
	Py_DECREF(bases);
	return r;
}

/* A family of clip.Error, by errno (errno_class()). */
static int
add_family(PyObject *m, PyObject **slot, const char *name, PyObject *builtin, const char *doc)
{
	return add_subclass(m, slot, name, Error, builtin, doc);
}

static int
add_types(PyObject *m)
{
	struct {
		PyTypeObject *type;
		const char *name;
	} types[] = {
		{ &LevelType, "Level" },
		{ &RangeType, "Range" },
		{ &NamesType, "LevelNames" },
		{ &ContextType, "Context" },
		{ &AuditType, "AuditLog" },
		{ &ProfileType, "Profile" },
		{ &CageType, "Cage" },
		{ &ProcessType, "Process" },
		{ &ClientType, "TransferClient" },
		{ &TransferType, "Transfer" },
		{ &SessionType, "Session" },
		{ &AgentType, "Agent" },
		{ &QuestionType, "Question" },
		{ &WatchType, "Watch" },
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (PyType_Ready(types[i].type) < 0 ||
		    PyModule_AddObjectRef(m, types[i].name, (PyObject *)types[i].type) < 0)
			return -1;
	}
	if (PyStructSequence_InitType2(&ResultType, &result_desc) < 0 ||
	    PyModule_AddObjectRef(m, "TransferResult", (PyObject *)&ResultType) < 0 ||
	    PyStructSequence_InitType2(&EventType, &event_desc) < 0 ||
	    PyModule_AddObjectRef(m, "FeedEvent", (PyObject *)&EventType) < 0)
		return -1;
	return 0;
}

static int
add_constants(PyObject *m)
{
#define C(name, value) \
	if (PyModule_AddIntConstant(m, name, (long)(value)) < 0) \
		return -1;
	C("LEVEL_EQUAL", CLIP_LEVEL_EQUAL)
	C("LEVEL_DOMINATES", CLIP_LEVEL_DOMINATES)
	C("LEVEL_DOMINATED", CLIP_LEVEL_DOMINATED)
	C("LEVEL_INCOMPARABLE", CLIP_LEVEL_INCOMPARABLE)
	C("LEVEL_SENSITIVITY_MAX", CLIP_LEVEL_SENSITIVITY_MAX)
	C("LEVEL_CATEGORY_MAX", CLIP_LEVEL_CATEGORY_MAX)
	C("EXEC_RESTRICT_FILE", CLIP_EXEC_RESTRICT_FILE)
	C("EXEC_RESTRICT_FILE_LOCKED", CLIP_EXEC_RESTRICT_FILE_LOCKED)
	C("EXEC_DENY_INTERACTIVE", CLIP_EXEC_DENY_INTERACTIVE)
	C("EXEC_DENY_INTERACTIVE_LOCKED", CLIP_EXEC_DENY_INTERACTIVE_LOCKED)
	C("EXEC_SECUREBITS", CLIP_EXEC_SECUREBITS)
	C("EXEC_OPEN_MAGICLINKS", CLIP_EXEC_OPEN_MAGICLINKS)
	C("EXEC_CHECK_NATIVE", CLIP_EXEC_CHECK_NATIVE)
	C("EXEC_CHECK_DEGRADED", CLIP_EXEC_CHECK_DEGRADED)
	C("EXEC_TREE_CHECK", CLIP_EXEC_TREE_CHECK)
	C("EXEC_TREE_CROSS_MOUNTS", CLIP_EXEC_TREE_CROSS_MOUNTS)
	C("TRANSFER_DELIVERED", CLIP_TRANSFER_DELIVERED)
	C("TRANSFER_DENIED_POLICY", CLIP_TRANSFER_DENIED_POLICY)
	C("TRANSFER_DENIED_USER", CLIP_TRANSFER_DENIED_USER)
	C("TRANSFER_FAILED", CLIP_TRANSFER_FAILED)
	C("CAGE_MODE_AUTO", CLIP_CAGE_MODE_AUTO)
	C("CAGE_MODE_ROOT", CLIP_CAGE_MODE_ROOT)
	C("CAGE_MODE_ROOTLESS", CLIP_CAGE_MODE_ROOTLESS)
	C("CAGE_NET_NONE", CLIP_CAGE_NET_NONE)
	C("CAGE_NET_LOOPBACK", CLIP_CAGE_NET_LOOPBACK)
	C("CAGE_NET_VETH", CLIP_CAGE_NET_VETH)
	C("CAGE_NEW", CLIP_CAGE_NEW)
	C("CAGE_RUNNING", CLIP_CAGE_RUNNING)
	C("CAGE_STOPPED", CLIP_CAGE_STOPPED)
	C("CAGE_MISSING_MEMORY", CLIP_CAGE_MISSING_MEMORY)
	C("CAGE_MISSING_TASKS", CLIP_CAGE_MISSING_TASKS)
	C("CAGE_MISSING_CPU", CLIP_CAGE_MISSING_CPU)
	C("CAGE_MISSING_LANDLOCK", CLIP_CAGE_MISSING_LANDLOCK)
	C("CAGE_MISSING_CGROUP", CLIP_CAGE_MISSING_CGROUP)
	C("CAGE_IDENTITY_CORE", CLIP_CAGE_IDENTITY_CORE)
	C("CAGE_PORT_BIND", CLIP_CAGE_PORT_BIND)
	C("CAGE_PORT_CONNECT", CLIP_CAGE_PORT_CONNECT)
	C("CAGE_LANDLOCK_ABI_MAX", CLIP_CAGE_LANDLOCK_ABI_MAX)
	C("CAGE_MISSING_LANDLOCK_NET", CLIP_CAGE_MISSING_LANDLOCK_NET)
	C("CAGE_MISSING_LANDLOCK_IOCTL", CLIP_CAGE_MISSING_LANDLOCK_IOCTL)
	C("CAGE_MISSING_LANDLOCK_SCOPE", CLIP_CAGE_MISSING_LANDLOCK_SCOPE)
	C("CAGE_MISSING_LANDLOCK_LOG", CLIP_CAGE_MISSING_LANDLOCK_LOG)
	C("CAGE_MISSING_LSM", CLIP_CAGE_MISSING_LSM)
	C("CAGE_IDENTITY_NESTED", CLIP_CAGE_IDENTITY_NESTED)
	C("AUDIT_WARN_UNANCHORED", CLIP_AUDIT_WARN_UNANCHORED)
	C("AUDIT_WARN_TORN", CLIP_AUDIT_WARN_TORN)
	C("AUDIT_WARN_NOT_COUNTED", CLIP_AUDIT_WARN_NOT_COUNTED)
	C("AUDIT_WARN_COUNTER_LAGS", CLIP_AUDIT_WARN_COUNTER_LAGS)
	C("AGENT_NONE", CLIP_AGENT_NONE)
	C("AGENT_READY", CLIP_AGENT_READY)
	C("AGENT_QUESTION", CLIP_AGENT_QUESTION)
	C("AGENT_EXPIRED", CLIP_AGENT_EXPIRED)
	C("AGENT_WITHDRAWN", CLIP_AGENT_WITHDRAWN)
	C("AGENT_UP", CLIP_AGENT_UP)
	C("AGENT_DOWN", CLIP_AGENT_DOWN)
	C("AGENT_SAME", CLIP_AGENT_SAME)
	C("AGENT_INCOMPARABLE", CLIP_AGENT_INCOMPARABLE)
	C("AGENT_ENCRYPTED", CLIP_AGENT_ENCRYPTED)
	C("AGENT_NAME_ESCAPED", CLIP_AGENT_NAME_ESCAPED)
	C("AGENT_NOTE_ESCAPED", CLIP_AGENT_NOTE_ESCAPED)
	C("AGENT_PENDING", CLIP_AGENT_PENDING)
	C("AGENT_ANSWERED", CLIP_AGENT_ANSWERED)
	C("AGENT_TIMED_OUT", CLIP_AGENT_TIMED_OUT)
	C("AGENT_GONE", CLIP_AGENT_GONE)
	C("FEED_TRANSFER_ASKED", CLIP_FEED_TRANSFER_ASKED)
	C("FEED_TRANSFER_DELIVERED", CLIP_FEED_TRANSFER_DELIVERED)
	C("FEED_TRANSFER_DENIED", CLIP_FEED_TRANSFER_DENIED)
	C("FEED_CAGE_STARTED", CLIP_FEED_CAGE_STARTED)
	C("FEED_CAGE_STOPPED", CLIP_FEED_CAGE_STOPPED)
	C("FEED_CAGE_DIED", CLIP_FEED_CAGE_DIED)
	C("FEED_EXEC_REFUSED", CLIP_FEED_EXEC_REFUSED)
	C("FEED_CAGE_REFUSED", CLIP_FEED_CAGE_REFUSED)
	C("SESSION_RESTART_NO", CLIP_SESSION_RESTART_NO)
	C("SESSION_RESTART_ON_FAILURE", CLIP_SESSION_RESTART_ON_FAILURE)
	C("SESSION_RESTART_ALWAYS", CLIP_SESSION_RESTART_ALWAYS)
	C("SESSION_DATA_FSCRYPT", CLIP_SESSION_DATA_FSCRYPT)
	C("SESSION_DATA_NONE", CLIP_SESSION_DATA_NONE)
	C("SESSION_EVENT_CAGE_ENDED", CLIP_SESSION_EVENT_CAGE_ENDED)
	C("SESSION_EVENT_CAGE_RESTARTED", CLIP_SESSION_EVENT_CAGE_RESTARTED)
	C("SESSION_EVENT_CAGE_FAILED", CLIP_SESSION_EVENT_CAGE_FAILED)
	C("SESSION_EVENT_STOPPED", CLIP_SESSION_EVENT_STOPPED)
	C("TRANSFER_REPORT_EXEC_REFUSED", CLIP_TRANSFER_REPORT_EXEC_REFUSED)
#undef C
	if (PyModule_AddStringConstant(m, "TRANSFER_SOCKET", CLIP_TRANSFER_SOCKET) < 0 ||
	    PyModule_AddStringConstant(m, "AGENT_SOCKET", CLIP_AGENT_SOCKET) < 0 ||
	    PyModule_AddStringConstant(m, "LABEL_XATTR", CLIP_LABEL_XATTR) < 0 ||
	    PyModule_AddStringConstant(m, "LABEL_XATTR_ROOTLESS", CLIP_LABEL_XATTR_ROOTLESS) < 0 ||
	    PyModule_AddStringConstant(m, "LSM_PIN_DIR", CLIP_LSM_PIN_DIR) < 0)
		return -1;
	return 0;
}

PyMODINIT_FUNC PyInit_clip(void);
PyMODINIT_FUNC
PyInit_clip(void)
{
	PyObject *m = PyModule_Create(&clip_module);
	if (!m)
		return NULL;
	if (add_subclass(m, &Error, "Error", PyExc_OSError, NULL,
			 "A libclip error: an OSError with the errno and the library's "
			 "message (strerror), and offset (the byte of a parser error, or "
			 "None).") < 0 ||
	    add_family(m, &InvalidError, "InvalidError", PyExc_ValueError,
		       "EINVAL, E2BIG, ERANGE, ENAMETOOLONG, EILSEQ: a bad argument or input.") <
		    0 ||
	    add_family(m, &PermissionDenied, "PermissionDenied", PyExc_PermissionError,
		       "EPERM, EACCES, EROFS: refused.") < 0 ||
	    add_family(m, &NotFoundError, "NotFoundError", NULL,
		       "ENOENT, ENODATA, ESRCH: no such file, label, cage or process.") < 0 ||
	    add_family(m, &IntegrityError, "IntegrityError", NULL,
		       "EBADMSG: a label, audit log or envelope that does not verify.") < 0 ||
	    add_family(m, &NoKeyError, "NoKeyError", NULL, "ENOKEY: no key to verify with.") < 0 ||
	    add_family(m, &BusyError, "BusyError", NULL, "EBUSY, EEXIST, ETXTBSY: in use.") < 0 ||
	    add_family(m, &BadFileError, "BadFileError", NULL,
		       "EBADF, EMEDIUMTYPE, EISDIR, ENOTDIR, ELOOP: not the right kind of file.") <
		    0 ||
	    add_family(m, &UnsupportedError, "UnsupportedError", NULL,
		       "EOPNOTSUPP, ENOSYS, ENODEV: not supported here.") < 0 ||
	    add_family(m, &StateError, "StateError", NULL,
		       "ECHILD, EALREADY: not running, already waited for or answered, or a "
		       "context from before "
		       "fork().") < 0 ||
	    add_family(m, &ConnectError, "ConnectionError", PyExc_ConnectionError,
		       "ECONNREFUSED, ECONNRESET, EPIPE, EPROTO: the peer is not there, or speaks "
		       "nonsense.") < 0 ||
	    add_family(m, &TimeoutErr, "TimeoutError", PyExc_TimeoutError,
		       "ETIMEDOUT, EAGAIN: not done within the time.") < 0 ||
	    add_family(m, &ResourceError, "ResourceError", NULL,
		       "ENOMEM, ENOSPC, EDQUOT, EMFILE, ENFILE, EFBIG: out of a resource.") < 0 ||
	    add_subclass(m, &TransferDenied, "TransferDenied", PermissionDenied, NULL,
			 "A transfer denied by the policy or the user (errno EACCES); .status "
			 "and .result say which.") < 0 ||
	    add_subclass(m, &TransferFailed, "TransferFailed", Error, NULL,
			 "A transfer the mediator failed to deliver (errno: its reason); "
			 ".result.") < 0 ||
	    add_types(m) < 0 || add_constants(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
