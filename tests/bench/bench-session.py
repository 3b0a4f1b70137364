#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Start and stop of a three-cage session, beside the same by hand.

    bench-session.py CLIPD CLIPCTL SESSIONS_DIR [--rounds N]

A: the runner as a service manager starts it, `clipd --session FILE
--ready-fd 3`, timed from its start to READY=1 (the cages, their wiring
and the mediator up), then SIGTERM until it has exited (the mediator
stopped, the cages stopped, nothing left).
B: what an integrator did before sessions, the demo's old hand wiring made
ready beforehand (directories, the cages file, the policy, three profiles
with their binds): `clipd --config DIR --ready-fd 3` to READY=1 and three
`clipctl cage start --profile P`, then three `clipctl cage stop` and
SIGTERM to clipd until it has exited.

A and B alternate round by round (ABAB..., the first of each pair swapped
every round) so that the load of a shared machine falls on both alike.
Reported per phase (start, stop, both): the median wall time of each, the
median of the paired ratios A/B with their spread (min and max), and the
CPU time (user + system) of the whole process tree of each: this process
is a child subreaper, so the cages' inits, orphaned by clipctl, are reaped
here and counted. The load average is printed before and after.
"""
import ctypes
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

PR_SET_CHILD_SUBREAPER = 36
WALL = 0x40000000  # __WALL: the cages' inits have no exit signal


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG | WALL)
        except ChildProcessError:
            return
        if pid == 0:
            return


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def start_ready(argv):
    rfd, wfd = os.pipe()
    os.set_inheritable(wfd, True)
    p = subprocess.Popen(argv + ["--ready-fd", str(wfd)], pass_fds=(wfd,),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(wfd)
    data = os.read(rfd, 64)
    os.close(rfd)
    if b"READY=1" not in data:
        p.kill()
        p.wait()
        sys.exit(f"bench-session: {argv[0]} did not become ready")
    return p


def stop(p):
    p.send_signal(signal.SIGTERM)
    if p.wait(timeout=60) != 0:
        sys.exit(f"bench-session: {p.args[0]} exited with {p.returncode}")


def run(argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    clipd, clipctl, examples = sys.argv[1:4]
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 10
    if os.geteuid() != 0:
        print("1..0 # SKIP root mode only: a rootless clipd cannot check the cages' uids")
        return 0
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    base = tempfile.mkdtemp(prefix="bench-session-", dir="/var/tmp")
    os.chmod(base, 0o711)
    try:
        return bench(clipd, clipctl, examples, base, rounds)
    finally:
        reap()
        shutil.rmtree(base, ignore_errors=True)


def setup_b(base, names):
    """The hand wiring of the demo before sessions: made once, outside the timing."""
    d = f"{base}/b"
    os.makedirs(f"{d}/cfg")
    with open(f"{d}/cfg/policy", "w") as f:
        f.write("low high ask\nhigh low ask encrypt\n@any @any deny\n")
    with open(f"{d}/cfg/cages", "w") as f:
        for i, (name, level) in enumerate(names):
            uid = (0x7b20 + i) * 65536
            for sub in ("in", "data", "sock"):
                os.makedirs(f"{d}/{sub}-{name}")
            os.chown(f"{d}/in-{name}", uid, uid)
            os.chown(f"{d}/data-{name}", uid, uid)
            f.write(f"{name} {level} {d}/in-{name} {d}/sock-{name}/transfer.sock uid={uid}\n")
            with open(f"{d}/{name}.cage", "w") as p:
                p.write(f"[Cage]\nName=b{name}\nLevel={level}\nUidBase={uid}\n"
                        f"DataDirectory={d}/data-{name}\n[Files]\n"
                        f"BindReadOnly={d}/sock-{name}:/run/clip\nBind={d}/in-{name}:/inbox\n"
                        "[Network]\nMode=none\n[Security]\nWriteXorExecute=yes\n")
    return d


def bench(clipd, clipctl, examples, base, rounds):
    names = [("low", "s0"), ("high", "s2"), ("side", "s1:c5")]
    shutil.copytree(examples, f"{base}/a")
    a_file = f"{base}/a/demo.session"
    a_cmd = [clipd, "--session", a_file, "--state-dir", f"{base}/a-state"]
    d = setup_b(base, names)
    b_ctl = [clipctl, "--state-dir", f"{base}/b-state"]
    b_cmd = [clipd, "--config", f"{d}/cfg", "--state-dir", f"{base}/b-state",
             "--agent-socket", f"{d}/confirm.sock"]

    def a():
        t0, c0 = time.monotonic(), cpu()
        p = start_ready(a_cmd)
        t1 = time.monotonic()
        stop(p)
        reap()
        return t1 - t0, time.monotonic() - t1, cpu() - c0

    def b():
        t0, c0 = time.monotonic(), cpu()
        p = start_ready(b_cmd)
        for name, _ in names:
            run(b_ctl + ["cage", "start", "--profile", f"{d}/{name}.cage"])
        t1 = time.monotonic()
        for name, _ in names:
            run(b_ctl + ["cage", "stop", "--grace-ms", "5000", f"b{name}"])
        stop(p)
        reap()
        return t1 - t0, time.monotonic() - t1, cpu() - c0

    load0 = os.getloadavg()
    a(), b()  # warm the caches of both
    res = {"A": [], "B": []}
    for r in range(rounds):
        for k in (("A", "B") if r % 2 == 0 else ("B", "A")):
            res[k].append(a() if k == "A" else b())
    load1 = os.getloadavg()

    print(f"# session start/stop, 3 cages, {rounds} rounds A/B alternated; "
          f"load {load0[0]:.2f} -> {load1[0]:.2f}")
    print(f"# {'phase':<8} {'A session ms':>13} {'B by hand ms':>13} "
          f"{'ratio A/B (min-max)':>22}")
    for i, phase in enumerate(("start", "stop")):
        av = [x[i] * 1000 for x in res["A"]]
        bv = [x[i] * 1000 for x in res["B"]]
        ratios = [x / y for x, y in zip(av, bv)]
        print(f"# {phase:<8} {statistics.median(av):13.1f} {statistics.median(bv):13.1f} "
              f"{statistics.median(ratios):8.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
    av = [(x[0] + x[1]) * 1000 for x in res["A"]]
    bv = [(x[0] + x[1]) * 1000 for x in res["B"]]
    ratios = [x / y for x, y in zip(av, bv)]
    print(f"# {'both':<8} {statistics.median(av):13.1f} {statistics.median(bv):13.1f} "
          f"{statistics.median(ratios):8.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
    ac = [x[2] * 1000 for x in res["A"]]
    bc = [x[2] * 1000 for x in res["B"]]
    cr = [x / y for x, y in zip(ac, bc)]
    print(f"# {'cpu':<8} {statistics.median(ac):13.1f} {statistics.median(bc):13.1f} "
          f"{statistics.median(cr):8.2f} ({min(cr):.2f}-{max(cr):.2f})")
    goal = statistics.median(ratios) <= 1.0
    print(f"# goal (a session no slower than by hand, wall time, start + stop): "
          f"{'met' if goal else 'not met'} on this run")
    print("1..1")
    print("ok 1 - bench-session ran both subjects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
