#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The user's terminal, attacked from inside a cage (issue 14, finding 3).
# clipctl runs on the slave of a pty made here, as on a user's terminal
# (its session, its controlling terminal); the cage then tries what it
# did with the user's tty: echo and canonical mode off, TIOCEXCL,
# TIOCSETD, TCXONC, TIOCSWINSZ, OSC 52 and other strings, and a process
# left behind by `cage exec` reading what the user types next at the
# host's prompt. Each check looks at the user's terminal (our slave) and
# at what reached it (what our master reads). Also: the window size
# follows, the relay's raw mode ends on SIGTERM, colours pass.
#
# usage: tty-escape.py CLIPCTL root|rootless (rootless: as uid 65534)
import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

TIOCGEXCL = 0x80045440  # _IOR("T", 0x40, int), not in Python's termios

clipctl, mode = sys.argv[1], sys.argv[2]
n = 0
failed = 0


def ok(cond, desc, diag=None):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n, desc))
    if not cond:
        failed += 1
        if diag is not None:
            for line in str(diag).splitlines()[:20]:
                print("#   " + line)
    sys.stdout.flush()
    return cond


if mode == "root" and os.getuid() != 0:
    print("1..0 # SKIP the root variant needs root")
    sys.exit(0)
as_user = []
owner = os.getuid()
if mode == "rootless" and os.getuid() == 0:
    as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    owner = 65534
if subprocess.run(as_user + ["unshare", "-Ur", "true"], capture_output=True).returncode != 0:
    print("1..0 # SKIP this host refuses user namespaces to uid %d" % owner)
    sys.exit(0)

tmp = tempfile.mkdtemp(prefix="clip-tty-")
os.chmod(tmp, 0o755)
name = "tty-%s-%d" % (mode, os.getpid())
base = 0x900000 + (os.getpid() % 64) * 0x10000
state, data = tmp + "/state", tmp + "/data"
os.mkdir(state, 0o700)
os.mkdir(data, 0o700)
os.chown(state, owner, -1)
os.chown(data, base if mode == "root" else owner, base if mode == "root" else -1)
profile = tmp + "/tty.cage"
with open(profile, "w") as f:
    f.write("[Cage]\nName=%s\nDataDirectory=%s\nUidBase=%d\n" % (name, data, base))
c = as_user + [clipctl, "--state-dir", state]
started = False


class Term:
    """A user's terminal: a pty whose slave is clipctl's controlling tty."""

    def __init__(self, rows=24, cols=80):
        self.m, self.s = pty.openpty()
        fcntl.ioctl(self.m, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.out = b""
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                d = os.read(self.m, 4096)
            except OSError:
                return
            if not d:
                return
            with self.lock:
                self.out += d

    def seen(self):
        with self.lock:
            return self.out

    def wait_for(self, what, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if what in self.seen():
                return True
            time.sleep(0.02)
        return False

    def state(self):
        """What a cage must not change of the user's terminal."""
        def get(f):
            try:
                return f()
            except Exception as e:  # termios.error is no OSError
                return "error: %s" % e

        return (get(lambda: termios.tcgetattr(self.s)),
                get(lambda: struct.unpack("i", fcntl.ioctl(self.s, TIOCGEXCL, b"\0" * 4))[0]),
                get(lambda: struct.unpack("i", fcntl.ioctl(self.s, termios.TIOCGETD,
                                                           b"\0" * 4))[0]),
                get(lambda: struct.unpack("HHHH", fcntl.ioctl(self.s, termios.TIOCGWINSZ,
                                                              b"\0" * 8))[:2]))

    def spawn(self, args):
        s = self.s

        def ctty():
            fcntl.ioctl(s, termios.TIOCSCTTY, 0)

        return subprocess.Popen(args, stdin=s, stdout=s, stderr=s, start_new_session=True,
                                preexec_fn=ctty)

    def output_flows(self):
        """Whether what is written on the terminal still reaches the screen."""
        mark = b"flow-%d" % time.monotonic_ns()
        fl = fcntl.fcntl(self.s, fcntl.F_GETFL)
        fcntl.fcntl(self.s, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        try:
            os.write(self.s, mark)
        except OSError:
            return False
        finally:
            fcntl.fcntl(self.s, fcntl.F_SETFL, fl)
        return self.wait_for(mark, 3)

    def close(self):
        for fd in (self.s, self.m):
            try:
                os.close(fd)
            except OSError:
                pass


def wait(p, timeout=60):
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


ATTACK = r"""
import fcntl, os, struct, termios
fd = 0
def tried(what, f):
    try:
        f()
        print(what, "done", flush=True)
    except OSError as e:
        print(what, "refused", e.errno, flush=True)
st = os.fstat(0)
print("rdev %d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)), flush=True)
def echo_off():
    a = termios.tcgetattr(fd)
    a[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(fd, termios.TCSANOW, a)
tried("echo-off", echo_off)
tried("excl", lambda: fcntl.ioctl(fd, termios.TIOCEXCL))
def setd():
    err = None
    for ld in (27, 1, 3, 13, 5):
        try:
            fcntl.ioctl(fd, termios.TIOCSETD, struct.pack("i", ld))
            return
        except OSError as e:
            err = e
    raise err
tried("winsz", lambda: fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 5, 11, 0, 0)))
os.write(1, b"\x1b]52;c;U0VDUkVU\x07\x1b]0;forged title\x1b\\\x1bP+q544e\x1b\\"
            b"\x1b_apc\x1b\\\x1b^pm\x1b\\\xc2\x9d8;;http://x\x07\x1b[21t\x1b[6n"
            b"\x1b[31mred\x1b[0m\r\n")
print("attack done", flush=True)
# Last: after them, nothing the cage writes shows.
for last in (setd, lambda: termios.tcflow(fd, termios.TCOOFF)):
    try:
        last()
    except Exception:  # termios.error is no OSError
        pass
os._exit(0)
"""

try:
    # -- cage run: every ioctl on the user's terminal, and OSC strings ------
    t = Term()
    before = t.state()
    slave_rdev = os.fstat(t.s).st_rdev
    p = t.spawn(c + ["cage", "run", "--profile", profile, "--", "python3", "-c", ATTACK])
    status = wait(p)
    t.wait_for(b"attack done", 5)
    time.sleep(0.2)
    out = t.seen()
    after = t.state()
    ok(status == 0 and b"attack done" in out,
       "cage run: the attack ran in the cage on a terminal", "status %d\n%r" % (status, out))
    ok(b"echo-off done" in out and b"excl done" in out and b"winsz done" in out,
       "cage run: the cage's own terminal takes its ioctls", out)
    rdev = [l for l in out.split(b"\n") if l.startswith(b"rdev ")]
    ok(rdev and rdev[0].strip() != b"rdev %d:%d" % (os.major(slave_rdev), os.minor(slave_rdev)),
       "cage run: the cage's fd 0 is not the user's terminal", rdev)
    ok(after[0] == before[0], "cage run: echo and canonical mode of the user's terminal unchanged",
       "before %r\nafter  %r" % (before[0], after[0]))
    ok(after[1] == 0, "cage run: the user's terminal is not exclusive (TIOCEXCL)", after[1])
    ok(after[2] == 0, "cage run: the user's terminal keeps line discipline N_TTY", after[2])
    ok(after[3] == before[3], "cage run: the user's window size unchanged",
       "%r -> %r" % (before[3], after[3]))
    ok(t.output_flows(), "cage run: the user's terminal output is not stopped (TCXONC)")
    for seq, what in ((b"\x1b]", "OSC"), (b"\xc2\x9d", "C1 OSC"), (b"\x1bP", "DCS"),
                      (b"\x1b_", "APC"), (b"\x1b^", "PM"), (b"\x1b[21t", "title report"),
                      (b"\x1b[6n", "cursor report")):
        ok(seq not in out, "cage run: no %s reaches the user's terminal" % what, repr(out))
    ok(b"U0VDUkVU" not in out and b"forged title" not in out,
       "cage run: nothing of the OSC strings reaches the user's terminal", repr(out))
    ok(b"\x1b[31mred\x1b[0m" in out, "cage run: SGR colours pass", repr(out))
    t.close()

    # -- cage exec: a process left behind reads what the user types next ----
    r = subprocess.run(c + ["cage", "start", "--profile", profile], capture_output=True)
    started = r.returncode == 0
    ok(started, "cage exec: the cage starts", r.stderr)
    t = Term()
    leave = (r"import os, time"
             "\nif os.fork() == 0:"
             "\n    f = open('/data/leak', 'ab', buffering=0)"
             "\n    f.write(b'reader started\\n')"
             "\n    while True:"
             "\n        try:"
             "\n            d = os.read(0, 100)"
             "\n        except OSError as e:"
             "\n            f.write(b'read error %d\\n' % e.errno); break"
             "\n        if not d: f.write(b'end of file\\n'); break"
             "\n        f.write(d)"
             "\n    os._exit(0)"
             "\ntime.sleep(0.5)"
             "\nprint('left a reader', flush=True)")
    p = t.spawn(c + ["cage", "exec", name, "--", "python3", "-c", leave])
    status = wait(p)
    ok(status == 0 and t.wait_for(b"left a reader", 5),
       "cage exec: the command left a reader behind and exited", t.seen())
    # The user, back at the host's prompt, types a password.
    os.write(t.m, b"hunter2\n")
    time.sleep(1.5)
    try:
        with open(data + "/leak", "rb") as f:
            leak = f.read()
    except OSError as e:
        leak = str(e).encode()
    ok(b"reader started" in leak, "cage exec: the reader left behind did run", leak)
    ok(b"hunter2" not in leak,
       "cage exec: the reader left behind gets nothing typed afterwards", leak)
    ok(isinstance(t.state()[0], list), "cage exec: control, the terminal answers")
    t.close()

    # -- the window size follows the user's terminal ----------------------
    t = Term(24, 80)
    size = (r"import fcntl, struct, sys, termios"
            "\ndef size(): return struct.unpack('HHHH', fcntl.ioctl(0, termios.TIOCGWINSZ, b'0'*8))[:2]"
            "\nprint('size %d %d' % size(), flush=True)"
            "\nsys.stdin.readline()"
            "\nprint('size %d %d' % size(), flush=True)")
    p = t.spawn(c + ["cage", "exec", name, "--", "python3", "-c", size])
    ok(t.wait_for(b"size 24 80"), "window size: the cage's pty starts with the user's", t.seen())
    fcntl.ioctl(t.m, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    time.sleep(0.3)
    os.write(t.m, b"\r")
    wait(p)
    ok(t.wait_for(b"size 30 100", 5), "window size: a change (SIGWINCH) reaches the cage's pty",
       t.seen())
    t.close()

    # -- Landlock's device ioctls spare the terminal (issue 21) -------------
    # tcsetattr() on the pty (stty), TIOCGWINSZ through /dev/tty.
    t = Term(24, 80)
    p = t.spawn(c + ["cage", "exec", name, "--", "sh", "-c",
                     "stty -echo && stty echo && stty size </dev/tty && echo tty-ioctls-ok"])
    wait(p)
    ok(t.wait_for(b"tty-ioctls-ok", 5) and b"24 80" in t.seen(),
       "terminal ioctls: a shell in the cage's pty sets its modes and reads its size",
       t.seen())
    t.close()

    # -- the relay's raw mode always ends: here on SIGTERM ------------------
    t = Term()
    before = t.state()
    p = t.spawn(c + ["cage", "exec", name, "--", "sh", "-c", "echo relaying; exec sleep 30"])
    t.wait_for(b"relaying")
    time.sleep(0.2)
    during = t.state()[0]
    raw = isinstance(during, list) and not (during[3] & (termios.ECHO | termios.ICANON))
    ok(raw, "relay: the user's terminal is raw while it relays", during)
    p.send_signal(signal.SIGTERM)
    wait(p)
    ok(t.state()[0] == before[0], "relay: SIGTERM restores the user's terminal")
    t.close()
finally:
    if started:
        subprocess.run(c + ["cage", "stop", "--grace-ms", "0", name], capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)

print("1..%d" % n)
sys.exit(1 if failed else 0)
