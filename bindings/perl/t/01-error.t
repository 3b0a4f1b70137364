# SPDX-License-Identifier: LGPL-2.1-or-later
# Clip::Error: the library's message and errno, a class per errno family,
# where the call was made.
use v5.36;
use Test::More;
use Errno qw(EINVAL E2BIG ENOENT EACCES EPERM EROFS EBADMSG ENOKEY EBUSY EEXIST EBADF EISDIR
	EOPNOTSUPP ENODATA ECHILD EINTR ECONNREFUSED ETIMEDOUT EAGAIN ENOSPC EIO);
use Clip;

# A refusal of the library: the parser's own message, errno, offset.
my $line = __LINE__ + 1;
my $ok = eval { Clip::Level->parse('s2:c0.x3'); 1 };
my $e = $@;
ok(!$ok, 'error: a refused parse croaks');
isa_ok($e, 'Clip::Error::Invalid', 'error: a parse refusal');
isa_ok($e, 'Clip::Error', 'error: every family');
is($e->errno, EINVAL, 'error: errno is the positive EINVAL');
is($e->name, 'EINVAL', 'error: name is the errno symbol');
is($e->message, q{invalid level "s2:c0.x3": expected 'c' at offset 6},
	"error: message is the library's, unchanged");
is($e->offset, 6, 'error: offset is the parser\'s');
is($e->function, 'clip_level_parse', 'error: function names the C function');
is($e->file, __FILE__, 'error: file is the caller\'s');
is($e->line, $line, 'error: line is the caller\'s');
is("$e", $e->message . " at " . __FILE__ . " line $line.\n", 'error: stringifies as die would');

# Through a wrapper of Clip.pm: still the caller's file and line.
my $ctx = Clip::Context->new(state_dir => '/nonexistent/clip-perl-test');
$line = __LINE__ + 1;
eval { $ctx->audit_verify(dir => '/nonexistent/clip-perl-test') };
is($@->line, $line, 'error: through Clip.pm\'s wrappers, the line is the caller\'s');
is($@->file, __FILE__, 'error: through Clip.pm\'s wrappers, the file is the caller\'s');

# The family table (Clip.pm, ERRORS): one errno of each, through the same
# path as a library refusal.
my %family = (
	EINVAL() => 'Invalid', E2BIG() => 'Invalid', EACCES() => 'Permission',
	EPERM() => 'Permission', EROFS() => 'Permission', ENOENT() => 'NotFound',
	ENODATA() => 'NotFound', EBADMSG() => 'Integrity', ENOKEY() => 'NoKey', EBUSY() => 'Busy',
	EEXIST() => 'Busy', EBADF() => 'BadFile', EISDIR() => 'BadFile',
	EOPNOTSUPP() => 'Unsupported', ECHILD() => 'State', ECONNREFUSED() => 'Connection',
	ETIMEDOUT() => 'Timeout', EAGAIN() => 'Timeout', ENOSPC() => 'Resource',
);
for my $errno (sort { $a <=> $b } keys %family) {
	eval { Clip::Error->throw($errno, "family $errno") };
	my $err = $@;
	is(ref $err, "Clip::Error::$family{$errno}", "error: errno $errno is Clip::Error::$family{$errno}");
}
for my $errno (EINTR, EIO) {
	eval { Clip::Error->throw($errno, 'other') };
	is(ref $@, 'Clip::Error', "error: errno $errno, of no family, is Clip::Error itself");
	is($@->errno, $errno, "error: errno $errno is kept");
}

# A wrong type is Perl's plain croak, not a Clip::Error.
eval { Clip::Level::compare('s1', 's2') };
ok(!ref $@ && $@ =~ /to be of type Clip::Level/, 'error: a wrong argument type is a plain croak');
done_testing;
