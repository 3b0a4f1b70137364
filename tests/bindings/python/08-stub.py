# SPDX-License-Identifier: LGPL-2.1-or-later
# clip.pyi says what the module has: every public name of the module, and
# of each of its classes, is in the stub, and the stub has nothing else.
import ast
import inspect
import os
import shutil
import subprocess
import sys

import pytest

import clip
from conftest import program

# What every object has, or what Python adds to every class.
INHERITED = set(dir(object)) | set(dir(OSError)) | set(dir(tuple)) | {"__reduce__"}


def stub():
    with open(program("pyi")) as f:
        return ast.parse(f.read())


def public(names):
    return {n for n in names if not n.startswith("_")}


def stub_names(body):
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_module_names_match_the_stub():
    in_stub = public(stub_names(stub().body))
    in_module = public(dir(clip))
    assert in_module - in_stub == set(), "in the module, not in clip.pyi"
    assert in_stub - in_module == set(), "in clip.pyi, not in the module"


def test_class_members_match_the_stub():
    classes = {n.name: n for n in stub().body if isinstance(n, ast.ClassDef)}
    for name, node in classes.items():
        cls = getattr(clip, name)
        if not inspect.isclass(cls):
            pytest.fail(f"clip.{name} is not a class")
        if issubclass(cls, BaseException):
            continue
        in_stub = public(stub_names(node.body))
        in_class = public(set(vars(cls)) - INHERITED)
        if issubclass(cls, tuple):  # TransferResult: its fields
            in_class = set(cls._fields) if hasattr(cls, "_fields") else \
                {f for f in dir(cls) if not f.startswith("_") and f not in dir(tuple)} - \
                {"n_fields", "n_sequence_fields", "n_unnamed_fields"}
        assert in_class - in_stub == set(), f"clip.{name}: not in clip.pyi"
        assert in_stub - in_class == set(), f"clip.{name}: in clip.pyi only"


def test_the_stub_is_refused_when_it_lies(tmp_path):
    """The check above fails on a stub that names a function the module lacks."""
    names = stub_names(ast.parse("def nosuch() -> None: ...\n").body)
    assert public(names) - public(dir(clip)) == {"nosuch"}


def test_final_matches_the_module():
    """@final in the stub exactly for the classes that cannot be subclassed."""
    BASETYPE = 1 << 10  # Py_TPFLAGS_BASETYPE
    for node in stub().body:
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(clip, node.name)
        if issubclass(cls, (BaseException, tuple)):
            continue
        final = any(isinstance(d, ast.Name) and d.id == "final" for d in node.decorator_list)
        assert final == (not cls.__flags__ & BASETYPE), f"clip.{node.name}"


def stubtest(stub_dir, cwd):
    env = dict(os.environ, MYPYPATH=str(stub_dir))
    return subprocess.run([sys.executable, "-m", "mypy.stubtest", "--allowlist",
                           os.path.join(os.path.dirname(program("pyi")), "stubtest-allowlist"),
                           "clip"], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_mypy_stubtest(tmp_path):
    """mypy's stubtest (Debian: mypy) finds the stub and the module agree,
    and finds a stub that names a function the module lacks."""
    try:
        import mypy.stubtest  # noqa: F401
    except ImportError:
        pytest.skip("mypy's stubtest is not installed (Debian package mypy)")
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(program("pyi"), good / "clip.pyi")
    r = stubtest(good, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "clip.pyi").write_text((good / "clip.pyi").read_text() + "def nosuch() -> None: ...\n")
    r = stubtest(bad, tmp_path)
    assert r.returncode != 0 and "clip.nosuch" in r.stdout, r.stdout
