#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""clip-confirm on a terminal of its own, as the user sees it.

    confirm-pty.py COLSxROWS SCREENS ANSWERS -- CLIP_CONFIRM [ARGS...]

Runs CLIP_CONFIRM on a new pty whose window is COLSxROWS (set before it
starts: TIOCGWINSZ answers that), and keeps a screen of that size as a
terminal draws it: lines wrap at the last column, and the top line
scrolls away. Each time a question ends in "[y/N] ", the screen is written
to SCREENS.N (N from 1; ROWS lines, trailing spaces cut, the cursor's line
last), the number of lines the terminal wrapped since the last question to
SCREENS.N.wraps, and the N-th character of ANSWERS is typed, with a return. After the
last answer, it waits for the agent to say what it sent, stops it and
exits 0 once it has been quiet for 0.3 s; 1 if that took over 60 s. Fd 3, if open, is passed down
(--ready-fd 3).
"""
import codecs
import os
import pty
import signal
import struct
import sys
import termios
import fcntl
import select
import time
import unicodedata


class Screen:
    def __init__(self, cols, rows):
        self.cols, self.rows = cols, rows
        self.cells = [[" "] * cols for _ in range(rows)]
        self.r = self.c = 0
        self.wrap_pending = False
        self.esc = ""
        self.wraps = 0  # lines the terminal wrapped

    def newline(self):
        if self.r == self.rows - 1:
            self.cells.pop(0)
            self.cells.append([" "] * self.cols)
        else:
            self.r += 1

    def put(self, ch):
        width = 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        if unicodedata.combining(ch):
            return
        if self.wrap_pending or self.c + width > self.cols:
            # A terminal with auto-wrap: the next character starts a line.
            self.c = 0
            self.newline()
            self.wrap_pending = False
            self.wraps += 1
        self.cells[self.r][self.c] = ch
        if width == 2:
            self.cells[self.r][self.c + 1] = ""
        self.c += width
        if self.c == self.cols:
            self.c = self.cols - 1
            self.wrap_pending = True

    def feed(self, text):
        for ch in text:
            if self.esc:
                # Escape sequences are skipped (clip-confirm sends none).
                self.esc += ch
                if (self.esc[1:2] == "[" and len(self.esc) > 2 and "@" <= ch <= "~") or (
                    self.esc[1:2] != "[" and len(self.esc) > 1 and ch in "\x07\\"
                ):
                    self.esc = ""
                continue
            if ch == "\x1b":
                self.esc = ch
            elif ch == "\r":
                self.c, self.wrap_pending = 0, False
            elif ch == "\n":
                self.newline()
                self.wrap_pending = False
            elif ch == "\t":
                self.c = min(self.cols - 1, (self.c // 8 + 1) * 8)
            elif ch == "\b":
                self.c, self.wrap_pending = max(0, self.c - 1), False
            elif ch >= " " and ch != "\x7f":
                self.put(ch)

    def text(self):
        return "\n".join("".join(row).rstrip() for row in self.cells[: self.r + 1]) + "\n"


def main():
    size, screens, answers = sys.argv[1:4]
    if sys.argv[4] != "--":
        sys.exit("usage: confirm-pty.py COLSxROWS SCREENS ANSWERS -- PROGRAM [ARGS...]")
    argv = sys.argv[5:]
    cols, rows = (int(x) for x in size.split("x"))
    pid, master = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.execv(argv[0], argv)
    signal.signal(signal.SIGTERM, lambda *_: (os.kill(pid, signal.SIGTERM), sys.exit(1)))
    screen = Screen(cols, rows)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    seen, asked, status = "", 0, 1
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.3)
        if not ready:
            if status == 0:
                break  # the answer went out: the agent prints first, then sends
            # Quiet, the cursor after "[y/N] ": the agent waits for the user
            # (a "[y/N] " in the text a cage sent is not followed by quiet).
            if seen.endswith("[y/N] "):
                asked += 1
                with open(f"{screens}.{asked}", "w") as f:
                    f.write(screen.text())
                with open(f"{screens}.{asked}.wraps", "w") as f:
                    f.write(f"{screen.wraps}\n")
                screen.wraps = 0
                answer = answers[asked - 1] if asked <= len(answers) else "n"
                os.write(master, answer.encode() + b"\n")
                seen = ""
            continue
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        text = decoder.decode(data)
        screen.feed(text)
        seen += text
        # After the last answer: its "-> allowed" or "-> refused" line.
        if asked >= len(answers) and asked and "-> " in seen and seen.endswith("\n"):
            status = 0
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
    os.close(master)
    sys.exit(status)


if __name__ == "__main__":
    main()
