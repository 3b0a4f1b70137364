# SPDX-License-Identifier: LGPL-2.1-or-later
# The transfer client against a real clipd (the scenarios of
# tests/integration/transfer-e2e.sh): a delivery as a value, a denial by the
# policy as TransferDenied (or a value with check=False), a request polled
# with selectors, refusals; then the audit trail clipd wrote, verified and
# shown through the binding; a cage's one-way report (W^X refusal) audited.
import errno
import hashlib
import os
import selectors
import subprocess
import time

import pytest

import clip
from conftest import LABEL_ROOTLESS, program

DOC = os.urandom(3000)


@pytest.fixture(scope="module")
def mediator(tmp_path_factory):
    d = tmp_path_factory.mktemp("xfer")
    for sub in ("cfg", "state", "run", "in-low", "in-mid"):
        (d / sub).mkdir()
    (d / "state").chmod(0o700)
    (d / "cfg" / "policy").write_text("low mid allow\n")
    (d / "cfg" / "cages").write_text(
        f"low s0 {d}/in-low {d}/run/low.sock\nmid s1 {d}/in-mid {d}/run/mid.sock\n")
    r, w = os.pipe()
    args = [program("clipd"), "--config", str(d / "cfg"), "--state-dir", str(d / "state"),
            "--agent-socket", str(d / "run" / "confirm.sock"), "--ready-fd", str(w)]
    if LABEL_ROOTLESS:
        args.append("--rootless")
    log = open(d / "clipd.log", "wb")
    clipd = subprocess.Popen(args, pass_fds=[w], stderr=log)
    os.close(w)
    with os.fdopen(r) as ready:
        line = ready.readline().strip()
    if line != "READY=1":
        clipd.kill()
        clipd.wait()
        pytest.fail("clipd did not start: " + (d / "clipd.log").read_text())
    (d / "doc.bin").write_bytes(DOC)
    yield d
    clipd.terminate()
    clipd.wait(timeout=30)
    log.close()


def test_send_delivered_as_a_value(mediator):
    with clip.TransferClient(mediator / "run" / "low.sock") as client:
        result = client.send(mediator / "doc.bin", "mid", "doc.bin", "quarterly figures")
    assert isinstance(result, clip.TransferResult)
    assert result.status == clip.TRANSFER_DELIVERED and result.name == "doc.bin"
    assert result.size == 3000 and result.sha256 == hashlib.sha256(DOC).digest()
    assert result.encrypted is False and result.error == 0
    assert (mediator / "in-mid" / "doc.bin").read_bytes() == DOC


def test_send_denied_as_an_exception(mediator):
    with clip.TransferClient(str(mediator / "run" / "mid.sock")) as client:
        with open(mediator / "doc.bin", "rb") as f:
            with pytest.raises(clip.TransferDenied) as e:
                client.send(f, "low", "doc.bin")
    assert e.value.status == clip.TRANSFER_DENIED_POLICY
    assert e.value.errno == 13 and "no rule allows it" in e.value.strerror
    assert isinstance(e.value, PermissionError)
    assert not (mediator / "in-low" / "doc.bin").exists()


def test_send_denied_as_a_value(mediator):
    with clip.TransferClient(mediator / "run" / "mid.sock") as client:
        result = client.send(mediator / "doc.bin", "low", "doc.bin", check=False)
    assert result.status == clip.TRANSFER_DENIED_POLICY and "no rule" in result.message


def test_request_polled_with_selectors(mediator):
    with clip.TransferClient(mediator / "run" / "low.sock") as client:
        transfer = client.request(mediator / "doc.bin", "mid", "polled.bin")
        with selectors.DefaultSelector() as sel:
            sel.register(transfer, selectors.EVENT_READ)
            answered = False
            while not answered:
                assert sel.select(30), "no answer within 30 s"
                answered = transfer.dispatch()
        assert transfer.result().name == "polled.bin"


def test_refusals(mediator, tmp_path, monkeypatch):
    with pytest.raises(clip.NotFoundError):
        clip.TransferClient(tmp_path / "no.sock")
    # None, as omitted: $CLIP_TRANSFER_SOCKET, here a socket that is not there.
    monkeypatch.setenv("CLIP_TRANSFER_SOCKET", str(tmp_path / "none.sock"))
    with pytest.raises(clip.NotFoundError) as e:
        clip.TransferClient(None)
    assert "none.sock" in e.value.strerror
    with clip.TransferClient(mediator / "run" / "low.sock") as client:
        with pytest.raises(clip.InvalidError):
            client.send(mediator / "doc.bin", "mid", "x" * 2000)
        with pytest.raises(clip.NotFoundError):
            client.send(tmp_path / "missing", "mid", "doc.bin")
        transfer = client.request(mediator / "doc.bin", "mid", "early.bin")
        transfer.wait(timeout=30)
    client.close()
    with pytest.raises(clip.BadFileError):
        client.send(mediator / "doc.bin", "mid", "doc.bin")


def test_the_audit_trail_verifies(mediator):
    ctx = clip.Context(state_dir=mediator / "state", log=False)
    count = ctx.audit_verify()
    records = ctx.audit_show()
    assert count == len(records) >= 4
    assert any("src=mid" in r and "decision=deny" in r for r in records)
    assert any("src=low" in r and "name=doc.bin" in r for r in records)


def test_a_report_is_audited_under_its_sockets_cage(mediator):
    """transfer_report() on low's socket: one way, and clipd records it as
    low's whatever the subject names (tests/unit/test-agent.c's feed tests)."""
    clip.transfer_report("/data/high.py", errno.EACCES, "mounted noexec",
                         path=mediator / "run" / "low.sock")
    ctx = clip.Context(state_dir=mediator / "state", log=False)
    for _ in range(100):
        reports = [r for r in ctx.audit_show() if "event=exec-refused" in r]
        if reports:
            break
        time.sleep(0.05)
    assert len(reports) == 1, reports
    assert " src=low " in reports[0] and " name=/data/high.py " in reports[0], reports[0]


def test_a_report_that_is_not_one_is_refused(tmp_path):
    nowhere = tmp_path / "nowhere.sock"
    for kwargs in ({"kind": 0}, {"kind": 2}, {"text": "two\nlines"}):
        with pytest.raises(clip.InvalidError) as e:
            clip.transfer_report("/x", errno.EACCES, path=nowhere, **kwargs)
        assert e.value.errno == errno.EINVAL
    with pytest.raises(clip.InvalidError) as e:
        clip.transfer_report("/x", -1, path=nowhere)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(clip.InvalidError) as e:
        clip.transfer_report("a" * 1100, errno.EACCES, path=nowhere)
    assert e.value.errno == errno.E2BIG
    with pytest.raises(clip.NotFoundError) as e:
        clip.transfer_report("/x", errno.EACCES, path=nowhere)
    assert e.value.errno == errno.ENOENT
    with pytest.raises(ValueError):
        clip.transfer_report("/x\0y", errno.EACCES, path=nowhere)
