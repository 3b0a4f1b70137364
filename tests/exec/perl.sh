#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clip-perl on real files: use, require, do, an absolute path, use lib, the
# main script, -e and a piped script, on an exec and a noexec tmpfs, with
# and without each exec securebit (set by clipctl in the child), as root
# and as nobody; and the command lines of issue 20 (where the switches end,
# the debugger) under both bits, set and locked.
#
# usage: perl.sh CLIPCTL CLIP_PERL
set -u
clipctl=$1
pl=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
enter_namespace "$@"
setup_mounts
. "$here/../integration/tap.sh"

lib=$T/exec/lib
bad=$T/noexec
mkdir -p "$lib/Clip" "$bad/Clip"
cat >"$lib/main.pl" <<'PL'
#!/usr/bin/perl -w
use strict;
my ($how, $what, $dir) = @ARGV;
my $r;
chdir $dir or die "$dir: $!" if $dir;
if ($how eq 'use') { $r = eval "use $what; 1" or die $@ }
elsif ($how eq 'require') { $r = require $what }
elsif ($how eq 'do') { $r = do $what; die $@ if $@; die "do $what: $!" unless defined $r }
elsif ($how eq 'lib') { unshift @INC, $what; require Clip::Bad }
print "$how $what: ok ($0, ", __FILE__, ")\n";
PL
echo 'package Clip::Good; 1;' >"$lib/Clip/Good.pm"
echo 'package Clip::Nox; 1;' >"$lib/Clip/Nox.pm"
echo 'package Clip::Bad; 1;' >"$bad/Clip/Bad.pm"
echo '"good.pl";' >"$lib/good.pl"
echo '"bad.pl";' >"$bad/bad.pl"
echo 'print "main on noexec\n";' >"$bad/main.pl"
echo 'print "from stdin\n";' >"$lib/stdin.pl"
# Issue 20: the debugger started from the #! line of a checked script.
printf '#!/usr/bin/perl -d\nprint "dbg.pl\\n";\n' >"$lib/dbg.pl"
mkdir -p "$lib/Devel"
echo 'package Devel::Clip; 1;' >"$lib/Devel/Clip.pm"
echo 'print "from stdin\n";' >"$lib/stdin-nox.pl"
printf 'print "line ", __LINE__, " of ", __FILE__, " as $0\\n"; warn "w\\n"; die "dies"\n' >"$lib/where.pl"
cat >"$lib/load50.pl" <<'PL'
open my $f, '<', $ARGV[0] or die "$ARGV[0]: $!";
my $n = 0;
while (my $m = <$f>) { chomp $m; (my $p = "$m.pm") =~ s{::}{/}g; require $p; $n++ }
print "loaded $n\n";
PL
cp "$here/perl-50.txt" "$lib/perl-50.txt"
chmod 755 "$lib"/*.pl "$lib"/Clip/*.pm "$lib"/Devel/*.pm "$bad"/*.pl "$bad"/Clip/*.pm
chmod 644 "$lib/Clip/Nox.pm" "$lib/stdin-nox.pl"
export PERL5LIB=$lib:$bad
unset PERL5OPT

# piped INPUT CMD...: CMD with INPUT (printf %b) on a pipe as standard input.
piped() {
	local input=$1
	shift
	printf '%b' "$input" | "$@"
}
# Debugger commands: the code an attacker pipes in. "PWN"."ED": the switch
# quoted in a refusal never reads as the marker.
cmds='print "PWN"."ED\\n"\nq\n'
pwn='print "PWN"."ED\n";'

# attack DESC CMD...: a command line of issue 20, under the bits in $bits:
# clip-perl refuses it (126), and the attacker's code never runs.
attack() {
	local desc="$id, $bitsname: $1"
	shift
	expect 126 "$desc: refused" -- "$@"
	is "$desc: its code did not run" "$(grep -c 'PWNED\|main on noexec' <<<"$out$err")" 0
}

ids=root
[ "$CLIP_EXEC_NS" = root ] && ids="root user"
[ "$CLIP_EXEC_NS" = user ] && ids=user

# A refusal dies with $! = EACCES: perl exits 13, as for an unreadable file.
# Debian installs perl's modules 0644: under RESTRICT_FILE even strict.pm is
# refused. Shown once; then the module directories are covered with
# executable copies for the rest.
expect 13 "restrict-file, Debian's 0644 modules: use strict is refused" -- \
	exec_as root restrict-file "$pl" "$lib/main.pl" use Clip::Good
like "restrict-file, Debian's 0644 modules: the reason is given" "$err" "Can't run strict.pm: .*strict.pm may not run as code: it is not executable"
mapfile -t trees < <("$clipctl" exec-policy allow-tree --list --interpreter "$pl")
make_executable_copy "${trees[@]}"

for id in $ids; do
	run() { exec_as "$id" "$@"; }
	echo "# as $id"
	expect 0 "$id, no bits: use of an exec-mount module runs" -- run none "$pl" "$lib/main.pl" use Clip::Good
	like "$id, no bits: \$0 and __FILE__ name the script" "$out" "use Clip::Good: ok \($lib/main.pl, $lib/main.pl\)"
	CLIP_LOG=notice expect 0 "$id, no bits: use of a noexec module runs (nothing enforces)" -- \
		run none "$pl" "$lib/main.pl" use Clip::Bad
	like "$id, no bits: and the would-be refusal is logged" "$err" "Bad.pm fails the exec check \(its file system is mounted noexec\): allowed, but SECBIT_EXEC_RESTRICT_FILE would refuse it"
	expect 0 "$id, no bits: -e runs" -- run none "$pl" -e 'print "e ok\n"'
	out=$(echo 'print "piped\n"' | run none "$pl" 2>&1)
	is "$id, no bits: a piped script runs" "$out" "piped"
	expect 255 "$id, no bits: warn and die name the real file and line" -- run none "$pl" "$lib/where.pl"
	is "$id, no bits: __LINE__, __FILE__ and \$0" "$out" "line 1 of $lib/where.pl as $lib/where.pl"
	like "$id, no bits: die names the file" "$err" "dies at $lib/where.pl line 1"

	for how in "use Clip::Good" "require Clip/Good.pm" "do good.pl" "require $lib/good.pl" "do $lib/good.pl"; do
		expect 0 "$id, restrict-file: $how (exec mount) runs" -- run restrict-file "$pl" "$lib/main.pl" $how
	done
	for how in "use Clip::Bad" "require Clip/Bad.pm" "do bad.pl" "require $bad/bad.pl" "do $bad/bad.pl"; do
		expect 13 "$id, restrict-file: $how (noexec mount) is refused" -- run restrict-file "$pl" "$lib/main.pl" $how
		like "$id, restrict-file: $how: the reason" "$err" "may not run as code: its file system is mounted noexec \(SECBIT_EXEC_RESTRICT_FILE\)"
	done
	expect 13 "$id, restrict-file: a relative ./ path on a noexec mount is refused" -- \
		run restrict-file "$pl" "$lib/main.pl" require ./bad.pl "$bad"
	expect 13 "$id, restrict-file: a module without the x bit is refused" -- \
		run restrict-file "$pl" "$lib/main.pl" use Clip::Nox
	like "$id, restrict-file: because it is not executable" "$err" "Nox.pm may not run as code: it is not executable by this user \(mode 0644\)"
	PERL5LIB=$lib expect 13 "$id, restrict-file: unshift @INC cannot get ahead of the hook" -- \
		run restrict-file "$pl" "$lib/main.pl" lib "$bad"
	like "$id, restrict-file: the unshifted directory is checked" "$err" "Bad.pm may not run as code"
	expect 2 "$id, restrict-file: a missing module is reported as perl does" -- \
		run restrict-file "$pl" -e 'require Clip::Missing' 
	like "$id, restrict-file: Can't locate" "$err" "Can't locate Clip/Missing.pm in @INC \(you may need to install the Clip::Missing module\) \(@INC contains: $lib $bad "
	expect 126 "$id, restrict-file: a main script on a noexec mount is refused" -- \
		run restrict-file "$pl" "$bad/main.pl"
	like "$id, restrict-file: can't run perl script" "$err" "can't run perl script \"$bad/main.pl\": .*mounted noexec"
	expect 0 "$id, restrict-file: 50 core modules load" -- \
		run restrict-file "$pl" "$lib/load50.pl" "$lib/perl-50.txt"
	is "$id, restrict-file: all 50" "$out" "loaded 50"

	expect 126 "$id, deny-interactive: -e is refused" -- run deny-interactive "$pl" -e 'print 1'
	like "$id, deny-interactive: -e names the bit" "$err" "-e is interactive code, denied \(SECBIT_EXEC_DENY_INTERACTIVE\)"
	expect 126 "$id, deny-interactive: -E is refused" -- run deny-interactive "$pl" -wlE 'say 1'
	out=$(echo 'print "piped\n"' | run deny-interactive "$pl" 2>&1) && status=0 || status=$?
	is "$id, deny-interactive: a piped script is refused" "$status" 126
	like "$id, deny-interactive: as a pipe" "$out" "standard input may not run as code: it is a pipe"
	expect 0 "$id, deny-interactive: a script on stdin from an executable file runs" -- \
		run deny-interactive "$pl" <"$lib/stdin.pl"
	is "$id, deny-interactive: stdin output" "$out" "from stdin"
	expect 126 "$id, deny-interactive: stdin from a file without the x bit is refused" -- \
		run deny-interactive "$pl" - <"$lib/stdin-nox.pl"
	expect 126 "$id, deny-interactive: code in -M is refused" -- \
		run deny-interactive "$pl" '-MClip::Good;print "x"' "$lib/main.pl" use Clip::Good
	expect 0 "$id, deny-interactive: -MModule=args is not code" -- \
		run deny-interactive "$pl" -MList::Util=sum "$lib/main.pl" use Clip::Good
	PERL5OPT='-MClip::Good;print' expect 126 "$id, deny-interactive: code in PERL5OPT's -M is refused" -- \
		run deny-interactive "$pl" "$lib/main.pl" use Clip::Good
	expect 126 "$id, deny-interactive: -F with a pattern pasted as code is refused" -- \
		run deny-interactive "$pl" -F'/x/;print' -ane 1
	expect 126 "$id, deny-interactive: the debugger is refused" -- \
		run deny-interactive "$pl" -d "$lib/main.pl" use Clip::Good
	expect 0 "$id, deny-interactive: a script still runs" -- \
		run deny-interactive "$pl" "$lib/main.pl" use Clip::Good
	expect 0 "$id, both bits, locked: a script and its modules run" -- \
		run restrict-file,restrict-file-locked,deny-interactive,deny-interactive-locked \
		"$pl" "$lib/main.pl" use Clip::Good

	# Issue 20: where clip-perl and perl disagreed on where the switches
	# end (finding 1), and the debugger (finding 2).
	for bitsname in set locked; do
		bits=restrict-file,deny-interactive
		[ "$bitsname" = locked ] && bits=$bits,restrict-file-locked,deny-interactive-locked
		attack "'-- ' then a noexec script" run "$bits" "$pl" '-- ' "$bad/main.pl"
		attack "'-- ' then a program on a pipe" piped "$pwn" run "$bits" "$pl" '-- '
		attack "-e after -i's value, in one word" \
			run "$bits" "$pl" "-i.bak -e$pwn" "$lib/main.pl" use Clip::Good
		attack "-e after -F's value, in one word" \
			run "$bits" "$pl" "-F, -e$pwn" "$lib/main.pl" use Clip::Good
		attack "-e after -V, in one word" run "$bits" "$pl" "-Ve$pwn" "$lib/main.pl"
		attack "an unknown switch" run "$bits" "$pl" --x "$lib/main.pl" use Clip::Good
		like "$id, $bitsname: an unknown switch: the reason" "$err" "perl would not accept the switch '--x'"
		attack "-dw reads commands from a pipe" \
			piped "$cmds" run "$bits" "$pl" -dw "$lib/main.pl" use Clip::Good
		like "$id, $bitsname: -dw: the reason" "$err" "-d \(the debugger, which runs what it reads\) is interactive code, denied"
		attack "-d:Devel::Clip reads commands from a pipe" \
			piped "$cmds" run "$bits" "$pl" -d:Clip "$lib/main.pl" use Clip::Good
		attack "-dt: reads commands from a pipe" \
			piped "$cmds" run "$bits" "$pl" -dt:Clip "$lib/main.pl" use Clip::Good
		PERL5OPT=-dw attack "PERL5OPT=-dw reads commands from a pipe" \
			piped "$cmds" run "$bits" "$pl" "$lib/main.pl" use Clip::Good
		attack "#!/usr/bin/perl -d in a checked script reads commands from a pipe" \
			piped "$cmds" run "$bits" "$pl" "$lib/dbg.pl"
		like "$id, $bitsname: #! -d: the reason" "$err" "-d on the script's #! line"
		attack "#!/usr/bin/perl -d in a checked program on standard input" \
			run "$bits" "$pl" <"$lib/dbg.pl"
		PERL5DB="$pwn" attack "PERL5DB, code from the environment" \
			run "$bits" "$pl" "$lib/main.pl" use Clip::Good
	done
	expect 0 "$id, no bits: the debugger still runs what it reads (nothing enforces)" -- \
		piped "$cmds" run none "$pl" -dw "$lib/main.pl" use Clip::Good
	like "$id, no bits: the debugger ran the piped command" "$out$err" "PWNED"
	expect 0 "$id, deny-interactive: a script with -w -Mstrict -i.bak -l still runs" -- \
		run deny-interactive "$pl" -w -Mstrict -i.bak -l "$lib/main.pl" use Clip::Good
done

# fork(): the child goes on loading modules, and is still checked (issue
# 20, finding 8): require through @INC (the hook) and by absolute path
# (the require op's wrapper), after perl's fork.
cat >"$lib/fork.pl" <<'PL'
my $pid = fork // die "fork: $!";
if (!$pid) {
	my $ok = eval { require $ARGV[0]; 1 };
	print $ok ? "child required $ARGV[0]\n" : "child: $@";
	exit($ok ? 0 : 13);
}
waitpid($pid, 0);
exit($? >> 8);
PL
chmod 755 "$lib/fork.pl"
for id in $ids; do
	for bits in none restrict-file,deny-interactive \
		restrict-file,restrict-file-locked,deny-interactive,deny-interactive-locked; do
		run() { exec_as "$id" "$bits" "$@"; }
		expect 0 "$id, $bits: fork, then require through @INC in the child" -- \
			run "$pl" "$lib/fork.pl" Clip/Good.pm
		is "$id, $bits: the child required Clip/Good.pm" "$out" "child required Clip/Good.pm"
		expect 0 "$id, $bits: fork, then require of an absolute path in the child" -- \
			run "$pl" "$lib/fork.pl" "$lib/good.pl"
		[ "$bits" = none ] && continue
		expect 13 "$id, $bits: a forked child is still checked: noexec module refused" -- \
			run "$pl" "$lib/fork.pl" Clip/Bad.pm
		like "$id, $bits: the child's refusal names the file" "$out" \
			"$bad/Clip/Bad.pm may not run as code: its file system is mounted noexec"
	done
done

tap_plan_end
