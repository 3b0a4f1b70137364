# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemons of the transfer tests (transfer-e2e.sh, transfer-cages.sh),
# sourced after tap.sh with $clipd and $confirm set. The test writes a
# configuration in $d (cfg/, state/, run/) and then starts clipd on it and
# clip-confirm on its agent socket $d/run/confirm.sock.
base=$(mktemp -d /dev/shm/clip-xfer-XXXXXX)
trap 'stop_all; rm -rf "$base" "$tap_tmp"' EXIT
mode=
is_root || mode=--rootless

pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=(); }

# start_clipd [ARGS...]: start clipd on $d and wait for its readiness.
start_clipd() {
	rm -f "$d/ready"
	mkfifo "$d/ready"
	"$clipd" --config "$d/cfg" --state-dir "$d/state" --agent-socket "$d/run/confirm.sock" \
		--ready-fd 3 $mode "$@" 3>"$d/ready" 2>>"$d/clipd.log" &
	clipd_pid=$!
	pids+=("$clipd_pid")
	read -r -t 20 line <"$d/ready" || true
	[ "${line:-}" = READY=1 ]
}

# start_agent yes|no|never: start clip-confirm and wait until the mediator greeted it.
start_agent() {
	rm -f "$d/agent-ready"
	mkfifo "$d/agent-ready"
	"$confirm" --socket "$d/run/confirm.sock" --auto "$1" --ready-fd 3 3>"$d/agent-ready" >>"$d/agent.log" 2>&1 &
	pids+=($!)
	read -r -t 20 line <"$d/agent-ready" || true
	[ "${line:-}" = READY=1 ]
}

records() { "$clipctl" --state-dir "$d/state" audit show 2>/dev/null | wc -l; }
last_record() { "$clipctl" --state-dir "$d/state" audit show 2>/dev/null | tail -1; }

# log_verifies DESCRIPTION: the audit log verifies, every record counted.
log_verifies() {
	local n
	n=$(records)
	expect 0 "$1" -- "$clipctl" --state-dir "$d/state" audit verify
	like "$1: all $n records" "$out" "$n records, valid"
}
