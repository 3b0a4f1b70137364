# SPDX-License-Identifier: LGPL-2.1-or-later
# What the Clip tests share: the mode they run in, scratch directories and
# files, and the check of a refusal.
package ClipTest;
use v5.36;
use File::Temp ();
use Test::More ();
use Exporter 'import';
our @EXPORT = qw(is_host_root scratch write_file in_child refused skipped landlock_abi kernel_audit);

# Root of the host: uid 0 in the initial user namespace (as is_root in
# tests/common/root.sh). uid 0 of a rootless container has no trusted.*
# attributes: the tests take their unprivileged paths there.
sub is_host_root () {
	return 0 if $> != 0;
	open(my $fh, '<', '/proc/self/uid_map') or return 0;
	my $line = <$fh> // '';
	return $line =~ /^\s*0\s+0\s+4294967295\s*$/ ? 1 : 0;
}

# A fresh 0700 directory under /tmp, removed when the test ends (by the
# process that made it only: a forked child never removes it).
sub scratch () {
	return File::Temp::tempdir('clip-perl-XXXXXX', TMPDIR => 1, CLEANUP => 1);
}

# Write TEXT to PATH (made or emptied), then chmod it to MODE when given;
# returns PATH.
sub write_file ($path, $text, $mode = undef) {
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh $text;
	close $fh or die "$path: $!";
	chmod $mode, $path or die "$path: $!" if defined $mode;
	return $path;
}

# One test, WHAT: CODE dies with a CLASS error of ERRNO; returns the error
# (a failure names the line of the test that called this).
sub refused ($code, $class, $errno, $what) {
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	eval { $code->(); 1 } and return Test::More::fail("$what: not refused");
	my $e = $@;
	Test::More::ok(ref $e && $e->isa($class) && $e->errno == $errno, $what)
		or Test::More::diag(ref $e ? ref($e) . ': ' . $e->message : $e);
	return $e;
}

# Run CODE in a forked child (process-wide state: securebits, a context
# used after fork); its return value is the exit status. No Test::More in
# there: the parent checks the status.
sub in_child ($code) {
	my $pid = fork // die "fork: $!";
	if ($pid == 0) {
		my $rc = eval { $code->() };
		$rc = 99 unless defined $rc;
		POSIX::_exit($rc);
	}
	waitpid($pid, 0);
	return $? & 127 ? 128 + ($? & 127) : $? >> 8;
}

# A skipped case that keeps its name in the TAP line ("ok N - NAME # skip
# WHY"), which tests/expected-skips matches; Test::More's skip() drops it.
sub skipped ($name, $why) {
	require Test2::API;
	my $ctx = Test2::API::context();
	$ctx->skip($name, $why);
	$ctx->release;
}

# The kernel's Landlock ABI (landlock_create_ruleset(NULL, 0,
# LANDLOCK_CREATE_RULESET_VERSION)), or -1 without Landlock.
sub landlock_abi () {
	return syscall(444, 0, 0, 1);
}

# The kernel's audit on or off (AUDIT_SET over netlink, as
# tests/common/helpers.c's test_audit_set()), or undef to read it; the
# state it had. The host's root only.
sub kernel_audit ($enabled = undef) {
	socket(my $s, 16, 3, 9) or die "netlink audit socket: $!\n";    # AF_NETLINK, SOCK_RAW, NETLINK_AUDIT
	send($s, pack('L S S L L', 16, 1000, 1, 1, 0), 0) // die "AUDIT_GET: $!\n";
	defined(recv($s, my $reply, 8192, 0)) or die "AUDIT_GET: $!\n";
	my $was = unpack('L', substr($reply, 16 + 4, 4));
	if (defined $enabled) {
		my $status = pack('L11', 1, $enabled ? 1 : 0, (0) x 9);    # AUDIT_STATUS_ENABLED
		send($s, pack('L S S L L', 16 + length $status, 1001, 5, 2, 0) . $status, 0)
			// die "AUDIT_SET: $!\n";
		defined(recv($s, my $ack, 8192, 0)) or die "AUDIT_SET: $!\n";
		my $err = unpack('l', substr($ack, 16, 4));
		die 'AUDIT_SET: ' . POSIX::strerror(-$err) . "\n"
			if unpack('S', substr($ack, 4, 2)) == 2 && $err != 0;
	}
	close $s;
	return $was;
}

require POSIX;
1;
