#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Compare two runs of CPython's regrtest from their --junit-xml files.

usage: regrtest-compare.py BASE.xml CANDIDATE.xml

Prints the counts of each run (run, failed, skipped: a skip is a skip,
never a pass), then each test that fails, is skipped or is missing in the
candidate while it passed in the base, and each test the candidate alone
ran that did not pass. Exit status 1 when any is listed, 0 otherwise.
"""

import sys
import xml.etree.ElementTree as ET


def results(path):
    """{test id: outcome}, outcome one of pass, fail, skip."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name") or case.get("classname") or "?"
        if any(e.tag in ("failure", "error") for e in case):
            out[name] = "fail"
        elif case.find("skipped") is not None:
            out[name] = "skip"
        else:
            out[name] = "pass"
    return out


def counts(res):
    outcomes = list(res.values())
    return f"{len(res)} run, {outcomes.count('fail')} failed, {outcomes.count('skip')} skipped"


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    base, cand = results(sys.argv[1]), results(sys.argv[2])
    print(f"python3:     {counts(base)}")
    print(f"clip-python: {counts(cand)}")
    for name, what in (("python3", base), ("clip-python", cand)):
        failed = sorted(t for t, o in what.items() if o == "fail")
        print(f"failing under {name}: {len(failed)}")
        for t in failed:
            print(f"  {t}")
    extra = []
    for t, o in sorted(base.items()):
        c = cand.get(t, "missing")
        if o == "fail" or c == o or (o == "skip" and c == "pass"):
            continue
        extra.append(f"{t}: {o} under python3, {c} under clip-python")
    extra += [f"{t}: not run by python3, {o} under clip-python"
              for t, o in sorted(cand.items()) if t not in base and o != "pass"]
    print(f"failing or skipped under clip-python only: {len(extra)}")
    for t in extra:
        print(f"  {t}")
    return 1 if extra else 0


if __name__ == "__main__":
    sys.exit(main())
