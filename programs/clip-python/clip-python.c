/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * clip-python: python3 (Debian's CPython 3.11, embedded) that runs only
 * code the system would execute, as the exec securebits say.
 *
 *  - every module, .pyc, .pth and zip archive the import system reads goes
 *    through io.open_code() (PEP 578), whose hook opens the file with
 *    libclip, checks it, reads it whole and hands Python the bytes; the
 *    one loader that does not use io.open_code() (sourceless .pyc) is made
 *    to;
 *  - the main script and PYTHONSTARTUP, which CPython opens by path
 *    without io.open_code(), are opened, checked and run by the launcher
 *    from the checked descriptor;
 *  - -c, and standard input unless it passes the check, are refused under
 *    SECBIT_EXEC_DENY_INTERACTIVE, before Python starts and again in an
 *    audit hook.
 *
 * See clip-python(1) and doc/exec.md, which also lists what is not covered.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <clip/clip.h>

#include "base/test-hooks.h"
#include "launcher.h"

/* Refusals at start-up exit like a shell that cannot execute a file. */
#define EXIT_REFUSED 126

/* How many of the names last given to open() audit_compile() remembers. */
#define OPENED_MAX 8

static struct {
	struct clip_ctx *ctx;
	const char *prog;
	char *startup; /* PYTHONSTARTUP, run by us before the first prompt */
	bool stdin_mode; /* no -c, -m or file: Python reads standard input */
	bool sourceless_patched;
	PyObject *bytesio;
	PyObject *checked_path, *checked_data; /* the last file read through open_code */
	PyObject *opened[OPENED_MAX]; /* the last names open() was given, as bytes */
	unsigned opened_next;
} L;

static void
refuse(const char *what, struct clip_error *error)
{
	fprintf(stderr, "%s: %s: refused: %s\n", L.prog, what, clip_error_get_message(error));
	launcher_report_refusal(what, -clip_error_get_errno(error), clip_error_get_message(error));
	clip_error_free(error);
}

static bool
is_refusal(int r)
{
	return r == -EACCES || r == -EPERM || r == -ETXTBSY;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* OSError(errno, message, path): PermissionError for a refusal, which is reported. */
static void
raise_os_error(int r, struct clip_error *error, PyObject *path, const char *path_bytes)
{
	bool refused = is_refusal(r);
	PyObject *args;

	if (refused)
		launcher_report_refusal(path_bytes, -r, clip_error_get_message(error));

	args = Py_BuildValue("(isO)", -r, refused ? clip_error_get_message(error) : strerror(-r),
			     path);
	if (args) {
		PyErr_SetObject(PyExc_OSError, args);
		Py_DECREF(args);
	}
	clip_error_free(error);
}

/* The content of a file that may run as code, as bytes; NULL with an exception. */
static PyObject *
load_code(PyObject *path)
{
	struct clip_error *error = NULL;
	PyObject *bytes = NULL, *ret = NULL;
	char *data = NULL;
	size_t size = 0;
	int fd, r;

	if (!PyUnicode_FSConverter(path, &bytes))
		return NULL;
	(void)launcher_ctx(&L.ctx);
	fd = clip_exec_open(L.ctx, AT_FDCWD, PyBytes_AS_STRING(bytes), 0, &error);
	/*
	 * site skips a .pth file it cannot open without a word, and with it
	 * the paths and imports the file adds: the refusal would only show
	 * as a missing module later. Said here, as site says a bad line.
	 */
	if (fd < 0 && is_refusal(fd) && ends_with(PyBytes_AS_STRING(bytes), ".pth"))
		fprintf(stderr, "%s: warning: .pth file skipped: %s\n", L.prog,
			clip_error_get_message(error));
	if (fd < 0) {
		raise_os_error(fd, error, path, PyBytes_AS_STRING(bytes));
		Py_DECREF(bytes);
		return NULL;
	}
	r = clip_exec_read_all(L.ctx, fd, 0, &data, &size, &error);
	close(fd);
	if (r < 0) {
		raise_os_error(r, error, path, PyBytes_AS_STRING(bytes));
		Py_DECREF(bytes);
		return NULL;
	}
	Py_DECREF(bytes);
	ret = PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
	free(data);
	return ret;
}

/*
 * The path and content of the last file read through io.open_code(): the
 * import system compiles it next (audit_compile() need not read it again).
 */
static void
remember_checked(PyObject *path, PyObject *bytes)
{
	Py_INCREF(path);
	Py_INCREF(bytes);
	Py_XSETREF(L.checked_path, path);
	Py_XSETREF(L.checked_data, bytes);
}

static PyObject *
open_code_hook(PyObject *path, void *userdata)
{
	PyObject *bytes, *ret;

	if (!L.bytesio) {
		PyObject *io = PyImport_ImportModule("_io");

		if (!io)
			return NULL;
		L.bytesio = PyObject_GetAttrString(io, "BytesIO");
		Py_DECREF(io);
		if (!L.bytesio)
			return NULL;
	}
	bytes = load_code(path);
	if (!bytes)
		return NULL;
	remember_checked(path, bytes);
	ret = PyObject_CallOneArg(L.bytesio, bytes);
	Py_DECREF(bytes);
	return ret;
}

/* SourcelessFileLoader.get_data(path), which CPython 3.11 reads with FileIO. */
static PyObject *
sourceless_get_data(PyObject *module, PyObject *path)
{
	return load_code(path);
}

static PyMethodDef sourceless_get_data_def = {
	"get_data",
	sourceless_get_data,
	METH_O,
	"Read a sourceless .pyc through the exec check (clip-python).",
};

static void
patch_sourceless_loader(void)
{
	PyObject *type, *value, *tb, *name, *mod = NULL, *cls = NULL, *fn = NULL;

	PyErr_Fetch(&type, &value, &tb);
	name = PyUnicode_FromString("_frozen_importlib_external");
	if (name)
		mod = PyImport_GetModule(name);
	Py_XDECREF(name);
	if (mod)
		cls = PyObject_GetAttrString(mod, "SourcelessFileLoader");
	if (cls)
		fn = PyCFunction_New(&sourceless_get_data_def, NULL);
	/* A builtin function does not bind: loader.get_data(path) calls fn(path). */
	if (fn && PyObject_SetAttrString(cls, "get_data", fn) == 0)
		L.sourceless_patched = true;
	Py_XDECREF(fn);
	Py_XDECREF(cls);
	Py_XDECREF(mod);
	PyErr_Clear();
	PyErr_Restore(type, value, tb);
}

static int
audit_refuse(const char *what, struct clip_error *error)
{
	PyErr_Format(PyExc_PermissionError, "%s: refused: %s", what, clip_error_get_message(error));
	launcher_report_refusal(what, -clip_error_get_errno(error), clip_error_get_message(error));
	clip_error_free(error);
	return -1;
}

static int
check_interactive(int fd, const char *what)
{
	struct clip_error *error = NULL;

	if (clip_exec_may_run_interactive(L.ctx, fd, what, 0, &error) < 0)
		return audit_refuse(what, error);
	return 0;
}

/*
 * Standard modules whose __main__ makes code of its arguments, of standard
 * input or of any file it is given: run as the main program (`-m`, the
 * file itself, runpy, `cProfile -m`, `pdb -m`, ...), each is -c, a prompt
 * or an unchecked file by another name. A name also covers its submodules
 * (asyncio.__main__, idlelib.pyshell). doc/exec.md says how the others
 * were shown not to (tests/exec/python-main-modules.txt).
 */
#define RF CLIP_EXEC_RESTRICT_FILE
#define DI CLIP_EXEC_DENY_INTERACTIVE
static const struct runner {
	const char *module;
	unsigned bits;
	const char *why;
} runners[] = {
	{ "timeit", DI, "it runs the statements given as its arguments, as -c does" },
	{ "code", DI, "it is an interactive prompt" },
	{ "asyncio", DI, "its __main__ is an interactive prompt" },
	{ "pdb", DI, "the debugger runs the commands it reads and its -c commands as code" },
	{ "idlelib", DI, "IDLE's shell is an interactive prompt" },
	{ "pickle", DI | RF,
	  "unpickling calls what the pickle names: a pickle from standard input or a file is "
	  "code" },
	{ "doctest", DI | RF, "it runs the examples of any text file as code" },
	{ "smtpd", DI, "its -c option calls a class or function named on the command line" },
	{ "imaplib", DI, "its -s option runs a shell command given as its argument" },
	{ "mailcap", DI | RF,
	  "it runs the shell command that a mailcap file (~/.mailcap) gives for a file" },
};
#undef RF
#undef DI

/* The runner that @module is or is in, when refused under @bits; else NULL. */
static const struct runner *
runner_refused(const char *module, unsigned bits)
{
	for (size_t i = 0; i < sizeof(runners) / sizeof(runners[0]); i++) {
		size_t n = strlen(runners[i].module);

		if (!(runners[i].bits & bits) || strncmp(module, runners[i].module, n) != 0 ||
		    (module[n] != '\0' && module[n] != '.'))
			continue;
		return &runners[i];
	}
	return NULL;
}

static const char *
runner_bit_name(const struct runner *r, unsigned bits)
{
	return (r->bits & bits & CLIP_EXEC_DENY_INTERACTIVE) ? "SECBIT_EXEC_DENY_INTERACTIVE"
							     : "SECBIT_EXEC_RESTRICT_FILE";
}

/*
 * The module that @path is in the standard library @stdlib (its source,
 * or its .pyc in __pycache__), written to @buf; false when @path is not
 * in it.
 */
static bool
stdlib_module_of(const char *stdlib, const char *path, char *buf, size_t size)
{
	size_t n = strlen(stdlib), j = 0;
	const char *p, *base;

	if (!*stdlib || strncmp(path, stdlib, n) != 0 || path[n] != '/')
		return false;
	p = path + n + 1;
	base = strrchr(p, '/');
	base = base ? base + 1 : p;
	for (; *p && j + 1 < size; p++) {
		if (strncmp(p, "__pycache__/", 12) == 0 && (p == path + n + 1 || p[-1] == '/')) {
			p += 11;
			continue;
		}
		if (p >= base && *p == '.')
			break;
		buf[j++] = *p == '/' ? '.' : *p;
	}
	buf[j] = '\0';
	if (j > 9 && strcmp(buf + j - 9, ".__init__") == 0)
		buf[j - 9] = '\0';
	return j > 0;
}

/* Before Python starts: `-m MODULE`, refused when it is one of runners[]. -1 to go on. */
static int
check_runner_start(const PyConfig *config)
{
	const struct runner *r;
	unsigned bits = 0;
	char *module;

	if (!config->run_module || test_hook_disabled("python-runners") ||
	    clip_exec_get_securebits(L.ctx, &bits) < 0)
		return -1;
	module = Py_EncodeLocale(config->run_module, NULL);
	r = module ? runner_refused(module, bits) : NULL;
	if (r) {
		fprintf(stderr, "%s: -m %s: refused: %s (%s)\n", L.prog, module, r->why,
			runner_bit_name(r, bits));
		launcher_report_refusal(module, EACCES, r->why);
	}
	PyMem_Free(module);
	return r ? EXIT_REFUSED : -1;
}

/* Whether the running Python frame is the import system executing a module. */
static bool
exec_by_import(void)
{
	PyFrameObject *frame = PyEval_GetFrame();
	PyCodeObject *code;
	const char *name, *file;
	bool r;

	if (!frame)
		return false;
	code = PyFrame_GetCode(frame);
	name = PyUnicode_AsUTF8(code->co_name);
	file = PyUnicode_AsUTF8(code->co_filename);
	r = name && file && strcmp(name, "_call_with_frames_removed") == 0 &&
	    (strcmp(file, "<frozen importlib._bootstrap>") == 0 ||
	     ends_with(file, "/importlib/_bootstrap.py"));
	Py_DECREF(code);
	PyErr_Clear();
	return r;
}

/*
 * The "exec" audit event: the module code of one of runners[] run other
 * than by an import, i.e. as a program, however it got there: runpy
 * (`-m runpy`, `cProfile -m`, `profile -m`, a package directory),
 * `trace --module`, the file itself or its .pyc as the main script.
 */
static int
audit_exec(PyObject *args)
{
	PyObject *code = PyTuple_Size(args) >= 1 ? PyTuple_GET_ITEM(args, 0) : NULL;
	PyObject *stdlib;
	const struct runner *r = NULL;
	const char *fn, *lib;
	char module[256];
	unsigned bits = 0;

	if (!code || !PyCode_Check(code) ||
	    PyUnicode_CompareWithASCIIString(((PyCodeObject *)code)->co_name, "<module>") != 0)
		return 0;
	stdlib = PySys_GetObject("_stdlib_dir");
	fn = PyUnicode_AsUTF8(((PyCodeObject *)code)->co_filename);
	lib = stdlib && PyUnicode_Check(stdlib) ? PyUnicode_AsUTF8(stdlib) : NULL;
	if (!fn || !lib || !stdlib_module_of(lib, fn, module, sizeof(module))) {
		PyErr_Clear();
		return 0;
	}
	if (test_hook_disabled("python-runners") || clip_exec_get_securebits(L.ctx, &bits) < 0 ||
	    !(r = runner_refused(module, bits)) || exec_by_import())
		return 0;
	PyErr_Format(PyExc_PermissionError, "%s run as a program: refused: %s (%s)", module, r->why,
		     runner_bit_name(r, bits));
	launcher_report_refusal(module, EACCES, r->why);
	return -1;
}

/* A path argument (str, bytes or path-like) as the bytes the kernel sees; NULL if none. */
static PyObject *
path_bytes(PyObject *path)
{
	PyObject *fs = PyOS_FSPath(path), *b = NULL;

	if (fs && PyUnicode_Check(fs))
		b = PyUnicode_EncodeFSDefault(fs);
	else if (fs && PyBytes_Check(fs))
		b = Py_NewRef(fs);
	Py_XDECREF(fs);
	if (!b)
		PyErr_Clear();
	return b;
}

/* The "open" audit event: the name a runner reads its script by, kept for audit_compile(). */
static void
remember_opened(PyObject *args)
{
	PyObject *b;

	if (PyTuple_Size(args) < 1 || PyLong_Check(PyTuple_GET_ITEM(args, 0)))
		return;
	b = path_bytes(PyTuple_GET_ITEM(args, 0));
	if (!b)
		return;
	Py_XSETREF(L.opened[L.opened_next], b);
	L.opened_next = (L.opened_next + 1) % OPENED_MAX;
}

static bool
was_opened(const char *path)
{
	for (unsigned i = 0; i < OPENED_MAX; i++)
		if (L.opened[i] && strcmp(PyBytes_AS_STRING(L.opened[i]), path) == 0)
			return true;
	return false;
}

static int
compile_refuse(const char *path, const char *why)
{
	PyErr_Format(PyExc_PermissionError, "compiling the content of %s as code: refused: %s",
		     path, why);
	launcher_report_refusal(path, EACCES, why);
	return -1;
}

/*
 * The "compile" audit event (source as bytes, file name): text compiled
 * under the name of a file is code from that file. cProfile, profile,
 * trace, pdb, dis and others read the file themselves with open(), not
 * io.open_code(), so the check is made here:
 *  - under DENY_INTERACTIVE, the name of a pipe, terminal, socket or
 *    device (/dev/stdin) is interactive input, refused;
 *  - under RESTRICT_FILE, the text must be the content of a file that
 *    passes the check: the file just read through io.open_code() (the
 *    import system, runpy), a member of the archive just read (zipimport),
 *    or the named file, opened, checked and read again here. The content
 *    is compared, so a file swapped after the runner read it does not pass.
 *    A name that is no file (a loader's made-up "blah.py", zipimport's
 *    "???") says the text comes from none, as angle brackets do, unless
 *    open() was just given that name: a runner's script renamed away
 *    between its read and its compile.
 * A name in angle brackets ("<string>", "<doctest ...>") names no file:
 * text the program built, as exec() and eval() of a string.
 */
static int
audit_compile(PyObject *args)
{
	PyObject *source, *filename, *fs = NULL;
	struct clip_error *error = NULL;
	const char *path;
	char *data = NULL;
	size_t size = 0;
	unsigned bits = 0;
	struct stat st;
	int fd, r = 0;

	if (PyTuple_Size(args) < 2)
		return 0;
	source = PyTuple_GET_ITEM(args, 0);
	filename = PyTuple_GET_ITEM(args, 1);
	/* An AST (compile() of a tree) carries no file name here. */
	if (!PyBytes_Check(source))
		return 0;
	if (PyUnicode_Check(filename)) {
		fs = PyUnicode_EncodeFSDefault(filename);
		if (!fs) {
			PyErr_Clear();
			return 0;
		}
	} else if (PyBytes_Check(filename)) {
		fs = Py_NewRef(filename);
	} else {
		return 0;
	}
	path = PyBytes_AS_STRING(fs);
	if (!*path || *path == '<' || test_hook_disabled("python-compile-check") ||
	    clip_exec_get_securebits(L.ctx, &bits) < 0)
		goto out;
	if ((bits & CLIP_EXEC_DENY_INTERACTIVE) && stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
	    !S_ISDIR(st.st_mode)) {
		r = compile_refuse(path, "it is a pipe, terminal, socket or device: interactive "
					 "input, denied (SECBIT_EXEC_DENY_INTERACTIVE)");
		goto out;
	}
	if (!(bits & CLIP_EXEC_RESTRICT_FILE))
		goto out;
	if (L.checked_data && PyBytes_GET_SIZE(L.checked_data) == PyBytes_GET_SIZE(source) &&
	    memcmp(PyBytes_AS_STRING(L.checked_data), PyBytes_AS_STRING(source),
		   (size_t)PyBytes_GET_SIZE(source)) == 0)
		goto out;
	if (L.checked_path && PyUnicode_Check(filename) &&
	    PyUnicode_Tailmatch(filename, L.checked_path, 0, PY_SSIZE_T_MAX, -1) == 1 &&
	    PyUnicode_GetLength(filename) > PyUnicode_GetLength(L.checked_path) &&
	    PyUnicode_ReadChar(filename, PyUnicode_GetLength(L.checked_path)) == '/')
		goto out; /* zipimport: a member of the archive it just read */
	PyErr_Clear();
	fd = clip_exec_open(L.ctx, AT_FDCWD, path, CLIP_EXEC_OPEN_MAGICLINKS, &error);
	if (fd >= 0) {
		r = clip_exec_read_all(L.ctx, fd, 0, &data, &size, &error);
		close(fd);
	} else {
		r = fd;
	}
	if ((r == -ENOENT || r == -ENOTDIR) && !was_opened(path)) {
		clip_error_free(error);
		r = 0;
	} else if (r < 0) {
		PyErr_Format(PyExc_PermissionError,
			     "compiling the content of %s as code: refused: %s", path,
			     clip_error_get_message(error));
		launcher_report_refusal(path, -r, clip_error_get_message(error));
		clip_error_free(error);
		r = -1;
	} else if (size != (size_t)PyBytes_GET_SIZE(source) ||
		   memcmp(data, PyBytes_AS_STRING(source), size) != 0) {
		r = compile_refuse(path,
				   "the text is not that file's content as it passes the exec "
				   "check (SECBIT_EXEC_RESTRICT_FILE)");
	}
	free(data);
out:
	Py_XDECREF(fs);
	return r;
}

static bool is_pyc(int fd, const char *filename);
static int run_pyc(int fd, const char *filename);
static int run_source(int fd, const char *filename, bool skip_first_line);

/* PYTHONSTARTUP, opened and checked here, run in __main__ as CPython would. */
static void
run_startup(void)
{
	struct clip_error *error = NULL;
	char *startup = L.startup;
	PyCompilerFlags cf = _PyCompilerFlags_INIT;
	FILE *fp;
	int fd;

	L.startup = NULL;
	fd = clip_exec_open(L.ctx, AT_FDCWD, startup, CLIP_EXEC_OPEN_MAGICLINKS, &error);
	if (fd < 0) {
		refuse("PYTHONSTARTUP", error);
	} else if (!test_hook_disabled("python-startup-fd")) {
		/*
		 * From the checked descriptor, as the main script: given a name
		 * in .pyc, PyRun_SimpleFileExFlags() would close it and open
		 * the name again.
		 */
		if (is_pyc(fd, startup))
			(void)run_pyc(fd, startup), close(fd);
		else
			(void)run_source(fd, startup, false);
		PyErr_Clear();
	} else if (!(fp = fdopen(fd, "rb"))) {
		close(fd);
	} else {
		(void)PyRun_SimpleFileExFlags(fp, startup, 0, &cf);
		PyErr_Clear();
		fclose(fp);
	}
	/* Hidden from CPython so that it does not open it by path; visible again. */
	setenv("PYTHONSTARTUP", startup, 1);
	free(startup);
}

static int
is_env_key(PyObject *key, const char *name)
{
	if (PyUnicode_Check(key))
		return PyUnicode_CompareWithASCIIString(key, name) == 0;
	return PyBytes_Check(key) && strcmp(PyBytes_AS_STRING(key), name) == 0;
}

static int
audit_hook(const char *event, PyObject *args, void *userdata)
{
	unsigned bits = 0;

	/* After fork(), the child's own context (launcher_ctx()). */
	(void)launcher_ctx(&L.ctx);
	if (event[0] == 'i' && !L.sourceless_patched && strcmp(event, "import") == 0) {
		patch_sourceless_loader();
		return 0;
	}
	if (event[0] == 'o' && strcmp(event, "os.putenv") == 0) {
		/* PYTHONINSPECT set at run time would open a prompt at exit. */
		if (PyTuple_Size(args) >= 1 &&
		    is_env_key(PyTuple_GET_ITEM(args, 0), "PYTHONINSPECT") &&
		    clip_exec_get_securebits(L.ctx, &bits) == 0 &&
		    (bits & CLIP_EXEC_DENY_INTERACTIVE)) {
			PyErr_SetString(PyExc_PermissionError,
					"PYTHONINSPECT: refused: an interactive prompt is denied "
					"(SECBIT_EXEC_DENY_INTERACTIVE)");
			return -1;
		}
		return 0;
	}
	if (event[0] == 'o' && strcmp(event, "open") == 0) {
		remember_opened(args);
		return 0;
	}
	if (event[0] == 'c' && strcmp(event, "compile") == 0)
		return audit_compile(args);
	if (event[0] == 'e' && strcmp(event, "exec") == 0)
		return audit_exec(args);
	if (strncmp(event, "cpython.run_", 12) != 0)
		return 0;
	event += 12;
	if (strcmp(event, "command") == 0)
		return check_interactive(-1, "-c");
	if (strcmp(event, "stdin") == 0) {
		if (check_interactive(STDIN_FILENO, "standard input") < 0)
			return -1;
		if (L.startup && L.stdin_mode && isatty(STDIN_FILENO))
			run_startup();
		return 0;
	}
	if (strcmp(event, "interactivehook") == 0) {
		if (check_interactive(STDIN_FILENO, "interactive prompt") < 0)
			return -1;
		if (L.startup && L.stdin_mode)
			run_startup();
		return 0;
	}
	if (strcmp(event, "file") == 0 || strcmp(event, "startup") == 0) {
		PyErr_Format(PyExc_PermissionError,
			     "clip-python runs main scripts itself: refusing cpython.run_%s",
			     event);
		return -1;
	}
	return 0;
}

/* As zipimport finds an archive: the end of central directory record. */
static bool
is_zip(int fd)
{
	unsigned char buf[65536 + 22];
	struct stat st;
	off_t off;
	ssize_t n;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 22)
		return false;
	off = st.st_size > (off_t)sizeof(buf) ? st.st_size - (off_t)sizeof(buf) : 0;
	n = pread(fd, buf, sizeof(buf), off);
	for (ssize_t i = n - 22; i >= 0; i--)
		if (memcmp(buf + i, "PK\005\006", 4) == 0)
			return true;
	return false;
}

static bool
is_pyc(int fd, const char *filename)
{
	long magic = PyImport_GetMagicNumber();
	unsigned char half[2];
	size_t len = strlen(filename);

	if (len > 4 && strcmp(filename + len - 4, ".pyc") == 0)
		return true;
	return pread(fd, half, 2, 0) == 2 && half[0] == (magic & 0xff) &&
	       half[1] == ((magic >> 8) & 0xff);
}

/* sys.path[0] as CPython computes it for a script: the directory of its real path. */
static int
insert_path0(const char *filename)
{
	char *real = realpath(filename, NULL);
	const char *p = real ? real : filename, *slash = strrchr(p, '/');
	Py_ssize_t n = 0;
	PyObject *path0, *syspath = PySys_GetObject("path");
	int r = -1;

	if (slash) {
		n = slash - p + 1;
		if (n > 1)
			n--;
	}
	path0 = PyUnicode_DecodeFSDefaultAndSize(p, n);
	if (path0 && syspath)
		r = PyList_Insert(syspath, 0, path0);
	Py_XDECREF(path0);
	free(real);
	return r;
}

/*
 * __main__.__loader__ for a .pyc run as the main script, as CPython's
 * set_main_loader() (Python/pythonrun.c): SourcelessFileLoader('__main__',
 * filename). __spec__ stays None, as for any script.
 */
static int
set_main_loader(PyObject *d, PyObject *filename)
{
	PyObject *name, *mod = NULL, *type = NULL, *loader = NULL;
	int r = -1;

	name = PyUnicode_FromString("_frozen_importlib_external");
	if (name)
		mod = PyImport_GetModule(name);
	if (mod)
		type = PyObject_GetAttrString(mod, "SourcelessFileLoader");
	if (type)
		loader = PyObject_CallFunction(type, "sO", "__main__", filename);
	if (loader)
		r = PyDict_SetItemString(d, "__loader__", loader);
	else if (!PyErr_Occurred())
		PyErr_SetString(PyExc_RuntimeError, "no _frozen_importlib_external");
	Py_XDECREF(loader);
	Py_XDECREF(type);
	Py_XDECREF(mod);
	Py_XDECREF(name);
	return r;
}

static int
run_pyc(int fd, const char *filename)
{
	struct clip_error *error = NULL;
	PyObject *m, *d, *code = NULL, *name = NULL, *v = NULL;
	long magic = PyImport_GetMagicNumber();
	char *data = NULL;
	size_t size = 0;
	int r;

	r = clip_exec_read_all(L.ctx, fd, 0, &data, &size, &error);
	if (r < 0) {
		refuse(filename, error);
		return -1;
	}
	m = PyImport_AddModule("__main__");
	d = m ? PyModule_GetDict(m) : NULL;
	name = PyUnicode_DecodeFSDefault(filename);
	if (!d || !name || PyDict_SetItemString(d, "__file__", name) < 0 ||
	    PyDict_SetItemString(d, "__cached__", Py_None) < 0 || set_main_loader(d, name) < 0)
		goto out;
	if (size < 16 || (unsigned char)data[0] != (magic & 0xff) ||
	    (unsigned char)data[1] != ((magic >> 8) & 0xff) ||
	    (unsigned char)data[2] != ((magic >> 16) & 0xff) ||
	    (unsigned char)data[3] != ((magic >> 24) & 0xff)) {
		PyErr_SetString(PyExc_RuntimeError, "Bad magic number in .pyc file");
		goto out;
	}
	code = PyMarshal_ReadObjectFromString(data + 16, (Py_ssize_t)(size - 16));
	if (code && !PyCode_Check(code)) {
		PyErr_SetString(PyExc_RuntimeError, "Bad code object in .pyc file");
		goto out;
	}
	/* As CPython's run_mod() for a source: the "exec" audit event. */
	if (code && PySys_Audit("exec", "O", code) == 0)
		v = PyEval_EvalCode(code, d, d);
out:
	if (!v)
		PyErr_Print();
	if (d) {
		PyDict_DelItemString(d, "__file__");
		PyDict_DelItemString(d, "__cached__");
		PyErr_Clear();
	}
	Py_XDECREF(v);
	Py_XDECREF(code);
	Py_XDECREF(name);
	free(data);
	return v ? 0 : -1;
}

static int
run_source(int fd, const char *filename, bool skip_first_line)
{
	PyCompilerFlags cf = _PyCompilerFlags_INIT;
	FILE *fp = fdopen(fd, "rb");
	int r, ch;

	if (!fp) {
		fprintf(stderr, "%s: can't read file '%s': %s\n", L.prog, filename,
			strerror(errno));
		close(fd);
		return -1;
	}
	if (skip_first_line) {
		/* -x: the newline is pushed back so that line numbers stay right. */
		while ((ch = getc(fp)) != EOF)
			if (ch == '\n') {
				(void)ungetc(ch, fp);
				break;
			}
	}
	r = PyRun_SimpleFileExFlags(fp, filename, 0, &cf);
	fclose(fp);
	return r;
}

/* -i, or PYTHONINSPECT: a prompt after the script, as CPython's pymain_repl(). */
static void
repl(const PyConfig *config, int *exitcode)
{
	PyCompilerFlags cf = _PyCompilerFlags_INIT;
	struct clip_error *error = NULL;
	const char *env = config->use_environment ? getenv("PYTHONINSPECT") : NULL;
	PyObject *hook;
	PyConfig *running;

	if (!config->inspect && !(env && *env))
		return;
	if (!isatty(STDIN_FILENO) && !config->interactive)
		return;
	if (clip_exec_may_run_interactive(L.ctx, STDIN_FILENO, "interactive prompt", 0, &error) <
	    0) {
		refuse("interactive prompt", error);
		*exitcode = EXIT_REFUSED;
		return;
	}
	/* At the prompt, SystemExit exits again (CPython's pymain_set_inspect(0)). */
	running = (PyConfig *)_PyInterpreterState_GetConfig(PyInterpreterState_Get());
	running->inspect = 0;
	hook = PySys_GetObject("__interactivehook__");
	if (hook) {
		PyObject *res = NULL;

		Py_INCREF(hook);
		if (PySys_Audit("cpython.run_interactivehook", "O", hook) == 0)
			res = PyObject_CallNoArgs(hook);
		Py_DECREF(hook);
		if (!res) {
			PySys_WriteStderr("Failed calling sys.__interactivehook__\n");
			PyErr_Print();
			*exitcode = 1;
			return;
		}
		Py_DECREF(res);
	}
	*exitcode = PyRun_AnyFileFlags(stdin, "<stdin>", &cf) != 0;
}

static int
run_main_file(const PyConfig *config, int fd, const char *filename)
{
	PyObject *last;
	bool interrupted;
	int exitcode, r;

	if (config->inspect && isatty(STDIN_FILENO) && !config->isolated) {
		/* CPython imports readline before the script's directory is on sys.path. */
		PyObject *m = PyImport_ImportModule("readline");

		Py_XDECREF(m);
		m = m ? PyImport_ImportModule("rlcompleter") : NULL;
		Py_XDECREF(m);
		PyErr_Clear();
	}
	if (!config->safe_path && insert_path0(filename) < 0) {
		PyErr_Print();
		Py_FinalizeEx();
		return 1;
	}
	if (Py_MakePendingCalls() < 0)
		r = -1, PyErr_Print();
	else if (is_pyc(fd, filename))
		r = run_pyc(fd, filename), close(fd);
	else
		r = run_source(fd, filename, config->skip_source_first_line);
	exitcode = r != 0;
	last = PySys_GetObject("last_type");
	interrupted = r != 0 && last == PyExc_KeyboardInterrupt;
	repl(config, &exitcode);
	if (Py_FinalizeEx() < 0)
		exitcode = 120;
	if (interrupted) {
		/* As CPython: die of the SIGINT, so that the caller sees it. */
		signal(SIGINT, SIG_DFL);
		kill(getpid(), SIGINT);
		exitcode = 128 + SIGINT;
	}
	return exitcode;
}

/* Open and check the main script; -1 to let CPython run it (directory, zip). */
static int
open_main(const char *filename, int *exitcode)
{
	struct clip_error *error = NULL;
	int fd;

	fd = clip_exec_open(L.ctx, AT_FDCWD, filename, CLIP_EXEC_OPEN_MAGICLINKS, &error);
	if (fd == -EISDIR) {
		/* Its __main__.py is imported, so read through io.open_code(). */
		clip_error_free(error);
		return -1;
	}
	if (fd == -EACCES || fd == -EPERM || fd == -ETXTBSY) {
		fprintf(stderr, "%s: can't run file '%s': %s\n", L.prog, filename,
			clip_error_get_message(error));
		launcher_report_refusal(filename, -fd, clip_error_get_message(error));
		clip_error_free(error);
		*exitcode = EXIT_REFUSED;
		return -2;
	}
	if (fd < 0) {
		fprintf(stderr, "%s: can't open file '%s': [Errno %d] %s\n", L.prog, filename, -fd,
			strerror(-fd));
		clip_error_free(error);
		*exitcode = 2;
		return -2;
	}
	if (is_zip(fd)) {
		/* zipimport reads the archive, and each module in it, through io.open_code(). */
		close(fd);
		return -1;
	}
	return fd;
}

/* Before Python runs: the bytes of the path, as CPython encodes it to open it. */
static char *
filename_of(const PyConfig *config)
{
	char *b = Py_EncodeLocale(config->run_filename, NULL), *s;

	if (!b)
		return NULL;
	s = strdup(b);
	PyMem_Free(b);
	return s;
}

/* The checks made before Python starts; -1 to go on, else the exit code. */
static int
check_start(const PyConfig *config, char **ret_filename, int *ret_fd)
{
	struct clip_error *error = NULL;
	int exitcode = 0;

	if (config->run_command) {
		if (clip_exec_may_run_interactive(L.ctx, -1, "-c", 0, &error) < 0) {
			refuse("-c", error);
			return EXIT_REFUSED;
		}
	} else if (!config->run_module && !config->run_filename) {
		L.stdin_mode = true;
		if (clip_exec_may_run_interactive(L.ctx, STDIN_FILENO, "standard input", 0,
						  &error) < 0) {
			refuse("standard input", error);
			return EXIT_REFUSED;
		}
	}
	if (config->inspect && !L.stdin_mode &&
	    clip_exec_may_run_interactive(L.ctx, STDIN_FILENO, "-i (interactive prompt)", 0,
					  &error) < 0) {
		refuse("-i", error);
		return EXIT_REFUSED;
	}
	if (config->run_filename && !config->run_command && !config->run_module) {
		*ret_filename = filename_of(config);
		if (!*ret_filename)
			return 1;
		*ret_fd = open_main(*ret_filename, &exitcode);
		if (*ret_fd == -2)
			return exitcode;
	}
	return check_runner_start(config);
}

/*
 * Whether python's options ask for its version (-V, -VV, --version): they
 * come before the script, -c or -m; -W and -X take an argument.
 */
static bool
version_asked(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || a[1] == '\0' || strcmp(a, "--") == 0)
			return false;
		if (strcmp(a, "--version") == 0)
			return true;
		if (a[1] == '-')
			continue;
		for (const char *p = a + 1; *p; p++) {
			if (*p == 'V')
				return true;
			if (*p == 'c' || *p == 'm')
				return false;
			if (*p == 'W' || *p == 'X') {
				i += p[1] == '\0';
				break;
			}
		}
	}
	return false;
}

static int
setup_ctx(void)
{
	return launcher_ctx_new("clip-python", &L.ctx);
}

int
main(int argc, char **argv)
{
	PyConfig config;
	PyStatus status;
	char *filename = NULL;
	unsigned bits = 0;
	int fd = -1, r;

	L.prog = argv[0] && argv[0][0] ? argv[0] : "clip-python";
	if (setup_ctx() < 0) {
		fprintf(stderr, "clip-python: cannot create a libclip context\n");
		return 1;
	}
	PyConfig_InitPythonConfig(&config);
	status = PyConfig_SetBytesArgv(&config, argc, argv);
	if (!PyStatus_Exception(status))
		status = PyConfig_Read(&config);
	if (PyStatus_Exception(status))
		goto fail;

	r = check_start(&config, &filename, &fd);
	if (r >= 0) {
		PyConfig_Clear(&config);
		clip_ctx_unref(L.ctx);
		return r;
	}
	if (config.use_environment && L.stdin_mode) {
		const char *s = getenv("PYTHONSTARTUP");

		if (s && *s) {
			L.startup = strdup(s);
			unsetenv("PYTHONSTARTUP");
		}
	}
	/* The cache would be refused when read: it is written 0644, never executable. */
	if (clip_exec_get_securebits(L.ctx, &bits) == 0 && (bits & CLIP_EXEC_RESTRICT_FILE))
		config.write_bytecode = 0;

	if (PyFile_SetOpenCodeHook(open_code_hook, NULL) < 0 ||
	    PySys_AddAuditHook(audit_hook, NULL) < 0) {
		fprintf(stderr, "clip-python: cannot install the hooks\n");
		return 1;
	}
	status = Py_InitializeFromConfig(&config);
	if (PyStatus_Exception(status))
		goto fail;
	if (fd >= 0) {
		r = run_main_file(&config, fd, filename);
		free(filename);
		PyConfig_Clear(&config);
		clip_ctx_unref(L.ctx);
		return r;
	}
	free(filename);
	PyConfig_Clear(&config);
	return Py_RunMain();

fail:
	PyConfig_Clear(&config);
	/* After python's version, the library's: what runs the checks. */
	if (PyStatus_IsExit(status) && status.exitcode == 0 && version_asked(argc, argv))
		printf("clip-python (libclip) %s\n", clip_version());
	if (PyStatus_IsExit(status))
		return status.exitcode;
	Py_ExitStatusException(status);
}
