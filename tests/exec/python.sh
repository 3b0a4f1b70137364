#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clip-python on real files: an exec and a noexec tmpfs, files with and
# without the x bit, with and without each exec securebit (set by clipctl
# in the child that runs the interpreter), as root and as nobody.
#
# usage: python.sh CLIPCTL CLIP_PYTHON
set -u
clipctl=$1
py=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
enter_namespace "$@"
setup_mounts
. "$here/../integration/tap.sh"

app=$T/exec/app
mkdir -p "$app/pkg" "$T/noexec/pkg" "$T/exec/sourceless"
cat >"$app/main.py" <<'PY'
import sys
name = sys.argv[1]
__import__(name)
print("imported", name, "from", sys.modules[name].__file__)
PY
echo 'NAME = "good"' >"$app/good.py"
echo 'NAME = "nox"' >"$app/nox.py"
echo 'NAME = "bad"' >"$T/noexec/bad.py"
echo 'print("main on noexec")' >"$T/noexec/main.py"
echo 'print("pkg main on noexec")' >"$T/noexec/pkg/__main__.py"
echo 'print("pkg main on exec")' >"$app/pkg/__main__.py"
echo 'print("startup ran")' >"$app/startup.py"
echo 'print("startup ran")' >"$T/noexec/startup.py"
echo 'print("from stdin")' >"$app/stdin.py"
echo 'print("from stdin")' >"$app/stdin-nox.py"
printf 'import os\nos.environ["PYTHONINSPECT"] = "1"\nprint("not reached")\n' >"$app/setinspect.py"
# A site directory as site-packages is: one .pth file executable, one not.
mkdir -p "$app/site/x-added" "$app/site/nox-added"
echo x-added >"$app/site/x.pth"
echo nox-added >"$app/site/nox.pth"
printf 'import site, sys\nsite.addsitedir(sys.argv[1])\nprint(*(d.endswith("-added") and d.rsplit("/", 1)[1] for d in sys.path if d.endswith("-added")))\n' >"$app/addsite.py"
cp "$here/stdlib-200.txt" "$app/stdlib-200.txt"
printf 'import sys\nfor n in open(sys.argv[1]).read().split():\n    __import__(n)\nprint("imported", len(open(sys.argv[1]).read().split()))\n' >"$app/imp.py"
# A sourceless .pyc (no .py beside it): CPython 3.11 reads those with FileIO.
echo 'NAME = "sourceless"' >"$T/exec/src.py"
/usr/bin/python3 -c "import py_compile as p; p.compile('$T/exec/src.py', cfile='$T/noexec/spyc.pyc'); p.compile('$T/exec/src.py', cfile='$T/exec/sourceless/spyc2.pyc')"
# Zip archives: a library and an application.
/usr/bin/python3 - "$T" <<'PY'
import sys, zipfile
t = sys.argv[1]
for d in ("exec", "noexec"):
    with zipfile.ZipFile(f"{t}/{d}/lib.zip", "w") as z:
        z.writestr("zmod.py", f'NAME = "zip on {d}"\n')
    with zipfile.ZipFile(f"{t}/{d}/app.zip", "w") as z:
        z.writestr("__main__.py", f'print("zip app on {d}")\n')
PY
chmod 755 "$app"/*.py "$app/pkg/__main__.py" "$T"/noexec/*.py "$T"/exec/*.zip "$T"/noexec/*.zip "$T"/noexec/*.pyc \
	"$T"/exec/sourceless/*.pyc "$T/noexec/pkg/__main__.py"
chmod 755 "$app/site/x.pth" "$app/addsite.py"
chmod 644 "$app/nox.py" "$app/stdin-nox.py" "$app/site/nox.pth"
export PYTHONPATH=$app:$T/noexec PYTHONDONTWRITEBYTECODE=1
unset PYTHONSTARTUP PYTHONINSPECT

ids=root
[ "$CLIP_EXEC_NS" = root ] && ids="root user"
[ "$CLIP_EXEC_NS" = user ] && ids=user

# Debian installs the standard library 0644: under RESTRICT_FILE nothing of
# it may run, and Python cannot even start. Shown once, then the trees that
# clipctl finds for this Python (the standard library, dist-packages) are
# made executable (copies bound over them) for the rest.
expect 1 "restrict-file, Debian's 0644 stdlib: Python cannot start" -- \
	exec_as root restrict-file "$py" "$app/main.py" good
like "restrict-file, Debian's 0644 stdlib: the reason is given" "$err" \
	"encodings/__init__.py may not run as code: it is not executable"
mapfile -t trees < <("$clipctl" exec-policy allow-tree --list --interpreter "$py")
make_executable_copy "${trees[@]}"

for id in $ids; do
	run() { exec_as "$id" "$@"; }
	echo "# as $id"
	expect 0 "$id, no bits: a script and its import from an exec mount run" -- \
		run none "$py" "$app/main.py" good
	like "$id, no bits: imported good" "$out" "imported good from $app/good.py"
	CLIP_LOG=notice expect 0 "$id, no bits: an import from a noexec mount runs (nothing enforces)" -- \
		run none "$py" "$app/main.py" bad
	like "$id, no bits: and the would-be refusal is logged" "$err" \
		"bad.py fails the exec check \(its file system is mounted noexec\): allowed, but SECBIT_EXEC_RESTRICT_FILE would refuse it"
	expect 0 "$id, no bits: -c runs" -- run none "$py" -c 'print("c ok")'
	expect 0 "$id, no bits: both .pth files are read" -- run none "$py" "$app/addsite.py" "$app/site"
	is "$id, no bits: both paths added" "$out" "nox-added x-added"
	is "$id, no bits: nothing said by default" "$err" ""
	out=$(echo 'print("piped")' | run none "$py" 2>&1)
	is "$id, no bits: a piped script runs" "$out" "piped"

	expect 0 "$id, restrict-file: a script and its import from an exec mount run" -- \
		run restrict-file "$py" "$app/main.py" good
	expect 1 "$id, restrict-file: an import from a noexec mount is refused" -- \
		run restrict-file "$py" "$app/main.py" bad
	like "$id, restrict-file: with a clear message" "$err" \
		"PermissionError: \[Errno 13\] $T/noexec/bad.py may not run as code: its file system is mounted noexec \(SECBIT_EXEC_RESTRICT_FILE\)"
	expect 1 "$id, restrict-file: a module without the x bit is refused" -- \
		run restrict-file "$py" "$app/main.py" nox
	like "$id, restrict-file: because it is not executable" "$err" "nox.py may not run as code: it is not executable by this user \(mode 0644\)"
	expect 0 "$id, restrict-file: a .pth file without the x bit is skipped" -- \
		run restrict-file "$py" "$app/addsite.py" "$app/site"
	is "$id, restrict-file: only the executable .pth file's path is added" "$out" "x-added"
	like "$id, restrict-file: the skip is a warning, shown by default" "$err" \
		"^[^ ]*clip-python: warning: .pth file skipped: $app/site/nox.pth may not run as code: it is not executable by this user \(mode 0644\) \(SECBIT_EXEC_RESTRICT_FILE\)$"
	is "$id, restrict-file: and the only one (the system's .pth files pass)" "$(wc -l <<<"$err")" 1
	expect 126 "$id, restrict-file: a main script on a noexec mount is refused" -- \
		run restrict-file "$py" "$T/noexec/main.py"
	like "$id, restrict-file: can't run file" "$err" "can't run file '$T/noexec/main.py': .*mounted noexec"
	expect 0 "$id, restrict-file: 200 standard-library modules import" -- \
		run restrict-file "$py" "$app/imp.py" "$app/stdlib-200.txt"
	is "$id, restrict-file: all 200" "$out" "imported 200"
	out=$(echo '{"a": [1, 2]}' | run restrict-file "$py" -m json.tool --compact 2>&1)
	is "$id, restrict-file: python3 -m json.tool works" "$out" '{"a":[1,2]}'
	expect 1 "$id, restrict-file: -m of a module on a noexec mount is refused" -- \
		run restrict-file "$py" -m bad
	expect 1 "$id, restrict-file: a sourceless .pyc on a noexec mount is refused" -- \
		run restrict-file "$py" "$app/main.py" spyc
	like "$id, restrict-file: through the exec check" "$err" "spyc.pyc may not run as code: its file system is mounted noexec"
	PYTHONPATH=$T/exec/sourceless:$app expect 0 "$id, restrict-file: an executable sourceless .pyc runs" -- \
		run restrict-file "$py" "$app/main.py" spyc2
	PYTHONPATH=$T/noexec/lib.zip:$app expect 1 "$id, restrict-file: a zip archive on a noexec mount is refused" -- \
		run restrict-file "$py" "$app/main.py" zmod
	PYTHONPATH=$T/exec/lib.zip:$app expect 0 "$id, restrict-file: an executable zip archive imports" -- \
		run restrict-file "$py" "$app/main.py" zmod
	expect 126 "$id, restrict-file: a zip application on a noexec mount is refused" -- \
		run restrict-file "$py" "$T/noexec/app.zip"
	expect 0 "$id, restrict-file: a zip application on an exec mount runs" -- \
		run restrict-file "$py" "$T/exec/app.zip"
	is "$id, restrict-file: zip app output" "$out" "zip app on exec"
	expect 1 "$id, restrict-file: a package's __main__ on a noexec mount is refused" -- \
		run restrict-file "$py" "$T/noexec/pkg"
	expect 0 "$id, restrict-file: a package's __main__ on an exec mount runs" -- \
		run restrict-file "$py" "$app/pkg"
	out=$(PYTHONSTARTUP=$T/noexec/startup.py run restrict-file "$py" -i <"$app/stdin.py" 2>&1)
	like "$id, restrict-file: PYTHONSTARTUP on a noexec mount is refused" "$out" "PYTHONSTARTUP.*mounted noexec"
	like "$id, restrict-file: the session goes on without it" "$out" "from stdin"
	out=$(PYTHONSTARTUP=$app/startup.py run restrict-file "$py" -i <"$app/stdin.py" 2>&1)
	like "$id, restrict-file: an executable PYTHONSTARTUP runs" "$out" "startup ran"

	expect 126 "$id, deny-interactive: -c is refused" -- run deny-interactive "$py" -c 'print(1)'
	like "$id, deny-interactive: -c names the bit" "$err" "-c is interactive code, denied \(SECBIT_EXEC_DENY_INTERACTIVE\)"
	out=$(echo 'print("piped")' | run deny-interactive "$py" 2>&1) && status=0 || status=$?
	is "$id, deny-interactive: a piped script is refused" "$status" 126
	like "$id, deny-interactive: as a pipe" "$out" "standard input may not run as code: it is a pipe"
	expect 0 "$id, deny-interactive: stdin from an executable file runs" -- \
		run deny-interactive "$py" <"$app/stdin.py"
	is "$id, deny-interactive: stdin output" "$out" "from stdin"
	expect 126 "$id, deny-interactive: stdin from a file without the x bit is refused" -- \
		run deny-interactive "$py" <"$app/stdin-nox.py"
	expect 126 "$id, deny-interactive: -i is refused" -- \
		run deny-interactive "$py" -i "$app/main.py" good </dev/null
	expect 0 "$id, deny-interactive: a script still runs" -- \
		run deny-interactive "$py" "$app/main.py" good
	expect 1 "$id, deny-interactive: setting PYTHONINSPECT is refused" -- \
		run deny-interactive "$py" "$app/setinspect.py"
	like "$id, deny-interactive: PYTHONINSPECT" "$err" "PYTHONINSPECT: refused"
	expect 0 "$id, both bits, locked: a script and its import run" -- \
		run restrict-file,restrict-file-locked,deny-interactive,deny-interactive-locked \
		"$py" "$app/main.py" good
done

# fork(): the interpreter's children go on importing, and are still checked
# (issue 20, finding 8). Workers are forked from a thread of the parent
# (maxtasksperchild=1: the pool's handler thread forks each new one).
cat >"$app/fork.py" <<'PY'
import sys, multiprocessing as mp, concurrent.futures as cf
def imp(name):
    return __import__(name).NAME
how, names = sys.argv[1], sys.argv[2:]
fork = mp.get_context("fork")
if how == "pool":
    with fork.Pool(2, maxtasksperchild=1) as p:
        print(*p.map(imp, names))
else:
    with cf.ProcessPoolExecutor(2, mp_context=fork) as ex:
        print(*ex.map(imp, names))
PY
# A .pyc run as the main script: CPython's loader for it, SourcelessFileLoader.
echo 'print(type(__loader__).__name__, __spec__)' >"$T/exec/loader.py"
/usr/bin/python3 -c "import py_compile as p; p.compile('$T/exec/loader.py', cfile='$T/exec/loader.pyc')"
chmod 755 "$T/exec/loader.pyc"
mkdir -p "$T/exec/cc"
for i in 1 2 3 4; do echo "X = $i" >"$T/exec/cc/m$i.py"; done
chmod 755 "$app/fork.py" "$T"/exec/cc/*.py
chmod 1777 "$T/exec/cc"
for id in $ids; do
	for bits in none restrict-file,deny-interactive \
		restrict-file,restrict-file-locked,deny-interactive,deny-interactive-locked; do
		run() { exec_as "$id" "$bits" "$@"; }
		expect 0 "$id, $bits: multiprocessing.Pool (fork) workers import" -- \
			run "$py" "$app/fork.py" pool good good good good
		is "$id, $bits: each Pool worker imported the module" "$out" "good good good good"
		expect 0 "$id, $bits: ProcessPoolExecutor (fork) workers import" -- \
			run "$py" "$app/fork.py" executor good good
		is "$id, $bits: each executor worker imported the module" "$out" "good good"
		rm -rf "$T/exec/cc/__pycache__"
		expect 0 "$id, $bits: compileall -j 2 compiles in forked workers" -- \
			run "$py" -m compileall -q -j 2 "$T/exec/cc"
		is "$id, $bits: compileall wrote the 4 .pyc" "$(ls "$T/exec/cc/__pycache__" 2>/dev/null | wc -l)" 4
		expect 0 "$id, $bits: a .pyc as the main script runs" -- run "$py" "$T/exec/loader.pyc"
		is "$id, $bits: its __loader__ is a SourcelessFileLoader, as in CPython" "$out" \
			"$(/usr/bin/python3 "$T/exec/loader.pyc")"
		[ "$bits" = none ] && continue
		expect 1 "$id, $bits: a forked worker is still checked: noexec import refused" -- \
			run "$py" "$app/fork.py" pool bad
		like "$id, $bits: the worker's refusal names the file" "$err" \
			"$T/noexec/bad.py may not run as code: its file system is mounted noexec"
	done
done

tap_plan_end
