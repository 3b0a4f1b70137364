#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The admin and audit roles of a session (issue 16), as their users run
# clipctl: a root runner of examples/sessions/demo.session with
# AdminGroup= and AuditGroup=, and clipctl run by uids that exist nowhere
# but here (setpriv, no system user made), each in its group as a
# supplementary or a primary one. Each role's permitted requests work, every
# other is refused with the role it needs; a uid of no role reaches no
# socket, and is refused by the runner when a socket's mode lets it in by
# mistake. Then the attack: the admin's and the auditor's uids try every
# path they can see - the data directories, a file in one, the inboxes,
# /proc/PID/root, /proc/PID/fd and /proc/PID/environ of the cages'
# processes, the state directories, the key file, the audit log and its
# anchor, a cage's transfer socket - and every read is refused; the
# auditor reads the trail through its socket only, and verifies it with
# the machine's public key.
#
#   session-roles.sh CLIPCTL SESSIONS_DIR
set -u
clipctl=$1 examples=$2
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/session-lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	echo "1..0 # SKIP not root (or no setpriv): the roles are other uids, and their sockets a root runner's"
	exit 0
fi
if [ "$("$clipctl" cage mode)" != root ] || ! setpriv --reuid=64101 --regid=64101 --clear-groups true 2>/dev/null; then
	echo "1..0 # SKIP no root mode, or no other uid to be (a user namespace that maps one id): the roles need both"
	exit 0
fi
base=$(mktemp -d /var/tmp/clip-roles-XXXXXX)
chmod 711 "$base"
mkdir -m 755 "$base/run"
state=$base/state
sd=$base/run/demo
ctl() { "$clipctl" --state-dir "$state" "$@"; }
cleanup() {
	ctl session down --session-dir "$sd" demo >/dev/null 2>&1
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$base" "$tap_tmp"
}
trap cleanup EXIT

# uids and gids of nobody on this system; 64201 the admins', 64202 the auditors'.
admin_gid=64201 audit_gid=64202
as_admin() { setpriv --reuid=64101 --regid=64101 --groups=$admin_gid -- "$@"; }
as_admin_primary() { setpriv --reuid=64104 --regid=$admin_gid --clear-groups -- "$@"; }
as_audit() { setpriv --reuid=64102 --regid=64102 --groups=$audit_gid -- "$@"; }
as_nobody() { setpriv --reuid=64103 --regid=64103 --clear-groups -- "$@"; }
for g in $admin_gid $audit_gid; do
	if getent group "$g" >/dev/null; then
		echo "1..0 # SKIP gid $g is a group of this system: the test's roles would not be its own"
		exit 0
	fi
done

x=$base/s
cp -r "$examples" "$x"
chmod 755 "$x"
# clipctl and its library bound read-only in the cages, in the build's layout (as session-cli.sh).
session_bind_clipctl "$x" "$clipctl"
cc_env=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
sed -i "s|^Name=demo\$|Name=demo\nStateDirectory=$sd\nAdminGroup=$admin_gid\nAuditGroup=$audit_gid|" "$x/demo.session"
C=("$clipctl" --state-dir "$state")
D=(--session-dir "$sd")

# --- refused before anything starts ---
sed "s|^AdminGroup=.*|AdminGroup=no-such-group-here|" "$x/demo.session" >"$x/bad.session"
expect 1 "roles: an AdminGroup= that is no group is refused" -- ctl session up "$x/bad.session"
like "roles: the refusal names the key and the value" "$err" "AdminGroup: 'no-such-group-here' is not a group"
sed "s|^AuditGroup=.*|AuditGroup=$admin_gid|" "$x/demo.session" >"$x/bad.session"
expect 1 "roles: one group for both roles is refused" -- ctl session up "$x/bad.session"
like "roles: the refusal says two roles, two groups" "$err" "two roles, two groups"

# --- up: the sockets ---
expect 0 "roles: the session comes up with its roles" -- ctl session up --log "$base/runner.log" "$x/demo.session"
is "roles: admin/ is 0710, root and the admins' group" "$(stat -c '%a %u %g' "$sd/admin")" "710 0 $admin_gid"
is "roles: admin/control.sock is 0660, root and the admins' group" "$(stat -c '%a %u %g' "$sd/admin/control.sock")" "660 0 $admin_gid"
is "roles: audit/ is 0710, root and the auditors' group" "$(stat -c '%a %u %g' "$sd/audit")" "710 0 $audit_gid"
is "roles: audit/control.sock is 0660, root and the auditors' group" "$(stat -c '%a %u %g' "$sd/audit/control.sock")" "660 0 $audit_gid"
is "roles: control.sock stays 0600 root's" "$(stat -c '%a %u %g' "$sd/control.sock")" "600 0 0"

# A marker in a data directory and in an inbox, for the reads below.
marker="marker-$RANDOM$RANDOM"
echo "$marker" >"$x/data/low/secret" && chmod 644 "$x/data/low/secret"
inbox_file=$(ls "$sd/inbox/low/" 2>/dev/null | head -1)

# --- the admin role ---
expect 0 "admin: status" -- as_admin "${C[@]}" session status "${D[@]}" demo
like "admin: status shows the cages" "$out" "^  low  s0  running"
expect 0 "admin: stop one cage" -- as_admin "${C[@]}" session stop "${D[@]}" demo low
expect 0 "admin: status after the stop" -- as_admin "${C[@]}" session status "${D[@]}" demo
like "admin: the cage is stopped, the others run" "$out" "^  low  s0  stopped"
like "admin: high runs on" "$out" "^  high  s2  running"
expect 0 "admin: start the cage again" -- as_admin "${C[@]}" session start "${D[@]}" demo low
expect 0 "admin: restart a cage" -- as_admin "${C[@]}" session restart "${D[@]}" demo high
expect 0 "admin by its primary group: status" -- as_admin_primary "${C[@]}" session status "${D[@]}" demo
expect 1 "admin: the trail is refused" -- as_admin "${C[@]}" session trail "${D[@]}" demo
like "admin: the trail needs the audit role" "$err" "may not ask 'trail': it needs the audit role"
expect 1 "admin: watch is refused" -- as_admin "${C[@]}" session watch "${D[@]}" demo
like "admin: watch needs root" "$err" "it needs root or the runner's uid"
expect 0 "admin: the public key is public" -- as_admin "${C[@]}" session audit-key "${D[@]}" demo

# --- no role ---
expect 1 "nobody: status is refused" -- as_nobody "${C[@]}" session status "${D[@]}" demo
like "nobody: no socket lets it in" "$err" "uid 64103 may not control session 'demo' .*no role's socket lets it in"
chmod 711 "$sd/admin"
expect 1 "nobody, admin/ opened by mistake: the socket's mode still refuses" -- as_nobody "${C[@]}" session stop "${D[@]}" demo low
like "nobody, admin/ opened by mistake: no socket lets it in" "$err" "no role's socket lets it in"
chmod 666 "$sd/admin/control.sock"
expect 1 "nobody, admin.sock opened by mistake: refused by the runner" -- as_nobody "${C[@]}" session stop "${D[@]}" demo low
like "nobody, admin.sock opened by mistake: it has no role" "$err" "uid 64103 may not control session 'demo' \(it has no role\)"
chmod 660 "$sd/admin/control.sock"
chmod 710 "$sd/admin"
expect 0 "nobody, admin.sock opened by mistake: the cage still runs" -- ctl session status "${D[@]}" demo
like "nobody: low is running" "$out" "^  low  s0  running"

# --- the admin reloads the rules: checked whole first ---
send_low_side() { ctl session exec demo low -- "${cc_env[@]}" "$cc" transfer send /etc/hostname --to side; }
expect 3 "reload: before, low to side is denied by the policy" -- send_low_side
cp "$x/demo.session" "$base/demo.session.orig"
sed -i 's/^Rule=@any @any deny$/Rule=side low allow\nRule=@any @any deny/' "$x/demo.session"
expect 1 "reload: a rule that lets a level down is refused" -- as_admin "${C[@]}" session reload "${D[@]}" demo
like "reload: the refusal says nothing changed, and why" "$err" "reload refused, nothing changed: .*side.*low"
expect 3 "reload: refused, low to side is still denied" -- send_low_side
sed "s/^Level=s0\$/Level=s1/" "$base/demo.session.orig" >"$x/demo.session"
expect 1 "reload: a cage's level changed is refused" -- as_admin "${C[@]}" session reload "${D[@]}" demo
like "reload: the refusal names the cage" "$err" "cage 'low' is gone, or its level"
sed 's/^Rule=@any @any deny$/Rule=low side allow\nRule=@any @any deny/' "$base/demo.session.orig" >"$x/demo.session"
expect 0 "reload: what low has at /usr/local, before" -- ctl session exec demo low -- stat -f -c %T /usr/local
[ "$out" != tmpfs ] && ok "reload: before, /usr/local of low is not a tmpfs" || not_ok "reload: before, /usr/local of low is not a tmpfs"
sed -i 's|^TemporaryFileSystem=/var/tmp$|TemporaryFileSystem=/var/tmp /usr/local|' "$x/low.cage"
expect 0 "reload: the admin reloads a new rule and a new profile" -- as_admin "${C[@]}" session reload "${D[@]}" demo
expect 0 "reload: low to side is now delivered" -- send_low_side
expect 0 "reload: the admin restarts low, made anew from its new profile" -- as_admin "${C[@]}" session restart "${D[@]}" demo low
expect 0 "reload: low runs again" -- ctl session status "${D[@]}" demo
like "reload: low is running after its restart" "$out" "^  low  s0  running"
expect 0 "reload: what low has at /usr/local, after its restart" -- ctl session exec demo low -- stat -f -c %T /usr/local
is "reload: low has its new profile's file system at /usr/local" "$out" "tmpfs"
expect 1 "audit: reload is refused" -- as_audit "${C[@]}" session reload "${D[@]}" demo
like "audit: reload needs the admin role" "$err" "may not ask 'reload': it needs the admin role"

# --- the audit role ---
expect 0 "audit: the public key" -- as_audit "${C[@]}" session audit-key "${D[@]}" demo
printf '%s\n' "$out" >"$base/machine.pem"
expect 0 "audit: the trail" -- as_audit "${C[@]}" session trail "${D[@]}" demo
printf '%s\n' "$out" >"$base/trail"
expect 0 "audit: the trail verifies with the public key only" -- as_audit "${C[@]}" audit verify --public-key "$base/machine.pem" --trail "$base/trail"
expect 0 "audit: and shows its records" -- as_audit "${C[@]}" audit show --public-key "$base/machine.pem" --trail "$base/trail"
like "audit: the admin's stop is recorded with its uid" "$out" "event=control src=uid%2064101 .*decision=done by=admin%20role reason=stop%20low"
like "audit: the admin's restart is recorded with its uid" "$out" "src=uid%2064101 .*reason=restart%20high"
like "audit: the refused reload is recorded as failed" "$out" "src=uid%2064101 .*decision=failed by=admin%20role reason=reload"
like "audit: the reload is recorded with its uid" "$out" "src=uid%2064101 .*decision=done by=admin%20role reason=reload"
expect 1 "audit: 'status' is refused" -- as_audit "${C[@]}" session status "${D[@]}" demo
like "audit: status needs the admin role" "$err" "may not ask 'status': it needs the admin role"
expect 1 "audit: 'restart low' is refused" -- as_audit "${C[@]}" session restart "${D[@]}" demo low
like "audit: restart needs the admin role" "$err" "may not ask 'restart low': it needs the admin role"
expect 1 "audit: 'stop low' is refused" -- as_audit "${C[@]}" session stop "${D[@]}" demo low
like "audit: stop needs the admin role" "$err" "may not ask 'stop low': it needs the admin role"
expect 1 "audit: 'start low' is refused" -- as_audit "${C[@]}" session start "${D[@]}" demo low
like "audit: start needs the admin role" "$err" "may not ask 'start low': it needs the admin role"
expect 1 "audit: down is refused" -- as_audit "${C[@]}" session down "${D[@]}" demo
expect 0 "audit: the session still runs" -- ctl session status "${D[@]}" demo

# --- the attack: every path the roles' users see ---
pids=$(ctl cage list | awk '$1 ~ /^demo\./ { print $3 }')
[ -n "$pids" ] && ok "attack: the cages' init pids are known" || not_ok "attack: the cages' init pids are known"
ctl session exec demo low -- sleep 30 >/dev/null 2>&1 &
sleep 0.5
pids="$pids $(pgrep -f '^sleep 30$' | head -1)"
paths=(
	"$x/data/low" "$x/data/low/secret" "$x/data/high" "$x/data/side"
	"$sd" "$sd/inbox/low" "$sd/inbox/high" "$sd/confirm.sock" "$sd/control.sock"
	"$state" "$state/mac.key" "$state/audit.log" "$state/audit.log.head" "$state/cages"
)
for p in $pids; do
	paths+=("/proc/$p/root/" "/proc/$p/root/data/secret" "/proc/$p/fd/" "/proc/$p/fd/0" "/proc/$p/environ" "/proc/$p/mem" "/proc/$p/cwd/")
done
for who in admin audit; do
	leaked=() reached=()
	for p in "${paths[@]}"; do
		if [ -d "$p" ] && as_$who ls -A "$p" >/dev/null 2>&1; then
			reached+=("$p")
		elif [ ! -d "$p" ] && as_$who head -c 64 "$p" >/dev/null 2>&1; then
			reached+=("$p")
		fi
		if as_$who cat "$p" 2>/dev/null | grep -q "$marker"; then
			leaked+=("$p")
		fi
	done
	is "attack: $who reads none of ${#paths[@]} paths (data, inboxes, /proc of the cages, state, key, log)" "${reached[*]}" ""
	is "attack: $who never sees the data's marker" "${leaked[*]}" ""
	as_$who head -c 1 "$x/demo.session" >/dev/null 2>&1 && ok "attack: $who reads what is meant for all (the check can see a read)" || not_ok "attack: $who reads what is meant for all (the check can see a read)"
	expect 1 "attack: $who cannot send through a cage's transfer socket" -- as_$who "${C[@]}" transfer send "$x/demo.session" --to high --socket "$sd/run/low/transfer.sock"
	like "attack: $who is hung up on by the mediator" "$err" "the mediator closed the connection"
	expect 1 "attack: $who cannot read the log with audit show" -- as_$who "${C[@]}" audit show
done
kill %1 2>/dev/null
wait 2>/dev/null

# --- the admin stops the session; the trail says who ---
expect 0 "admin: down" -- as_admin "${C[@]}" session down "${D[@]}" demo
[ ! -e "$sd/admin" ] && [ ! -e "$sd/audit" ] && ok "down: the roles' sockets are gone" || not_ok "down: the roles' sockets are gone"
expect 0 "down: the trail verifies" -- ctl audit show
like "down: the stop is recorded with the admin's uid" "$out" "src=uid%2064101 .*reason=stop prev="

tap_plan_end
