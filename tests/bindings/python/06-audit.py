# SPDX-License-Identifier: LGPL-2.1-or-later
# The audit trail (the scenarios of tests/integration/audit-trail.sh):
# append, verify, show, check; an edited record fails with IntegrityError.
import os

import pytest

import clip


def fill(ctx, n=3):
    with clip.AuditLog(ctx) as log:
        for i in range(n):
            log.append(event="request", source="low", source_level="s0", target="high",
                       target_level="s2", name=f"doc{i}.txt", length=10 + i,
                       sha256=bytes(32), decision="allow", decided_by="policy test:1",
                       reason="test")


def test_append_verify_show(ctx):
    fill(ctx)
    assert ctx.audit_verify() == 3
    records = ctx.audit_show()
    assert len(records) == 3 and "doc2.txt" in records[2] and "src=low" in records[0]
    count, warnings = ctx.audit_check()
    assert count == 3 and warnings & ~clip.AUDIT_WARN_NOT_COUNTED == 0


def test_another_directory_and_name(ctx, tmp_path):
    d = tmp_path / "logs"
    d.mkdir(mode=0o700)
    with clip.AuditLog(ctx, d, "x.log") as log:
        log.append(event="decision", decision="deny")
    assert ctx.audit_verify(d, "x.log") == 1
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert len(ctx.audit_show(fd, "x.log")) == 1
    finally:
        os.close(fd)


def test_an_edited_record_fails(ctx, state_dir):
    fill(ctx)
    path = state_dir / "audit.log"
    text = path.read_text().replace("doc1.txt", "doc9.txt")
    path.write_text(text)
    with pytest.raises(clip.IntegrityError) as e:
        ctx.audit_verify()
    assert "record 2" in e.value.strerror or "2" in e.value.strerror


def test_refusals(ctx, tmp_path):
    with pytest.raises(clip.NotFoundError):
        ctx.audit_verify()
    with clip.AuditLog(ctx) as log:
        with pytest.raises(clip.InvalidError):
            log.append(sha256=b"short")
        with pytest.raises(clip.InvalidError):
            log.append(reason="x" * 5000)
    with pytest.raises(clip.StateError):
        log.append(event="request")
    with pytest.raises(clip.InvalidError):
        clip.AuditLog(ctx, None, "a/b")
    with pytest.raises(TypeError):
        clip.AuditLog("not a context")
