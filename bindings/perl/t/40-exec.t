# SPDX-License-Identifier: LGPL-2.1-or-later
# Exec checks and securebits: the scenarios of tests/unit/test-exec.c
# (regular files, the decision table, securebits, open, read_all), through
# the binding. Securebits are only ever changed in forked children.
use v5.36;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClipTest;
use Errno qw(EACCES EPERM ENOENT EINVAL ETXTBSY E2BIG);
use Clip qw(:all);

my $dir = scratch();
my $ctx = Clip::Context->new(state_dir => "$dir/state");

sub file ($name, $mode, $text = "#!/bin/sh\nexit 0\n") { write_file("$dir/$name", $text, $mode) }

my $x = file('x', 0755);
my $nox = file('nox', 0644);

like($ctx->exec_check_support, qr/^[12]$/, 'exec check_support: native or degraded');
is($ctx->exec_check_support, EXEC_CHECK_NATIVE, 'exec check_support: native on this kernel (6.14+)')
	if (`uname -r` =~ /^(\d+)\.(\d+)/ and ($1 > 6 || ($1 == 6 && $2 >= 14)));

# Regular files, by path and by handle.
ok(eval { $ctx->exec_check($x); 1 }, 'exec check: an executable file by path');
open(my $xfh, '<', $x) or die;
ok(eval { $ctx->exec_check($xfh); 1 }, 'exec check: an executable file by handle');
my $e = refused(sub { $ctx->exec_check($nox) }, 'Clip::Error::Permission', EACCES,
	'exec check refusal: a file without x bits');
refused(sub { $ctx->exec_check($dir) }, 'Clip::Error::Permission', EACCES,
	'exec check refusal: a directory');
refused(sub { $ctx->exec_check("$dir/missing") }, 'Clip::Error::NotFound', ENOENT,
	'exec check refusal: a path that does not exist');
{
	open(my $w, '>>', $x) or die;
	$e = refused(sub { $ctx->exec_check($xfh) }, 'Clip::Error::Busy', ETXTBSY,
		'exec check refusal: a file open for writing');
	like($e->message, qr/open for writing/, 'exec check refusal: the library\'s message');
}

# The decision table, without bits: a failing file runs (1, not enforced)
# unless the caller enforces; interactive code runs.
open(my $nfh, '<', $nox) or die;
is($ctx->may_run_file($xfh, 'x', 0), 0, 'exec may_run_file: a passing file runs');
is($ctx->may_run_file($nfh, 'nox', 0), 1, 'exec may_run_file: a failing file, not enforced');
refused(sub { $ctx->may_run_file($nfh, 'nox', EXEC_RESTRICT_FILE) }, 'Clip::Error::Permission',
	EACCES, 'exec may_run_file refusal: the caller enforces');
is($ctx->may_run_interactive(undef, '-c', 0), 0, 'exec may_run_interactive: -c without bits');
is($ctx->may_run_interactive($xfh, 'standard input', 0), 0,
	'exec may_run_interactive: an executable file on stdin');
refused(sub { $ctx->may_run_interactive(undef, '-c', EXEC_DENY_INTERACTIVE) },
	'Clip::Error::Permission', EACCES, 'exec may_run_interactive refusal: the caller enforces');

# The same under each set of bits, each in a child of its own.
for my $bits (EXEC_RESTRICT_FILE, EXEC_DENY_INTERACTIVE,
	      EXEC_RESTRICT_FILE | EXEC_DENY_INTERACTIVE) {
	my $rf = $bits & EXEC_RESTRICT_FILE;
	my $di = $bits & EXEC_DENY_INTERACTIVE;
	my $rc = in_child(sub {
		my $c = Clip::Context->new;
		$c->set_securebits($bits);
		return 1 unless $c->securebits == $bits;
		return 2 unless $c->may_run_file($xfh, 'x', 0) == 0;
		my $r = eval { $c->may_run_file($nfh, 'nox', 0) };
		return 3 unless $rf ? (!defined $r && $@->isa('Clip::Error::Permission')
				       && $@->message =~ /nox may not run as code.*SECBIT_EXEC_RESTRICT_FILE/)
				    : $r == 1;
		$r = eval { $c->may_run_interactive(undef, '-c', 0) };
		return 4 unless $di ? (!defined $r && $@->errno == EACCES) : $r == 0;
		return 0;
	});
	is($rc, 0, sprintf('exec decision table: securebits 0x%x', $bits));
}

# Securebits (test-exec.c securebits_child), as any user (Linux 6.14+).
my $rc = in_child(sub {
	my $c = Clip::Context->new;
	return 1 unless $c->securebits == 0;
	$c->set_securebits(EXEC_RESTRICT_FILE);
	return 2 unless $c->securebits == EXEC_RESTRICT_FILE;
	$c->set_securebits(EXEC_RESTRICT_FILE);
	$c->set_securebits(EXEC_RESTRICT_FILE_LOCKED | EXEC_DENY_INTERACTIVE_LOCKED);
	eval { $c->set_securebits(EXEC_DENY_INTERACTIVE) };
	return 3 unless ref $@ && $@->isa('Clip::Error::Permission') && $@->errno == EPERM
		&& $@->message =~ /SECBIT_EXEC_DENY_INTERACTIVE is locked off/;
	return 4 unless $c->securebits ==
		(EXEC_RESTRICT_FILE | EXEC_RESTRICT_FILE_LOCKED | EXEC_DENY_INTERACTIVE_LOCKED);
	return 0;
});
is($rc, 0, 'exec securebits: set, get, lock; a bit locked off is refused (Permission)');
$rc = in_child(sub {
	my $c = Clip::Context->new;
	eval { $c->set_securebits(1 << 0) };
	return ref $@ && $@->isa('Clip::Error::Invalid') ? 0 : 1;
});
is($rc, 0, 'exec set_securebits refusal: a bit outside EXEC_SECUREBITS');
is($ctx->securebits, 0, 'exec securebits: the test process itself is untouched');
$rc = in_child(sub {
	eval { $ctx->exec_check($x) };
	return ref $@ && $@->isa('Clip::Error::State') ? 0 : 1;
});
is($rc, 0, 'exec check refusal: the parent\'s context in a child');
$rc = in_child(sub {
	for my $call (sub { $ctx->exec_check_support }, sub { $ctx->securebits },
		      sub { $ctx->set_securebits(EXEC_RESTRICT_FILE) }) {
		eval { $call->() };
		return 1 unless ref $@ && $@->isa('Clip::Error::State');
	}
	return 0;
});
is($rc, 0, 'exec check_support, securebits refusal: the parent\'s context in a child');

# exec_open: a filehandle on a file that passed.
my $fh = $ctx->exec_open($x);
is(scalar <$fh>, "#!/bin/sh\n", 'exec open: a readable handle on the file');
refused(sub { $ctx->exec_open($nox, EXEC_RESTRICT_FILE) }, 'Clip::Error::Permission', EACCES,
	'exec open refusal: a failing file, enforced');
refused(sub { $ctx->exec_open("$dir/missing") }, 'Clip::Error::NotFound', ENOENT,
	'exec open refusal: no such file');

refused(sub { $ctx->exec_open("$x\0.txt") }, 'Clip::Error::Invalid', EINVAL,
	'exec open refusal: a NUL byte in the path');
refused(sub { $ctx->exec_check("$x\0.txt") }, 'Clip::Error::Invalid', EINVAL,
	'exec check refusal: a NUL byte in the path');

# exec_read_all.
is($ctx->exec_read_all($x), "#!/bin/sh\nexit 0\n", 'exec read_all: the whole file');
refused(sub { $ctx->exec_read_all($x, 4) }, 'Clip::Error::Invalid', E2BIG,
	'exec read_all refusal: more than max');
done_testing;
