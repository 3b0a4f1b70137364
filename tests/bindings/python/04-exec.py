# SPDX-License-Identifier: LGPL-2.1-or-later
# W^X checks and securebits (the scenarios of tests/exec): the kernel's
# answer, the decisions an interpreter takes, and the bits, which are set
# in a child interpreter since they never come off.
import errno
import os
import subprocess
import sys
import textwrap

import pytest

import clip


@pytest.fixture
def files(tmp_path):
    x = tmp_path / "x.py"
    x.write_text("print('x')\n")
    x.chmod(0o755)
    nox = tmp_path / "nox.py"
    nox.write_text("print('nox')\n")
    nox.chmod(0o644)
    return x, nox


def test_support(ctx):
    assert ctx.exec_check_support() in (clip.EXEC_CHECK_NATIVE, clip.EXEC_CHECK_DEGRADED)


def test_check(ctx, files):
    x, nox = files
    ctx.exec_check(x)
    with open(x, "rb") as f:
        ctx.exec_check(f)
    with pytest.raises(clip.PermissionDenied) as e:
        ctx.exec_check(nox)
    assert e.value.errno == errno.EACCES


def test_may_run_file(ctx, files):
    x, nox = files
    assert ctx.exec_may_run_file(x, "x.py") is True
    # Not enforced (no securebit, no flag): it runs, and says the check failed.
    assert ctx.exec_may_run_file(nox) is False
    with pytest.raises(clip.PermissionDenied):
        ctx.exec_may_run_file(nox, "nox.py", clip.EXEC_RESTRICT_FILE)


def test_may_run_interactive(ctx, files):
    x, _ = files
    assert ctx.exec_may_run_interactive(None, "-c") is True
    with pytest.raises(clip.PermissionDenied):
        ctx.exec_may_run_interactive(None, "-c", clip.EXEC_DENY_INTERACTIVE)
    assert ctx.exec_may_run_interactive(x, "stdin", clip.EXEC_DENY_INTERACTIVE) is True


def test_open(ctx, files, tmp_path):
    x, nox = files
    fd = ctx.exec_open(x)
    try:
        assert os.read(fd, 100) == b"print('x')\n"
    finally:
        os.close(fd)
    with pytest.raises(clip.PermissionDenied):
        ctx.exec_open(nox, clip.EXEC_RESTRICT_FILE)
    with pytest.raises(clip.NotFoundError):
        ctx.exec_open(tmp_path / "missing")
    with pytest.raises(clip.BadFileError):
        ctx.exec_open(tmp_path)
    dfd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(ctx.exec_open("x.py", dir_fd=dfd))
    finally:
        os.close(dfd)


def test_allow_tree(ctx, tmp_path):
    tree = tmp_path / "lib"
    tree.mkdir()
    (tree / "a.py").write_text("a = 1\n")
    (tree / "a.py").chmod(0o644)
    passes, stats = ctx.exec_allow_tree(tree, clip.EXEC_TREE_CHECK)
    assert passes is False and stats["changed"] == 1
    passes, stats = ctx.exec_allow_tree(tree)
    assert passes is True and stats["files"] == 1
    assert os.stat(tree / "a.py").st_mode & 0o111 == 0o111
    with pytest.raises(clip.NotFoundError):
        ctx.exec_allow_tree(tmp_path / "missing")


def child(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=60)


def test_securebits_in_a_child():
    r = child("""
        import clip
        ctx = clip.Context(log=False)
        assert ctx.get_securebits() == 0, ctx.get_securebits()
        ctx.set_securebits(clip.EXEC_RESTRICT_FILE)
        print(ctx.get_securebits() == clip.EXEC_RESTRICT_FILE)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_securebits_refusals_in_a_child():
    r = child("""
        import clip
        ctx = clip.Context(log=False)
        try:
            ctx.set_securebits(1)
        except clip.InvalidError:
            print("invalid")
        ctx.set_securebits(clip.EXEC_RESTRICT_FILE_LOCKED)
        try:
            ctx.set_securebits(clip.EXEC_RESTRICT_FILE)
        except clip.PermissionDenied as e:
            print("locked", e.errno)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["invalid", "locked 1"]


def test_a_context_after_fork_says_so(ctx):
    pid = os.fork()
    if pid == 0:
        try:
            ctx.exec_check_support()
            os._exit(1)
        except clip.StateError as e:
            os._exit(0 if e.errno == errno.ECHILD else 2)
        except BaseException:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
