# SPDX-License-Identifier: LGPL-2.1-or-later
# Fixtures of the clip module's tests (run-pytest.py runs them).
import os
import selectors
import textwrap

import pytest

import clip


def test_mode():
    """root, nonroot (an unprivileged user) or rootless (uid 0 of a user
    namespace), as tools/run-tests names its steps."""
    if os.geteuid() != 0:
        return "nonroot"
    with open("/proc/self/uid_map") as f:
        fields = f.read().split()
    return "root" if fields[:3] == ["0", "0", "4294967295"] else "rootless"


MODE = test_mode()
# Labels in trusted.* need CAP_SYS_ADMIN in the initial namespace.
LABEL_ROOTLESS = MODE != "root"


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    return d


@pytest.fixture
def ctx(state_dir):
    with clip.Context(state_dir=state_dir, log=False) as c:
        yield c


def program(name):
    """A program of the build tree, from the environment meson gives."""
    path = os.environ.get("CLIP_TEST_" + name.upper().replace("-", "_"))
    if not path:
        pytest.fail(f"CLIP_TEST_{name.upper()} is not set: run through meson test")
    return path


# Sessions whose cages run this module (09-session.py, 10-agent.py).
MODULE_DIR = os.environ.get("PYTHONPATH", "").split(":")[0]
BUILD_ROOT = os.path.dirname(os.path.dirname(MODULE_DIR))


def make_session(ctx, tmp_path, policy):
    """A session "py" of two cages, low (s0) and high (s2), that see the
    build tree read-only (their python3 imports the module from it)."""
    s = clip.Session(ctx, "py")
    s.set_state_dir(tmp_path / "session")
    profile = clip.Profile("pysess")
    profile.add_bind(BUILD_ROOT, BUILD_ROOT)
    for name, level in (("low", "s0"), ("high", "s2")):
        s.add_cage(name, clip.Level(level), profile=profile, data_dir=tmp_path / "data" / name,
                   data_encryption=clip.SESSION_DATA_NONE)
    s.set_policy(policy)
    return s


def pump(session, proc, timeout=60):
    """Dispatch the session's events until @proc exits; its status."""
    with selectors.DefaultSelector() as sel:
        sel.register(session, selectors.EVENT_READ, "session")
        sel.register(proc, selectors.EVENT_READ, "proc")
        for _ in range(int(timeout * 10)):
            for key, _ in sel.select(0.1):
                if key.data == "proc":
                    return proc.wait()
                while session.dispatch():
                    pass
    pytest.fail("the process in the cage never ended")


SEND = textwrap.dedent("""
    import sys, clip
    with clip.TransferClient() as client:
        try:
            r = client.send(3, sys.argv[1], "doc.txt", "from a session")
            print("delivered", r.name)
        except clip.TransferDenied as e:
            print("denied", e.status)
""")


def send_from(session, cage, target, doc, tmp_path):
    out = tmp_path / f"out-{cage}"
    with open(doc, "rb") as d, open(out, "wb") as o, open(os.devnull, "rb") as null:
        proc = session.spawn(cage, ["/usr/bin/python3", "-c", SEND, target],
                             env={"PYTHONPATH": MODULE_DIR}, fds=[null, o, o, d])
        status = pump(session, proc)
    return status, out.read_text()
