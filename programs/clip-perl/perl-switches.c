/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perl 5.36's switch parsing, without perl: see perl-switches.h. Each
 * function names the part of perl it follows (perl.c, toke.c, util.c of
 * v5.36.0); comments quote perl's behaviour where it is surprising.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/test-hooks.h"
#include "perl-switches.h"

enum origin {
	FROM_ARGV, /* parse_body()'s loop, moreswitches() for what it passes on */
	FROM_PERL5OPT, /* one moreswitches() call per word */
	FROM_SHEBANG, /* toke.c: the #! line, "too late" for -M, -m */
	FROM_EXTRACT, /* find_beginning(): the #!perl line found by -x */
};

/* perl's isSPACE, isDIGIT, isWORDCHAR: ASCII only, whatever the locale. */
static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool
is_octal(char c)
{
	return c >= '0' && c <= '7';
}

static bool
is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool
is_wordchar(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* perl would croak here: remember where (the first time), printable. */
static const char *
fail(struct perl_switches *s, const char *p)
{
	size_t n = 0;

	if (s->failure[0])
		return NULL;
	s->failure[n++] = '-';
	for (; *p && n + 5 < sizeof(s->failure); p++) {
		unsigned char c = (unsigned char)*p;

		if (c >= 0x20 && c < 0x7f && c != '\\')
			s->failure[n++] = (char)c;
		else
			n += (size_t)snprintf(s->failure + n, sizeof(s->failure) - n, "\\x%02x", c);
	}
	s->failure[n] = '\0';
	return NULL;
}

/* -MModule, -MModule=args, -MModule VERSION: not code (perl.c, 'M'). */
static bool
module_rest_is_code(const char *p)
{
	if (*p == '\0' || *p == '=')
		return false;
	if (*p != ' ')
		return true;
	for (p++; *p; p++)
		if (!is_digit(*p) && *p != '.' && *p != '_' && *p != 'v')
			return true;
	return false;
}

/* parse_unicode_opts() (util.c): the end of -C's value, or NULL to croak. */
static const char *
unicode_opts(const char *p)
{
	unsigned long v = 0;

	if (!*p)
		return p;
	if (is_digit(*p)) {
		/* grok_atoUV: no leading zero but "0" itself, no overflow. */
		if (*p == '0' && is_digit(p[1]))
			return NULL;
		for (; is_digit(*p); p++) {
			v = v * 10 + (unsigned long)(*p - '0');
			if (v > 0xffffffffUL)
				return NULL;
		}
		if (*p && *p != '\n' && *p != '\r' && !is_space(*p))
			return NULL;
		return v & ~0x1ffUL ? NULL : p;
	}
	for (; *p; p++) {
		if (strchr("IOESioDLAa", *p))
			continue;
		if (*p == '\n' || *p == '\r')
			continue;
		if (is_space(*p))
			break;
		return NULL;
	}
	return p;
}

/*
 * Perl_moreswitches() for the switch at @p: where perl goes on (NULL: the
 * word ends, or perl croaks and s->failure says so).
 */
static const char *
more(struct perl_switches *s, const char *p, enum origin o)
{
	const char *q;

	switch (*p) {
	case '0':
		if (p[1] == 'x' && p[2]) {
			/* -0xHEX, all of the rest; else -0 then -x with a directory. */
			q = p + 2;
			if (*q == 'x' || *q == 'X')
				q++;
			else if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
				q += 2;
			while (is_xdigit(*q))
				q++;
			return *q ? p + 1 : q;
		}
		for (q = p; q < p + 4 && is_octal(*q); q++)
			;
		return q;
	case 'C':
		q = unicode_opts(p + 1);
		return q ? q : fail(s, p);
	case 'F':
		/* The pattern runs to a space; split(PATTERN) as code if delimited. */
		q = ++p;
		while (*p && !is_space(*p))
			p++;
		if ((*q == '/' || *q == '\'' || *q == '"') &&
		    memchr(q + 1, *q, (size_t)(p - q - 1)))
			s->code_switch = "-F";
		return p;
	case 'a':
	case 'c':
	case 'g':
	case 'n':
	case 'p':
	case 's':
	case 'u':
	case 'U':
	case 'w':
	case 'W':
	case 'X':
		return p + 1;
	case 'd':
		q = p + 1 + (p[1] == 't');
		/* Test hook: only a whole "-d" or "-dt" word of the command line. */
		if (!test_hook_disabled("perl-debugger") || (o != FROM_SHEBANG && *q == '\0'))
			s->debugger = o == FROM_ARGV       ? "-d"
				      : o == FROM_PERL5OPT ? "-d in PERL5OPT"
							   : "-d on the script's #! line";
		p++;
		if (*p == 't' && !is_wordchar(p[1]))
			p++;
		/* -d:Mod and -d=Mod take the rest, spaces included, as "use Devel::..." */
		if (*p == ':' || *p == '=')
			p += strlen(p);
		return p;
	case 'D':
		/* Debian's perl is built without -DDEBUGGING: a warning. */
		for (p++; is_wordchar(*p); p++)
			;
		return p;
	case '?':
	case 'h':
	case 'v':
		if (o == FROM_ARGV) {
			s->source = PERL_SOURCE_EXIT;
			s->version = *p == 'v';
		}
		/* perl prints and exits: nothing that follows is read. */
		return NULL;
	case 'i':
		for (p++; *p && !is_space(*p); p++)
			;
		return p;
	case 'I':
		/* parse_body() has its own -I: only PERL5OPT and #! get here. */
		for (p++; *p && is_space(*p); p++)
			;
		if (!*p)
			return fail(s, "I");
		q = p;
		do {
			for (; *q && !is_space(*q); q++)
				;
			while (is_space(*q))
				q++;
		} while (*q && *q != '-');
		return *q == '-' ? q + 1 : q;
	case 'l':
		p++;
		if (is_digit(*p)) {
			const char *end = p + 3 + (*p == '0');

			for (; p < end && is_octal(*p); p++)
				;
		}
		return p;
	case 'M':
	case 'm':
		if (o == FROM_SHEBANG)
			return fail(s, p); /* Too late for "-M" */
		q = p + 1;
		if (!*q)
			return fail(s, p);
		if (*q == '-')
			q++;
		{
			const char *start = q;

			while (is_wordchar(*q) || *q == ':') {
				if (*q++ == ':') {
					if (*q == ':')
						q++;
					else
						return fail(s, p); /* a single ':' */
				}
			}
			if (q == start)
				return fail(s, p);
		}
		if (*p == 'm' && *q && *q != '=')
			return fail(s, p); /* Can't use '%c' after -mname */
		if (module_rest_is_code(q))
			s->code_switch = *p == 'M' ? "-M" : "-m";
		return q + strlen(q);
	case 't':
	case 'T':
		if (!s->tainting)
			return fail(s, p); /* too late for -T */
		return p + 1;
	case ' ':
		while (*p == ' ')
			p++;
		return *p == '-' ? p + 1 : NULL;
	case '*':
	case '-':
	case '\0':
	case '\r':
	case '\n':
	case '\t':
		return NULL;
	default:
		/* e f x E S V: "Can't emulate -%c on #! line"; others unknown. */
		return fail(s, p);
	}
}

/* perl.c, parse_body(): the switches of argv; the index where they end. */
static int
scan_argv(struct perl_switches *s, int argc, char *const *argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *p;
		char c;

		if (a[0] != '-' || a[1] == '\0')
			break;
		p = a + 1;
		while (p) {
			switch (*p) {
			case 'C':
			case '\r':
			case ' ':
			case '0':
			case 'F':
			case 'a':
			case 'c':
			case 'd':
			case 'D':
			case 'g':
			case '?':
			case 'h':
			case 'i':
			case 'l':
			case 'M':
			case 'm':
			case 'n':
			case 'p':
			case 's':
			case 'u':
			case 'U':
			case 'v':
			case 'W':
			case 'X':
			case 'w':
				c = *p;
				p = more(s, p, FROM_ARGV);
				if (s->failure[0] || s->source == PERL_SOURCE_EXIT)
					return i;
				/* Test hook: the word ends after -i and -F, as it once did here. */
				if ((c == 'i' || c == 'F') &&
				    test_hook_disabled("perl-switch-scan"))
					p = NULL;
				break;
			case 't':
			case 'T':
				s->tainting = true;
				p++;
				break;
			case 'E':
			case 'e':
				s->source = PERL_SOURCE_CODE;
				if (!p[1] && ++i >= argc) {
					fail(s, p);
					return i;
				}
				p = NULL;
				break;
			case 'f':
				p++;
				break;
			case 'I':
				if (!p[1] && ++i < argc)
					p = argv[i];
				else
					p++;
				if (i >= argc || !*p) {
					fail(s, "I");
					return i;
				}
				p = NULL;
				break;
			case 'S':
				s->search = true;
				p++;
				break;
			case 'V':
				if (s->source != PERL_SOURCE_CODE)
					s->source = PERL_SOURCE_NONE;
				p = p[1] == ':' ? p + strlen(p) : p + 1;
				if (test_hook_disabled("perl-switch-scan"))
					p = NULL;
				break;
			case 'x':
				s->extract = true;
				p = NULL;
				break;
			case '\0':
				p = NULL;
				break;
			case '-':
				/* "--", and "-- " or "--\t...": the end of the switches. */
				if (p[1] && test_hook_disabled("perl-switch-scan")) {
					s->source = PERL_SOURCE_EXIT; /* as "--help" */
					return i;
				}
				if (!p[1] || is_space(p[1]))
					return i + 1;
				if (strcmp(p + 1, "version") == 0 || strcmp(p + 1, "help") == 0) {
					s->source = PERL_SOURCE_EXIT;
					s->version = p[1] == 'v';
				} else
					fail(s, p);
				return i;
			default:
				fail(s, p);
				return i;
			}
		}
	}
	return i;
}

/* parse_body(), after switch_end: PERL5OPT, unless tainting. */
static void
scan_perl5opt(struct perl_switches *s, const char *opt)
{
	char *copy, *p;

	while (is_space(*opt))
		opt++;
	if (opt[0] == '-' && opt[1] == 'T') {
		s->tainting = true; /* and the rest is not read */
		return;
	}
	copy = strdup(opt);
	if (!copy) {
		fail(s, "(PERL5OPT: out of memory)");
		return;
	}
	for (p = copy; *p && !s->failure[0];) {
		char *d;

		while (is_space(*p))
			p++;
		if (*p == '-') {
			p++;
			if (is_space(*p))
				continue;
		}
		d = p;
		if (!*p)
			break;
		if (!strchr("CDIMUdmtwW", *p)) {
			fail(s, p);
			break;
		}
		while (*p && !is_space(*p))
			p++;
		if (*p)
			*p++ = '\0';
		/* One switch per word: "-dw" is -d, the w is not read. */
		if (*d == 't')
			s->tainting = true;
		else
			(void)more(s, d, FROM_PERL5OPT);
	}
	free(copy);
}

void
perl_scan_args(struct perl_switches *s, int argc, char *const *argv, const char *perl5opt)
{
	int i;

	*s = (struct perl_switches){ .source = PERL_SOURCE_SCRIPT, .script = argc };
	i = scan_argv(s, argc, argv);
	if (s->failure[0] || s->source == PERL_SOURCE_EXIT)
		return;
	if (perl5opt && !s->tainting)
		scan_perl5opt(s, perl5opt);
	/* -x reads the /dev/null of -e and -V: "No Perl script found in input". */
	if (s->extract && (s->source == PERL_SOURCE_CODE || s->source == PERL_SOURCE_NONE))
		fail(s, "x (with -e or -V: no #!perl line in /dev/null)");
	if (s->source != PERL_SOURCE_SCRIPT)
		return;
	/*
	 * open_script(): no argument, "-" and "" are standard input; but -S
	 * looks even "-" up in PATH (no argument: a file named "-").
	 */
	if (s->search && i >= argc)
		fail(s, "S (no script: perl looks for a file named '-' in PATH)");
	else if (s->search)
		s->script = i;
	else if (i >= argc || strcmp(argv[i], "-") == 0 || argv[i][0] == '\0')
		s->source = PERL_SOURCE_STDIN;
	else
		s->script = i;
}

static const char *
find_in(const char *p, const char *end, const char *what)
{
	size_t n = strlen(what);

	for (; p + n <= end; p++)
		if (memcmp(p, what, n) == 0)
			return p;
	return NULL;
}

/* The switches after "-" of a #! line, up to its end; the line, a copy. */
static void
shebang_switches(struct perl_switches *s, const char *from, const char *end, enum origin o)
{
	size_t n = (size_t)(end - from);
	/* Not strndup: @from is not a string (its buffer may end right there). */
	char *line = malloc(n + 1);
	const char *p = line;

	if (!line) {
		fail(s, "(#! line: out of memory)");
		return;
	}
	memcpy(line, from, n);
	line[n] = '\0';
	while ((p = more(s, p, o)))
		;
	free(line);
}

void
perl_scan_shebang(struct perl_switches *s, const char *data, size_t size)
{
	const char *end = data + size, *p = data, *nl, *d;

	if (s->extract) {
		/* find_beginning(): the first line starting "#!" with perl or PERL. */
		for (;; p = nl + 1) {
			if (p >= end) {
				fail(s, "x (no #!perl line in the script)");
				return;
			}
			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl)
				nl = end;
			if (nl - p >= 2 && p[0] == '#' && p[1] == '!' &&
			    ((d = find_in(p, nl, "perl")) || (d = find_in(p, nl, "PERL"))))
				break;
		}
		const char *s2;

		while (d < nl && !is_space(*d) && *d != '#')
			d++;
		s2 = d;
		while (d < nl && (*d == ' ' || *d == '\t'))
			d++;
		if (d >= nl || *d++ != '-')
			return;
		while (s2 > p &&
		       (is_digit(s2[-1]) || s2[-1] == '-' || s2[-1] == '.' || s2[-1] == '_'))
			s2--;
		if (s2 - p >= 4 && memcmp(s2 - 4, "perl", 4) == 0)
			shebang_switches(s, d, nl, FROM_EXTRACT);
		return;
	}
	/* toke.c, line 1: after a UTF-8 byte order mark, spaces and a ':'. */
	if (size >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	nl = memchr(p, '\n', (size_t)(end - p));
	nl = nl ? nl + 1 : end;
	while (p < nl && is_space(*p))
		p++;
	if (p < nl && *p == ':' && (p + 1 >= nl || p[1] != ':'))
		p++;
	if (nl - p < 2 || p[0] != '#' || p[1] != '!')
		return;
	d = find_in(p, nl, "perl -");
	if (!d)
		d = find_in(p, nl, "perl");
	/* No "perl": perl hands the script to that interpreter (execv). */
	if (!d)
		return;
	while (d < nl && !is_space(*d))
		d++;
	while (d < nl && (*d == ' ' || *d == '\t'))
		d++;
	if (d < nl && *d++ == '-')
		shebang_switches(s, d, nl, FROM_SHEBANG);
}

char *
perl_search_path(const char *name)
{
	const char *path = getenv("PATH");
	struct stat st;

	/* util.c, find_script(): a name with a '/', or no PATH, as it is. */
	if (strchr(name, '/') || !path)
		return strdup(name);
	while (*path) {
		size_t n = strcspn(path, ":");
		char *cand = NULL;

		if (asprintf(&cand, "%.*s%s%s", (int)n, path, n ? "/" : "", name) < 0)
			return NULL;
		/* The first regular file that the caller may read and execute. */
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
		    faccessat(AT_FDCWD, cand, R_OK | X_OK, AT_EACCESS) == 0)
			return cand;
		free(cand);
		path += n;
		if (*path == ':')
			path++;
	}
	return NULL;
}

const char *
perl_source_name(enum perl_source source)
{
	switch (source) {
	case PERL_SOURCE_SCRIPT:
		return "script";
	case PERL_SOURCE_STDIN:
		return "stdin";
	case PERL_SOURCE_CODE:
		return "e";
	case PERL_SOURCE_NONE:
		return "none";
	case PERL_SOURCE_EXIT:
		return "exit";
	}
	return "?";
}
