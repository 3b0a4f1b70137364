#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# PYTHONSTARTUP swapped between its check and its run (issue 20, finding
# 4), as the attack: PYTHONSTARTUP names a link in a directory the
# attacker writes, which a loop flips between an executable .pyc and one
# on a noexec mount that prints a marker, while clip-python starts again
# and again under RESTRICT_FILE (set, and set+locked; as root and as
# nobody). A start may run the good file or refuse the bad one; the bad one
# must never run. Given a name in .pyc, CPython's PyRun_SimpleFileExFlags()
# closes the checked file and opens the name again: without the mechanism
# most runs see the marker several times (the figures are printed).
#
# usage: python-startup.sh CLIPCTL CLIP_PYTHON [STARTS]
set -u
clipctl=$1
py=$2
starts=${3:-${CLIP_TEST_STARTUP_STARTS:-100}}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
enter_namespace "$@"
setup_mounts
. "$here/../integration/tap.sh"

app=$T/exec/app
nx=$T/noexec
mkdir -p "$app" "$nx/links"
echo 'print("startup good")' >"$T/exec/good.py"
echo 'print(chr(77) * 3 + "RAN")' >"$T/exec/evil.py"
/usr/bin/python3 -c "import py_compile as p; p.compile('$T/exec/good.py', cfile='$app/good.pyc'); p.compile('$T/exec/evil.py', cfile='$nx/evil.pyc')"
echo 'print("from stdin")' >"$app/stdin.py"
chmod 755 "$app/good.pyc" "$nx/evil.pyc"
chmod 755 "$nx/links"
export PYTHONDONTWRITEBYTECODE=1
unset PYTHONINSPECT PYTHONPATH

ids=root
[ "$CLIP_EXEC_NS" = root ] && ids="root user"
[ "$CLIP_EXEC_NS" = user ] && ids=user

mapfile -t trees < <("$clipctl" exec-policy allow-tree --list --interpreter "$py")
make_executable_copy "${trees[@]}"

link=$nx/links/startup.pyc
ln -s "$app/good.pyc" "$link"

# Both files as PYTHONSTARTUP, unflipped: the good one runs, the bad one is refused.
for id in $ids; do
	out=$(PYTHONSTARTUP=$app/good.pyc exec_as "$id" restrict-file "$py" -i <"$app/stdin.py" 2>&1)
	like "$id: restrict-file: an executable .pyc as PYTHONSTARTUP runs" "$out" "startup good"
	out=$(PYTHONSTARTUP=$nx/evil.pyc exec_as "$id" restrict-file "$py" -i <"$app/stdin.py" 2>&1)
	like "$id: restrict-file: a noexec .pyc as PYTHONSTARTUP is refused" "$out" \
		"PYTHONSTARTUP: refused: .*mounted noexec"
done

# The flipper: the link points to each file in turn, replaced atomically.
/usr/bin/python3 - "$link" "$app/good.pyc" "$nx/evil.pyc" <<'PY' &
import os, sys
link, good, bad = sys.argv[1:]
tmp = link + ".tmp"
while True:
    for target in (good, bad):
        try:
            os.symlink(target, tmp)
        except FileExistsError:
            os.unlink(tmp)
            os.symlink(target, tmp)
        os.replace(tmp, link)
PY
flipper=$!
trap 'kill "$flipper" 2>/dev/null; rm -rf "$tap_tmp"' EXIT

for id in $ids; do
	for lock in set locked; do
		bits=restrict-file
		[ $lock = locked ] && bits=$bits,restrict-file-locked
		good=0 refused=0 bad=0 other=0
		for ((i = 0; i < starts; i++)); do
			out=$(PYTHONSTARTUP=$link exec_as "$id" "$bits" "$py" -i <"$app/stdin.py" 2>&1)
			case $out in
			*MMMRAN*) bad=$((bad + 1)) ;;
			*"startup good"*) good=$((good + 1)) ;;
			*"PYTHONSTARTUP: refused"*) refused=$((refused + 1)) ;;
			*) other=$((other + 1)) last_other=$out ;;
			esac
		done
		echo "# $id, $lock: $starts starts: $good ran the executable file, $refused refused the noexec one, $bad ran the noexec one, $other other"
		is "$id, $lock: restrict-file: a flipped PYTHONSTARTUP never runs the noexec file" "$bad" 0
		is "$id, $lock: restrict-file: every start ran the checked file or refused" "$other" 0 ||
			tap_diag "${last_other:-}"
	done
done

tap_plan_end
