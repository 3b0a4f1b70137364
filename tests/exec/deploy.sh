#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# From a stock Debian to clip-python and clip-perl running real programs
# under SECBIT_EXEC_RESTRICT_FILE, prepared only as doc/exec.md says
# ("Deploying on Debian"): the command of the apt hook
# examples/apt/99clip-exec, run as apt runs it, on the system's own trees,
# then the application's tree blessed the same way. Then an upgrade that
# unpacks files 0644 breaks it, and the hook mends it, idempotently.
#
# The system's trees are the real ones (their files, owners, modes, links),
# seen through overlays on /usr and /etc whose upper layers live in a tmpfs
# of a private mount namespace: the command changes modes as it would on a
# real system, the host keeps its own (checked at the end), and everything
# goes with the namespace. Root only: as another user, the command could
# change none of root's files.
#
# usage: deploy.sh CLIPCTL CLIP_PYTHON CLIP_PERL SOURCE_ROOT
set -u
clipctl=$1
py=$2
pl=$3
src=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../common/root.sh"
if ! is_root; then
	echo "1..0 # SKIP needs root of the host: the system's trees belong to root"
	exit 0
fi
. "$here/lib.sh"
enter_namespace "$@"
setup_mounts
. "$here/../integration/tap.sh"

# overlay DIR: DIR as it is, but what changes in it goes to this namespace;
# $T/host/DIR keeps showing the host's DIR.
overlay() {
	local layer
	layer=$T/exec/overlay$(echo "$1" | tr / _)
	mkdir -p "$layer/upper" "$layer/work" "$T/host$1"
	mount --bind "$1" "$T/host$1"
	mount -t overlay clip-deploy -o "lowerdir=$1,upperdir=$layer/upper,workdir=$layer/work" "$1"
}
overlay /usr
overlay /etc

# An application, installed as files usually are (umask 022: 0644).
app=$T/exec/app
mkdir -p "$app/lib"
cat >"$app/app.py" <<'PY'
import json
import yaml
import appmod
doc = yaml.load("a: [1, 2]\nb: {c: d}\n", Loader=yaml.CSafeLoader)
print(json.dumps(doc, sort_keys=True), appmod.NAME, yaml._yaml.__file__.rsplit(".", 1)[1], sep=" | ")
PY
echo 'NAME = "appmod"' >"$app/appmod.py"
cat >"$app/app.pl" <<'PL'
use strict;
use warnings;
use POSIX qw(floor);
use FindBin qw($Bin);
use lib "$Bin/lib";
use AppMod;
print join(" | ", floor(2.7), AppMod::name(), POSIX::strftime("%Y", gmtime(0))), "\n";
PL
printf 'package AppMod;\nuse strict;\nsub name { "appmod" }\n1;\n' >"$app/lib/AppMod.pm"
chmod 644 "$app"/*.p? "$app/lib/AppMod.pm"
want_py='{"a": [1, 2], "b": {"c": "d"}} | appmod | so'
want_pl='2 | appmod | 1970'
trees=(--interpreter /usr/bin/python3 --interpreter /usr/bin/perl)
mode() { stat -c %a "$1"; }

# The application's own tree, blessed as doc/exec.md says.
expect 0 "the application's tree, blessed the same way" -- "$clipctl" exec-policy allow-tree "$app"
is "the application's tree: its four files" "$out" "$app: 4 files, 4 changed: passes"

# Stock: neither interpreter starts under restrict-file.
expect 1 "stock: clip-python cannot start under restrict-file" -- \
	exec_as root restrict-file "$py" "$app/app.py"
like "stock: the standard library is 0644" "$err" "encodings/__init__.py may not run as code: it is not executable by this user \(mode 0644\)"
expect 13 "stock: clip-perl cannot load strict.pm under restrict-file" -- \
	exec_as root restrict-file "$pl" "$app/app.pl"
like "stock: strict.pm is 0644" "$err" "Can't run strict.pm: .*strict.pm may not run as code: it is not executable"
expect 1 "stock: allow-tree --check says the trees fail" -- \
	"$clipctl" exec-policy allow-tree --check "${trees[@]}"
like "stock: the standard library fails" "$out" "^/usr/lib/python3\.[0-9]+: [0-9]+ files, [1-9][0-9]* to change: fails$"

# The hook: valid apt configuration, and its command as apt runs it.
hook=$(apt-config -c "$src/examples/apt/99clip-exec" dump --format '%v%n' DPkg::Post-Invoke | grep clipctl)
status=$?
is "the hook is valid apt configuration, with one DPkg::Post-Invoke command" "$status $(wc -l <<<"$hook")" "0 1"
run_hook() { PATH=$(dirname "$clipctl"):$PATH sh -c "$hook"; }
expect 0 "the hook's command runs" -- run_hook
is "the hook's command: nothing to report" "$err" ""
expect 0 "the trees pass now" -- "$clipctl" exec-policy allow-tree --check "${trees[@]}" /etc/python3.*
like "the trees pass now: the standard library" "$out" "^/usr/lib/python3\.[0-9]+: [0-9]+ files, 0 to change: passes$"
like "the trees pass now: perl-base" "$out" "^/usr/lib/[a-z0-9_-]+/perl-base: [0-9]+ files, 0 to change: passes$"

for id in root user; do
	expect 0 "$id, restrict-file: clip-python runs the application" -- \
		exec_as "$id" restrict-file "$py" "$app/app.py"
	is "$id, restrict-file: json, yaml with libyaml's extension, a local module" "$out" "$want_py"
	is "$id, restrict-file: clip-python says nothing (no .pth file skipped)" "$err" ""
	expect 0 "$id, restrict-file: clip-perl runs the application" -- \
		exec_as "$id" restrict-file "$pl" "$app/app.pl"
	is "$id, restrict-file: strict, POSIX (XS), FindBin, a local module" "$out" "$want_pl"
	is "$id, restrict-file: clip-perl says nothing" "$err" ""
	expect 0 "$id, both bits locked: clip-python" -- \
		exec_as "$id" restrict-file,restrict-file-locked,deny-interactive,deny-interactive-locked \
		"$py" "$app/app.py"
	expect 0 "$id, both bits locked: clip-perl" -- \
		exec_as "$id" restrict-file,restrict-file-locked,deny-interactive,deny-interactive-locked \
		"$pl" "$app/app.pl"
done

# An upgrade: dpkg unpacks a changed module and a new one, 0644, and
# py3compile writes their .pyc files 0644.
yaml_init=/usr/lib/python3/dist-packages/yaml/__init__.py
chmod 644 "$yaml_init" /usr/lib/python3/dist-packages/yaml/__pycache__/__init__.cpython-3*.pyc
echo 'NAME = "new"' >/usr/lib/python3/dist-packages/clip_deploy_new.py
chmod 644 /usr/lib/python3/dist-packages/clip_deploy_new.py
expect 1 "after an upgrade: an unpacked module is refused" -- \
	exec_as root restrict-file "$py" "$app/app.py"
like "after an upgrade: yaml, 0644 again" "$err" "yaml/__init__.py may not run as code"
expect 0 "after an upgrade: the hook runs" -- run_hook
is "after an upgrade: the changed module" "$(mode "$yaml_init")" 755
is "after an upgrade: the new module" "$(mode /usr/lib/python3/dist-packages/clip_deploy_new.py)" 755
expect 0 "after an upgrade: the application runs again" -- \
	exec_as user restrict-file "$py" "$app/app.py"
is "after an upgrade: its output" "$out" "$want_py"
modes() { find /usr/lib/python3* /usr/share/perl* /usr/lib/*/perl* /etc/perl /etc/python3.* -printf '%m %p\n' | md5sum; }
before=$(modes)
expect 0 "again: the hook runs" -- run_hook
is "again: it changes nothing" "$(modes)" "$before"

# The host saw none of it.
is "the host's standard library is still 0644" "$(mode "$T/host/usr/lib/python3.11/encodings/__init__.py")" 644
is "the host's strict.pm is still 0644" "$(mode "$T/host$(readlink -f /usr/share/perl/5.36)/strict.pm")" 644
if [ -e "$T/host/usr/lib/python3/dist-packages/clip_deploy_new.py" ]; then
	not_ok "the host has no new module"
else
	ok "the host has no new module"
fi

tap_plan_end
