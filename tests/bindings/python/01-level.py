# SPDX-License-Identifier: LGPL-2.1-or-later
# clip.Level, clip.Range, clip.LevelNames: the scenarios of tests/unit/level
# (parse, format, dominance, join/meet, names), through the binding.
import pickle

import pytest

import clip


def test_parse_and_format_canonical():
    assert str(clip.Level("s2:c0,c1,c2,c7")) == "s2:c0.c2,c7"
    assert clip.Level("s0").format() == "s0"
    assert repr(clip.Level("s1:c3")) == "clip.Level('s1:c3')"


def test_parse_refusal_names_the_offset():
    with pytest.raises(clip.InvalidError) as e:
        clip.Level("s2:c3,c1")
    assert e.value.errno == 22
    assert e.value.offset == 7
    assert "ascending" in e.value.strerror
    assert isinstance(e.value, ValueError) and isinstance(e.value, OSError)


@pytest.mark.parametrize("text", ["", "s16", "s1:c1024", "s01", "s1 ", "s1:c2.c1", "x"])
def test_parse_refuses_outside_the_grammar(text):
    with pytest.raises(clip.InvalidError):
        clip.Level(text)


def test_new_from_parts():
    level = clip.Level(3, [7, 1, 2, 1])
    assert str(level) == "s3:c1.c2,c7"
    assert level.sensitivity == 3
    assert level.categories == (1, 2, 7)
    assert 7 in level and 3 not in level and 5000 not in level


def test_new_from_parts_refuses_bounds():
    with pytest.raises(clip.InvalidError):
        clip.Level(16)
    with pytest.raises(clip.InvalidError):
        clip.Level(1, [1024])
    with pytest.raises(TypeError):
        clip.Level(1.5)
    with pytest.raises(TypeError):
        clip.Level(True)
    with pytest.raises(TypeError):
        clip.Level("s1", [1])


def test_compare_and_operators():
    hi, lo = clip.Level("s2:c0.c3"), clip.Level("s1:c1")
    left, right = clip.Level("s1:c0"), clip.Level("s1:c1")
    assert hi.compare(lo) == clip.LEVEL_DOMINATES
    assert lo.compare(hi) == clip.LEVEL_DOMINATED
    assert hi.compare(clip.Level("s2:c0.c3")) == clip.LEVEL_EQUAL
    assert left.compare(right) == clip.LEVEL_INCOMPARABLE
    assert hi > lo and hi >= lo and lo < hi and lo <= hi and hi != lo
    assert hi == clip.Level("s2:c0,c1,c2,c3")
    assert not (left <= right) and not (left >= right) and left != right
    assert hi.dominates(lo) and hi.dominates(hi) and not lo.dominates(hi)
    assert hash(hi) == hash(clip.Level(2, [3, 2, 1, 0]))
    assert len({hi, clip.Level("s2:c0.c3"), lo}) == 2


def test_compare_refuses_other_types():
    with pytest.raises(TypeError):
        clip.Level("s1").compare("s1")
    with pytest.raises(TypeError):
        clip.Level("s1") < 1
    assert (clip.Level("s1") == "s1") is False


def test_join_and_meet():
    a, b = clip.Level("s1:c0"), clip.Level("s2:c1")
    assert a.join(b) == clip.Level("s2:c0,c1") == a | b
    assert a.meet(b) == clip.Level("s1") == a & b
    with pytest.raises(TypeError):
        a.join(None)


def test_pickle_round_trip():
    level = clip.Level("s4:c5.c9")
    assert pickle.loads(pickle.dumps(level)) == level


def test_range():
    r = clip.Range("s0-s3:c0.c5")
    assert str(r) == "s0-s3:c0.c5" and repr(r) == "clip.Range('s0-s3:c0.c5')"
    assert r.low == clip.Level("s0") and r.high == clip.Level("s3:c0.c5")
    assert clip.Level("s2:c1") in r and clip.Level("s3:c6") not in r
    assert clip.Range(clip.Level("s0"), clip.Level("s1")) == clip.Range("s0-s1")
    assert str(clip.Range("s2")) == "s2"


def test_range_refusals():
    with pytest.raises(clip.InvalidError):
        clip.Range("s3-s1")
    with pytest.raises(clip.InvalidError):
        clip.Range(clip.Level("s1:c1"), clip.Level("s2:c2"))
    with pytest.raises(TypeError):
        "s1" in clip.Range("s0-s2")


NAMES = """# a table
s0=Public
s2:c0.c3 = Secret
"""


def test_names_parse_and_format():
    names = clip.LevelNames(NAMES)
    secret = names.parse("Secret")
    assert secret == clip.Level("s2:c0.c3")
    assert names.parse("s1:c4") == clip.Level("s1:c4")
    assert names.format(secret) == "Secret" and secret.format(names) == "Secret"
    assert names.format(clip.Level("s1")) == "s1"
    assert clip.Level.parse("Public", names=names) == clip.Level("s0")
    assert clip.Level.parse("s5") == clip.Level("s5")


def test_names_refusals():
    with pytest.raises(clip.InvalidError):
        clip.LevelNames("s0=Public\ns1=Public\n")
    with pytest.raises(clip.InvalidError):
        clip.LevelNames("s0=s1x\n")
    with pytest.raises(clip.InvalidError):
        clip.LevelNames(NAMES).parse("Unknown")
    with pytest.raises(TypeError):
        clip.Level.parse("Public", names="s0=Public")


def test_level_refuses_a_nul_byte():
    """A str with a NUL byte is refused, not parsed up to it: "s0\\0s15"
    would be s0 to the library while the program logged the whole text."""
    with pytest.raises(clip.InvalidError) as e:
        clip.Level("s0\x00s15")
    assert e.value.offset == 2 and "NUL" in e.value.strerror
    with pytest.raises(clip.InvalidError):
        clip.Range("s0\x00-s15")
    # CPython's own converters refuse it for every other str argument.
    with pytest.raises(ValueError):
        clip.Level.parse("s0\x00s15")
    with pytest.raises(ValueError):
        clip.LevelNames("s0=Public\n").parse("Public\x00")
