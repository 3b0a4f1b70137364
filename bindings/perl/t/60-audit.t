# SPDX-License-Identifier: LGPL-2.1-or-later
# The audit log: written through Clip::Audit as clipd writes it
# (tests/integration/audit-append.c), then verified and shown, and refused
# once edited (tests/unit/test-audit.c, tests/integration/audit-trail.sh);
# the signed trail exported and verified with the public key alone; the
# audit role's side of a session that does not run.
use v5.36;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClipTest;
use Errno qw(EBADMSG EBUSY EEXIST ENOENT EINVAL E2BIG ENOKEY ESRCH);
use Clip qw(:all);

my $dir = scratch();
my $ctx = Clip::Context->new(state_dir => "$dir/state");

my $log = Clip::Audit->open($ctx);
isa_ok($log, 'Clip::Audit', 'audit open: the state directory\'s log');
for my $i (0 .. 2) {
	$log->append(event => 'request', source => 'low', source_level => 's0', target => 'high',
		target_level => 's2', name => "doc-$i", length => 100 + $i,
		sha256 => pack('H*', 'ab' x 32), decision => 'allow', decided_by => 'user');
}
pass('audit append: three records');

# One writer: a second open is refused while the first handle lives, and
# works as soon as it is gone (DESTROY at once, not at a later collection).
refused(sub { Clip::Audit->open($ctx) }, 'Clip::Error::Busy', EBUSY,
	'audit open refusal: another writer holds the log');
undef $log;
ok(eval { Clip::Audit->open($ctx); 1 }, 'audit open: free again once the handle is gone')
	or diag($@);

is($ctx->audit_verify, 3, 'audit verify: the record count');
my @records = $ctx->audit_show;
is(scalar @records, 3, 'audit show: every record');
like($records[0], qr/event=request src=low srclevel=s0 dst=high dstlevel=s2 name=doc-0 size=100 sha256=(ab){32} decision=allow by=user/,
	'audit show: a record as clipctl audit show prints it');
my ($count, $warnings, @r) = $ctx->audit_check(records => 1);
is($count, 3, 'audit check: the count');
is($warnings, 0, 'audit check: no warnings');
is_deeply(\@r, \@records, 'audit check: the same records');
is(scalar $ctx->audit_check, 3, 'audit check: the count in scalar context');

# Another directory and name, given as a path and as a handle.
mkdir "$dir/logs", 0700;
my $other = Clip::Audit->open($ctx, dir => "$dir/logs", name => 'x.log');
$other->append(event => 'decision', source => 'a', target => 'b', name => 'n',
	decision => 'deny', decided_by => 'policy', reason => 'no rule');
undef $other;
is($ctx->audit_verify(dir => "$dir/logs", name => 'x.log'), 1, 'audit verify: dir and name');
is(($ctx->audit_show(dir => "$dir/logs", name => 'x.log'))[0] =~ /reason=no%20rule/ ? 1 : 0, 1,
	'audit show: the reason, escaped');

# Refusals.
refused(sub { $ctx->audit_verify(dir => "$dir/logs", name => 'none.log') },
	'Clip::Error::NotFound', ENOENT, 'audit verify refusal: no log');
refused(sub { $ctx->audit_verify(dir => "$dir/nodir") }, 'Clip::Error::NotFound', ENOENT,
	'audit verify refusal: no directory');
refused(sub { Clip::Context->new(state_dir => "$dir/other")->audit_verify(dir => "$dir/state") },
	'Clip::Error::Integrity', EBADMSG, 'audit verify refusal: another state directory\'s key');
my $w = Clip::Audit->open($ctx, dir => "$dir/logs", name => 'y.log');
refused(sub { $w->append(event => 'request', sha256 => 'short') }, 'Clip::Error::Invalid', EINVAL,
	'audit append refusal: a sha256 that is not 32 bytes');
refused(sub { $w->append(event => 'request', name => 'n' x 5000) }, 'Clip::Error::Invalid', E2BIG,
	'audit append refusal: a field over 4096 bytes');
refused(sub { Clip::Audit->open($ctx, name => 'a/b') }, 'Clip::Error::Invalid', EINVAL,
	'audit open refusal: a name with a slash');
undef $w;

# The signed trail: exported, then verified by a collector with the public
# key alone (tests/integration/audit-trail.sh, "signed").
my $key = $ctx->audit_public_key;
like($key, qr/\A-----BEGIN PUBLIC KEY-----\n.*-----END PUBLIC KEY-----\n\z/s,
	'audit public key: the PEM of the signing key');
{
	my $log = Clip::Audit->open($ctx);
	$log->export("$dir/trail");
	is((stat "$dir/trail")[2] & 07777, 0600, 'audit export: a new file, the caller\'s alone');
	refused(sub { $log->export("$dir/trail") }, 'Clip::Error::Busy', EEXIST,
		'audit export refusal: an existing file');
	open(my $out, '>', "$dir/trail-fh") or die;
	$log->export($out);
	close $out;
}
is(scalar Clip::audit_verify_public("$dir/trail", $key), 3,
	'audit verify public: the count, with the key alone');
my ($n, @pub) = Clip::audit_verify_public("$dir/trail", $key);
is_deeply([$n, @pub], [3, @records], 'audit verify public: the records in list context');
open(my $trail, '<', "$dir/trail-fh") or die;
is(scalar Clip::audit_verify_public($trail, $key), 3,
	'audit verify public: a trail exported to a filehandle, read from one');
close $trail;
{
	open(my $in, '<', "$dir/trail") or die;
	my $t = do { local $/; <$in> };
	(my $cut = $t) =~ s/name=doc-1/name=doc-9/ or die 'nothing to edit';
	write_file("$dir/trail-edited", $cut);
}
refused(sub { Clip::audit_verify_public("$dir/trail-edited", $key) }, 'Clip::Error::Integrity',
	EBADMSG, 'audit verify public refusal: an edited record');
mkdir "$dir/state2", 0700;
my $ctx2 = Clip::Context->new(state_dir => "$dir/state2");
refused(sub { $ctx2->audit_public_key }, 'Clip::Error::NoKey', ENOKEY,
	'audit public key refusal: no master key yet');
Clip::Audit->open($ctx2)->append(event => 'request');
refused(sub { Clip::audit_verify_public("$dir/trail", $ctx2->audit_public_key) },
	'Clip::Error::Integrity', EBADMSG, 'audit verify public refusal: another machine\'s key');
refused(sub { Clip::audit_verify_public("$dir/trail", 'not a key') }, 'Clip::Error::Invalid',
	EINVAL, 'audit verify public refusal: not a PEM key');
refused(sub { Clip::audit_verify_public("$dir/none", $key) }, 'Clip::Error::NotFound', ENOENT,
	'audit verify public refusal: no trail');

# The audit role's side: no runner of that session answers (the Python
# binding's 09-session.py reads a running one's).
refused(sub { $ctx->session_trail('nosuch', state_dir => "$dir/sessions") },
	'Clip::Error::NotFound', ESRCH, 'session trail refusal: no such session running');
refused(sub { $ctx->session_audit_key('nosuch', state_dir => "$dir/sessions") },
	'Clip::Error::NotFound', ESRCH, 'session audit key refusal: no such session running');
refused(sub { $ctx->session_audit_key("no\0such") }, 'Clip::Error::Invalid', EINVAL,
	'session audit key refusal: a NUL byte in the name');

# An edited record: the log no longer verifies.
my $path = "$dir/state/audit.log";
open(my $fh, '+<', $path) or die "$path: $!";
my $text = do { local $/; <$fh> };
(my $edited = $text) =~ s/decision=allow/decision=deny!/ or die 'nothing to edit';
seek($fh, 0, 0);
truncate($fh, 0);
print $fh $edited;
close $fh;
my $e = refused(sub { $ctx->audit_verify }, 'Clip::Error::Integrity', EBADMSG,
	'audit verify refusal: an edited record');
like($e->message, qr/record/, 'audit verify refusal: the message names the record');
refused(sub { $ctx->audit_show }, 'Clip::Error::Integrity', EBADMSG,
	'audit show refusal: an edited record');
refused(sub { $ctx->audit_check }, 'Clip::Error::Integrity', EBADMSG,
	'audit check refusal: an edited record');
refused(sub { Clip::Audit->open($ctx) }, 'Clip::Error::Integrity', EBADMSG,
	'audit open refusal: a log that does not verify is not appended to');
done_testing;
