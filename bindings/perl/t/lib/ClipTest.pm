# SPDX-License-Identifier: LGPL-2.1-or-later
# What the Clip tests share: the mode they run in and scratch directories.
package ClipTest;
use v5.36;
use File::Temp ();
use Exporter 'import';
our @EXPORT = qw(is_host_root scratch in_child);

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
