#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clip-perl's switch scanner against perl itself: for each row of
# perl-scan.txt, /usr/bin/perl runs the command line with every candidate
# source made visible (the script, -e and standard input each print their
# name from a BEGIN block, the debugger prints "debugger"), and perl-scan
# (the scanner clip-perl uses) gives its verdict; both must be the row's.
#
# usage: perl-scan.sh PERL_SCAN [TABLE]
set -u
scan=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
table=${2:-$here/perl-scan.txt}
. "$here/../integration/tap.sh"

perl=$(command -v perl) || { echo "1..0 # SKIP no perl"; exit 0; }
W=$(mktemp -d "${TMPDIR:-/tmp}/clip-perl-scan.XXXXXX")
trap 'rm -rf "$W" "$tap_tmp"' EXIT # tap.sh's too
mkdir -p "$W/files/bin" "$W/lib/Devel"
say() { printf 'BEGIN { binmode STDOUT; syswrite STDOUT, "%s\\n" }\n' "$1"; }
{ echo '#!/usr/bin/perl'; say script; } >"$W/files/s.pl"
{ echo '#!/usr/bin/perl -w -d'; say script; } >"$W/files/d.pl"
{ echo '# not yet'; echo '#!/usr/bin/perl -d'; say script; } >"$W/files/x.pl"
{ echo '#!/usr/bin/perl -T'; say script; } >"$W/files/t.pl"
{ echo '#!/usr/bin/perl -Mstrict'; say script; } >"$W/files/m.pl"
cp "$W/files/s.pl" "$W/files/bin/sx.pl"
chmod 755 "$W/files/bin/sx.pl"
say stdin >"$W/in"
{ echo '#!perl -d'; say stdin; } >"$W/ind"
printf '%s\n' 'package Devel::Clip;' 'BEGIN { binmode STDOUT; syswrite STDOUT, "debugger\n" }' \
	'package DB; sub DB {} 1;' >"$W/lib/Devel/Clip.pm"
E='BEGIN { binmode STDOUT; syswrite STDOUT, "e\n" }'

# perl's verdict from what it printed ($1) and its exit status ($2).
verdict() {
	local src= t
	for t in script e stdin; do
		grep -qx "$t" <<<"$1" && src="$src${src:+,}$t"
	done
	if [ -z "$src" ]; then
		if grep -qE '^(This is perl|Usage: )' <<<"$1"; then
			echo exit
			return
		elif grep -qE "^(Summary of my perl5|osname='linux';)" <<<"$1"; then
			src=none
		elif [ "$2" != 0 ]; then
			echo error
			return
		else
			src=nothing
		fi
	fi
	grep -qx debugger <<<"$1" && src="$src debugger"
	echo "$src"
}

row=0
disagree=0
while IFS=$'\t' read -r want opt input args; do
	case $want in '#'* | '') continue ;; esac
	row=$((row + 1))
	eval "set -- $args"
	eval "opt=$opt"
	d=$W/row$row
	cp -r "$W/files" "$d"
	envs=(PATH="$d/bin:/usr/bin:/bin" PERL5LIB="$W/lib"
		PERL5DB='BEGIN { binmode STDOUT; syswrite STDOUT, "debugger\n" } sub DB::DB {}')
	[ "$opt" != _ ] && envs+=(PERL5OPT="$opt")
	got_perl=$(cd "$d" && env -u PERL5OPT "${envs[@]}" "$perl" "$@" <"$W/$input" 2>"$d/err")
	got_perl=$(verdict "$got_perl" $?)
	got_scan=$(cd "$d" && env -u PERL5OPT "${envs[@]}" "$scan" "$@" <"$W/$input" 2>&1)
	desc="perl ${args:-(no arguments)}"
	[ "$opt" != _ ] && desc="$desc, PERL5OPT='$opt'"
	[ "$input" = ind ] && desc="$desc, stdin's #! has -d"
	is "$desc: perl says $want" "$got_perl" "$want"
	[ "$got_perl" = "$want" ] || tap_diag "$(head -3 "$d/err")"
	is "$desc: the scanner says $want" "$got_scan" "$want"
	[ "$got_scan" = "$got_perl" ] || disagree=$((disagree + 1))
	rm -rf "$d"
done <"$table"
is "every row: the scanner and perl agree ($row rows)" "$disagree" 0

tap_plan_end
