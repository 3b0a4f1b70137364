#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the clip module costs over the C API: clip.Level.compare() and
Context.label_verify() per second from Python, beside clip_level_compare()
and clip_label_verify() from C (bench-binding), on the same levels, key and
labelled file.

Rounds alternate the order (C then Python, Python then C) so that a drift
of the machine weighs on both sides; each round gives a paired ratio
(C ops/s / Python ops/s), and the table shows the median ratio with its
range, the median rates, and CPU time beside wall time for each side
(CPU/wall near 1: the figure is the operation, not waiting). The load
average before and after says how quiet the machine was.

  bench-python.py --c-bench PATH [--rounds N] [--duration-ms MS]
  (PYTHONPATH must name the directory of the clip module to measure)
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import clip


def py_rate(fn, duration_ms):
    """Operations per second of fn(), called in batches of 64 as bench.h
    does, with wall and CPU seconds."""
    w0, c0 = time.perf_counter(), time.process_time()
    end = w0 + duration_ms / 1000.0
    n = 0
    while True:
        for _ in range(64):
            fn()
        n += 64
        t = time.perf_counter()
        if t >= end:
            break
    return n / (t - w0), t - w0, time.process_time() - c0


def c_rates(c_bench, d, duration_ms):
    out = subprocess.run([c_bench, "--dir", d, "--duration-ms", str(duration_ms)],
                         check=True, capture_output=True, text=True).stdout
    rates = {}
    for line in out.splitlines():
        name, rate, wall, cpu = line.split()
        rates[name] = (float(rate), float(wall), float(cpu))
    return rates


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--c-bench", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--duration-ms", type=int, default=300)
    args = ap.parse_args()
    if args.rounds < 1 or args.duration_ms < 1:
        ap.error("--rounds and --duration-ms must be positive")

    d = tempfile.mkdtemp(prefix="clip-bench-py-")
    try:
        os.mkdir(os.path.join(d, "state"), 0o700)
        doc = os.path.join(d, "doc")
        with open(doc, "w") as f:
            f.write("document\n")
        ctx = clip.Context(state_dir=os.path.join(d, "state"), log=False)
        ctx.label_set(doc, clip.Level("s2"), rootless=True)
        a, b = clip.Level("s3:c0.c9,c100"), clip.Level("s2:c1,c5,c100")
        assert a.compare(b) == clip.LEVEL_DOMINATES
        fd = os.open(doc, os.O_RDONLY | os.O_CLOEXEC)
        ops = {
            "compare": lambda: a.compare(b),
            "verify": lambda: ctx.label_verify(fd, rootless=True),
        }
        load0 = os.getloadavg()
        rows = {name: {"c": [], "py": [], "ratio": []} for name in ops}
        for r in range(args.rounds):
            order = ("c", "py") if r % 2 == 0 else ("py", "c")
            got = {}
            for side in order:
                if side == "c":
                    got["c"] = c_rates(args.c_bench, d, args.duration_ms)
                else:
                    got["py"] = {name: py_rate(fn, args.duration_ms) for name, fn in ops.items()}
            for name in ops:
                rows[name]["c"].append(got["c"][name])
                rows[name]["py"].append(got["py"][name])
                rows[name]["ratio"].append(got["c"][name][0] / got["py"][name][0])
        load1 = os.getloadavg()
        os.close(fd)
    finally:
        shutil.rmtree(d, ignore_errors=True)

    print(f"libclip {clip.version()}, Python {sys.version.split()[0]}, {args.rounds} rounds "
          f"of {args.duration_ms} ms per side and operation, C and Python alternated")
    print(f"load average before {load0[0]:.2f} {load0[1]:.2f}, after {load1[0]:.2f} "
          f"{load1[1]:.2f}, {os.cpu_count()} CPUs\n")
    print("| operation | C ops/s | C cpu/wall | Python ops/s | Python cpu/wall "
          "| ratio C/Py median [min, max] | Python ns/op over C |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, row in rows.items():
        c = statistics.median(x[0] for x in row["c"])
        py = statistics.median(x[0] for x in row["py"])
        c_cpu = sum(x[2] for x in row["c"]) / sum(x[1] for x in row["c"])
        py_cpu = sum(x[2] for x in row["py"]) / sum(x[1] for x in row["py"])
        ratio = row["ratio"]
        label = {"compare": "Level compare", "verify": "label verify"}[name]
        print(f"| {label} | {c:,.0f} | {c_cpu:.2f} | {py:,.0f} | {py_cpu:.2f} | "
              f"{statistics.median(ratio):.2f} [{min(ratio):.2f}, {max(ratio):.2f}] | "
              f"{1e9 / py - 1e9 / c:,.0f} |")
    print("\nratio: per round, C ops/s over Python ops/s of the same round (paired); "
          "ns/op over C: what one call through the binding adds (median rates).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
