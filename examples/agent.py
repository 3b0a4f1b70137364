#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A desktop's confirmation agent in Python, on the clip module (clip.Agent).

The mediator (clipd, or a session) asks the last agent that connected
whether a document may go from one cage to another. This agent shows each
question as the prompt must (levels, direction, size, SHA-256, the name and
note escaped for display, the time left) and answers it: from the terminal,
or with --auto yes|no for tests and kiosks. It serves several questions at
once from one selectors loop, and forgets a question the mediator says has
expired or been withdrawn.

  agent.py [--socket PATH] [--auto yes|no] [--ready-fd N] [--count N]

--ready-fd N: write READY=1 to fd N once the mediator greeted the agent.
--count N: exit after answering N questions (tests).
"""
import argparse
import os
import selectors
import sys
import time

import clip

DIRECTION = {clip.AGENT_UP: "up", clip.AGENT_DOWN: "DOWNGRADE", clip.AGENT_SAME: "same level",
             clip.AGENT_INCOMPARABLE: "INCOMPARABLE levels"}


def show(q, out):
    left = max(0.0, q.deadline - time.monotonic())
    print(f"transfer #{q.id}: {DIRECTION.get(q.direction, '?')}", file=out)
    print(f"  from: {q.source} (level {q.source_level})", file=out)
    print(f"  to:   {q.target} (level {q.target_level})", file=out)
    print(f"  name: {q.name}", file=out)
    if q.note:
        print(f"  note: {q.note}", file=out)
    print(f"  size: {q.size} bytes, sha256: {q.sha256.hex()}", file=out)
    if q.flags & clip.AGENT_ENCRYPTED:
        print("  delivered encrypted", file=out)
    print(f"  {left:.0f} s left to answer", file=out, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="the agent socket (default $CLIP_AGENT_SOCKET, "
                    + clip.AGENT_SOCKET + ")")
    ap.add_argument("--auto", choices=("yes", "no"), help="answer every question so")
    ap.add_argument("--ready-fd", type=int)
    ap.add_argument("--count", type=int, default=0)
    args = ap.parse_args()

    pending = {}
    answered = 0
    with clip.Agent(args.socket) as agent, selectors.DefaultSelector() as sel:
        sel.register(agent, selectors.EVENT_READ, "agent")
        if args.auto is None:
            sel.register(sys.stdin, selectors.EVENT_READ, "tty")
        while not args.count or answered < args.count:
            for key, _ in sel.select():
                if key.data == "tty":
                    line = sys.stdin.readline()
                    if not line:
                        return 0
                    # "ID y" or "ID n"
                    parts = line.split()
                    if len(parts) == 2 and parts[0].isdigit() and int(parts[0]) in pending:
                        agent.answer(pending.pop(int(parts[0])), parts[1] in ("y", "yes"))
                        answered += 1
                    continue
                event, q = agent.receive(timeout=0)
                if event == clip.AGENT_READY and args.ready_fd is not None:
                    os.write(args.ready_fd, b"READY=1\n")
                    os.close(args.ready_fd)
                    args.ready_fd = None
                elif event == clip.AGENT_QUESTION:
                    show(q, sys.stdout)
                    if args.auto:
                        agent.answer(q, args.auto == "yes")
                        print(f"  answered {args.auto}", flush=True)
                        answered += 1
                    else:
                        pending[q.id] = q
                        print(f"  answer with: {q.id} y|n", flush=True)
                elif event in (clip.AGENT_EXPIRED, clip.AGENT_WITHDRAWN):
                    pending.pop(q.id, None)
                    why = "expired" if event == clip.AGENT_EXPIRED else "withdrawn"
                    print(f"transfer #{q.id} {why}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except clip.ConnectionError as e:
        print(f"agent.py: the mediator went away: {e.strerror}", file=sys.stderr)
        sys.exit(1)
    except clip.Error as e:
        print(f"agent.py: {e.strerror}", file=sys.stderr)
        sys.exit(1)
