# SPDX-License-Identifier: LGPL-2.1-or-later
# Labels on paths, fds and file objects (the scenarios of
# tests/integration/label-cli.sh): set, get, verify, remove; a copied or
# edited label fails with clip.IntegrityError.
import errno
import os

import pytest

import clip
from conftest import LABEL_ROOTLESS, MODE

RL = {"rootless": LABEL_ROOTLESS}


@pytest.fixture
def doc(tmp_path):
    p = tmp_path / "doc.txt"
    p.write_text("secret\n")
    return p


def test_set_get_verify_on_a_path(ctx, doc):
    ctx.label_set(doc, clip.Level("s2:c1"), **RL)
    assert ctx.label_get(doc, **RL) == clip.Level("s2:c1")
    ctx.label_verify(str(doc), **RL)


def test_set_get_on_fds_and_file_objects(ctx, doc):
    with open(doc, "rb") as f:
        ctx.label_set(f, clip.Level("s1"), **RL)
        assert ctx.label_get(f.fileno(), **RL) == clip.Level("s1")
    fd = os.open(doc, os.O_RDONLY)
    try:
        ctx.label_verify(fd, **RL)
    finally:
        os.close(fd)


def test_rootless_attribute_name(ctx, doc):
    ctx.label_set(doc, clip.Level("s3"), rootless=True)
    assert clip.LABEL_XATTR_ROOTLESS in os.listxattr(doc)
    assert ctx.label_get(doc, rootless=True) == clip.Level("s3")


def test_trusted_attribute_as_root(ctx, doc):
    if MODE != "root":
        pytest.skip("trusted.* attributes need root in the initial user namespace")
    ctx.label_set(doc, clip.Level("s3"))
    assert clip.LABEL_XATTR in os.listxattr(doc)


def test_no_label(ctx, doc):
    with pytest.raises(clip.NotFoundError) as e:
        ctx.label_get(doc, **RL)
    assert e.value.errno == errno.ENODATA


def test_a_copied_label_fails(ctx, doc, tmp_path):
    ctx.label_set(doc, clip.Level("s2"), **RL)
    other = tmp_path / "other.txt"
    other.write_text("other\n")
    name = clip.LABEL_XATTR_ROOTLESS if LABEL_ROOTLESS else clip.LABEL_XATTR
    os.setxattr(other, name, os.getxattr(doc, name))
    with pytest.raises(clip.IntegrityError) as e:
        ctx.label_verify(other, **RL)
    assert e.value.errno == errno.EBADMSG


def test_an_edited_label_fails(ctx, doc):
    ctx.label_set(doc, clip.Level("s2"), **RL)
    name = clip.LABEL_XATTR_ROOTLESS if LABEL_ROOTLESS else clip.LABEL_XATTR
    value = bytearray(os.getxattr(doc, name))
    value[1] ^= 1
    os.setxattr(doc, name, bytes(value))
    with pytest.raises(clip.IntegrityError):
        ctx.label_get(doc, **RL)


def test_another_key_fails(ctx, doc, tmp_path):
    ctx.label_set(doc, clip.Level("s2"), **RL)
    other_state = tmp_path / "other-state"
    other_state.mkdir(mode=0o700)
    other = clip.Context(state_dir=other_state, log=False)
    with pytest.raises(clip.NoKeyError):
        other.label_verify(doc, **RL)


def test_remove(ctx, doc):
    ctx.label_set(doc, clip.Level("s1"), **RL)
    ctx.label_remove(doc, **RL)
    with pytest.raises(clip.NotFoundError):
        ctx.label_remove(doc, **RL)


def test_refusals(ctx, tmp_path):
    with pytest.raises(clip.NotFoundError) as e:
        ctx.label_get(tmp_path / "missing", **RL)
    assert "missing" in e.value.strerror
    with pytest.raises(clip.BadFileError):
        ctx.label_get(9999, **RL)
    with pytest.raises(TypeError):
        ctx.label_set(tmp_path, "s1", **RL)
    with pytest.raises(TypeError):
        ctx.label_get(True, **RL)
    with pytest.raises(clip.BadFileError):
        ctx.label_set("/dev/null", clip.Level("s1"), **RL)


def test_unsafe_state_dir_is_refused(tmp_path, doc):
    state = tmp_path / "open-state"
    state.mkdir()
    os.chmod(state, 0o777)
    ctx = clip.Context(state_dir=state, log=False)
    with pytest.raises(clip.PermissionDenied):
        ctx.label_set(doc, clip.Level("s1"), **RL)


def test_path_refuses_a_nul_byte(ctx, doc):
    """A path "doc.txt\\0.bak" is refused, never opened as "doc.txt"."""
    ctx.label_set(doc, clip.Level("s1"), **RL)
    with pytest.raises(ValueError):
        ctx.label_get(str(doc) + "\x00.bak", **RL)
    with pytest.raises(ValueError):
        ctx.label_set(str(doc) + "\x00.bak", clip.Level("s2"), **RL)
    assert ctx.label_get(doc, **RL) == clip.Level("s1")
