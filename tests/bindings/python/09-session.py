# SPDX-License-Identifier: LGPL-2.1-or-later
# Sessions (the scenarios of tests/unit/test-session*.c): built, checked,
# started, driven from a selectors loop through fileno() and dispatch(), a
# document moved up by a Python client inside the low cage (the binding
# itself, bound into the cage) and a move down denied, status, stop.
import errno
import gc
import os
import selectors
import threading
import time

import pytest

import clip
from conftest import make_session, pump, send_from


@pytest.fixture
def session(ctx, tmp_path):
    with make_session(ctx, tmp_path, "low high allow\n") as s:
        yield s


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


def test_data_encryption_is_said_per_cage(ctx, tmp_path):
    s = clip.Session(ctx, "enc")
    s.add_cage("low", clip.Level("s0"), data_dir=tmp_path / "low",
               data_encryption=clip.SESSION_DATA_NONE)
    s.add_cage("high", clip.Level("s2"), data_dir=tmp_path / "high")
    text = s.format()
    # Plain said explicitly; encrypted, the default, by leaving the key out.
    assert text.count("DataEncryption=none") == 1
    assert "Name=low\nLevel=s0\nDataDirectory=%s\nDataEncryption=none" % (tmp_path / "low") in text
    with pytest.raises(clip.InvalidError):
        s.add_cage("side", clip.Level("s1"), data_dir=tmp_path / "side", data_encryption=7)


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


def test_a_collected_session_stops(ctx, tmp_path):
    """The last reference of a started session, collected, stops it: its
    cages are gone from the registry."""
    s = make_session(ctx, tmp_path, "low high allow\n")
    s.start()
    assert clip.Session.attach_cage(ctx, "py", "low").state == clip.CAGE_RUNNING
    del s
    gc.collect()
    with pytest.raises(clip.NotFoundError):
        clip.Session.attach_cage(ctx, "py", "low")


def ask_runner(session, ctx, request):
    """Call @request(c) from a thread, c a context of its own like @ctx (a
    context is not thread-safe), while this process, the runner, answers it
    from dispatch() (until a request stops the session); what it returned,
    or raise what it raised."""
    got = []

    def run():
        try:
            got.append((True, request(clip.Context(state_dir=ctx.state_dir, log=False))))
        except Exception as e:  # noqa: BLE001 - raised again below
            got.append((False, e))
    t = threading.Thread(target=run)
    t.start()
    while t.is_alive():
        with selectors.DefaultSelector() as sel:
            sel.register(session, selectors.EVENT_READ)
            sel.select(0.05)
        try:
            while session.dispatch():
                pass
        except clip.StateError:
            break  # the request stopped the session: its answer is sent
    t.join()
    ok, value = got[0]
    if not ok:
        raise value
    return value


def test_watch_the_feed(session, ctx, tmp_path):
    """clip.Watch follows the session's feed: a transfer delivered and one
    denied, as the runner (this process) reports them."""
    with pytest.raises(clip.NotFoundError):
        clip.Watch(ctx, "py", str(tmp_path / "session"))
    session.start()
    with ask_runner(session, ctx,
                    lambda c: clip.Watch(c, "py", str(tmp_path / "session"))) as watch:
        doc = tmp_path / "doc.txt"
        doc.write_text("a document\n")
        assert send_from(session, "low", "high", doc, tmp_path)[1] == "delivered doc.txt\n"
        assert send_from(session, "high", "low", doc, tmp_path)[1].startswith("denied")
        events = []
        for _ in range(50):
            while session.dispatch():
                pass
            e = watch.read()
            while e is not None:
                events.append(e)
                e = watch.read()
            if any(e.type == clip.FEED_TRANSFER_DENIED for e in events):
                break
            time.sleep(0.05)
    kinds = [(e.type_name, e.cage, e.target) for e in events]
    assert ("transfer-delivered", "low", "high") in kinds, kinds
    assert ("transfer-denied", "high", "low") in kinds, kinds
    assert all(e.seq > 0 and e.time > 0 for e in events)
    with pytest.raises(clip.BadFileError):
        watch.read()


def test_the_audit_role_reads_the_signed_trail(session, ctx, tmp_path):
    """get_trail() and get_audit_key() of a running session, as the audit
    role reads them (clipctl session trail): the trail verifies with the key
    alone and holds the transfer just made."""
    state = str(tmp_path / "session")
    with pytest.raises(clip.NotFoundError) as e:
        clip.Session.get_trail(ctx, "py", state)
    assert e.value.errno == errno.ESRCH
    with pytest.raises(clip.NotFoundError) as e:
        clip.Session.get_audit_key(ctx, "py", state_dir=state)
    assert e.value.errno == errno.ESRCH
    session.start()
    doc = tmp_path / "doc.txt"
    doc.write_text("a document\n")
    assert send_from(session, "low", "high", doc, tmp_path)[1] == "delivered doc.txt\n"
    fd = ask_runner(session, ctx, lambda c: clip.Session.get_trail(c, "py", state))
    key = ask_runner(session, ctx, lambda c: clip.Session.get_audit_key(c, "py", state))
    assert key == ctx.audit_public_key()
    records = []
    with os.fdopen(fd, "rb") as trail:
        assert clip.audit_verify_public(trail, key, records.append) == len(records) >= 1
    assert any("src=low" in r and "name=doc.txt" in r for r in records), records
    # No runner of that name (in its own state directory: in this one the
    # runner, this process, would be asked and never answer, not dispatching).
    with pytest.raises(clip.NotFoundError) as e:
        clip.Session.get_trail(ctx, "other", str(tmp_path / "other"))
    assert e.value.errno == errno.ESRCH
    with pytest.raises(clip.InvalidError):
        clip.Session.get_audit_key(ctx, "Bad Name", state)
    with pytest.raises(TypeError):
        clip.Session.get_trail("not a context", "py", state)


def test_a_session_s_cage_keeps_its_denials_for_the_feed(session):
    """A cage of a session: its runner reads its Landlock denials into the
    feed; taking them (on_denial, read_denials, denial_fileno) would leave
    the session's watchers without them, and is refused."""
    session.start()
    cage = session.get_cage("low")
    with pytest.raises(clip.BusyError) as e:
        cage.on_denial = print
    assert e.value.errno == errno.EBUSY and "clip.Watch" in str(e.value)
    with pytest.raises(clip.BusyError):
        cage.read_denials()
    with pytest.raises(clip.BusyError):
        cage.denial_fileno()
    assert cage.on_denial is None


def test_down(session, ctx, tmp_path):
    """Session.down(): the runner (this process) stops the session and it
    answers False; nothing left, ESRCH; a bad name, EINVAL."""
    state = str(tmp_path / "session")
    session.start()
    assert ask_runner(session, ctx, lambda c: clip.Session.down(c, "py", state)) is False
    with pytest.raises(clip.NotFoundError):
        clip.Session.attach_cage(ctx, "py", "low")
    with pytest.raises(clip.NotFoundError) as e:
        clip.Session.down(ctx, "py", state_dir=state)
    assert e.value.errno == errno.ESRCH
    with pytest.raises(clip.InvalidError):
        clip.Session.down(ctx, "Bad Name", state)


def test_set_secret(ctx, tmp_path):
    """The user secret of the levels' data: bytes-like, str or None taken
    before the start, refused empty, over 4096 bytes, of another type and
    once started."""
    s = make_session(ctx, tmp_path, "low high allow\n")
    secret = bytearray(b"correct horse")
    s.set_secret(secret)
    secret[:] = bytes(len(secret))  # the caller's copy, wiped: the session kept its own
    s.set_secret("un secret accentué")
    # A one-character str: its UTF-8 is CPython's shared b"q", which must
    # come out of the call as it went in (the binding wipes only its copies).
    s.set_secret("q")
    assert bytes([113])[0] == 113 and "q".encode()[0] == 113, "the shared b'q' was wiped"
    s.set_secret(memoryview(b"x" * 4096))
    s.set_secret(None)
    with pytest.raises(clip.InvalidError) as e:
        s.set_secret(b"")
    assert e.value.errno == errno.EINVAL
    with pytest.raises(clip.InvalidError) as e:
        s.set_secret(b"x" * 4097)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(TypeError):
        s.set_secret(42)
    with s:
        s.start()
        with pytest.raises(clip.BusyError) as e:
            s.set_secret(b"too late")
        assert e.value.errno == errno.EBUSY
    with pytest.raises(clip.StateError):
        s.set_secret(b"closed")
