# SPDX-License-Identifier: LGPL-2.1-or-later
# Fixtures of the clip module's tests (run-pytest.py runs them).
import os

import pytest

import clip


def test_mode():
    """root, nonroot (an unprivileged user) or rootless (uid 0 of a user
    namespace), as tools/run-tests names its steps."""
    if os.geteuid() != 0:
        return "nonroot"
    with open("/proc/self/uid_map") as f:
        fields = f.read().split()
    return "root" if fields[:3] == ["0", "0", "4294967295"] else "rootless"


MODE = test_mode()
# Labels in trusted.* need CAP_SYS_ADMIN in the initial namespace.
LABEL_ROOTLESS = MODE != "root"


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    return d


@pytest.fixture
def ctx(state_dir):
    with clip.Context(state_dir=state_dir, log=False) as c:
        yield c


def program(name):
    """A program of the build tree, from the environment meson gives."""
    path = os.environ.get("CLIP_TEST_" + name.upper().replace("-", "_"))
    if not path:
        pytest.fail(f"CLIP_TEST_{name.upper()} is not set: run through meson test")
    return path
