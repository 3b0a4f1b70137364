#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every module of the standard library with a __main__ (issue 20, finding
# 3), under SECBIT_EXEC_DENY_INTERACTIVE set and locked: each is either
# refused as a program, or shown not to run code from its arguments or its
# standard input. The modules are found in the interpreter's own standard
# library (`if __name__ == "__main__":` or a __main__.py, test packages
# left out) and each must be classified in python-main-modules.txt, which
# says how. The probe is a program that prints a marker built at run time
# (chr(77) * 3) and makes a directory: given as the argument, as standard
# input (a pipe), and as /proc/self/fd/0 (the pipe by name). Every module
# runs with at most 2 s, in a scratch directory, with the root file system
# read-only in the test's mount namespace (some of them write: venv,
# ensurepip, lib2to3).
#
# usage: python-main-modules.sh CLIPCTL CLIP_PYTHON
set -u
clipctl=$(readlink -f "$1")
py=$(readlink -f "$2")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
enter_namespace "$@"
setup_mounts
mkdir -p "$T/tmp" "$T/w"
chmod 1777 "$T/w"
export TMPDIR=$T/tmp
. "$here/../integration/tap.sh"

list=$here/python-main-modules.txt
stdlib=$("$py" -I -S -c 'import sys; print(sys._stdlib_dir)')
id=root
[ "$CLIP_EXEC_NS" = user ] && id=user
bits=deny-interactive,deny-interactive-locked

ran=$T/w/ran
probe="print(chr(77) * 3 + \"RAN\") or __import__(\"os\").mkdir(\"$ran\")"
echo "$probe" >"$T/probe.py"
/usr/bin/python3 - "$T/probe.pickle" "$probe" <<'PY'
import pickle, sys
class P:
    def __reduce__(self):
        return (exec, (sys.argv[2],))
open(sys.argv[1], "wb").write(pickle.dumps(P(), protocol=0))
PY
chmod 644 "$T/probe.py" "$T/probe.pickle"

# The modules with a __main__, as module names.
mapfile -t found < <(cd "$stdlib" && {
	grep -rlE '^if __name__ == .__main__.:' --include='*.py' .
	find . -name __main__.py
} | sed 's|^\./||' | grep -vE '(^|/)(tests?|idle_test|site-packages|dist-packages)/|^config-' |
	sed -E 's|\.py$||; s|/__init__$||; s|/|.|g' | sort -u)
declare -A class probes
while read -r m c p _; do
	case $m in '' | '#'*) continue ;; esac
	class[$m]=$c probes[$m]=$p
done <"$list"

unlisted=()
for m in "${found[@]}"; do
	[ -n "${class[$m]:-}" ] || unlisted+=("$m")
done
is "every module with a __main__ is classified in python-main-modules.txt" "${unlisted[*]:-}" ""
like "the standard library has modules with a __main__ ($stdlib)" "${#found[@]}" '^[1-9][0-9]+$'

# Nothing of the host may change: the root read-only here (and the usual
# writable places, where they are mounts of their own).
for d in / /tmp /var/tmp /run /dev/shm /home /root; do
	mountpoint -q "$d" && mount -o remount,bind,ro "$d" 2>/dev/null
done
touch /clip-python-main-modules-probe 2>/dev/null && rm -f /clip-python-main-modules-probe &&
	not_ok "the root file system is read-only for the probes" ||
	ok "the root file system is read-only for the probes"

# probe MODULE INPUT ARG...: -m MODULE ARG... with INPUT piped; $out, $status.
probe() {
	local m=$1 input=$2 dir
	shift 2
	dir=$T/w/$m
	rmdir "$ran" 2>/dev/null
	mkdir -p "$dir"
	chmod 777 "$dir"
	# (NUL bytes, that gzip writes, dropped: a shell variable cannot hold them)
	out=$(
		cd "$dir" && exec_as "$id" "${probe_bits:-$bits}" sh -c \
			'f=$1; shift; cat "$f" | timeout -k 1 2 "$@"' sh "$input" "$py" -m "$m" "$@" \
			2>&1 </dev/null | tr -d '\000'
		exit "${PIPESTATUS[0]}"
	) && status=0 || status=$?
}

# Whether the probe ran: the marker, or its directory.
probe_ran() {
	if grep -q MMMRAN <<<"$out" || [ -d "$ran" ]; then
		rmdir "$ran" 2>/dev/null
		return 0
	fi
	return 1
}

# The probe is seen when it runs: timeit and code without the bits.
probe_bits=none probe timeit "$T/probe.py" "$probe"
probe_ran && ok "control: the probe is seen when -m timeit runs it (no bits)" ||
	not_ok "control: the probe is seen when -m timeit runs it (no bits)"
probe_bits=none probe code "$T/probe.py"
probe_ran && ok "control: the probe is seen when -m code reads it (no bits)" ||
	not_ok "control: the probe is seen when -m code reads it (no bits)"

n_refused=0 n_safe=0
for m in "${found[@]}"; do
	c=${class[$m]:-}
	[ -n "$c" ] || continue
	run=${m%.__main__}
	if [ "$c" = refused ]; then
		probe "$run" "$T/probe.py" "$probe"
		probe_ran && status="$status, the probe ran"
		if [ "$status" = 126 ] && grep -q refused <<<"$out"; then
			ok "$m: refused"
			n_refused=$((n_refused + 1))
		else
			not_ok "$m: refused (exit $status)"
			tap_diag "$out"
		fi
		continue
	fi
	bad=
	probe "$run" "$T/probe.py"
	# Started: not refused by clip-python, not a missing program.
	case $status in 126 | 127) bad+=" (did not start: exit $status)" ;; esac
	probe_ran && bad+=" stdin"
	probe "$run" "$T/probe.py" "$probe"
	probe_ran && bad+=" argument"
	probe "$run" "$T/probe.py" /proc/self/fd/0
	probe_ran && bad+=" /proc/self/fd/0"
	if [ "${probes[$m]}" = pickle ]; then
		probe "$run" "$T/probe.pickle"
		probe_ran && bad+=" pickle-stdin"
		probe "$run" "$T/probe.pickle" /proc/self/fd/0
		probe_ran && bad+=" pickle-fd"
	fi
	if [ -z "$bad" ]; then
		ok "$m: does not run its arguments or standard input"
		n_safe=$((n_safe + 1))
	else
		not_ok "$m: does not run its arguments or standard input (ran from:$bad)"
		tap_diag "$out"
	fi
done
echo "# ${#found[@]} modules with a __main__: $n_refused refused, $n_safe shown safe"

tap_plan_end
