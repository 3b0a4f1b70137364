# SPDX-License-Identifier: LGPL-2.1-or-later
# The transfer client against a real clipd (the one just built): the
# delivered and refused scenarios of tests/integration/transfer-e2e.sh,
# through the binding, then the audit log clipd wrote, verified; a cage's
# report; a session runner's trail read as its audit role reads it.
use v5.36;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClipTest;
use Digest::SHA qw(sha256_hex);
use Errno qw(ENOENT EINVAL E2BIG EACCES EBADMSG ESRCH);
use Time::HiRes ();
use POSIX ();
use Clip qw(:all);

my $clipd = $ENV{CLIP_TEST_CLIPD} // die "CLIP_TEST_CLIPD not set\n";
my $confirm = $ENV{CLIP_TEST_CONFIRM} // die "CLIP_TEST_CONFIRM not set\n";
my $d = scratch();
my $rootless = !is_host_root();
mkdir "$d/$_" or die "$d/$_: $!" for qw(cfg state run in-low in-mid in-high);
chmod 0700, "$d/state";
write_file("$d/cfg/policy", "low mid allow\nlow high ask\n");
write_file("$d/cfg/cages", join('', map { "$_->[0] $_->[1] $d/in-$_->[0] $d/run/$_->[0].sock\n" }
	['low', 's0'], ['mid', 's1'], ['high', 's2']));

# start(LOG, PROGRAM, ARGS...): a daemon that says READY=1 on fd 3; its
# pid and that line.
sub start ($log, @cmd) {
	pipe(my $ready_r, my $ready_w) or die "pipe: $!";
	my $pid = fork // die "fork: $!";
	if ($pid == 0) {
		close $ready_r;
		POSIX::dup2(fileno($ready_w), 3) or POSIX::_exit(126);
		open(STDOUT, '>>', $log);
		open(STDERR, '>>', $log);
		no warnings 'exec';
		exec { $cmd[0] } (@cmd, '--ready-fd', '3');
		POSIX::_exit(127);
	}
	close $ready_w;
	my $line = eval {
		local $SIG{ALRM} = sub { die "timeout\n" };
		alarm 20;
		my $l = <$ready_r>;
		alarm 0;
		$l;
	} // '';
	return ($pid, $line);
}
my ($pid, $agent_pid, $session_pid);
END {
	for my $p ($session_pid, $agent_pid, $pid) {
		next unless $p;
		kill 'TERM', $p;
		waitpid($p, 0);
	}
}

# clipd on that configuration.
($pid, my $line) = start("$d/clipd.log", $clipd, '--config', "$d/cfg", '--state-dir', "$d/state",
	'--agent-socket', "$d/run/confirm.sock", '--confirm-timeout-ms', '1000',
	$rootless ? ('--rootless') : ());
is($line, "READY=1\n", 'transfer: clipd is ready') or do {
	diag(`cat $d/clipd.log`);
	BAIL_OUT('no clipd');
};

my $doc = "$d/doc.bin";
write_file($doc, join('', map { chr(($_ * 7) % 256) } 1 .. 3000));
my $sum = do { open(my $fh, '<:raw', $doc) or die; local $/; sha256_hex(<$fh>) };

# Delivered: up, allowed by the policy.
my $t = Clip::Transfer->send(socket => "$d/run/low.sock", file => $doc, to => 'mid',
	note => 'quarterly figures');
isa_ok($t, 'Clip::Transfer', 'transfer send: the result');
ok($t->delivered, 'transfer send: low to mid delivered') or diag($t->message);
is($t->status, TRANSFER_DELIVERED, 'transfer status: TRANSFER_DELIVERED');
is($t->errno, 0, 'transfer errno: 0 when delivered');
is($t->name, 'doc.bin', 'transfer name: as given in the inbox');
my ($size, $sha, $encrypted) = $t->digest;
is($size, 3000, 'transfer digest: the size');
is($sha, $sum, 'transfer digest: the SHA-256');
ok(!$encrypted, 'transfer digest: not encrypted (up)');
is($t->check, $t, 'transfer check: a delivered transfer returns itself');
my $got = do { open(my $fh, '<:raw', "$d/in-mid/doc.bin") or die; local $/; sha256_hex(<$fh>) };
is($got, $sum, 'transfer send: byte-identical in the target inbox');
my $core = Clip::Context->new(state_dir => "$d/state");
is($core->label_get("$d/in-mid/doc.bin", $rootless ? LABEL_ROOTLESS : 0)->format, 's1',
	'transfer send: the delivered file is labelled with the target level');

# A filehandle as the document; the same name again gets a suffix.
open(my $fh, '<', $doc) or die;
$t = Clip::Transfer->send(socket => "$d/run/low.sock", file => $fh, to => 'mid');
ok($t->delivered, 'transfer send: a filehandle as the document');
ok(defined $t->name && $t->name ne 'doc.bin', 'transfer name: a second document is not the first\'s name');

# Refused: a value, not an exception; check() makes it one.
$t = Clip::Transfer->send(socket => "$d/run/mid.sock", file => $doc, to => 'low');
ok(!$t->delivered, 'transfer refusal: down is not delivered');
is($t->status, TRANSFER_DENIED_POLICY, 'transfer refusal: TRANSFER_DENIED_POLICY');
is($t->message, 'no rule allows it', 'transfer refusal: the mediator\'s reason');
ok(!-e "$d/in-low/doc.bin", 'transfer refusal: nothing in the inbox');
eval { $t->check };
ok(ref $@ && $@->isa('Clip::Error::Permission') && $@->message eq 'denied by policy: no rule allows it',
	'transfer check refusal: croaks the denial as a Clip::Error::Permission')
	or diag(ref $@ ? ref($@) . ' ' . $@->message : $@);
# Asked, nobody to ask: refused by the mediator (no agent).
$t = Clip::Transfer->send(socket => "$d/run/low.sock", file => $doc, to => 'high');
ok(!$t->delivered && $t->status != TRANSFER_DELIVERED, 'transfer refusal: ask without an agent')
	or diag($t->message);

# Without waiting: request, then the fd polled and dispatch.
use IO::Select;
$t = Clip::Transfer->request(socket => "$d/run/low.sock", file => $doc, to => 'mid', name => 'polled.bin');
ok(IO::Select->new($t->fileno)->can_read(20), 'transfer request: the fd polls readable at the answer');
ok($t->dispatch, 'transfer dispatch: the answer arrived');
ok($t->delivered && $t->name eq 'polled.bin', 'transfer request: delivered');
# An agent that never answers: pending, wait times out, then the mediator's
# own timeout (1 s) denies it.
($agent_pid, $line) = start("$d/agent.log", $confirm, '--socket', "$d/run/confirm.sock",
	'--auto', 'never');
is($line, "READY=1\n", 'transfer: an agent that never answers is greeted');
$t = Clip::Transfer->request(socket => "$d/run/low.sock", file => $doc, to => 'high');
ok(!defined $t->status && !$t->delivered, 'transfer request: pending, status undef');
ok(!$t->dispatch, 'transfer dispatch: no answer yet');
eval { $t->check };
ok(ref $@ && $@->isa('Clip::Error::Timeout'), 'transfer check refusal: no answer yet (Timeout)');
ok(!$t->wait(100), 'transfer wait: false when no answer within 100 ms');
ok($t->wait(-1), 'transfer wait: true once answered');
is($t->status, TRANSFER_DENIED_USER, 'transfer wait: the unanswered question is denied')
	or diag($t->message);

# Refusals before any answer: croaked.
eval { Clip::Transfer->send(socket => "$d/run/none.sock", file => $doc, to => 'mid') };
ok(ref $@ && $@->isa('Clip::Error::NotFound') && $@->errno == ENOENT,
	'transfer send refusal: no mediator on that socket (NotFound)')
	or diag(ref $@ ? $@->message : $@);
eval { Clip::Transfer->request(socket => "$d/run/none.sock", file => $doc, to => 'mid') };
ok(ref $@ && $@->isa('Clip::Error::NotFound') && $@->errno == ENOENT,
	'transfer request refusal: no mediator on that socket (NotFound)');
eval { Clip::Transfer->send(socket => "$d/run/low.sock", file => $doc) };
ok(ref $@ && $@->isa('Clip::Error::Invalid') && $@->errno == EINVAL,
	'transfer send refusal: no target');
eval { Clip::Transfer->send(socket => "$d/run/low.sock", file => "$d/missing", to => 'mid') };
ok(ref $@ && $@->isa('Clip::Error::NotFound'), 'transfer send refusal: no such document');

# A cage's one-way report of a W^X refusal (tests/unit/test-agent.c's feed
# tests): clipd records it as low's, the cage of the socket it came on,
# whatever the subject names.
Clip::Transfer->report(socket => "$d/run/low.sock", subject => '/data/high.py', error => EACCES,
	text => 'mounted noexec');
pass('transfer report: sent, one way');
my @reports;
for (1 .. 100) {
	@reports = grep { /event=exec-refused/ } $core->audit_show;
	last if @reports;
	Time::HiRes::sleep(0.05);
}
is(scalar @reports, 1, 'transfer report: one exec-refused record in the trail');
like($reports[0] // '', qr/ src=low .* name=\/data\/high\.py /,
	'transfer report: recorded as the cage of its socket, with the subject');
for my $bad ([kind => 0], [kind => 2], [error => -1], [text => "two\nlines"]) {
	refused(sub { Clip::Transfer->report(socket => "$d/run/none.sock", subject => '/x',
			error => EACCES, @$bad) }, 'Clip::Error::Invalid', EINVAL,
		"transfer report refusal: $bad->[0] $bad->[1]");
}
refused(sub { Clip::Transfer->report(socket => "$d/run/none.sock", subject => 'a' x 1100) },
	'Clip::Error::Invalid', E2BIG, 'transfer report refusal: a subject over 1024 bytes');
refused(sub { Clip::Transfer->report(socket => "$d/run/none.sock", subject => '/x') },
	'Clip::Error::NotFound', ENOENT, 'transfer report refusal: no mediator on that socket');
refused(sub { Clip::Transfer->report(socket => "$d/run/low.sock") },
	'Clip::Error::Invalid', EINVAL, 'transfer report refusal: no subject');

# The audit role's side of a running session (clipd --session, the runner):
# its trail read through the runner, verified with the key the runner
# gives, which is this machine's. A document sent on low's socket from
# outside the cage is recorded as low's, delivered or (as the host's root,
# not the cage's uid) refused: the trail's record.
mkdir "$d/sess-state", 0700;
write_file("$d/t.session", <<"EOF");
[Session]
Name=plsess
StateDirectory=$d/sess
[Cage]
Name=low
Level=s0
DataDirectory=data/low
DataEncryption=none
[Cage]
Name=high
Level=s2
DataDirectory=data/high
DataEncryption=none
[Transfer]
Rule=low high allow
EOF
($session_pid, $line) = start("$d/session.log", $clipd, '--session', "$d/t.session",
	'--state-dir', "$d/sess-state");
is($line, "READY=1\n", 'session trail: the runner is ready') or diag(`cat $d/session.log`);
my $sctx = Clip::Context->new(state_dir => "$d/sess-state");
eval { Clip::Transfer->send(socket => "$d/sess/run/low/transfer.sock", file => $doc, to => 'high') };
my $skey = $sctx->session_audit_key('plsess', state_dir => "$d/sess");
is($skey, $sctx->audit_public_key, 'session audit key: the runner\'s, this machine\'s key');
my $sfh = $sctx->session_trail('plsess', state_dir => "$d/sess");
my ($sn, @srecords) = Clip::audit_verify_public($sfh, $skey);
close $sfh;
ok($sn >= 1 && $sn == @srecords, "session trail: it verifies with that key ($sn records)");
ok((grep { / src=low / } @srecords), 'session trail: the record of low\'s socket is in it')
	or diag(join("\n", @srecords));
refused(sub { Clip::audit_verify_public($sctx->session_trail('plsess', state_dir => "$d/sess"),
		$core->audit_public_key) }, 'Clip::Error::Integrity', EBADMSG,
	'session trail refusal: another machine\'s key does not verify it');
is($sctx->session_down('plsess', state_dir => "$d/sess"), 0, 'session down: the runner stopped it');
waitpid($session_pid, 0);
is($?, 0, 'session down: the runner exited, and well');
$session_pid = 0;
refused(sub { $sctx->session_trail('plsess', state_dir => "$d/sess") }, 'Clip::Error::NotFound',
	ESRCH, 'session trail refusal: the runner is gone');
# A runner killed: down takes down what it left, once.
($session_pid, $line) = start("$d/session2.log", $clipd, '--session', "$d/t.session",
	'--state-dir', "$d/sess-state");
is($line, "READY=1\n", 'session down: a runner again') or diag(`cat $d/session2.log`);
kill 'KILL', $session_pid;
waitpid($session_pid, 0);
$session_pid = 0;
is($sctx->session_down('plsess', state_dir => "$d/sess"), 1,
	'session down: the runner was killed, its cages are stopped');
refused(sub { $sctx->session_down('plsess', state_dir => "$d/sess") }, 'Clip::Error::NotFound',
	ESRCH, 'session down refusal: nothing left');
refused(sub { $sctx->session_down("no\0such") }, 'Clip::Error::Invalid', EINVAL,
	'session down refusal: a NUL in the name');

# The audit log clipd wrote, verified through the binding once it stopped.
kill 'TERM', $pid;
waitpid($pid, 0);
$pid = 0;
my $n = $core->audit_verify;
ok($n >= 4, "transfer audit: the log verifies ($n records)");
my @records = $core->audit_show;
is(scalar @records, $n, 'transfer audit show: every record');
ok((grep { /src=low .*dst=mid .*decision=allow/ } @records), 'transfer audit show: the allowed transfer')
	or diag(join("\n", @records));
ok((grep { /src=mid .*dst=low .*decision=deny/ } @records), 'transfer audit show: the refusal');
done_testing;
