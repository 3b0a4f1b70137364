/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perl-scan ARGS...: clip-perl's verdict on a perl command line (ARGS as
 * perl's argv after the program name, PERL5OPT from the environment), in
 * the words tests/exec/perl-scan.sh derives from /usr/bin/perl's output:
 * the program's source ("script", "e", "stdin", "none" for -V, "exit" for
 * -v and -h), then " debugger" when the debugger starts; or "error" when
 * perl refuses the command line. The script (found in PATH with -S) or
 * standard input is read for its #! line, as clip-perl reads it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perl-switches.h"

static char *
slurp(FILE *f, size_t *size)
{
	char *data = NULL;
	size_t cap = 0, n;

	*size = 0;
	do {
		char *grown;

		cap += 65536;
		grown = realloc(data, cap);
		if (!grown) {
			free(data);
			return NULL;
		}
		data = grown;
		n = fread(data + *size, 1, cap - *size, f);
		*size += n;
	} while (*size == cap);
	return data;
}

int
main(int argc, char **argv)
{
	struct perl_switches s;
	FILE *f = NULL;
	char *name = NULL, *data;
	size_t size;

	perl_scan_args(&s, argc, argv, getenv("PERL5OPT"));
	if (!s.failure[0] && s.source == PERL_SOURCE_SCRIPT) {
		name = s.search ? perl_search_path(argv[s.script]) : strdup(argv[s.script]);
		f = name ? fopen(name, "r") : NULL;
		if (!f) {
			printf("error\n");
			free(name);
			return 0;
		}
	} else if (!s.failure[0] && s.source == PERL_SOURCE_STDIN)
		f = stdin;
	if (f) {
		data = slurp(f, &size);
		if (data)
			perl_scan_shebang(&s, data, size);
		free(data);
		if (f != stdin)
			fclose(f);
	}
	free(name);
	if (s.failure[0])
		printf("error\n");
	else if (s.source == PERL_SOURCE_EXIT || !s.debugger)
		printf("%s\n", perl_source_name(s.source));
	else
		printf("%s debugger\n", perl_source_name(s.source));
	return 0;
}
