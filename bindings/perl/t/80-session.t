# SPDX-License-Identifier: LGPL-2.1-or-later
# Sessions (tests/bindings/python/09-session.py's set_secret and denial
# cases): a session of two cages from its text, its user secret taken
# before the start and refused after; a cage of the started session keeps
# its Landlock denials for the session's feed.
use v5.36;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClipTest;
use Errno qw(EINVAL EBUSY ENOENT);
use Clip qw(:all);

my $d = scratch();
mkdir "$d/$_", 0700 or die "$d/$_: $!" for qw(state data);
my $ctx = Clip::Context->new(state_dir => "$d/state");
my $text = <<"EOF";
[Session]
Name=pl
StateDirectory=$d/session
[Cage]
Name=low
Level=s0
DataDirectory=$d/data/low
DataEncryption=none
[Cage]
Name=high
Level=s2
DataDirectory=$d/data/high
DataEncryption=none
[Transfer]
Rule=low high allow
EOF
my $session = Clip::Session->parse($ctx, $text, 'pl.session');
is($session->name, 'pl', 'session parse: its name');
my $e = refused(sub { Clip::Session->parse($ctx, "[Session]\nBogus=1\n", 'bad.session') },
	'Clip::Error::Invalid', EINVAL, 'session parse refusal: an unknown key');
like($e->message, qr/bad\.session/, 'session parse refusal: the message names the file');
refused(sub { Clip::Session->load($ctx, "$d/nonexistent.session") }, 'Clip::Error::NotFound',
	ENOENT, 'session load refusal: no such file');

# The user secret: a byte string as it is, a character string as its
# bytes (each character a byte), 1 to 4096 bytes; the caller's string is
# left as it was (the binding wipes only its own copy).
my $bytes = 'correct horse';
$session->set_secret($bytes);
is($bytes, 'correct horse', 'set_secret: a byte string, left to its caller');
my $chars = "un secret accentu\x{e9}";
utf8::upgrade($chars);
$session->set_secret($chars);
ok($chars eq "un secret accentu\x{e9}" && utf8::is_utf8($chars),
	'set_secret: a character string, left to its caller as it was');
ok(eval { $session->set_secret('x' x 4096); 1 }, 'set_secret: 4096 bytes') or diag($@);
refused(sub { $session->set_secret(undef) }, 'Clip::Error::Invalid', EINVAL,
	'set_secret refusal: undef');
refused(sub { $session->set_secret('') }, 'Clip::Error::Invalid', EINVAL,
	'set_secret refusal: empty');
refused(sub { $session->set_secret('x' x 4097) }, 'Clip::Error::Invalid', EINVAL,
	'set_secret refusal: over 4096 bytes');
refused(sub { $session->set_secret("\x{263a}") }, 'Clip::Error::Invalid', EINVAL,
	'set_secret refusal: a wide character (not bytes)');
refused(sub { $session->set_secret(['secret']) }, 'Clip::Error::Invalid', EINVAL,
	'set_secret refusal: a reference');
eval { Clip::Session::set_secret($ctx, 'secret') };
like($@, qr/to be of type Clip::Session/, 'set_secret refusal: a context is not a session');

refused(sub { $session->cage('low') }, 'Clip::Error::NotFound', ENOENT,
	'cage refusal: the session is not started');
eval { $session->start; 1 } or BAIL_OUT("the session does not start: $@");
refused(sub { $session->set_secret('too late') }, 'Clip::Error::Busy', EBUSY,
	'set_secret refusal: the session is started');
refused(sub { $session->start }, 'Clip::Error::Busy', EBUSY, 'start refusal: started already');

# A cage of the session: its runner reads its Landlock denials into the
# feed; taking them would leave the session's watchers without them.
my $cage = $session->cage('low');
is($cage->state, CAGE_RUNNING, "session cage: running");
$e = refused(sub { $cage->on_denial(sub { }) }, 'Clip::Error::Busy', EBUSY,
	"session cage refusal: on_denial");
like($e->message, qr/the session reads this cage's Landlock denials/,
	'session cage refusal: the message says who reads them');
refused(sub { $cage->on_denial(undef) }, 'Clip::Error::Busy', EBUSY,
	'session cage refusal: on_denial undef');
refused(sub { $cage->read_denials }, 'Clip::Error::Busy', EBUSY,
	'session cage refusal: read_denials');
refused(sub { $cage->denial_fileno }, 'Clip::Error::Busy', EBUSY,
	'session cage refusal: denial_fileno');
is($cage->on_denial, undef, 'session cage: no on_denial');
refused(sub { $session->cage('nosuch') }, 'Clip::Error::NotFound', ENOENT,
	'cage refusal: no such cage');
$session->stop(200);
is($cage->state, CAGE_STOPPED, 'session stop: its cage stopped');
refused(sub { $cage->read_denials }, 'Clip::Error::Busy', EBUSY,
	'session cage refusal: read_denials, the session stopped too');

done_testing;
