# SPDX-License-Identifier: LGPL-2.1-or-later
# Clip::Level, Clip::Range, Clip::LevelNames: the scenarios of
# tests/unit/test-level.c, through the binding.
use v5.36;
use Test::More;
use Clip qw(:all);

sub L ($t) { Clip::Level->parse($t) }

# Parse and format: runs of two or more are ranges (level_format table).
my @format = (
	['s0', 's0'], ['s2:c0,c1', 's2:c0.c1'], ['s2:c0,c2', 's2:c0,c2'],
	['s2:c0,c1,c2,c4,c6,c7', 's2:c0.c2,c4,c6.c7'], ['s15:c0.c1023', 's15:c0.c1023'],
);
is(L($_->[0])->format, $_->[1], "level parse+format: $_->[0] is $_->[1]") for @format;
is("" . L('s3:c0.c511,c512.c1023'), 's3:c0.c1023', 'level stringify: "" is format');
is(L('s2:c1,c7')->sensitivity, 2, 'level sensitivity');
is_deeply([Clip::Level->new(2, 7, 1, 3)->categories], [1, 3, 7], 'level categories');
ok(L('s2:c7')->has_category(7) && !L('s2:c7')->has_category(6), 'level has_category');
is(Clip::Level->new(3, 5, 1, 5)->format, 's3:c1,c5', 'level new: any order, duplicates');
is(Clip::Level->new(0)->format, 's0', 'level new: no categories');

# Refusals, each with its offset.
for my $case (['s2:c0.x3', 6], ['s16', 1], ['', 0], ['s1:c1024', 4], ["s1\nx", 2]) {
	my ($text, $offset) = @$case;
	eval { L($text) };
	my $e = $@;
	(my $shown = $text) =~ s/\n/\\n/g;
	ok(ref $e && $e->isa('Clip::Error::Invalid') && $e->offset == $offset,
		"level parse refusal: '$shown' at offset $offset")
		or diag(ref $e ? $e->message . " offset " . $e->offset : $e);
}
eval { L("s1\0:c2") };
isa_ok($@, 'Clip::Error::Invalid', 'level parse refusal: a NUL byte');
eval { L('x' x 9000) };
like(ref $@ && $@->message, qr/./, 'level parse refusal: longer than CLIP_LEVEL_TEXT_MAX');
eval { Clip::Level->new(16) };
isa_ok($@, 'Clip::Error::Invalid', 'level new refusal: sensitivity 16');
eval { Clip::Level->new(1, 1024) };
isa_ok($@, 'Clip::Error::Invalid', 'level new refusal: category 1024');
eval { L('s1')->has_category(-1) };
isa_ok($@, 'Clip::Error::Invalid', 'level has_category refusal: -1');

# Compare: the truth table of level_compare.
my @order = (
	['s2', 's2', LEVEL_EQUAL], ['s2:c0.c3', 's2:c0,c1,c2,c3', LEVEL_EQUAL],
	['s3', 's2', LEVEL_DOMINATES], ['s2', 's3', LEVEL_DOMINATED],
	['s2:c1', 's2', LEVEL_DOMINATES], ['s2', 's2:c1', LEVEL_DOMINATED],
	['s3:c0.c3', 's2:c1,c2', LEVEL_DOMINATES], ['s0', 's15:c0.c1023', LEVEL_DOMINATED],
	['s2:c1', 's2:c2', LEVEL_INCOMPARABLE], ['s3', 's2:c1', LEVEL_INCOMPARABLE],
	['s2:c1', 's3', LEVEL_INCOMPARABLE], ['s5:c0.c9', 's4:c0.c8,c10', LEVEL_INCOMPARABLE],
);
for my $c (@order) {
	my ($a, $b, $want) = (L($c->[0]), L($c->[1]), $c->[2]);
	my $dom = $want == LEVEL_EQUAL || $want == LEVEL_DOMINATES;
	my $sub = $want == LEVEL_EQUAL || $want == LEVEL_DOMINATED;
	my $what = "$c->[0] vs $c->[1]";
	is($a->compare($b), $want, "level compare: $what");
	is(!!$a->dominates($b), !!$dom, "level dominates: $what");
	is(!!$b->dominates($a), !!$sub, "level dominates reversed: $what");
	is(!!$a->equal($b), $want == LEVEL_EQUAL, "level equal: $what");
	# The operators say the same, both ways round.
	is(!!($a >= $b), !!$dom, "level op >=: $what");
	is(!!($a <= $b), !!$sub, "level op <=: $what");
	is(!!($a > $b), $want == LEVEL_DOMINATES, "level op >: $what");
	is(!!($a < $b), $want == LEVEL_DOMINATED, "level op <: $what");
	is(!!($a == $b), $want == LEVEL_EQUAL, "level op ==: $what");
	is(!!($a != $b), $want != LEVEL_EQUAL, "level op !=: $what");
}
ok(L('s2:c1') >= 's1', 'level op: a text on the right is parsed');
ok('s3:c1' > L('s2'), 'level op: a text on the left is parsed (swapped)');
ok(!('s1' >= L('s2')), 'level op: swapped operands keep their order');
ok(L('s2:c0.c3') eq 's2:c0,c1,c2,c3', 'level op eq: the same level written differently');
eval { my $x = L('s1') >= 's1:x' };
isa_ok($@, 'Clip::Error::Invalid', 'level op refusal: a text that is no level');
eval { my $x = L('s1') <=> L('s2') };
ok($@, 'level op refusal: <=> dies (a partial order)');
eval { my @s = sort { $a cmp $b } L('s1'), L('s2'); };
like($@, qr/no method found/, 'level op refusal: cmp (sort) dies, no text order pretends');
eval { L('s1')->compare('s2') };
ok($@ && !ref $@, 'level compare refusal: a text where a level is needed');

# Join and meet (level_lattice table), as methods and as | and &.
my @lattice = (
	['s2:c1', 's3:c2', 's3:c1.c2', 's2'], ['s0:c0.c5', 's0:c3.c9', 's0:c0.c9', 's0:c3.c5'],
	['s4:c1023', 's1:c0', 's4:c0,c1023', 's1'], ['s7:c2,c4', 's7:c2,c4', 's7:c2,c4', 's7:c2,c4'],
	['s0', 's15:c0.c1023', 's15:c0.c1023', 's0'],
);
for my $c (@lattice) {
	my ($a, $b) = (L($c->[0]), L($c->[1]));
	is($a->join($b)->format, $c->[2], "level join: $c->[0] | $c->[1]");
	is($a->meet($b)->format, $c->[3], "level meet: $c->[0] & $c->[1]");
	is(($a | $b)->format, $c->[2], "level op |: $c->[0] | $c->[1]");
	is(($a & $b)->format, $c->[3], "level op &: $c->[0] & $c->[1]");
}
eval { no warnings; L('s1')->join(undef) };
ok($@ && !ref $@, 'level join refusal: undef is no level');
eval { L('s1')->meet(Clip::Range->parse('s1')) };
ok($@ && !ref $@, 'level meet refusal: a range is no level');
eval { L('s1')->dominates('s0') };
ok($@ && !ref $@, 'level dominates refusal: a text where a level is needed');

# A level outlives the handles it came from (references, not copies).
my $kept;
{
	my $a = L('s2:c1');
	$kept = $a->join(L('s1:c2'));
}
is("$kept", 's2:c1.c2', 'level lifetime: a join outlives its operands');

# Ranges.
my $r = Clip::Range->parse('s1-s3:c0.c3');
is($r->low->format, 's1', 'range low');
is($r->high->format, 's3:c0.c3', 'range high');
ok($r->contains(L('s2:c1')), 'range contains a level inside');
ok(!$r->contains(L('s0')), 'range contains: not a level below low');
ok(!$r->contains(L('s3:c4')), 'range contains: not a level above high');
is(Clip::Range->new('s1', 's2:c1')->format, 's1-s2:c1', 'range new from texts');
eval { Clip::Range->parse('s3-s1') };
isa_ok($@, 'Clip::Error::Invalid', 'range parse refusal: high does not dominate low');
eval { Clip::Range->new('s2:c1', 's2:c2') };
isa_ok($@, 'Clip::Error::Invalid', 'range new refusal: incomparable bounds');
my $low = $r->low;
undef $r;
is("$low", 's1', 'range lifetime: a bound outlives its range');

# Names (level_names).
my $names = Clip::LevelNames->parse(<<'TABLE');
# comment
s0 = Unclassified

s1:c0=Restricted
s2:c0.c3 = Secret.Team-A_1
TABLE
is($names->level('Restricted')->format, 's1:c0', 'names level: a name');
is($names->level('s1:c0,c1')->format, 's1:c0.c1', 'names level: falls back to the grammar');
is($names->name(L('s2:c0,c1,c2,c3')), 'Secret.Team-A_1', 'names name: a level written differently');
is($names->name(L('s5')), 's5', 'names name: no name, the canonical text');
eval { $names->level('Nobody') };
isa_ok($@, 'Clip::Error::Invalid', 'names level refusal: an unknown name');
for my $bad (["s1=A\ns2=A\n", 'a duplicate name'], ["s1=s2x\n", 'a name readable as a level'],
	     ["s1=bad name\n", 'text after the name'], ["s1=A\n\0", 'a NUL byte']) {
	eval { Clip::LevelNames->parse($bad->[0]) };
	isa_ok($@, 'Clip::Error::Invalid', "names parse refusal: $bad->[1]");
}
done_testing;
