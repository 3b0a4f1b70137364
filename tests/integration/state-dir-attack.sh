#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The state directory redirected (issue 20, finding 7; threat T34). As
# root, a real unprivileged process (uid 65534) plants a symbolic link or
# swaps a directory on the path of root's state directory, then root runs
# clipctl, which makes the MAC key there: nothing may be made where the
# attacker pointed, and the error names the component at fault. As a plain
# user (or uid 0 of a container) the same walk refuses the user's own link
# and a group-writable parent, and takes the user's sticky /tmp.
set -u
clipctl=$1
. "$(dirname "$0")/tap.sh"

attacker() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

base=$(mktemp -d /var/tmp/clip-state-XXXXXX)
trap 'rm -rf "$base" "$tap_tmp"' EXIT
chmod 755 "$base"
echo doc >"$base/doc"
c=("$clipctl")
is_root || c+=(--rootless)

if is_root; then
	# 1. A link in a directory the attacker owns (not sticky: the kernel's
	# fs.protected_symlinks does not apply there).
	mkdir -m 755 "$base/atk" "$base/target"
	chown 65534:65534 "$base/atk"
	attacker ln -s "$base/target" "$base/atk/clip"
	expect 1 "a link in an attacker's directory: refused" -- "${c[@]}" --state-dir "$base/atk/clip/state" label set "$base/doc" s1
	is "a link in an attacker's directory: no key where it points" "$(ls -A "$base/target")" ""
	like "a link in an attacker's directory: the error names it" "$err" "state directory $base/atk/clip/state: $base/atk is owned by uid 65534, not by root or uid 0"

	# 2. Root's state directory in a directory the attacker owns, swapped
	# for a link to a directory of root's between two runs.
	mkdir -m 755 "$base/atk2"
	mkdir -m 700 "$base/target2"
	chown 65534:65534 "$base/atk2"
	"${c[@]}" --state-dir "$base/atk2/state" label set "$base/doc" s1 >/dev/null 2>&1
	attacker sh -c 'mv "$1/state" "$1/old" 2>/dev/null; ln -s "$2" "$1/state"' - "$base/atk2" "$base/target2"
	expect 1 "a swapped state directory: refused" -- "${c[@]}" --state-dir "$base/atk2/state" label set "$base/doc" s1
	is "a swapped state directory: no key where the link points" "$(ls -A "$base/target2")" ""
	like "a swapped state directory: the error names the parent" "$err" "$base/atk2 is owned by uid 65534, not by root or uid 0"

	# 3. A link in a sticky world-writable directory (/tmp): followed by the
	# old code wherever fs.protected_symlinks is 0, here refused either way.
	mkdir -m 1777 "$base/sticky"
	mkdir -m 755 "$base/target3"
	attacker ln -s "$base/target3" "$base/sticky/clip"
	expect 1 "a link in a sticky directory: refused" -- "${c[@]}" --state-dir "$base/sticky/clip/state" label set "$base/doc" s1
	is "a link in a sticky directory: no key where it points" "$(ls -A "$base/target3")" ""
	like "a link in a sticky directory: the error names the link" "$err" "$base/sticky/clip is a symbolic link, not followed"

	# 4. The attacker's own directory, made before root's first run.
	attacker mkdir -m 700 "$base/sticky/pre"
	expect 1 "a state directory made by another user: refused" -- "${c[@]}" --state-dir "$base/sticky/pre" label set "$base/doc" s1
	like "a state directory made by another user: the owner is named" "$err" "state directory $base/sticky/pre is owned by uid 65534, not by uid 0"
	is "a state directory made by another user: no key in it" "$(ls -A "$base/sticky/pre")" ""
else
	skip "a link in an attacker's directory: refused" "no second uid to be the attacker"
	skip "a swapped state directory: refused" "no second uid to be the attacker"
fi

# Every mode: the caller's own link and a group-writable parent.
mkdir -m 700 "$base/mine"
ln -s "$base/mine" "$base/mylink"
expect 1 "the caller's own link: refused" -- "${c[@]}" --state-dir "$base/mylink/state" label set "$base/doc" s1
like "the caller's own link: named" "$err" "$base/mylink is a symbolic link, not followed"
is "the caller's own link: nothing made behind it" "$(ls -A "$base/mine")" ""
mkdir "$base/group"
chmod 775 "$base/group"
expect 1 "a group-writable parent: refused" -- "${c[@]}" --state-dir "$base/group/state" label set "$base/doc" s1
like "a group-writable parent: its mode is named" "$err" "$base/group is writable by group or others \(mode 0775\)"
expect 1 "a .. component: refused" -- "${c[@]}" --state-dir "$base/mine/../mine/state" label set "$base/doc" s1
like "a .. component: said" "$err" "has a \"..\" component"

# What works: a state directory under a sticky /tmp-like directory, the
# missing components made 0700.
mkdir -p -m 1777 "$base/sticky"
expect 0 "under a sticky directory: the key is made" -- "${c[@]}" --state-dir "$base/sticky/own/a/state" label set "$base/doc" s1
is "under a sticky directory: the components are 0700" "$(stat -c %a "$base/sticky/own" "$base/sticky/own/a" "$base/sticky/own/a/state" | tr '\n' ' ')" "700 700 700 "
is "under a sticky directory: the key is there" "$(ls "$base/sticky/own/a/state")" "mac.key"

tap_plan_end
