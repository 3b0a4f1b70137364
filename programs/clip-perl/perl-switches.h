/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perl 5.36's own reading of its command line, PERL5OPT and the #! line,
 * redone without perl: where the program comes from (a script argument,
 * -e, standard input), whether the debugger starts, and where perl would
 * refuse the command line. It follows perl.c's parse_body() switch loop and
 * Perl_moreswitches(), toke.c's #! line and find_beginning() (-x) step by
 * step, so that clip-perl checks what perl then runs, not what it guessed.
 * tests/exec/perl-scan.sh compares it with /usr/bin/perl.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum perl_source {
	PERL_SOURCE_SCRIPT, /* argv[script] */
	PERL_SOURCE_STDIN, /* "-", "", or no argument left */
	PERL_SOURCE_CODE, /* -e, -E */
	PERL_SOURCE_NONE, /* -V without -e: perl prints its configuration */
	PERL_SOURCE_EXIT, /* -v, -h, -?, --version, --help: perl prints, exits */
};

struct perl_switches {
	enum perl_source source;
	int script; /* the index of the script argument (PERL_SOURCE_SCRIPT) */
	bool version; /* -v, --version */
	bool search; /* -S */
	bool extract; /* -x */
	bool tainting; /* -t, -T: perl ignores PERL5OPT */
	const char *debugger; /* where a -d starts the debugger, or NULL */
	const char *code_switch; /* -M, -m or -F that perl pastes into code, or NULL */
	/* perl refuses the command line here (or the scanner cannot tell): a
	 * bounded, printable copy of the switch, empty when all is understood. */
	char failure[96];
};

/* The switches of @argv (perl's argv, @argv[0] the program) and @perl5opt. */
void perl_scan_args(struct perl_switches *s, int argc, char *const *argv, const char *perl5opt);

/* The switches perl takes from the program's #! line, or with -x from the
 * first #!...perl line: @data is the program as perl will read it. */
void perl_scan_shebang(struct perl_switches *s, const char *data, size_t size);

/* The -S search of @name in PATH, as perl's find_script does (malloc'ed). */
char *perl_search_path(const char *name);

/* "script", "stdin", "e", "none", "exit": the source, for messages and tests. */
const char *perl_source_name(enum perl_source source);
