# SPDX-License-Identifier: LGPL-2.1-or-later
# The module that loads is the one just built, on the library just built.
use v5.36;
use Test::More;
use Cwd qw(realpath);

my $build = realpath($ENV{CLIP_TEST_BUILD_ROOT} // die "CLIP_TEST_BUILD_ROOT not set\n");

use_ok('Clip', qw(:all)) or BAIL_OUT('Clip does not load');
like(realpath($INC{'Clip.pm'}), qr{^\Q$build\E/bindings/perl/Clip\.pm$},
	'load: Clip.pm comes from the build directory');
open(my $maps, '<', '/proc/self/maps') or die "maps: $!";
my @maps = <$maps>;
ok((grep { m{ \Q$build\E/bindings/perl/auto/Clip/Clip\.so$} } @maps),
	'load: auto/Clip/Clip.so is the built one');
ok((grep { m{ \Q$build\E/libclip/libclip\.so} } @maps),
	'load: libclip.so is the built one');
ok(!(grep { m{ /usr(/local)?/lib\S*/libclip\.so} } @maps),
	'load: no installed libclip.so is mapped');
is(Clip::version(), $ENV{CLIP_TEST_VERSION}, 'load: Clip::version is the project version');
is($Clip::VERSION, Clip::version(), 'load: $Clip::VERSION is the library version');
is(Clip::LEVEL_INCOMPARABLE(), 3, 'load: constants come from the C header');
ok(!eval { Clip::_constant('NO_SUCH'); 1 }, 'load: an unknown constant is refused');
done_testing;
