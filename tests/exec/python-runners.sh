#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clip-python against the standard library's runners (issue 20, finding 3),
# each written as the attack: a program that prints a marker, put where
# the securebits say it may not run (a noexec mount, a file without the x
# bit, an argument, a pipe), handed to the runner that would run it:
# cProfile, profile, trace and pdb (which read their script with open()),
# timeit (its arguments), code and asyncio (prompts), pdb (commands),
# pickle and doctest (any file), and the ways around -m (runpy, cProfile
# -m, trace --module, the module's file, its .pyc, a package directory).
# Under each bit, set and set+locked, as root and as nobody (as the
# caller, without capabilities, in a user namespace). The marker is built
# at run time (chr(77) * 3), so a runner that only prints its input does
# not show it.
#
# usage: python-runners.sh CLIPCTL CLIP_PYTHON
set -u
clipctl=$1
py=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
enter_namespace "$@"
setup_mounts
. "$here/../integration/tap.sh"

app=$T/exec/app
nx=$T/noexec
mkdir -p "$app"
probe='print(chr(77) * 3 + "RAN")'
echo "$probe" >"$nx/evil.py"
echo "$probe" >"$app/nox.py"
echo 'print("good ran")' >"$app/good.py"
echo "$probe" >"$app/stdin.py"
printf 'import asyncio, code, cProfile, doctest, pdb, pickle, timeit\nprint("imported", len(pickle.loads(pickle.dumps(list(range(7))))))\n' >"$app/imports.py"
printf '>>> %s\n' "$probe" >"$nx/evil.txt"
printf '!%s\nc\nq\n' "$probe" >"$app/pdb-commands"
printf 'c\nq\n' >"$app/pdb-continue"
# compile() of other text under the name of a file that passes the check.
printf 'import sys\nexec(compile(open(sys.argv[1]).read(), sys.argv[2], "exec"))\n' >"$app/compile-as.py"
# A runner's script renamed away between its read and its compile (the
# name then names no file), and a loader's text under a made-up name.
printf 'import os, sys\nt = open(sys.argv[1]).read()\nos.rename(sys.argv[1], sys.argv[1] + ".moved")\nexec(compile(t, sys.argv[1], "exec"))\n' >"$app/rename-race.py"
printf 'exec(compile("print(\\"made-up ran\\")", "no/such/module.py", "exec"))\n' >"$app/made-up.py"
race=$nx/race
mkdir -p "$race"
chmod 777 "$race"
/usr/bin/python3 - "$nx/evil.pickle" "$probe" <<'PY'
import pickle, sys
class P:
    def __reduce__(self):
        return (exec, (sys.argv[2],))
open(sys.argv[1], "wb").write(pickle.dumps(P(), protocol=0))
PY
cp "$nx/evil.pickle" "$app/stdin.pickle"
cp "$nx/evil.txt" "$app/stdin.txt"
chmod 755 "$nx"/*.* "$app/good.py" "$app/compile-as.py" "$app/imports.py" "$app/rename-race.py" \
	"$app/made-up.py"
chmod 644 "$app/nox.py"
export PYTHONDONTWRITEBYTECODE=1
unset PYTHONSTARTUP PYTHONINSPECT PYTHONPATH

ids=root
[ "$CLIP_EXEC_NS" = root ] && ids="root user"
[ "$CLIP_EXEC_NS" = user ] && ids=user

# RESTRICT_FILE needs the standard library executable (python.sh).
mapfile -t trees < <("$clipctl" exec-policy allow-tree --list --interpreter "$py")
make_executable_copy "${trees[@]}"
stdlib=$("$py" -I -c 'import sys; print(sys._stdlib_dir)')

# run BITS INPUT CMD...: CMD as $id under BITS, INPUT on standard input
# through a pipe made by that identity, for at most $tmo seconds (20);
# $out, $status.
run() {
	local bits=$1 input=$2
	shift 2
	out=$(exec_as "$id" "$bits" sh -c 'f=$1; shift; cat "$f" | timeout "$0" "$@"' "${tmo:-20}" \
		"$input" "$@" 2>&1) && status=0 || status=$?
}

# attack DESCRIPTION BITS INPUT CMD...: the marker must not show, and the
# output must say what was refused.
attack() {
	local desc=$1
	shift
	run "$@"
	if grep -q MMMRAN <<<"$out"; then
		not_ok "$desc (the code ran)"
		tap_diag "$out"
	elif ! grep -q 'refused' <<<"$out"; then
		not_ok "$desc (no refusal said)"
		tap_diag "$out"
	else
		ok "$desc"
	fi
}

# works DESCRIPTION BITS INPUT PATTERN CMD...: runs, exit 0, PATTERN shown.
works() {
	local desc=$1 bits=$2 input=$3 pattern=$4
	shift 4
	run "$bits" "$input" "$@"
	if [ "$status" -eq 0 ] && grep -qE -- "$pattern" <<<"$out"; then
		ok "$desc"
	else
		not_ok "$desc (exit $status)"
		tap_diag "$out"
	fi
}

for id in $ids; do
	for lock in set locked; do
		rf=restrict-file di=deny-interactive
		[ $lock = locked ] && rf=$rf,restrict-file-locked di=$di,deny-interactive-locked
		tag="$id, $lock"
		echo "# as $id, bits $lock"

		attack "$tag: restrict-file: -m cProfile does not run a noexec file" "$rf" /dev/null \
			"$py" -m cProfile "$nx/evil.py"
		attack "$tag: restrict-file: -m profile does not run a noexec file" "$rf" /dev/null \
			"$py" -m profile "$nx/evil.py"
		attack "$tag: restrict-file: -m trace does not run a noexec file" "$rf" /dev/null \
			"$py" -m trace --trace "$nx/evil.py"
		# pdb restarts a program that raised, for ever: 3 s are many restarts.
		tmo=3 attack "$tag: restrict-file: -m pdb does not run a noexec file" "$rf" \
			"$app/pdb-continue" "$py" -m pdb "$nx/evil.py"
		attack "$tag: restrict-file: -m cProfile does not run a file without the x bit" "$rf" \
			/dev/null "$py" -m cProfile "$app/nox.py"
		attack "$tag: restrict-file: -m doctest does not run a noexec text file" "$rf" /dev/null \
			"$py" -m doctest "$nx/evil.txt"
		attack "$tag: restrict-file: -m pickle does not unpickle a noexec file" "$rf" /dev/null \
			"$py" -m pickle "$nx/evil.pickle"
		attack "$tag: restrict-file: compile() of other text under a checked file's name is refused" \
			"$rf" /dev/null "$py" "$app/compile-as.py" "$nx/evil.py" "$app/good.py"
		rm -f "$race/evil.py" "$race/evil.py.moved"
		cp "$nx/evil.py" "$race/evil.py"
		chmod 666 "$race/evil.py"
		attack "$tag: restrict-file: a script renamed away between its read and its compile is refused" \
			"$rf" /dev/null "$py" "$app/rename-race.py" "$race/evil.py"
		works "$tag: restrict-file: text compiled under a name that is no file still runs" "$rf" \
			/dev/null "made-up ran" "$py" "$app/made-up.py"
		works "$tag: restrict-file: -m cProfile runs an executable script" "$rf" /dev/null \
			"good ran" "$py" -m cProfile "$app/good.py"
		works "$tag: restrict-file: -m trace runs an executable script" "$rf" /dev/null \
			"good ran" "$py" -m trace --trace "$app/good.py"
		works "$tag: restrict-file: -m pdb runs an executable script" "$rf" "$app/pdb-continue" \
			"good ran" "$py" -m pdb "$app/good.py"

		attack "$tag: deny-interactive: -m timeit does not run its arguments" "$di" /dev/null \
			"$py" -m timeit -n 1 -r 1 "$probe"
		attack "$tag: deny-interactive: -m code does not run a pipe" "$di" "$app/stdin.py" \
			"$py" -m code
		attack "$tag: deny-interactive: -m asyncio does not run a pipe" "$di" "$app/stdin.py" \
			"$py" -m asyncio
		attack "$tag: deny-interactive: -m pdb does not run commands from a pipe" "$di" \
			"$app/pdb-commands" "$py" -m pdb "$app/good.py"
		attack "$tag: deny-interactive: -m pdb -c does not run its commands" "$di" /dev/null \
			"$py" -m pdb -c "!$probe" -c c "$app/good.py"
		attack "$tag: deny-interactive: -m pickle does not unpickle a pipe" "$di" \
			"$app/stdin.pickle" "$py" -m pickle -
		attack "$tag: deny-interactive: -m doctest does not run a pipe" "$di" "$app/stdin.txt" \
			"$py" -m doctest /dev/stdin
		attack "$tag: deny-interactive: -m runpy timeit does not run its arguments" "$di" \
			/dev/null "$py" -m runpy timeit -n 1 -r 1 "$probe"
		attack "$tag: deny-interactive: -m cProfile -m timeit does not run its arguments" "$di" \
			/dev/null "$py" -m cProfile -m timeit -n 1 -r 1 "$probe"
		attack "$tag: deny-interactive: -m trace --module code does not run a pipe" "$di" \
			"$app/stdin.py" "$py" -m trace --trace --module code
		attack "$tag: deny-interactive: timeit.py as the main script does not run its arguments" \
			"$di" /dev/null "$py" "$stdlib/timeit.py" -n 1 -r 1 "$probe"
		pyc=$(ls "$stdlib"/__pycache__/timeit.cpython-3*.pyc 2>/dev/null | head -n 1)
		if [ -n "$pyc" ]; then
			attack "$tag: deny-interactive: timeit's .pyc as the main script does not run its arguments" \
				"$di" /dev/null "$py" "$pyc" -n 1 -r 1 "$probe"
		else
			skip "$tag: deny-interactive: timeit's .pyc as the main script does not run its arguments" \
				"no $stdlib/__pycache__/timeit.cpython-3*.pyc"
		fi
		attack "$tag: deny-interactive: asyncio's directory as the main script does not run a pipe" \
			"$di" "$app/stdin.py" "$py" "$stdlib/asyncio"
		attack "$tag: deny-interactive: -m cProfile /dev/stdin does not run a pipe" "$di" \
			"$app/stdin.py" "$py" -m cProfile /dev/stdin
		attack "$tag: deny-interactive: -m trace /dev/stdin does not run a pipe" "$di" \
			"$app/stdin.py" "$py" -m trace --trace /dev/stdin
		works "$tag: deny-interactive: -m cProfile runs a script" "$di" /dev/null "good ran" \
			"$py" -m cProfile "$app/good.py"
		works "$tag: both bits: a script still imports the runners and uses them" "$rf,$di" \
			/dev/null "^imported 7$" "$py" "$app/imports.py"
	done
done

tap_plan_end
