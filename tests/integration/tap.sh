# SPDX-License-Identifier: LGPL-2.1-or-later
# A few lines of TAP for the shell tests: each check is one TAP line, so a
# failure names the exact step, and meson and tools/run-tests count them.
. "$(dirname "${BASH_SOURCE[0]}")/../common/root.sh"
n_tests=0
n_failed=0

tap_plan_end() {
	echo "1..$n_tests"
	[ "$n_failed" -eq 0 ]
}

ok() { n_tests=$((n_tests + 1)); echo "ok $n_tests - $*"; }
not_ok() { n_tests=$((n_tests + 1)); n_failed=$((n_failed + 1)); echo "not ok $n_tests - $*"; }
skip() { n_tests=$((n_tests + 1)); echo "ok $n_tests - $1 # SKIP $2"; }

# A diagnostic: every line of TEXT behind "# ", so that a value of many
# lines never reads as TAP.
tap_diag() { # TEXT
	printf '%s\n' "$1" | sed 's/^/# /'
}

# expect STATUS DESCRIPTION -- COMMAND...: run COMMAND, keep its stdout in
# $out and stderr in $err, and check its exit status.
expect() {
	local want=$1 desc=$2 status
	shift 3
	out=$("$@" 2>"$tap_tmp/err") && status=0 || status=$?
	err=$(cat "$tap_tmp/err")
	if [ "$status" -eq "$want" ]; then
		ok "$desc"
	else
		not_ok "$desc (exit $status, want $want)"
		tap_diag "  stdout: $out"
		tap_diag "  stderr: $err"
	fi
}

# like DESCRIPTION STRING PATTERN: a grep -E on STRING.
like() {
	if printf '%s' "$2" | grep -qE -- "$3"; then
		ok "$1"
	else
		not_ok "$1"
		tap_diag "  got: $2"
		tap_diag "  want (regex): $3"
	fi
}

is() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		tap_diag "  got:  $2"
		tap_diag "  want: $3"
	fi
}

tap_tmp=$(mktemp -d)
trap 'rm -rf "$tap_tmp"' EXIT
