# SPDX-License-Identifier: LGPL-2.1-or-later
# Cages (tests/bindings/python/05-cage.py's denial scenarios): a profile,
# a cage started, a process run in it, stopped; its Landlock denials read
# as they come (on_denial, denial_fileno, read_denials), refused where they
# are not read, and the code reference released with the handle.
use v5.36;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClipTest;
use Errno qw(EINVAL ECHILD ENODATA);
use Clip qw(:all);

my $d = scratch();
mkdir "$d/state", 0700 or die "$d/state: $!";
my $ctx = Clip::Context->new(state_dir => "$d/state");
my $root = is_host_root() && $> == 0;

# A profile.
my $profile = Clip::Profile->new('plcage');
is($profile->name, 'plcage', 'profile: its name');
like("$profile", qr/^Name=plcage$/m, 'profile: its text');
is(Clip::Profile->parse("[Cage]\nName=plfile\nLevel=s1:c2\n", 'pl.cage')->name, 'plfile',
	'profile parse: from clip.cage(5) text');
my $e = refused(sub { Clip::Profile->parse("[Cage]\nName=x\nBogus=1\n", 'bogus.cage') },
	'Clip::Error::Invalid', EINVAL, 'profile parse refusal: an unknown key');
like($e->message, qr/bogus\.cage/, 'profile parse refusal: the message names the file');
refused(sub { Clip::Profile->new('-bad') }, 'Clip::Error::Invalid', EINVAL,
	'profile refusal: a bad name');

# Before the start: nothing to read (ECHILD); on_denial takes a code
# reference or undef, and is kept until replaced.
{
	my $cage = Clip::Cage->new($ctx, Clip::Profile->new('plnodeny'));
	is($cage->state, CAGE_NEW, 'cage: new');
	refused(sub { $cage->denial_fileno }, 'Clip::Error::State', ECHILD,
		'denial_fileno refusal: the cage is not running');
	refused(sub { $cage->read_denials }, 'Clip::Error::State', ECHILD,
		'read_denials refusal: the cage is not running');
	refused(sub { $cage->on_denial('not code') }, 'Clip::Error::Invalid', EINVAL,
		'on_denial refusal: a string is not a code reference');
	refused(sub { $cage->on_denial([]) }, 'Clip::Error::Invalid', EINVAL,
		'on_denial refusal: an array reference is not a code reference');
	is($cage->on_denial, undef, 'on_denial: undef after the refusals');
	eval { Clip::Cage::read_denials(Clip::Level->parse('s0')) };
	like($@, qr/to be of type Clip::Cage/, 'read_denials refusal: a level is not a cage');
	my $fn = sub { };
	is($cage->on_denial($fn), $fn, 'on_denial: set, the code reference given back');
	is($cage->on_denial, $fn, 'on_denial: kept');
	is($cage->on_denial(undef), undef, 'on_denial: undef, the log alone');

	# A cage whose denials are not read (the audit off, or not the host's
	# root): ENODATA, said by missing.
	my $was = $root ? kernel_audit(0) : undef;
	eval { $cage->start; 1 } or diag("start: $@");
	kernel_audit($was) if defined $was;
	is($cage->state, CAGE_RUNNING, 'cage: running');
	ok($cage->missing & CAGE_MISSING_LANDLOCK_LOG, 'cage: missing says its denials are unread');
	refused(sub { $cage->denial_fileno }, 'Clip::Error::NotFound', ENODATA,
		'denial_fileno refusal: the denials are not read');
	refused(sub { $cage->read_denials }, 'Clip::Error::NotFound', ENODATA,
		'read_denials refusal: the denials are not read');
	is($cage->run('/bin/sh', '-c', 'exit 3'), 3, 'run: the exit status of a process in the cage');
	refused(sub { $cage->run('/nonexistent/cmd') }, 'Clip::Error::NotFound', 2,
		'run refusal: no such command');
	refused(sub { $cage->run() }, 'Clip::Error::Invalid', EINVAL, 'run refusal: no command');
	$cage->stop(0);
	is($cage->state, CAGE_STOPPED, 'cage: stopped');
	refused(sub { $cage->read_denials }, 'Clip::Error::State', ECHILD,
		'read_denials refusal: the cage stopped');
}

# The code reference is released when the handle goes, or on undef.
{
	package Gone { sub new ($c, $flag) { bless { flag => $flag }, $c } sub DESTROY ($s) { ${ $s->{flag} } = 1 } }
	my ($gone1, $gone2) = (0, 0);
	my $cage = Clip::Cage->new($ctx, Clip::Profile->new('plrelease'));
	{
		my $g = Gone->new(\$gone1);
		$cage->on_denial(sub { $g });
	}
	ok(!$gone1, 'on_denial release: held while set');
	$cage->on_denial(undef);
	ok($gone1, 'on_denial release: released when set to undef');
	{
		my $g = Gone->new(\$gone2);
		$cage->on_denial(sub { $g });
	}
	undef $cage;
	ok($gone2, 'on_denial release: released with the cage handle');
}

# A refused TCP connection read as it comes through denial_fileno and
# read_denials, a refused signal when the cage stops (as test-cage.c's
# landlock_denials_reach_the_log): ABI 7, the kernel's audit on, the
# host's root. A code reference that dies is a warning, not a croak out
# of the library, and the caller's $@ is kept.
my $scenario = 'landlock denials reach on_denial';
if (!$root || landlock_abi() < 7) {
	skipped($scenario,
		"not the host's root (only it reads the kernel's audit), or Landlock before ABI 7");
} else {
	my $was = kernel_audit(1);
	my $ok = eval {
		my $cage = Clip::Cage->new($ctx, Clip::Profile->new('pldeny'));
		$cage->start;
		ok(!($cage->missing & CAGE_MISSING_LANDLOCK_LOG), "$scenario: the denials are read");
		my @denials;
		$cage->on_denial(sub ($what) { push @denials, $what });
		my $fd = $cage->denial_fileno;
		ok($fd >= 0, "$scenario: denial_fileno");
		is($cage->read_denials, 0, "$scenario: nothing yet");
		is($cage->run('/bin/bash', '-c', 'exec 3<>/dev/tcp/127.0.0.1/9 && exit 1; exit 0'), 0,
			"$scenario: the connection was refused");
		my $n = 0;
		for (1 .. 50) {
			vec(my $rin = '', $fd, 1) = 1;
			next unless select($rin, undef, undef, 0.1);
			last if $n = $cage->read_denials;
		}
		is($n, 1, "$scenario: read_denials counts one");
		is(scalar @denials, 1, "$scenario: on_denial told once");
		like($denials[0] // '', qr/^net\.connect_tcp .*dest=9\b/, "$scenario: the connection's");

		my @warnings;
		local $SIG{__WARN__} = sub { push @warnings, $_[0] };
		$cage->on_denial(sub ($what) { push @denials, $what; die "on_denial's own error\n" });
		is($cage->run('/bin/sh', '-c', 'kill -0 1 && exit 1; exit 0'), 0,
			"$scenario: kill -0 1 was refused");
		$@ = "the caller's\n";
		$cage->stop(0);
		is($@, "the caller's\n", "$scenario: the caller's \$@ kept");
		is(scalar @denials, 2, "$scenario: the signal's read as the cage stopped");
		like($denials[1] // '', qr/^scope\.signal /, "$scenario: a scope.signal denial");
		ok((grep { /on_denial died: on_denial's own error/ } @warnings),
			"$scenario: a code reference that dies is a warning") or diag(@warnings);
		refused(sub { $cage->denial_fileno }, 'Clip::Error::State', ECHILD,
			"$scenario: denial_fileno refused once stopped");
		is($cage->on_denial(undef), undef, "$scenario: on_denial undef");

		# Code that drops the last reference to its cage while the
		# library reads: the handle lives until the call returns.
		my $gone = Clip::Cage->new($ctx, Clip::Profile->new('plgone'));
		$gone->start;
		my @seen;
		$gone->on_denial(sub ($what) { push @seen, $what; undef $gone });
		is($gone->run('/bin/sh', '-c', 'kill -0 1 && exit 1; exit 0'), 0,
			"$scenario: kill -0 1 was refused in another cage");
		$gone->stop(0);
		ok(!defined $gone && @seen == 1, "$scenario: the cage's last reference dropped by on_denial")
			or diag(@seen);
		1;
	};
	my $err = $@;
	kernel_audit($was);
	ok($ok, "$scenario: no croak") or diag($err);
}

done_testing;
