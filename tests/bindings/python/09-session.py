# SPDX-License-Identifier: LGPL-2.1-or-later
# Sessions (the scenarios of tests/unit/test-session*.c): built, checked,
# started, driven from a selectors loop through fileno() and dispatch(), a
# document moved up by a Python client inside the low cage (the binding
# itself, bound into the cage) and a move down denied, status, stop.
import os
import selectors
import textwrap

import pytest

import clip

MODULE_DIR = os.environ.get("PYTHONPATH", "").split(":")[0]
BUILD_ROOT = os.path.dirname(os.path.dirname(MODULE_DIR))


@pytest.fixture
def session(ctx, tmp_path):
    s = clip.Session(ctx, "py")
    s.set_state_dir(tmp_path / "session")
    profile = clip.Profile("pysess")
    # The build tree, read-only: the cage's python3 imports the module from it.
    profile.add_bind(BUILD_ROOT, BUILD_ROOT)
    for name, level in (("low", "s0"), ("high", "s2")):
        s.add_cage(name, clip.Level(level), profile=profile,
                   data_dir=tmp_path / "data" / name)
    s.set_policy("low high allow\n")
    with s:
        yield s


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


def test_start_transfer_status_stop(session, tmp_path):
    events = []
    session.on_event = lambda e, c, s: events.append((e, c))
    session.check()
    session.start()
    st = session.status()
    assert set(st["cages"]) == {"low", "high"} and st["agent"] is False
    assert st["cages"]["high"]["level"] == "s2"
    assert all(c["state"] == clip.CAGE_RUNNING for c in st["cages"].values())
    doc = tmp_path / "doc.txt"
    doc.write_text("a document\n")
    status, out = send_from(session, "low", "high", doc, tmp_path)
    assert (status, out) == (0, "delivered doc.txt\n"), out
    assert (tmp_path / "session" / "inbox" / "high" / "doc.txt").read_text() == "a document\n"
    status, out = send_from(session, "high", "low", doc, tmp_path)
    assert (status, out) == (0, f"denied {clip.TRANSFER_DENIED_POLICY}\n"), out
    assert not (tmp_path / "session" / "inbox" / "low" / "doc.txt").exists()
    cage = session.get_cage("low")
    assert cage.state == clip.CAGE_RUNNING
    session.stop(grace_ms=200)
    assert (clip.SESSION_EVENT_STOPPED, None) in events
    with pytest.raises(clip.StateError):
        session.dispatch()


def test_refusals(session, ctx, tmp_path):
    with pytest.raises(clip.InvalidError) as e:
        session.add_cage("low", clip.Level("s1"), data_dir=tmp_path / "data" / "other")
    assert "low" in e.value.strerror
    with pytest.raises(clip.InvalidError):
        session.set_policy("nonsense\n")
    with pytest.raises(clip.StateError):
        session.fileno()
    with pytest.raises(clip.StateError):
        session.spawn("low", ["/bin/true"])
    with pytest.raises(clip.InvalidError):
        clip.Session(ctx, "Bad Name")
    with pytest.raises(clip.InvalidError) as e:
        clip.Session.parse(ctx, "[Session]\nBogus=1\n", "bad.session")
    assert "bad.session" in e.value.strerror
    with pytest.raises(clip.NotFoundError):
        clip.Session.control(ctx, "py", "status", state_dir=str(tmp_path / "session"))
    session.start()
    with pytest.raises(clip.BusyError):
        session.start()
    with pytest.raises(clip.InvalidError):
        session.spawn("nosuch", ["/bin/true"])
    with pytest.raises(clip.NotFoundError):
        session.get_cage("nosuch")


def test_spawn_and_restart(session, ctx):
    session.start()
    proc = session.spawn("high", ["/bin/sh", "-c", "exit 6"])
    assert pump(session, proc) == 6
    old = session.get_cage("high").pids[0]
    session.restart_cage("high", grace_ms=100)
    assert session.get_cage("high").pids[0] != old
    attached = clip.Session.attach_cage(ctx, "py", "high")
    assert attached.state == clip.CAGE_RUNNING
    with pytest.raises(clip.NotFoundError):
        clip.Session.attach_cage(ctx, "py", "nosuch")
