# SPDX-License-Identifier: LGPL-2.1-or-later
# Labels on paths and filehandles: the scenarios of tests/unit/test-label.c
# and tests/integration/label-cli.sh, through the binding. Rootless labels
# (user.clip.label) in every mode; trusted.clip.label as host root, and
# its refusal everywhere else.
use v5.36;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClipTest;
use Errno qw(ENODATA EBADMSG ENOKEY EPERM EBADF ENOENT EINVAL);
use Clip qw(:all);

my $dir = scratch();
my $ctx = Clip::Context->new(state_dir => "$dir/state");
my $R = LABEL_ROOTLESS;
my $s2 = Clip::Level->parse('s2:c1');

sub file ($name, $text = "report\n") { write_file("$dir/$name", $text) }

# The round trip on a path.
my $a = file('a');
$ctx->label_set($a, $s2, $R);
pass('label set: a path, rootless');
my $got = $ctx->label_get($a, $R);
isa_ok($got, 'Clip::Level', 'label get: the result');
ok($got == $s2, 'label get: the level that was set');
$ctx->label_verify($a, $R);
pass('label verify: a path');
ok(-s "$dir/state/mac.key" == 32 && (stat _)[2] % 01000 == 0600,
	'label set: made the 32-byte key 0600 in the state directory');

# The same through filehandles, read and write, left open.
open(my $rfh, '<', $a) or die;
$ctx->label_verify($rfh, $R);
pass('label verify: a read filehandle');
open(my $wfh, '>>', file('b')) or die;
$ctx->label_set($wfh, Clip::Level->parse('s1'), $R);
is($ctx->label_get($wfh, $R)->format, 's1', 'label set+get: a write filehandle');
ok(defined fileno($wfh), 'label: the filehandle is left open');

# A directory carries a label too.
mkdir "$dir/d";
$ctx->label_set("$dir/d", $s2, $R);
is($ctx->label_get("$dir/d", $R)->format, 's2:c1', 'label set+get: a directory');

# Refusals (test-label.c: copied value, missing label, wrong key, no key,
# wide key file, bad handles).
my $b = file('c');
my $value = `getfattr --absolute-names --only-values -n user.clip.label '$a' 2>/dev/null`;
if ($? == 0 && length $value) {
	system('setfattr', '-n', 'user.clip.label', '-v', $value, $b) == 0 or die "setfattr";
	refused(sub { $ctx->label_verify($b, $R) }, 'Clip::Error::Integrity', EBADMSG,
		'label verify refusal: a value copied to another file');
} else {
	fail('label verify refusal: getfattr could not read the value');
}
refused(sub { $ctx->label_verify(file('none'), $R) }, 'Clip::Error::NotFound', ENODATA,
	'label verify refusal: no label');
my $e = refused(sub { $ctx->label_get(file('none'), $R) }, 'Clip::Error::NotFound', ENODATA,
	'label get refusal: no label');
like($e->message, qr/no label/, 'label get refusal: the library\'s message');

my $other = Clip::Context->new(state_dir => "$dir/other");
refused(sub { $other->label_verify($a, $R) }, 'Clip::Error::NoKey', ENOKEY,
	'label verify refusal: no key in the state directory');
ok(!-e "$dir/other", 'label verify refusal: no state directory made');
$other->label_set(file('probe'), $s2, $R);
refused(sub { $other->label_verify($a, $R) }, 'Clip::Error::Integrity', EBADMSG,
	'label verify refusal: another key');

chmod 0644, "$dir/state/mac.key";
$e = refused(sub { Clip::Context->new(state_dir => "$dir/state")->label_verify($a, $R) },
	'Clip::Error::Permission', EPERM, 'label verify refusal: a key file 0644');
like($e->message, qr/0644/, 'label verify refusal: the message names the mode');
chmod 0600, "$dir/state/mac.key";

close $rfh;
refused(sub { $ctx->label_verify($rfh, $R) }, 'Clip::Error::BadFile', EBADF,
	'label verify refusal: a closed filehandle');
$e = refused(sub { $ctx->label_get("$dir/missing", $R) }, 'Clip::Error::NotFound', ENOENT,
	'label get refusal: a path that does not exist');
like($e->message, qr{cannot open '\Q$dir\E/missing'}, 'label get refusal: the path is named');
# A NUL byte would end the C string early: "short\0.txt" is not "short".
my $short = file('short');
$ctx->label_set($short, $s2, $R);
refused(sub { $ctx->label_get("$short\0.txt", $R) }, 'Clip::Error::Invalid', EINVAL,
	'label refusal: a NUL byte in a path');
eval { $ctx->label_set($a, 's1', $R) };
ok($@ && !ref $@, 'label set refusal: a text where a level is needed');
refused(sub { $ctx->label_set($a, $s2, 1 << 7) }, 'Clip::Error::Invalid', 22,
	'label set refusal: an unknown flag');

# Remove.
$ctx->label_remove($a, $R);
pass('label remove');
refused(sub { $ctx->label_verify($a, $R) }, 'Clip::Error::NotFound', ENODATA,
	'label remove: no label afterwards');
refused(sub { $ctx->label_remove($a, $R) }, 'Clip::Error::NotFound', ENODATA,
	'label remove refusal: no label to remove');

# trusted.clip.label: host root only.
my $t = file('trusted');
if (is_host_root()) {
	$ctx->label_set($t, $s2);
	is($ctx->label_get($t)->format, 's2:c1', 'label trusted: set+get as host root');
	refused(sub { $ctx->label_verify($t, $R) }, 'Clip::Error::NotFound', ENODATA,
		'label trusted: not seen as a rootless label');
} else {
	refused(sub { $ctx->label_set($t, $s2) }, 'Clip::Error::Permission', EPERM,
		'label trusted: refused without host root');
	refused(sub { $ctx->label_get($t) }, 'Clip::Error::NotFound', ENODATA,
		'label trusted: nothing to read without host root');
}
done_testing;
