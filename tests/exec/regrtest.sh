#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# CPython's own regression tests (Debian's libpython3.11-testsuite) under
# clip-python: imports, importlib, runpy, zipimport, compileall, command-line
# scripts, site, and multiprocessing and concurrent.futures with fork. Run
# first by /usr/bin/python3 on this machine, then by clip-python with no
# securebit, then under SECBIT_EXEC_RESTRICT_FILE with the interpreter's
# trees (and the test package) made executable, and the files the tests
# write created executable (creat-x.c; python3 run again the same way).
# Each clip-python run must have no failure, skip or missing test that
# python3 does not also have; both lists are printed, with the counts of
# tests run, failed and skipped (a skip is never a pass).
#
# regrtest starts each test file in a worker (-j1), and the tests start
# their scripts, with sys.executable: clip-python itself, checked here, so
# that every child runs under the same checks and bits.
#
# usage: regrtest.sh CLIPCTL CLIP_PYTHON CREAT_X_SO
# With CLIP_REGRTEST_KEEP=DIR, each run's XML and log are copied to DIR;
# CLIP_REGRTEST_GROUPS (main mp cf, the default) runs only those named.
set -u
clipctl=$(readlink -f "$1")
py=$(readlink -f "$2")
creat_x=$(readlink -f "$3")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
enter_namespace "$@"
setup_mounts
. "$here/../integration/tap.sh"

testdir=/usr/lib/python3.11/test
if [ ! -f "$testdir/regrtest.py" ] || [ ! -f "$testdir/test_import/__init__.py" ]; then
	skip "regrtest: CPython's test package" "libpython3.11-testsuite is not installed"
	tap_plan_end
	exit
fi

# The groups: regrtest's -m filters every test file of a run, so the
# fork subsets are runs of their own. The subsets are the parts of the
# two long files that fork workers which then import.
read -ra groups <<<"${CLIP_REGRTEST_GROUPS:-main mp cf}"
args_main=(test_import test_importlib test_runpy test_zipimport test_compileall
	test_cmd_line_script test_site)
args_mp=(test_multiprocessing_fork -m 'WithProcessesTestPool*' -m 'WithProcessesTestProcess*'
	-m 'WithProcessesTestImportStar*' -m 'TestForkAwareThreadLock*')
args_cf=(test_concurrent_futures -m ProcessPoolForkProcessPoolExecutorTest
	-m ProcessPoolForkProcessPoolShutdownTest -m ProcessPoolForkInitializerTest
	-m ProcessPoolForkFailingInitializerTest -m ProcessPoolForkExecutorDeadlockTest)

# No variable of the caller's environment changes what the tests do.
for v in $(env | sed -n 's/^\(PYTHON[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
work=$T/exec/work
mkdir -p "$work"
export TMPDIR=$work HOME=$work

# regrtest TAG BITS GROUP INTERP [FLAGS...]: one run, as root under BITS,
# its results in $work/TAG-GROUP.xml; with $preload, run under that LD_PRELOAD.
regrtest() {
	local tag=$1 bits=$2 g=$3 start=$SECONDS xml=$work/$1-$3.xml
	local -n a="args_$g"
	shift 3
	(cd "$work" && LD_PRELOAD=$preload exec_as root "$bits" "$@" -m test -j1 --timeout 600 \
		--tempdir "$work" --junit-xml "$xml" "${a[@]}") >"$xml.log" 2>&1
	echo "# $g, $tag: $((SECONDS - start)) s"
	[ -n "${CLIP_REGRTEST_KEEP:-}" ] && cp "$xml" "$xml.log" "$CLIP_REGRTEST_KEEP/" 2>/dev/null
	if [ -s "$xml" ]; then
		ok "regrtest $g, $tag: ran"
	else
		not_ok "regrtest $g, $tag: ran"
		tap_diag "$(tail -20 "$xml.log")"
	fi
}

# compare GROUP BASE CANDIDATE: the candidate run against python3's.
compare() {
	local g=$1 base=$work/$2-$1.xml cand=$work/$3-$1.xml out
	if [ ! -s "$base" ] || [ ! -s "$cand" ]; then
		not_ok "regrtest $g, $3: no failure that python3 does not have"
		tap_diag "  no results: a run did not finish"
		return
	fi
	out=$(/usr/bin/python3 "$here/regrtest-compare.py" "$base" "$cand") &&
		ok "regrtest $g, $3: no failure that python3 does not have" ||
		not_ok "regrtest $g, $3: no failure that python3 does not have"
	tap_diag "$out"
}

is "regrtest: sys.executable is clip-python, so its test children are checked too" \
	"$("$py" -c 'import os, sys; print(os.path.realpath(sys.executable))')" "$py"

preload=
for g in "${groups[@]}"; do
	regrtest python3 none "$g" /usr/bin/python3
	regrtest permissive none "$g" "$py"
	compare "$g" python3 permissive
done

# RESTRICT_FILE: the trees of clipctl exec-policy allow-tree --list,
# /etc/python3.11 (Debian's sitecustomize.py, which the standard library
# links to: doc/exec.md's deployment) and the test package (which
# make_executable_copy leaves out), made executable; the files the tests
# write, created executable (creat-x.c). clip-python writes no bytecode
# under the bit (it would be refused): python3 and the pythons its tests
# start neither (-B, PYTHONDONTWRITEBYTECODE).
tests_copy=$T/exec/cpython-test
mkdir -p "$tests_copy"
(cd "$testdir" && tar -cf - .) | (cd "$tests_copy" && tar --no-same-owner -xpf -)
"$clipctl" exec-policy allow-tree "$tests_copy" >/dev/null
mapfile -t trees < <("$clipctl" exec-policy allow-tree --list --interpreter "$py")
make_executable_copy "${trees[@]}" /etc/python3.11
mkdir -p "$testdir"
mount --bind "$tests_copy" "$testdir"
preload=$creat_x
for g in "${groups[@]}"; do
	PYTHONDONTWRITEBYTECODE=1 regrtest python3-B-x none "$g" /usr/bin/python3 -B
	regrtest restrict-file restrict-file "$g" "$py"
	compare "$g" python3-B-x restrict-file
done

tap_plan_end
