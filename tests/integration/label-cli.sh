#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# clipctl label, driven as an administrator would, on tmpfs and on ext4:
# the round trip, then a label copied with getfattr --dump / setfattr
# --restore, an edited value, a truncated one, a wrong key, a wide key
# file, and rootless mode as an unprivileged user.
set -u
clipctl=$1
. "$(dirname "$0")/tap.sh"

as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

fs_dir() { # a fresh directory on a file system whose magic number is $1
	local base
	for base in $2; do
		[ "$(stat -f -c %t "$base" 2>/dev/null)" = "$1" ] || continue
		mktemp -d "$base/clip-it-XXXXXX" && return
	done
	return 1
}

scenario() { # FSTYPE DIR ATTR [--rootless]
	local fs=$1 d=$2 attr=$3 mode=${4:-}
	local c=("$clipctl" --state-dir "$d/state" $mode)
	echo "# $fs, $attr"
	echo "report A" >"$d/a"
	echo "report B" >"$d/b"
	expect 0 "$fs $attr: set" -- "${c[@]}" label set "$d/a" s2:c1
	expect 0 "$fs $attr: get" -- "${c[@]}" label get "$d/a"
	is "$fs $attr: get prints the level" "$out" "s2:c1"
	expect 0 "$fs $attr: verify" -- "${c[@]}" label verify "$d/a"
	like "$fs $attr: verify says valid" "$out" "valid \(s2:c1\)"

	# getfattr --dump of A restored onto B: same bytes, another inode.
	(cd "$d" && getfattr -n "$attr" --dump a | sed 's/^# file: a$/# file: b/' | setfattr --restore=-)
	is "$fs $attr: the value was really copied" "$(getfattr --absolute-names --only-values -n "$attr" "$d/b" 2>/dev/null)" "$(getfattr --absolute-names --only-values -n "$attr" "$d/a")"
	expect 1 "$fs $attr: a copied label is invalid" -- "${c[@]}" label verify "$d/b"
	like "$fs $attr: the reason is given" "$err" "does not verify"

	value=$(getfattr --absolute-names --only-values -n "$attr" "$d/a")
	setfattr -n "$attr" -v "${value/v1 s2:c1/v1 s3:c1}" "$d/a"
	expect 1 "$fs $attr: an edited level is invalid" -- "${c[@]}" label verify "$d/a"
	setfattr -n "$attr" -v "${value:0:40}" "$d/a"
	expect 1 "$fs $attr: a truncated value is invalid" -- "${c[@]}" label verify "$d/a"
	like "$fs $attr: truncation is named" "$err" "truncated or malformed"
	setfattr -n "$attr" -v "$value" "$d/a"
	expect 0 "$fs $attr: the original value verifies again" -- "${c[@]}" label verify "$d/a"

	expect 0 "$fs $attr: a second state directory gets its own key" -- "$clipctl" --state-dir "$d/other" $mode label set "$d/b" s1
	expect 1 "$fs $attr: a label made with another key is invalid" -- "$clipctl" --state-dir "$d/other" $mode label verify "$d/a"
	expect 0 "$fs $attr: remove" -- "${c[@]}" label remove "$d/a"
	expect 1 "$fs $attr: a missing label is invalid" -- "${c[@]}" label verify "$d/a"
	like "$fs $attr: missing is named" "$err" "no label"
}

for fs in tmpfs ext4; do
	case $fs in
	tmpfs) magic=1021994 bases="/dev/shm /run /tmp" ;;
	ext4) magic=ef53 bases="/var/tmp /tmp /root" ;;
	esac
	d=$(fs_dir "$magic" "$bases") || { not_ok "$fs: no writable $fs file system here"; continue; }
	chmod 755 "$d"
	if is_root; then
		mkdir "$d/trusted"
		scenario "$fs" "$d/trusted" trusted.clip.label
		# Rootless mode as an unprivileged user, in a directory of theirs.
		mkdir "$d/user" && chown 65534:65534 "$d/user"
		expect 0 "$fs: unprivileged user, rootless set" -- as_user "$clipctl" --state-dir "$d/user/state" --rootless label set "$d/user" s1:c3
		expect 0 "$fs: unprivileged user, rootless verify" -- as_user "$clipctl" --state-dir "$d/user/state" --rootless label verify "$d/user"
		expect 1 "$fs: unprivileged user cannot write a trusted label" -- as_user "$clipctl" --state-dir "$d/user/state" label set "$d/user" s1
		like "$fs: and is told why" "$err" "CAP_SYS_ADMIN"
	else
		skip "$fs trusted.clip.label scenario" "needs root"
	fi
	mkdir "$d/rootless"
	scenario "$fs" "$d/rootless" user.clip.label --rootless
	rm -rf "$d"
done

# The key file's protections, through the tool.
d=$(mktemp -d)
echo doc >"$d/f"
expect 0 "a first label creates the key" -- "$clipctl" --state-dir "$d/state" --rootless label set "$d/f" s1
is "the key file is 0600" "$(stat -c %a "$d/state/mac.key")" "600"
is "the state directory is 0700" "$(stat -c %a "$d/state")" "700"
chmod 0644 "$d/state/mac.key"
expect 1 "a key file with mode 0644 is refused" -- "$clipctl" --state-dir "$d/state" --rootless label verify "$d/f"
like "the mode is named" "$err" "0644"
chmod 0600 "$d/state/mac.key"
expect 0 "mode 0600 again: valid" -- "$clipctl" --state-dir "$d/state" --rootless label verify "$d/f"
rm "$d/state/mac.key"
expect 1 "a missing key is refused" -- "$clipctl" --state-dir "$d/state" --rootless label verify "$d/f"
like "and named" "$err" "no key"
[ ! -e "$d/state/mac.key" ] && ok "verifying does not create a key" || not_ok "verifying does not create a key"
expect 2 "a bad level is a usage error" -- "$clipctl" --state-dir "$d/state" label set "$d/f" s1:c9999
expect 1 "a missing file" -- "$clipctl" --state-dir "$d/state" label verify "$d/nonexistent"
expect 2 "a relative state directory" -- "$clipctl" --state-dir relative label verify "$d/f"
expect 2 "an unknown key provider" -- "$clipctl" --state-dir "$d/state" --key-provider nonsense --rootless label verify "$d/f"
like "is named" "$err" "unknown key provider 'nonsense'"
expect 0 "the file key provider by name" -- "$clipctl" --state-dir "$d/state" --key-provider file --rootless label set "$d/f" s1
mkfifo "$d/fifo"
expect 1 "a fifo carries no label" -- "$clipctl" --state-dir "$d/state" --rootless label set "$d/fifo" s1

# Without libcrypto (libclip loads it when used, doc/conventions.md): no
# label can be set or verified, and nothing says valid; the rest works. It
# is hidden under /dev/null in a mount namespace of its own.
crypto=$(ldconfig -p | awk '/libcrypto\.so\.3 /{ print $NF; exit }')
# Not root: in a user namespace of its own, as its uid 0 (the mount needs it).
[ "$(id -u)" = 0 ] && ns=(unshare -m) || ns=(unshare -Urm)
if [ -n "$crypto" ] && "${ns[@]}" true 2>/dev/null; then
	hide=("${ns[@]}" sh -c 'mount --bind /dev/null "$(readlink -f "$0")" && exec "$@"' "$crypto")
	r=("$clipctl" --state-dir "$d/state" --rootless)
	expect 0 "with libcrypto, the label verifies" -- "${r[@]}" label verify "$d/f"
	expect 1 "without libcrypto, verify fails" -- "${hide[@]}" "${r[@]}" label verify "$d/f"
	like "and names the library" "$err" "libcrypto \(OpenSSL 3\) cannot be loaded"
	is "and says nothing is valid" "$out" ""
	expect 1 "without libcrypto, set fails" -- "${hide[@]}" "${r[@]}" label set "$d/f" s2
	expect 0 "the label is unchanged" -- "${r[@]}" label get "$d/f"
	is "still s1" "$out" "s1"
	expect 0 "without libcrypto, levels still work" -- "${hide[@]}" "${r[@]}" level check s2 s1
else
	skip "without libcrypto" "no private mount namespace (${ns[*]} refused) or no libcrypto in ldconfig's cache"
fi
rm -rf "$d"

tap_plan_end
