# SPDX-License-Identifier: LGPL-2.1-or-later
# clip.Context: state directory, key provider, log priority and the log
# handler into a callable or logging; errors as clip.Error subclasses.
import errno
import gc
import logging
import os
import sys

import pytest

import clip
from conftest import MODE


def test_defaults_and_settings(state_dir):
    ctx = clip.Context(state_dir=state_dir, key_provider="file", log_priority=6, log=False)
    assert ctx.state_dir == str(state_dir)
    assert ctx.key_provider == "file"
    assert ctx.log_priority == 6
    assert ctx.cage_mode in (clip.CAGE_MODE_ROOT, clip.CAGE_MODE_ROOTLESS)


def test_none_is_an_omitted_path(state_dir, monkeypatch):
    # The stub says "_Path | None": None is the default, not a TypeError.
    monkeypatch.setenv("CLIP_STATE_DIR", str(state_dir))
    assert clip.Context(state_dir=None).state_dir == clip.Context().state_dir


def test_refusals():
    with pytest.raises(clip.InvalidError):
        clip.Context(state_dir="relative/dir")
    with pytest.raises(clip.UnsupportedError) as e:
        clip.Context(key_provider="nosuch")
    assert e.value.errno == errno.EOPNOTSUPP and "nosuch" in e.value.strerror
    with pytest.raises(clip.InvalidError):
        clip.Context(log_priority=8)
    with pytest.raises(clip.InvalidError):
        clip.Context(cage_mode=7)
    with pytest.raises(TypeError):
        clip.Context(log=42)


def test_log_to_a_callable(state_dir, tmp_path):
    seen = []
    ctx = clip.Context(state_dir=state_dir, log=lambda p, m: seen.append((p, m)), log_priority=7)
    # A label refused for a missing key logs nothing; a verify does: look
    # for any message on a call that logs (a label of a file without one).
    f = tmp_path / "f"
    f.write_bytes(b"x")
    ctx.get_securebits()
    with pytest.raises(clip.Error):
        ctx.label_get(f, rootless=True)
    ctx.exec_check_support()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_text("x = 1\n")
    ctx.exec_allow_tree(tree)
    assert seen, "nothing logged at LOG_DEBUG"
    assert all(isinstance(p, int) and 0 <= p <= 7 and isinstance(m, str) for p, m in seen)


def test_log_into_logging(state_dir, tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="clip")
    ctx = clip.Context(state_dir=state_dir, log_priority=7)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_text("x = 1\n")
    ctx.exec_allow_tree(tree)
    assert any(r.name == "clip" for r in caplog.records)


def test_a_raising_log_handler_does_not_break_the_call(state_dir, tmp_path, monkeypatch):
    def bad(p, m):
        raise RuntimeError("handler")
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    ctx = clip.Context(state_dir=state_dir, log=bad, log_priority=7)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_text("x = 1\n")
    passes, stats = ctx.exec_allow_tree(tree)
    assert passes and stats["changed"] == 1
    # The handler's exception went to sys.unraisablehook, not into the call.
    assert reported and all(isinstance(r.exc_value, RuntimeError) for r in reported)


def test_error_hierarchy():
    families = {
        clip.InvalidError: ValueError, clip.PermissionDenied: PermissionError,
        clip.ConnectionError: ConnectionError, clip.TimeoutError: TimeoutError,
    }
    for cls, builtin in families.items():
        assert issubclass(cls, clip.Error) and issubclass(cls, builtin)
    for cls in (clip.NotFoundError, clip.IntegrityError, clip.NoKeyError, clip.BusyError,
                clip.BadFileError, clip.UnsupportedError, clip.StateError, clip.ResourceError,
                clip.TransferFailed):
        assert issubclass(cls, clip.Error) and issubclass(cls, OSError)
    assert issubclass(clip.TransferDenied, clip.PermissionDenied)
    e = clip.NotFoundError(errno.ENOENT, "no such thing")
    assert e.errno == errno.ENOENT and e.strerror == "no such thing"


def test_objects_outlive_their_context(tmp_path):
    state = tmp_path / "s"
    state.mkdir(mode=0o700)
    ctx = clip.Context(state_dir=state, log=False)
    log = clip.AuditLog(ctx)
    profile = clip.Profile("outlive")
    cage = clip.Cage(ctx, profile)
    del ctx
    gc.collect()
    log.append(event="request", source="a", target="b")
    assert cage.state == clip.CAGE_NEW
    del cage, log
    gc.collect()


def test_version():
    assert clip.version().count(".") == 2


def test_the_module_and_library_of_this_build():
    """The module imported is the build tree's (PYTHONPATH), and the libclip it
    loaded is the build tree's too (its RUNPATH), not an installed one."""
    module_dir = os.environ["PYTHONPATH"].split(":")[0]
    assert os.path.dirname(os.path.realpath(clip.__file__)) == os.path.realpath(module_dir)
    build_root = os.path.dirname(os.path.dirname(os.path.realpath(module_dir)))
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "libclip.so" in line}
    assert libs and all(os.path.realpath(p).startswith(build_root + "/") for p in libs), libs


def test_lsm_status_load_unload(ctx):
    """The BPF LSM from a context. This machine's kernel cannot load BPF
    LSM programs (no "bpf" in its LSM list, or it refuses them): nothing is
    pinned, lsm_status() says so, lsm_load() is refused with the library's
    error, and unloading what is not loaded is no error."""
    assert ctx.lsm_status() is False
    assert ctx.lsm_unload() is None
    with pytest.raises(clip.PermissionDenied) as e:
        ctx.lsm_load()
    assert e.value.errno == errno.EPERM
    if MODE == "root":  # elsewhere it is refused earlier: no bpffs may be mounted
        assert "refuses the BPF LSM's programs" in e.value.strerror, e.value.strerror
        assert not os.path.exists(clip.LSM_PIN_DIR), "a failed load left its directory"
    assert ctx.lsm_status() is False
