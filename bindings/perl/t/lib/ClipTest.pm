# SPDX-License-Identifier: LGPL-2.1-or-later
# What the Clip tests share: the mode they run in, scratch directories and
# files, and the check of a refusal.
package ClipTest;
use v5.36;
use File::Temp ();
use Test::More ();
use Exporter 'import';
our @EXPORT = qw(is_host_root scratch write_file in_child refused);

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

require POSIX;
1;
