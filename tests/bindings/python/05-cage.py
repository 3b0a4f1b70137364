# SPDX-License-Identifier: LGPL-2.1-or-later
# Cages (the scenarios of tests/unit/cage and examples/init-cage.c): a
# profile from text, from a file and from the builder; start, spawn with
# argv, env and fds, wait on the pidfds with selectors, stop; Landlock
# denials read as they come (on_denial, denial_fileno, read_denials).
import errno
import gc
import os
import selectors
import signal

import pytest

import clip
from conftest import MODE

PROFILE = """[Cage]
Name=pyfile
Level=s1:c2
"""


def test_profile_builder():
    p = clip.Profile("pybuilt")
    p.set_level(clip.Level("s2:c1"))
    p.add_bind("/srv", "/srv", rw=True)
    p.add_tmpfs("/scratch")
    p.set_network(clip.CAGE_NET_LOOPBACK)
    p.set_limits(memory_max=64 << 20, tasks_max=32)
    p.add_capability("CAP_NET_BIND_SERVICE")
    p.add_syscall_deny("ptrace")
    p.set_wx(True)
    p.set_start_timeout(20)
    p.add_port(clip.CAGE_PORT_BIND | clip.CAGE_PORT_CONNECT, 8080)
    p.set_landlock_min_abi(1)
    p.set_data_dir("/var/lib/pybuilt")
    assert p.name == "pybuilt" and p.level == clip.Level("s2:c1")
    assert p.data_dir == "/var/lib/pybuilt" and clip.Profile("x").data_dir is None
    assert ("/srv", "/srv", True) in p.binds
    text = p.format()
    assert "/scratch" in text and str(p) == text
    again = clip.Profile.parse(text, "again")
    assert again.format() == text
    copy = p.dup("pycopy")
    assert copy.name == "pycopy" and copy.level == p.level


def test_profile_refusals():
    with pytest.raises(clip.InvalidError):
        clip.Profile("-bad")
    p = clip.Profile("pyref")
    with pytest.raises(clip.InvalidError) as e:
        p.add_bind("/srv", "/x/")
    assert "/x/" in e.value.strerror
    with pytest.raises(clip.InvalidError):
        p.add_capability("CAP_NOPE")
    with pytest.raises(clip.InvalidError):
        p.set_network(9)
    with pytest.raises(clip.InvalidError):
        p.add_port(clip.CAGE_PORT_BIND, 0)
    with pytest.raises(clip.InvalidError):
        p.set_landlock_min_abi(clip.CAGE_LANDLOCK_ABI_MAX + 1)
    with pytest.raises(clip.InvalidError) as e:
        clip.Profile.parse("[Cage]\nName=x\nBogus=1\n", "bogus.cage")
    assert "bogus.cage" in e.value.strerror and e.value.offset is not None
    with pytest.raises(TypeError):
        p.set_level("s1")


def test_profile_load(tmp_path):
    f = tmp_path / "pyfile.cage"
    f.write_text(PROFILE)
    p = clip.Profile.load(f)
    assert p.name == "pyfile" and p.level == clip.Level("s1:c2")
    with open(f) as fo:
        assert clip.Profile.load(fo).name == "pyfile"
    with pytest.raises(clip.NotFoundError):
        clip.Profile.load(tmp_path / "missing.cage")
    with pytest.raises(clip.BadFileError):
        clip.Profile.load(tmp_path)


def wait_readable(fileobj, timeout=30):
    with selectors.DefaultSelector() as sel:
        sel.register(fileobj, selectors.EVENT_READ)
        return [key.fileobj for key, _ in sel.select(timeout)]


def test_start_spawn_wait_stop(ctx, tmp_path):
    r, w = os.pipe()
    with clip.Cage(ctx, clip.Profile("pycage")) as cage:
        assert cage.state == clip.CAGE_NEW
        cage.start()
        assert cage.state == clip.CAGE_RUNNING
        assert len(cage.pids) >= 1
        with cage.spawn(["/bin/sh", "-c", 'echo "$GREETING"; exit 3'],
                        env={"GREETING": "hello"}, fds=[os.open("/dev/null", os.O_RDONLY), w, w]) as proc:
            os.close(w)
            # The pidfd polls readable when the process exits.
            assert wait_readable(proc) == [proc]
            assert proc.wait() == 3 and proc.returncode == 3
        assert os.read(r, 100) == b"hello\n"
        with cage.spawn(["sh", "-c", "kill -TERM $$"], env=["PATH=/usr/bin:/bin"]) as proc:
            assert proc.wait() == 128 + signal.SIGTERM
        assert cage.fileno() >= 0
    os.close(r)
    assert cage.closed
    with pytest.raises(clip.StateError):
        cage.start()


def test_spawn_refusals(ctx):
    with clip.Cage(ctx, clip.Profile("pyrefuse")) as cage:
        with pytest.raises(clip.StateError):
            cage.spawn(["/bin/true"])
        with pytest.raises(clip.StateError):
            cage.fileno()
        cage.start()
        with pytest.raises(clip.BusyError):
            cage.start()
        with pytest.raises(clip.NotFoundError) as e:
            cage.spawn(["/nonexistent/cmd"])
        assert "/nonexistent/cmd" in e.value.strerror
        with pytest.raises(TypeError):
            cage.spawn("/bin/true")
        with pytest.raises(clip.BadFileError):
            cage.spawn(["/bin/true"], fds=[9999])
        proc = cage.spawn(["/bin/true"])
        assert proc.wait() == 0
        assert proc.wait() == 0  # kept, not asked twice
        cage.stop(grace_ms=100)
        assert cage.state == clip.CAGE_STOPPED
        with pytest.raises(clip.StateError):
            cage.stop()


def test_start_spawn_end_with_first_and_cage_fd(ctx):
    cage = clip.Cage(ctx, clip.Profile("pyfirst"))
    proc = cage.start_spawn(["/bin/sh", "-c", "exit 7"], end_with_first=True)
    assert wait_readable(proc) == [proc]
    assert proc.wait() == 7
    # The cage ends with its first process: its fd polls readable too.
    assert wait_readable(cage.fileno()) == [cage.fileno()]
    cage.wait(timeout=10)
    assert cage.state == clip.CAGE_STOPPED
    cage.close()


def test_wait_timeout_and_signal(ctx):
    with clip.Cage(ctx, clip.Profile("pywait")) as cage:
        cage.start()
        proc = cage.spawn(["/bin/sleep", "30"])
        assert cage.signal(0) == 1
        with pytest.raises(clip.TimeoutError):
            cage.wait(timeout=0.05)
        assert cage.signal(signal.SIGKILL) == 1
        assert proc.wait() == 128 + signal.SIGKILL


def test_process_outlives_cage_and_ctx(state_dir):
    ctx = clip.Context(state_dir=state_dir, log=False)
    cage = clip.Cage(ctx, clip.Profile("pyorder"))
    proc = cage.start_spawn(["/bin/sh", "-c", "exit 5"], end_with_first=True)
    del ctx
    cage.close()
    gc.collect()
    # The cage object is closed; the process kept its own reference.
    assert proc.wait() == 5
    with pytest.raises(clip.StateError):
        cage.stop()
    del cage, proc
    gc.collect()


def test_attach_and_register(ctx):
    with clip.Cage(ctx, clip.Profile("pyreg")) as cage:
        cage.start(register=True)
        other = clip.Cage.attach(ctx, "pyreg")
        assert other.state == clip.CAGE_RUNNING
        other.close()
    with pytest.raises(clip.NotFoundError):
        clip.Cage.attach(ctx, "pyreg")


def test_pidfd_in_asyncio(ctx):
    import asyncio

    async def run(cage):
        proc = cage.spawn(["/bin/sh", "-c", "sleep 0.1; exit 4"])
        loop = asyncio.get_running_loop()
        exited = loop.create_future()
        loop.add_reader(proc.fileno(), exited.set_result, None)
        try:
            await asyncio.wait_for(exited, 30)
        finally:
            loop.remove_reader(proc.fileno())
        return proc.wait()

    with clip.Cage(ctx, clip.Profile("pyasync")) as cage:
        cage.start()
        assert asyncio.run(run(cage)) == 4


def test_identify_which_cage(ctx):
    """Which cage a process is in, from its pidfd, its pid or a socket's peer;
    the core; and a process that has ended is gone, not another's."""
    import socket
    p = clip.Profile("pyid")
    p.set_level(clip.Level("s3:c1"))
    with clip.Cage(ctx, p) as cage:
        cage.start(register=True)
        a, b = socket.socketpair()
        with a, cage.spawn(["/bin/sleep", "30"], fds=[b]) as proc:
            b.close()
            assert ctx.identify_pidfd(proc) == ("pyid", clip.Level("s3:c1"), 0)
            assert ctx.identify_pid(cage.pids[0])[:2] == ("pyid", clip.Level("s3:c1"))
            # A socket's peer is who made or connected it (here the caller,
            # the core), whichever process holds the other end now.
            assert ctx.identify_socket(a) == (None, None, clip.CAGE_IDENTITY_CORE)
            cage.signal(signal.SIGKILL)
            assert proc.wait() == 128 + signal.SIGKILL
            # Ended: its pidfd names no process any more, whatever has its pid.
            with pytest.raises(clip.NotFoundError):
                ctx.identify_pidfd(proc)
    me = os.pidfd_open(os.getpid())
    try:
        assert ctx.identify_pidfd(me) == (None, None, clip.CAGE_IDENTITY_CORE)
    finally:
        os.close(me)
    assert ctx.identify_pid(os.getpid())[2] == clip.CAGE_IDENTITY_CORE
    with open(os.devnull, "rb") as null:
        with pytest.raises(clip.BadFileError):
            ctx.identify_pidfd(null)
    with pytest.raises(clip.InvalidError):
        ctx.identify_pid(0)
    with pytest.raises(TypeError):
        ctx.identify_pidfd(True)


def landlock_abi():
    import ctypes
    # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    return ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)


def kernel_audit(enabled=None):
    """The kernel's audit on or off (AUDIT_SET over netlink, as
    tests/common/helpers.c's test_audit_set()), or None to read it; the
    state it had."""
    import socket
    import struct
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9) as s:  # NETLINK_AUDIT
        s.send(struct.pack("=IHHII", 16, 1000, 1, 1, 0))  # AUDIT_GET, NLM_F_REQUEST
        reply = s.recv(8192)
        was = struct.unpack_from("=I", reply, 16 + 4)[0]
        if enabled is not None:
            status = struct.pack("=11I", 1, int(enabled), *([0] * 9))  # AUDIT_STATUS_ENABLED
            s.send(struct.pack("=IHHII", 16 + len(status), 1001, 5, 2, 0) + status)
            ack = s.recv(8192)
            err = struct.unpack_from("=i", ack, 16)[0]
            assert struct.unpack_from("=H", ack, 4)[0] != 2 or err == 0, os.strerror(-err)
    return was


def test_landlock_denials_reach_on_denial():
    """ABI 7, the kernel's audit on, the host's root (tests/unit/test-cage.c's
    landlock_denials_reach_the_log): a refused TCP connection is read as it
    comes through denial_fileno() and read_denials(), a refused signal when
    the cage stops; each passed to on_denial and to the log."""
    if MODE != "root" or landlock_abi() < 7:
        pytest.skip("not the host's root (only it reads the kernel's audit), or Landlock before ABI 7")
    was = kernel_audit(True)
    try:
        logged = []
        ctx = clip.Context(log=lambda p, m: logged.append(m), log_priority=7)
        with clip.Cage(ctx, clip.Profile("pydeny")) as cage:
            cage.start()
            assert not cage.missing & clip.CAGE_MISSING_LANDLOCK_LOG
            denials = []
            cage.on_denial = denials.append
            assert cage.on_denial == denials.append
            fd = cage.denial_fileno()
            assert cage.read_denials() == 0
            proc = cage.spawn(["/bin/bash", "-c",
                               "exec 3<>/dev/tcp/127.0.0.1/9 && exit 1; exit 0"])
            assert proc.wait() == 0, "the connection was not refused"
            n = 0
            for _ in range(50):
                if n or not wait_readable(fd, 0.1):
                    continue
                n = cage.read_denials()
            assert n == 1 and len(denials) == 1, (n, denials)
            assert denials[0].startswith("net.connect_tcp ") and "dest=9" in denials[0]
            assert any("cage pydeny was refused net.connect_tcp " in m for m in logged), logged
            proc = cage.spawn(["/bin/sh", "-c", "kill -0 1 && exit 1; exit 0"])
            assert proc.wait() == 0, "kill -0 1 was not refused"
            cage.stop(grace_ms=0)
            assert len(denials) == 2 and denials[1].startswith("scope.signal "), denials
            with pytest.raises(clip.StateError) as e:
                cage.denial_fileno()
            assert e.value.errno == errno.ECHILD
            with pytest.raises(clip.StateError) as e:
                cage.read_denials()
            assert e.value.errno == errno.ECHILD
            cage.on_denial = None
            assert cage.on_denial is None
    finally:
        kernel_audit(was)


def test_denials_refused_where_they_are_not_read(ctx):
    """Before the start ECHILD; a cage whose denials are not read (audit off,
    or not the host's root) ENODATA; a bad on_denial TypeError."""
    with clip.Cage(ctx, clip.Profile("pynodeny")) as cage:
        with pytest.raises(clip.StateError) as e:
            cage.denial_fileno()
        assert e.value.errno == errno.ECHILD
        with pytest.raises(clip.StateError):
            cage.read_denials()
        with pytest.raises(TypeError):
            cage.on_denial = "not callable"
        was = kernel_audit(False) if MODE == "root" else None
        try:
            cage.start()
        finally:
            if was is not None:
                kernel_audit(was)
        assert cage.missing & clip.CAGE_MISSING_LANDLOCK_LOG
        with pytest.raises(clip.NotFoundError) as e:
            cage.denial_fileno()
        assert e.value.errno == errno.ENODATA
        with pytest.raises(clip.NotFoundError) as e:
            cage.read_denials()
        assert e.value.errno == errno.ENODATA
    with pytest.raises(clip.StateError):
        cage.on_denial = print
