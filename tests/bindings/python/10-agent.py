# SPDX-License-Identifier: LGPL-2.1-or-later
# The confirmation agent (clip-agent(3)) through the binding, and the
# example desktop agent examples/agent.py answering a real transfer from
# the low cage to the high one of a session, yes then no.
import os
import selectors
import subprocess
import sys

import pytest

import clip
from conftest import SEND, make_session, program, pump, send_from


@pytest.fixture
def session(ctx, tmp_path):
    with make_session(ctx, tmp_path, "low high ask\n") as s:
        s.start()
        yield s


def start_agent(session, tmp_path, answer):
    """examples/agent.py --auto ANSWER on the session's agent socket, once
    the mediator greeted it."""
    r, w = os.pipe()
    log = open(tmp_path / f"agent-{answer}.log", "wb")
    proc = subprocess.Popen([sys.executable, program("agent_example"), "--socket",
                             str(tmp_path / "session" / "confirm.sock"), "--auto", answer,
                             "--ready-fd", str(w), "--count", "1"],
                            pass_fds=[w], stdout=log, stderr=subprocess.STDOUT)
    os.close(w)
    os.set_blocking(r, False)
    with selectors.DefaultSelector() as sel:
        sel.register(session, selectors.EVENT_READ, "session")
        sel.register(r, selectors.EVENT_READ, "ready")
        for _ in range(200):
            for key, _ in sel.select(0.1):
                if key.data == "ready":
                    assert os.read(r, 100) == b"READY=1\n"
                    os.close(r)
                    return proc
                while session.dispatch():
                    pass
    proc.kill()
    pytest.fail("the example agent was never greeted")


def test_the_example_agent_answers_a_real_transfer(session, tmp_path):
    doc = tmp_path / "doc.txt"
    doc.write_text("for the high cage\n")
    agent = start_agent(session, tmp_path, "yes")
    status, out = send_from(session, "low", "high", doc, tmp_path)
    assert (status, out) == (0, "delivered doc.txt\n"), out
    assert agent.wait(timeout=30) == 0
    shown = (tmp_path / "agent-yes.log").read_text()
    assert "from: low (level s0)" in shown and "to:   high (level s2)" in shown
    assert "note: from a session" in shown and "answered yes" in shown
    assert (tmp_path / "session" / "inbox" / "high" / "doc.txt").read_text() == doc.read_text()

    agent = start_agent(session, tmp_path, "no")
    status, out = send_from(session, "low", "high", doc, tmp_path)
    assert (status, out) == (0, f"denied {clip.TRANSFER_DENIED_USER}\n"), out
    assert agent.wait(timeout=30) == 0
    assert not (tmp_path / "session" / "inbox" / "high" / "doc-1.txt").exists()


def test_agent_api_and_refusals(session, tmp_path):
    with pytest.raises(clip.NotFoundError):
        clip.Agent(tmp_path / "no.sock")
    doc = tmp_path / "doc.txt"
    doc.write_text("x\n")
    with clip.Agent(tmp_path / "session" / "confirm.sock") as agent:
        seen = {}
        out = tmp_path / "client.out"
        with open(doc, "rb") as d, open(out, "wb") as o, open(os.devnull, "rb") as null:
            proc = session.spawn("low", ["/usr/bin/python3", "-c", SEND, "high"],
                                 env={"PYTHONPATH": os.environ["PYTHONPATH"]},
                                 fds=[null, o, o, d])
        with selectors.DefaultSelector() as sel:
            sel.register(session, selectors.EVENT_READ, "session")
            sel.register(agent, selectors.EVENT_READ, "agent")
            for _ in range(300):
                if clip.AGENT_QUESTION in seen:
                    break
                for key, _ in sel.select(0.1):
                    if key.data == "session":
                        while session.dispatch():
                            pass
                        continue
                    event, q = agent.receive(timeout=0)
                    seen.setdefault(event, q)
                    if event == clip.AGENT_QUESTION:
                        assert q.state == clip.AGENT_PENDING
                        assert q.direction == clip.AGENT_UP and q.size == 2
                        assert q.name == "doc.txt" and q.raw_name == b"doc.txt"
                        assert q.source == "low" and q.target_level == "s2"
                        assert q.timeout_ms > 0
                        agent.answer(q, False)
                        assert q.state == clip.AGENT_ANSWERED
                        with pytest.raises(clip.StateError):
                            agent.answer(q, True)
        assert pump(session, proc) == 0
        assert out.read_text() == f"denied {clip.TRANSFER_DENIED_USER}\n"
    assert clip.AGENT_READY in seen and clip.AGENT_QUESTION in seen
    with pytest.raises(clip.ConnectionError):
        agent.receive(timeout=0)
    with pytest.raises(TypeError):
        agent.answer("not a question", True)
