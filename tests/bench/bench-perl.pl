#!/usr/bin/perl
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Perl binding's overhead: level compare and label verify per second
# from Perl (Clip) beside the same operation through the C API
# (bench-binding-c, bench-label.c's operations), in rounds that alternate
# the order (C then Perl in even rounds, Perl then C in odd ones) so that a
# drift of the machine's load falls on both alike. Per row: the median
# ops/s of each side, the median over rounds of C/Perl in the same round
# (the paired ratio: how many times faster C is) with its range, and the
# CPU time beside the wall time of each side (ops per CPU second); the load
# average before and after.
#
# usage: perl -I BUILD/bindings/perl bench-perl.pl --c BUILD/tests/bench/bench-binding-c
#            [--rounds N] [--duration-ms MS] [--dir DIR]
use v5.36;
use Getopt::Long;
use File::Temp ();
use List::Util qw(min max);
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC CLOCK_PROCESS_CPUTIME_ID);
use Clip qw(LABEL_ROOTLESS);

my ($c_bench, $rounds, $ms, $dir) = (undef, 7, 300, undef);
GetOptions('c=s' => \$c_bench, 'rounds=i' => \$rounds, 'duration-ms=i' => \$ms,
	'dir=s' => \$dir) && $c_bench && $rounds >= 1 && $ms >= 1
	or die "usage: bench-perl.pl --c BENCH_BINDING_C [--rounds N] [--duration-ms MS] [--dir DIR]\n";

$dir //= File::Temp::tempdir('clip-bench-perl-XXXXXX', DIR => '/var/tmp', CLEANUP => 1);
my $state = "$dir/state";
my $file = "$dir/doc";
open(my $fh, '>', $file) or die "$file: $!";
print $fh "document\n";
close $fh;
my $ctx = Clip::Context->new(state_dir => $state);
$ctx->label_set($file, Clip::Level->parse('s2:c0.c3,c7'), LABEL_ROOTLESS);
open(my $lfh, '<', $file) or die "$file: $!";

my ($sa, $sb) = ('s2:c1', 's1');
my ($wa, $wb) = ('s7:c0.c255,c300,c512.c700,c1000', 's3:c0.c100,c600');
my ($la, $lb) = (Clip::Level->parse($sa), Clip::Level->parse($sb));
my ($lwa, $lwb) = (Clip::Level->parse($wa), Clip::Level->parse($wb));

# Each row: its name, the Perl code of one operation, the C helper's arguments.
my @rows = (
	['level compare (s2:c1 vs s1)', sub { $la->compare($lb) }, ['compare', $sa, $sb]],
	['level compare, operator >=', sub { $la >= $lb }, ['compare', $sa, $sb]],
	['level compare (wide sets)', sub { $lwa->compare($lwb) }, ['compare', $wa, $wb]],
	['level parse+compare (s2:c1 vs s1)',
		sub { Clip::Level->parse($sa)->compare(Clip::Level->parse($sb)) },
		['parse-compare', $sa, $sb]],
	['label verify (xattr + HMAC)', sub { $ctx->label_verify($lfh, LABEL_ROOTLESS) },
		['verify', $state, $file]],
);

# One timed run of @code for $ms: (ops, wall, cpu), batches of 64 as in C.
sub perl_run ($code) {
	my $t0 = clock_gettime(CLOCK_MONOTONIC);
	my $c0 = clock_gettime(CLOCK_PROCESS_CPUTIME_ID);
	my $end = $t0 + $ms / 1000;
	my ($n, $t) = (0, $t0);
	do {
		$code->() for 1 .. 64;
		$n += 64;
		$t = clock_gettime(CLOCK_MONOTONIC);
	} while ($t < $end);
	return ($n, $t - $t0, clock_gettime(CLOCK_PROCESS_CPUTIME_ID) - $c0);
}

sub c_run ($args) {
	my @cmd = ($c_bench, @$args, $ms);
	open(my $out, '-|', @cmd) or die "$c_bench: $!";
	my $line = <$out> // '';
	close $out or die "bench-binding-c @$args: exit status " . ($? >> 8) . "\n";
	$line =~ /^ops=(\d+) wall=([\d.]+) cpu=([\d.]+)$/ or die "bench-binding-c: bad output '$line'\n";
	return ($1, $2, $3);
}

sub median (@v) {
	@v = sort { $a <=> $b } @v;
	return $v[@v / 2];
}

sub loadavg () {
	open(my $l, '<', '/proc/loadavg') or return '?';
	return join(' ', (split ' ', scalar <$l>)[0 .. 2]);
}

my $load0 = loadavg();
printf "libclip %s (Clip %s, perl %vd), %d rounds of %d ms per side, C/Perl alternated, dir %s\n",
	Clip::version(), $Clip::VERSION, $^V, $rounds, $ms, $dir;
printf "load average before: %s\n\n", $load0;
printf "| %-36s | %12s | %12s | %8s | %-15s | %9s | %9s |\n", 'operation', 'C ops/s', 'Perl ops/s',
	'C/Perl', 'ratio range', 'C cpu%', 'Perl cpu%';
printf "|%s|%s|%s|%s|%s|%s|%s|\n", '-' x 38, '-' x 14, '-' x 14, '-' x 10, '-' x 17, '-' x 11, '-' x 11;
for my $row (@rows) {
	my ($name, $code, $args) = @$row;
	my (@c, @p, @ratio, $c_wall, $c_cpu, $p_wall, $p_cpu);
	$code->() for 1 .. 1000;	# warm: caches, the key loaded
	for my $r (0 .. $rounds - 1) {
		my (@cr, @pr);
		if ($r % 2 == 0) {
			@cr = c_run($args);
			@pr = perl_run($code);
		} else {
			@pr = perl_run($code);
			@cr = c_run($args);
		}
		push @c, $cr[0] / $cr[1];
		push @p, $pr[0] / $pr[1];
		push @ratio, ($cr[0] / $cr[1]) / ($pr[0] / $pr[1]);
		$c_wall += $cr[1];
		$c_cpu += $cr[2];
		$p_wall += $pr[1];
		$p_cpu += $pr[2];
	}
	printf "| %-36s | %12.0f | %12.0f | %8.2f | %6.2f - %6.2f | %8.0f%% | %8.0f%% |\n", $name,
		median(@c), median(@p), median(@ratio), min(@ratio), max(@ratio),
		100 * $c_cpu / $c_wall, 100 * $p_cpu / $p_wall;
}
printf "\nC/Perl = the median over rounds of C ops/s / Perl ops/s in the same round;\n"
	. "cpu%% = CPU time / wall time of the timed runs (below 100%%: the side waited or was\n"
	. "preempted; compare ops/s only where both are near 100%%)\n";
printf "load average after: %s\n", loadavg();
