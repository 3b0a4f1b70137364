#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Run the clip module's pytest files and report in TAP, one line a test.

  run-pytest.py [PYTEST ARGS...]

meson reads TAP, so that each case and each skip with its reason is seen
by meson and by tools/run-tests' skip check (tests/expected-skips). A
case's description is its pytest id, FILE::NAME, stable across runs.
The module imported is the one PYTHONPATH names (the build tree).
"""
import os
import shutil
import sys
import tempfile

import pytest


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def emit(self, line):
        sys.__stdout__.write(line + "\n")
        sys.__stdout__.flush()

    def pytest_collectreport(self, report):
        if report.failed:
            self.n += 1
            self.failed += 1
            self.emit(f"not ok {self.n} - {report.nodeid} (collection)")
            for line in str(report.longrepr).splitlines():
                self.emit("# " + line)

    def pytest_runtest_logreport(self, report):
        # One line per test: the call, or the setup when it skipped or failed.
        if report.when == "call" or (report.when == "setup" and not report.passed) or \
                (report.when == "teardown" and report.failed):
            self.n += 1
            name = report.nodeid
            if report.skipped:
                reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
                reason = reason.removeprefix("Skipped: ")
                self.emit(f"ok {self.n} - {name} # SKIP {reason}")
            elif report.passed:
                self.emit(f"ok {self.n} - {name}")
            else:
                self.failed += 1
                self.emit(f"not ok {self.n} - {name}" +
                          (" (teardown)" if report.when == "teardown" else ""))
                for line in str(report.longrepr).splitlines():
                    self.emit("# " + line)

    def pytest_sessionfinish(self, session):
        self.emit(f"1..{self.n}")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    tap = Tap()
    # pytest's own report goes to stderr (meson keeps it in the log); TAP
    # alone goes to stdout.
    sys.stdout = sys.stderr
    args = ["-q", "--tb=short", "-p", "no:cacheprovider", "--import-mode=importlib",
            "-o", "python_files=[0-9][0-9]-*.py", "--rootdir", here]
    # meson names the files (so that a test's command shows its file) and sets
    # CLIP_PYTEST_ALL: they must be all of them, or a new NN-*.py missing from
    # tests/bindings/python/meson.build would never run.
    named = {os.path.basename(a) for a in sys.argv[1:] if a.endswith(".py")}
    if os.environ.get("CLIP_PYTEST_ALL") == "1":
        present = {f for f in os.listdir(here) if f[:2].isdigit() and f.endswith(".py")}
        if present - named:
            tap.n += 1
            tap.failed += 1
            tap.emit(f"not ok {tap.n} - every NN-*.py is named: not {sorted(present - named)}")
    # A directory of its own, removed afterwards: pytest's default keeps
    # /tmp/pytest-of-USER, which a rootless step's uid 0 does not own.
    basetemp = tempfile.mkdtemp(prefix="clip-pytest-")
    try:
        # A test stuck a minute: every thread's stack to stderr, which meson
        # shows when the suite's time runs out (a hang seen once in CI).
        rc = pytest.main(args + ["--basetemp", basetemp, "-o", "faulthandler_timeout=60"] +
                         (sys.argv[1:] or [here]),
                         plugins=[tap])
    finally:
        shutil.rmtree(basetemp, ignore_errors=True)
    sys.exit(1 if tap.failed or rc not in (0, 5) else 0)
