# SPDX-License-Identifier: LGPL-2.1-or-later
package Clip;

use 5.036;
use strict;
use warnings;

use Carp ();
use Fcntl ();
use XSLoader;

# Checked against the XS_VERSION the module was built with: a Clip.pm of
# another build is refused at load.
our $VERSION;
BEGIN {
	$VERSION = '0.1.0';
	XSLoader::load('Clip', $VERSION);
}

our @CONSTANTS;
BEGIN { @CONSTANTS = qw(
	LEVEL_EQUAL LEVEL_DOMINATES LEVEL_DOMINATED LEVEL_INCOMPARABLE
	LEVEL_SENSITIVITY_MAX LEVEL_CATEGORY_MAX
	LABEL_ROOTLESS
	EXEC_RESTRICT_FILE EXEC_RESTRICT_FILE_LOCKED EXEC_DENY_INTERACTIVE
	EXEC_DENY_INTERACTIVE_LOCKED EXEC_SECUREBITS EXEC_OPEN_MAGICLINKS
	EXEC_CHECK_NATIVE EXEC_CHECK_DEGRADED
	TRANSFER_DELIVERED TRANSFER_DENIED_POLICY TRANSFER_DENIED_USER TRANSFER_FAILED
	AUDIT_SYSLOG AUDIT_WARN_UNANCHORED AUDIT_WARN_TORN AUDIT_WARN_NOT_COUNTED
	AUDIT_WARN_COUNTER_LAGS
	TRANSFER_REPORT_EXEC_REFUSED
	CAGE_NEW CAGE_RUNNING CAGE_STOPPED CAGE_MISSING_LANDLOCK_LOG
);
	# One constant sub each, its value read from the C header at load.
	for my $name (@CONSTANTS) {
		my $value = _constant($name);
		no strict 'refs';
		*{"Clip::$name"} = sub () { $value };
	}
}

use Exporter 'import';
our @EXPORT_OK = @CONSTANTS;
our %EXPORT_TAGS = (all => [@CONSTANTS]);

# A handle is never shared with a new thread: the copy would free it twice.
sub CLONE_SKIP { 1 }

package Clip::Context {
	sub CLONE_SKIP { 1 }

	sub new ($class, %opt) {
		my $self = _new($class);
		$self->state_dir($opt{state_dir}) if defined $opt{state_dir};
		$self->key_provider($opt{key_provider}) if defined $opt{key_provider};
		$self->log_priority($opt{log_priority}) if defined $opt{log_priority};
		return $self;
	}

	sub exec_open ($self, $path, $flags = 0) {
		my $fd = $self->_exec_open($path, $flags);
		open(my $fh, '<&=', $fd) or do {
			my $errno = $! + 0;
			POSIX::close($fd);
			Clip::_throw($errno, "exec_open: fdopen of '$path'");
		};
		return $fh;
	}

	sub audit_verify ($self, %opt) {
		my ($count) = $self->_audit_verify($opt{dir}, $opt{name}, 0);
		return $count;
	}

	sub audit_show ($self, %opt) {
		my (undef, $records) = $self->_audit_verify($opt{dir}, $opt{name}, 1);
		return @$records;
	}

	sub audit_check ($self, %opt) {
		my ($count, $warnings, $records) =
			$self->_audit_check($opt{dir}, $opt{name}, $opt{records} ? 1 : 0);
		return wantarray ? ($count, $warnings, @$records) : $count;
	}

	# The audit role's side of a running session (its runner answers).
	sub session_trail ($self, $session, %opt) {
		my $fd = $self->_session_trail($session, $opt{state_dir});
		open(my $fh, '<&=', $fd) or do {
			my $errno = $! + 0;
			POSIX::close($fd);
			Clip::_throw($errno, "session_trail: fdopen of the trail of '$session'");
		};
		return $fh;
	}

	sub session_audit_key ($self, $session, %opt) {
		return $self->_session_audit_key($session, $opt{state_dir});
	}

	# Down whatever became of its runner: 0 stopped by it, 1 what a gone one left.
	sub session_down ($self, $session, %opt) {
		return $self->_session_down($session, $opt{state_dir});
	}
}

# A trail stream checked with the public key alone: the count, or in list
# context (count, records...).
sub audit_verify_public ($file, $public_key) {
	my ($count, $records) = _audit_verify_public($file, $public_key);
	return wantarray ? ($count, @$records) : $count;
}

package Clip::Level {
	sub CLONE_SKIP { 1 }

	sub new ($class, $sensitivity, @categories) {
		return _new($class, $sensitivity, @categories);
	}

	# A level, or a text parsed as one.
	sub _level ($x) {
		return $x if ref $x && $x->isa('Clip::Level');
		return Clip::Level->parse($x);
	}

	# The operators are XSUBs (Clip.xs, _eq and its aliases): the other
	# operand may be a text, parsed as a level.
	use overload
		'""' => \&format,
		'bool' => sub { 1 },
		'==' => \&_eq,
		'eq' => \&_eq,
		'!=' => \&_ne,
		'ne' => \&_ne,
		'>=' => \&_ge,
		'<=' => \&_le,
		'>' => \&_gt,
		'<' => \&_lt,
		'|' => \&_or,
		'&' => \&_and,
		# A partial order: no <=> or cmp, so that sort cannot pretend.
		fallback => undef;
}

package Clip::Range {
	sub CLONE_SKIP { 1 }

	sub new ($class, $low, $high) {
		return _new($class, Clip::Level::_level($low), Clip::Level::_level($high));
	}

	use overload '""' => \&format, 'bool' => sub { 1 }, fallback => undef;
}

package Clip::LevelNames {
	sub CLONE_SKIP { 1 }
}

package Clip::Transfer {
	sub CLONE_SKIP { 1 }

	sub _args ($how, %opt) {
		for my $k (qw(file to)) {
			Clip::_throw(22, "Clip::Transfer->$how: no '$k'") unless defined $opt{$k};
		}
		# The name in the target's inbox: as clipctl gives it, the
		# path's last component, or "document" for a handle.
		my $name = $opt{name} // (ref $opt{file} || $opt{file} !~ m{([^/]+)/*$} ? 'document' : $1);
		return ($opt{socket}, $opt{file}, $opt{to}, $name, $opt{note});
	}

	sub send ($class, %opt) { _send($class, _args('send', %opt)) }

	sub report ($class, %opt) {
		Clip::_transfer_report($opt{socket}, $opt{kind} // Clip::TRANSFER_REPORT_EXEC_REFUSED,
			$opt{subject}, $opt{error} // 0, $opt{text});
		return;
	}
	sub request ($class, %opt) { _request($class, _args('request', %opt)) }

	sub delivered ($self) { ($self->status // -1) == Clip::TRANSFER_DELIVERED }

	# A refusal as an exception, worded as clipctl words it: a denial is
	# a Clip::Error::Permission (EACCES unless the mediator gave an
	# errno), a failure the class of its errno (EIO when none).
	sub check ($self) {
		my $status = $self->status // Clip::_throw(11, 'the mediator has not answered yet');
		return $self if $status == Clip::TRANSFER_DELIVERED;
		my $why = $self->message;
		my $errno = $self->errno;
		if ($status == Clip::TRANSFER_DENIED_POLICY) {
			Clip::_throw($errno || 13, "denied by policy: $why");
		} elsif ($status == Clip::TRANSFER_DENIED_USER) {
			Clip::_throw($errno || 13, "denied by the user: $why");
		}
		Clip::_throw($errno || 5, "failed: $why");
	}
}

package Clip::Audit {
	sub CLONE_SKIP { 1 }

	sub open ($class, $ctx, %opt) {
		return _open($class, $ctx, $opt{dir}, $opt{name}, $opt{flags} // 0);
	}

	sub append ($self, %e) {
		_append($self, @e{qw(event source source_level target target_level name)},
			$e{length} // 0, $e{sha256},
			@e{qw(decision decided_by reason)});
		return;
	}
}

package Clip::Profile {
	sub CLONE_SKIP { 1 }

	use overload '""' => \&format, 'bool' => sub { 1 }, fallback => undef;
}

package Clip::Cage {
	sub CLONE_SKIP { 1 }
}

package Clip::Session {
	sub CLONE_SKIP { 1 }
}

package Clip::Error {
	use overload '""' => sub { $_[0]->as_string }, 'bool' => sub { 1 }, fallback => 1;

	sub errno ($self) { $self->{errno} }
	sub name ($self) { $self->{name} }
	sub message ($self) { $self->{message} }
	sub offset ($self) { $self->{offset} }
	sub function ($self) { $self->{function} }
	sub file ($self) { $self->{file} }
	sub line ($self) { $self->{line} }
	sub as_string ($self) { "$self->{message} at $self->{file} line $self->{line}.\n" }
	sub throw ($class, $errno, $message) { Clip::_throw($errno, $message) }
}

for my $family (qw(Invalid Permission NotFound Integrity NoKey Busy BadFile Unsupported State
		   Connection Timeout Resource)) {
	no strict 'refs';
	@{"Clip::Error::${family}::ISA"} = ('Clip::Error');
}

require POSIX;

1;

__END__

=encoding utf8

=head1 NAME

Clip - Perl binding of libclip: levels, labels, exec checks, transfers, audit, cages, sessions

=head1 SYNOPSIS

  use Clip qw(:all);

  my $ctx = Clip::Context->new(state_dir => '/var/lib/clip');

  my $secret = Clip::Level->parse('s2:c1');
  my $public = Clip::Level->parse('s0');
  say "up" if $secret >= $public;         # dominates
  say $secret | 's1:c4';                  # join: s2:c1,c4

  $ctx->label_set('/srv/report.pdf', $secret);
  eval { $ctx->label_verify($fh) };      # a filehandle works too
  if (my $e = $@) {
      die $e unless ref $e && $e->isa('Clip::Error::Integrity');
      warn "tampered: ", $e->message, "\n";
  }

  my $t = Clip::Transfer->send(socket => '/run/clip/transfer.sock',
                               file => 'doc.odt', to => 'high');
  say $t->delivered ? "delivered" : "refused: " . $t->message;

  say for $ctx->audit_show;

  # A collector: the signed trail, checked with the public key alone.
  Clip::Audit->open($ctx)->export('trail.log');
  say Clip::audit_verify_public('trail.log', $ctx->audit_public_key), ' records';

=head1 DESCRIPTION

Clip binds the public C API of libclip (L<libclip(3)>): it links the shared
library, as any program does, and adds nothing to its checks. Each handle
(context, level, range, names, transfer, audit log, profile, cage, session) holds one reference of
the library's object and drops it in C<DESTROY>, that is as soon as the last
Perl reference goes: Perl counts references, so a log's lock or a context's
keys are released at the end of the enclosing scope, not at some later
collection.

A context created before a C<fork> refuses to work in the child
(L</ERRORS>, C<Clip::Error::State>): create one in the child.

=head1 CONTEXT

=over

=item Clip::Context->new(%options)

Options: C<state_dir> (absolute path; default C<$CLIP_STATE_DIR> or
F</var/lib/clip>), C<key_provider> (C<file> or C<tpm>), C<log_priority>
(0 to 7).

=item $ctx->state_dir([$path]), $ctx->key_provider([$name]), $ctx->log_priority([$n])

Get, or set then get.

=back

=head1 LEVELS

=over

=item Clip::Level->parse($text), Clip::Level->new($sensitivity, @categories)

C<s0> to C<s15>, categories C<c0> to C<c1023> (C<s2:c0.c3,c7>).
A refusal is a C<Clip::Error::Invalid> whose C<offset> is the byte where
the text went wrong.

=item $l->format, "$l"

The canonical text.

=item $l->sensitivity, $l->has_category($c), $l->categories

=item $a->compare($b)

C<LEVEL_EQUAL>, C<LEVEL_DOMINATES>, C<LEVEL_DOMINATED> or
C<LEVEL_INCOMPARABLE>.

=item $a->dominates($b), $a->equal($b), $a->join($b), $a->meet($b)

=back

Operators: C<< >= >> is dominates, C<< <= >> is dominated by, C<< > >> and
C<< < >> the strict forms, C<==>/C<eq> and C<!=>/C<ne> equality, C<|> the
join and C<&> the meet. The other operand may be a text, parsed as a level.
Levels are partially ordered: two incomparable levels are neither
C<< >= >> nor C<< <= >> one another, and C<< <=> >>, C<cmp> (and so
C<sort> without a block) die rather than invent an order.

=over

=item Clip::Range->parse($text), Clip::Range->new($low, $high)

=item $r->low, $r->high, $r->contains($level), $r->format

=item Clip::LevelNames->parse($text)

A translation table, C<LEVEL=NAME> a line (setrans.conf style).
C<< $names->level($text) >> parses a name or a level;
C<< $names->name($level) >> gives its name, or its text when it has none.

=back

=head1 LABELS

A file is given as a path or as an open Perl filehandle. A path is opened
read-only as C<open(2)> resolves it (symbolic links followed, as Perl's
C<open> does) and closed again; to refuse links, pass a handle opened with
C<O_NOFOLLOW> (C<sysopen>). A handle's C<fileno> is used, and the handle
left open. A string holding a NUL byte is refused (C<Clip::Error::Invalid>),
as every string argument of this module: the C library would read it cut
at the NUL.
C<$flags> is 0 (the C<trusted.clip.label> attribute, root) or
C<LABEL_ROOTLESS> (C<user.clip.label>).

=over

=item $ctx->label_set($file, $level, $flags = 0)

=item $ctx->label_get($file, $flags = 0)

Returns the verified level.

=item $ctx->label_verify($file, $flags = 0)

Returns nothing, or croaks: C<Clip::Error::NotFound> (no label: ENODATA),
C<Clip::Error::Integrity> (a MAC that does not verify: EBADMSG),
C<Clip::Error::NoKey> (no key in the state directory), C<Clip::Error::BadFile>
(a closed handle).

=item $ctx->label_remove($file, $flags = 0)

=back

=head1 EXEC CHECKS

=over

=item $ctx->exec_check_support

C<EXEC_CHECK_NATIVE> (AT_EXECVE_CHECK) or C<EXEC_CHECK_DEGRADED>.

=item $ctx->exec_check($file)

Whether the kernel would execute the file (a path is opened C<O_PATH>).
Croaks C<Clip::Error::Permission> when not.

=item $ctx->securebits, $ctx->set_securebits($bits)

The exec securebits (C<EXEC_RESTRICT_FILE>, C<EXEC_DENY_INTERACTIVE> and
their C<_LOCKED> bits). They hold for the process and its children for
good: set them in a child.

=item $ctx->may_run_file($file, $name, $flags), $ctx->may_run_interactive($file_or_undef, $what, $flags)

0 (run it), 1 (the check failed but is not enforced: run it), or croak
C<Clip::Error::Permission>. The check is enforced when the securebits say
so, or when C<$flags> holds C<EXEC_RESTRICT_FILE> (C<may_run_file>) or
C<EXEC_DENY_INTERACTIVE> (C<may_run_interactive>): a caller may enforce
more than the bits, never less. C<$file_or_undef> undef is code that comes
from no file (C<-e>).

=item $ctx->exec_open($path, $flags = 0)

A read-only filehandle on a file that passed the check.

=item $ctx->exec_read_all($file, $max = 0)

The whole content, at most C<$max> bytes (0: 64 MiB).

=back

=head1 TRANSFERS

=over

=item Clip::Transfer->send(socket => $path, file => $file, to => $target, name => $name, note => $note)

C<socket> is the cage's socket to the mediator (undef: C<$CLIP_TRANSFER_SOCKET>, then
F</run/clip/transfer.sock>); C<file> a path or a filehandle open for reading;
C<name> defaults to the path's last component, or C<document> for a handle;
C<note> (optional) is shown to the user.

Asks the mediator (L<clipd(8)>) to move a document to the cage C<$target>,
and waits for the answer (the user may be asked). Croaks only when there is
no answer (C<Clip::Error::NotFound> or C<Clip::Error::Connection> without a mediator);
a refusal is a value:

=item Clip::Transfer->request(%same)

The same request without waiting: poll C<< $t->fileno >> (readable when the
answer is there; C<IO::Select>, an event loop), then C<< $t->dispatch >>
(true once the answer arrived), or C<< $t->wait($timeout_ms) >> (true
when answered, false when C<$timeout_ms> passed first; -1: as long as it
takes). Until the answer, C<status> is undef and C<check> croaks
C<Clip::Error::Timeout> (EAGAIN).

=item $t->status, $t->delivered, $t->errno, $t->message, $t->name, $t->digest

C<status> is one of C<TRANSFER_DELIVERED>, C<TRANSFER_DENIED_POLICY>,
C<TRANSFER_DENIED_USER>, C<TRANSFER_FAILED>; C<name> the name given in
the inbox; C<digest> the list (size, SHA-256 in hex, encrypted).

=item Clip::Transfer->report(socket => $path, subject => $file, error => $errno, text => $why, kind => TRANSFER_REPORT_EXEC_REFUSED)

Tells the mediator, one way, that the cage refused a file as code (W^X):
it connects, sends and closes, never blocks, and nothing answers. The
mediator names the cage by the socket the report came on, records it in
the audit trail and shows it to the user (at a bounded rate). C<subject>
is the file (at most 1024 bytes), C<error> the refusal's errno (or 0),
C<text> why (optional: at most 512 bytes of UTF-8 without control
characters). Croaks C<Clip::Error::Invalid> for an unknown kind, a bad
errno or text (EINVAL) or a subject too long (E2BIG),
C<Clip::Error::NotFound> or C<Clip::Error::Connection> without a mediator,
C<Clip::Error::Timeout> when the mediator is full (not sent).

=item $t->check

Returns C<$t> when delivered, else croaks the refusal, worded as
L<clipctl(1)> words it (C<denied by policy: REASON>, C<denied by the user:
REASON>, C<failed: REASON>): a denial is a C<Clip::Error::Permission>
(EACCES unless the mediator gave an errno), a failure the class of its
errno (EIO when none).

=back

=head1 AUDIT LOG

C<dir> is a directory (path or handle) or undef for the state directory;
C<name> the log's name there, or undef for F<audit.log>.

=over

=item $ctx->audit_verify(dir => $dir, name => $name)

The number of records, or croaks (C<Clip::Error::Integrity>: the log was
edited, reordered, cut).

=item $ctx->audit_show(%same)

The verified records, one string each.

=item $ctx->audit_check(%same, records => 1)

In list context (count, warnings, records...): what C<clipctl audit verify>
reports; C<warnings> is a mask of C<AUDIT_WARN_*>.

=item Clip::Audit->open($ctx, dir => $dir, name => $name, flags => 0)

Opens a log for appending (one writer: a second open croaks
C<Clip::Error::Busy> until the first handle is gone).
C<< $log->append(event => ..., source => ..., source_level => ...,
target => ..., target_level => ..., name => ..., length => ..., sha256 =>
$32_bytes, decision => ..., decided_by => ..., reason => ...) >>.

=item $log->export($file)

Writes the signed trail (every record, then the anchor's signed line) to
a filehandle open for writing, or to a new file (created 0600; an
existing one croaks C<Clip::Error::Busy>), for a collector that checks it
with C<Clip::audit_verify_public>.

=item $ctx->audit_public_key

The PEM text of the public half of the key that signs the anchors
(Ed25519, derived from the context's master key; C<Clip::Error::NoKey>
when there is none yet).

=item Clip::audit_verify_public($file, $public_key)

Verifies a trail stream (a path or a filehandle: C<< $log->export >>,
C<< $ctx->session_trail >>, lines of syslog) with the PEM public key
alone: the record count, or in list context (count, records...). Croaks
C<Clip::Error::Integrity> when the trail does not verify (edited, cut
before its last signature, another machine's key),
C<Clip::Error::Invalid> when the key is not an Ed25519 key in PEM.

=item $ctx->session_trail($session, state_dir => $dir)

The audit trail of a running session as its audit role reads it (see
C<AuditGroup=> in L<clip.session(5)>): a filehandle on a read-only, sealed
copy of the stream, for C<Clip::audit_verify_public>. C<state_dir> is the
session's state directory (undef: the default). Croaks
C<Clip::Error::NotFound> (ESRCH) when no runner of that session answers,
C<Clip::Error::Permission> when the caller has not the role (the message
names it).

=item $ctx->session_audit_key($session, state_dir => $dir)

The PEM public key that signs that session's trail, as
C<session_trail>.

=item $ctx->session_down($session, state_dir => $dir)

Takes the session down whatever became of its runner
(L<clip-session(3)>, C<clip_session_down>): asks the runner to stop it
and returns 0 once it has; when no runner answers (it was killed), stops
the cages it left and removes the keys of the levels it had unlocked,
and returns 1. Croaks C<Clip::Error::NotFound> (ESRCH) when there is no
runner and nothing left, C<Clip::Error::Busy> (EBUSY) when a runner holds
the state directory but does not answer.

=back

=head1 CAGES

A cage's profile, the cage, and its Landlock denials as they come
(L<clip-cage(3)>). Not bound: the profile's builder but its name, spawning
with fds, a pty or an environment, attaching to a registered cage.

=over

=item Clip::Profile->new($name), Clip::Profile->parse($text, $filename)

A profile with the defaults (L<clip-cage(3)>), or one from
L<clip.cage(5)> text (C<$filename> names it in messages). C<< $p->name >>;
C<< $p->format >> and C<"$p"> give its text.

=item Clip::Cage->new($ctx, $profile), $cage->start, $cage->stop($grace_ms = 1000)

A cage, not started; started; stopped (SIGTERM, then SIGKILL after
C<$grace_ms>, then waited for). A cage still running when its last handle
goes keeps running (C<clip_cage_unref>): stop it first.
C<< $cage->state >> is C<CAGE_NEW>, C<CAGE_RUNNING> or C<CAGE_STOPPED>;
C<< $cage->missing >> the C<CLIP_CAGE_MISSING_*> bits of the protections
not applied (C<CAGE_MISSING_LANDLOCK_LOG>: the denials are not read).

=item $cage->run(@argv)

Runs C<@argv> in the running cage with no fd open, waits for it and
returns its exit status, or 128 + the signal that killed it.

=item $cage->on_denial([$code])

With an argument, C<$code> (a code reference, or undef for the library's
log alone) is called with the text of each Landlock denial of the cage
(C<net.connect_tcp daddr=127.0.0.1 dest=9>, C<scope.signal ...>), in the
thread that reads them: during C<read_denials>, and C<stop> (which reads
what is left). It runs in an C<eval> with C<$@> localised: if it dies, the
error is a C<warn>, never an exception through the library. The code
reference is released when set to undef and when the handle goes. Returns
the code reference in effect, or undef. Croaks C<Clip::Error::Invalid>
for anything but a code reference or undef.

=item $cage->denial_fileno, $cage->read_denials

A descriptor (the cage's: do not close it) readable when the kernel's
audit has records, for C<select> or an event loop; and the read, which
does not wait: each denial of the cage is logged and passed to
C<on_denial>, and the number read is returned. The denials are read with
Landlock ABI 7 while the kernel's audit is on, by the host's root
(L<clip-cage(3)>, C<clip_cage_set_denial_fn>). Both croak C<Clip::Error::State>
(ECHILD) when the cage is not running, C<Clip::Error::NotFound> (ENODATA)
when its denials are not read (see C<missing>).

=back

=head1 SESSIONS

A session run by this process (L<clip-session(3)>, L<clip.session(5)>).
Not bound: the builder, its event loop and feed, spawning into its cages,
control of another process's session (but the audit role's side and
C<session_down>, under L</AUDIT LOG>).

=over

=item Clip::Session->parse($ctx, $text, $filename), Clip::Session->load($ctx, $path)

A session from its text (relative paths against the current directory)
or its file. C<< $s->name >>.

=item $s->set_secret($bytes)

The user secret mixed into the keys of the levels' data directories
(C<clip_session_set_secret>), 1 to 4096 bytes, before the start. A byte
string is passed as it is (yours to wipe); a character string is passed as
its characters' bytes (each at most C<\x{ff}>: C<utf8::encode> text first),
decoded into a copy that is wiped after the call. The session keeps a copy
of its own and wipes it. Croaks C<Clip::Error::Invalid> for undef, a
reference, an empty or longer secret or a wide character,
C<Clip::Error::Busy> (EBUSY) once the session is started.

=item $s->start, $s->stop($grace_ms = 0)

Starts the session (its wiring, its mediator, its cages) in this process;
stops it (C<$grace_ms> per cage, 0 for 5000). A started session is also
stopped when its last handle goes.

=item $s->cage($name)

A handle of the started session's cage C<$name> (croaks
C<Clip::Error::NotFound> when there is none). The session's runner reads
that cage's Landlock denials into the session's feed: C<on_denial>,
C<denial_fileno> and C<read_denials> croak C<Clip::Error::Busy> (EBUSY)
on it, rather than take them from the session's watchers.

=back

=head1 BPF LSM

libclip's own mandatory policy on the kernel's LSM hooks (L<clip-lsm(3)>,
F<doc/lsm.md>).

=over

=item $ctx->lsm_load

Loads, attaches and pins the programs under F</sys/fs/bpf/clip> (root):
true when loaded now, false when they were already. Croaks
C<Clip::Error::Permission> when not root or when the kernel refuses the
programs, C<Clip::Error::Unsupported> when libclip is built without it.

=item $ctx->lsm_status

1 when loaded, 0 when not (or the pins are not visible to this process).

=item $ctx->lsm_unload

Removes the pins (the cages running lose the protection); nothing pinned
is no error.

=back

=head1 ERRORS

Every refusal croaks a C<Clip::Error> object carrying the library's own
message (C<clip_error_get_message>), with the methods C<errno> (positive),
C<name> (C<EINVAL>...), C<message>, C<offset> (the byte a parser stopped at,
or -1), C<function> (the C function), C<file> and C<line> (the caller's).
It stringifies as C<message at FILE line N.>. Its class says the family:

  Clip::Error::Invalid      EINVAL E2BIG ERANGE ENAMETOOLONG EILSEQ
  Clip::Error::Permission   EPERM EACCES EROFS
  Clip::Error::NotFound     ENOENT ENODATA (no label, denials not read) ESRCH
  Clip::Error::Integrity    EBADMSG (a label or audit log that does not verify)
  Clip::Error::NoKey        ENOKEY
  Clip::Error::Busy         EBUSY EEXIST ETXTBSY
  Clip::Error::BadFile      EBADF EMEDIUMTYPE EISDIR ENOTDIR ELOOP
  Clip::Error::Unsupported  EOPNOTSUPP ENOSYS ENODEV
  Clip::Error::State        ECHILD (a context used after fork, a cage not running)
  Clip::Error::Connection   ECONNREFUSED ECONNRESET EPIPE
  Clip::Error::Timeout      ETIMEDOUT EAGAIN
  Clip::Error::Resource     ENOMEM ENOSPC EDQUOT EMFILE ENFILE EFBIG
  Clip::Error               any other errno (EIO...)

The families are those of the Python binding (doc/bindings.md).
A wrong argument type (not a C<Clip::Level> where one is needed) is Perl's
usual plain croak.

=head1 SEE ALSO

L<libclip(3)>, L<clip-ctx(3)>, L<clip-level(3)>, L<clip-label(3)>,
L<clip-exec(3)>, L<clip-transfer(3)>, L<clip-audit(3)>, L<clip-cage(3)>, L<clip-session(3)>,
L<clip-lsm(3)>,
L<clipctl(1)>.

=cut
