# SPDX-License-Identifier: LGPL-2.1-or-later
# Clip::Context: the scenarios of tests/unit/test-ctx.c, through the binding.
use v5.36;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use ClipTest;
use Errno qw(ECHILD EPERM);
use Clip;

my $ctx = do { local $ENV{CLIP_STATE_DIR} = '/srv/clip-from-env'; Clip::Context->new };
is($ctx->state_dir, '/srv/clip-from-env', 'context new: the state directory of $CLIP_STATE_DIR');
is($ctx->key_provider, 'file', 'context new: the file key provider');
{
	local $ENV{CLIP_STATE_DIR} = 'relative/dir';
	is(Clip::Context->new->state_dir, '/var/lib/clip',
		'context new: a relative $CLIP_STATE_DIR is ignored');
}
my $c2 = Clip::Context->new(state_dir => '/srv/clip', key_provider => 'file', log_priority => 6);
is($c2->state_dir, '/srv/clip', 'context new: state_dir option');
is($c2->log_priority, 6, 'context new: log_priority option');
is($c2->state_dir('/srv/other'), '/srv/other', 'context state_dir: set then get');

for my $bad (['relative', 'a relative path'], ['', 'an empty path'],
	     ['/' . ('a' x 5000), 'a path over PATH_MAX'], ["/a\0b", 'a NUL byte']) {
	eval { $c2->state_dir($bad->[0]) };
	isa_ok($@, 'Clip::Error::Invalid', "context state_dir refusal: $bad->[1]");
}
is($c2->state_dir, '/srv/other', 'context state_dir: a refusal leaves it');
eval { $c2->key_provider('nonsense') };
isa_ok($@, 'Clip::Error::Unsupported', 'context key_provider refusal: an unknown provider');
eval { $c2->log_priority(8) };
isa_ok($@, 'Clip::Error::Invalid', 'context log_priority refusal: 8');

# Used after fork: ECHILD, a Clip::Error::State; the parent's still works.
my $rc = in_child(sub {
	for my $call (sub { $ctx->log_priority(6) }, sub { $ctx->state_dir('/x') },
		      sub { $ctx->state_dir }) {
		eval { $call->() };
		return 1 unless ref $@ && $@->isa('Clip::Error::State') && $@->errno == ECHILD;
	}
	return 0;
});
is($rc, 0, 'context after fork refusal: every call croaks Clip::Error::State');
is($ctx->log_priority(6), 6, 'context after fork: the parent\'s context still works');
my $child_ctx = in_child(sub { Clip::Context->new(state_dir => '/srv/x')->state_dir eq '/srv/x' ? 0 : 1 });
is($child_ctx, 0, 'context after fork: a context made in the child works');

# Freed when the last reference goes (DESTROY, not a later collection):
# a weak reference sees it at once.
use Scalar::Util qw(weaken);
my $weak;
{
	my $c = Clip::Context->new;
	$weak = $c;
	weaken($weak);
	ok(defined $weak, 'context lifetime: alive in its scope');
}
ok(!defined $weak, 'context lifetime: freed when its scope ends');

# The BPF LSM (tests/unit/test-lsm.c). This machine's kernel cannot load
# BPF LSM programs: nothing is pinned, lsm_status says so, lsm_load is
# refused with the library's error, and unloading nothing is no error.
my $lsm = Clip::Context->new(state_dir => '/nonexistent/clip-lsm');
is($lsm->lsm_status, 0, 'lsm status: not loaded');
ok(eval { $lsm->lsm_unload; 1 }, 'lsm unload: nothing pinned is no error') or diag($@);
my $e = refused(sub { $lsm->lsm_load }, 'Clip::Error::Permission', EPERM,
	'lsm load refusal: the kernel refuses the programs (or not root)');
if (is_host_root()) {
	like($e->message, qr/refuses the BPF LSM's programs/, 'lsm load refusal: the message says why');
	ok(!-e '/sys/fs/bpf/clip', 'lsm load refusal: no pin directory left');
}
is($lsm->lsm_status, 0, 'lsm status: still not loaded');
done_testing;
