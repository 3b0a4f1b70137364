# SPDX-License-Identifier: LGPL-2.1-or-later
# What the session tests share (session-cli.sh, session-watch.sh). Sourced
# after tap.sh, with $clipctl and $examples (examples/sessions) set:
#
#   session_setup PREFIX
#
# skips the whole file where no cage can start; makes $base (a private
# directory under /var/tmp, 0711 so that the cages' uids reach their
# binds), $state, ctl (clipctl on that state, rootless where clipctl runs
# so), $x (the demo session copied, clipctl and its library bound read-only
# into each cage at /opt/clip (session_bind_clipctl), $cc being clipctl
# there), $sd (the session's
# state directory), and an EXIT trap that takes the session down, kills
# the background pids listed in $bg_pids and removes $base.

session_setup() { # PREFIX
	if [ "$(id -u)" != 0 ] && ! unshare -Ur true 2>/dev/null; then
		echo "1..0 # SKIP this host refuses user namespaces to uid $(id -u): no cage can start"
		exit 0
	fi
	base=$(mktemp -d "/var/tmp/$1-XXXXXX")
	# tap.sh made $tap_tmp (and its EXIT trap, replaced below: removed there too).
	chmod 711 "$base"
	state=$base/state
	mode=()
	[ "$("$clipctl" cage mode)" = rootless ] && mode=(--rootless)
	bg_pids=()
	trap session_cleanup EXIT

	x=$base/s
	cp -r "$examples" "$x"
	session_bind_clipctl "$x" "$clipctl"
	sd=$state/sessions/demo
}

# session_bind_clipctl DIR CLIPCTL: bind the build's programs/ (CLIPCTL's
# parent) and libclip/ read-only into each profile (DIR/*.cage) at
# /opt/clip, in the build's layout, as examples/demo.sh does; sets $cc to
# clipctl there.
session_bind_clipctl() {
	local dir=$1 clipctl=$2 programs_dir lib_dir profile binds
	programs_dir=$(cd "$(dirname "$clipctl")/.." && pwd -P)
	lib_dir=$(cd "$programs_dir/../libclip" && pwd -P)
	cc=/opt/clip/programs/clipctl/$(basename "$clipctl")
	binds="BindReadOnly=$programs_dir:/opt/clip/programs $lib_dir:/opt/clip/libclip"
	for profile in "$dir"/*.cage; do
		if grep -q '^\[Files\]$' "$profile"; then
			sed -i "/^\[Files\]\$/a $binds" "$profile"
		else
			printf '\n[Files]\n%s\n' "$binds" >>"$profile"
		fi
	done
}

ctl() { "$clipctl" --state-dir "$state" "${mode[@]}" "$@"; }

session_cleanup() {
	local pid
	ctl session down demo >/dev/null 2>&1
	for pid in "${bg_pids[@]}"; do kill "$pid" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$base" "$tap_tmp"
}

# Whether PID has ended: gone, or a zombie (a runner started by `session up
# --fork` has the namespace's first process as parent, meson, which reaps
# only its own children).
ended() { # PID
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) || return 0
	[[ $st == Z* ]]
}

# Up to 20 s for FILE to exist, or, given REGEX, to hold a line that matches.
wait_file() { # FILE [REGEX]
	local i
	for i in $(seq 200); do
		if [ $# -eq 1 ]; then [ -e "$1" ] && return 0; else grep -Eq "$2" "$1" 2>/dev/null && return 0; fi
		sleep 0.1
	done
	return 1
}
