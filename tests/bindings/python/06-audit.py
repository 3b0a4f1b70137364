# SPDX-License-Identifier: LGPL-2.1-or-later
# The audit trail (the scenarios of tests/integration/audit-trail.sh):
# append, verify, show, check; an edited record fails with IntegrityError;
# the signed trail exported and verified with the public key alone.
import errno
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


def test_export_verified_with_the_public_key_only(ctx, tmp_path):
    """The signed trail: exported, verified by a collector with the PEM
    public key alone (no context), records passed to fn; an edited copy,
    another machine's key and a key that is none refused."""
    fill(ctx)
    trail = tmp_path / "trail"
    with clip.AuditLog(ctx) as log:
        log.export(trail)
        with pytest.raises(clip.BusyError):  # a new file: O_EXCL
            log.export(trail)
    assert trail.stat().st_mode & 0o777 == 0o600  # made by the binding: the caller's alone
    key = ctx.audit_public_key()
    assert key.startswith("-----BEGIN PUBLIC KEY-----")
    records = []
    assert clip.audit_verify_public(trail, key, records.append) == 3
    assert len(records) == 3 and "name=doc2.txt" in records[2]
    with open(trail, "rb") as f:
        assert clip.audit_verify_public(f, key) == 3
    edited = tmp_path / "edited"
    edited.write_text(trail.read_text().replace("doc1.txt", "doc9.txt"))
    with pytest.raises(clip.IntegrityError):
        clip.audit_verify_public(edited, key)
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    with clip.Context(state_dir=other, log=False) as octx:
        fill(octx, 1)
        with pytest.raises(clip.IntegrityError):
            clip.audit_verify_public(trail, octx.audit_public_key())
    with pytest.raises(clip.InvalidError):
        clip.audit_verify_public(trail, "not a key")
    with pytest.raises(clip.InvalidError):
        clip.audit_verify_public(trail, key + "\0")

    def stop(record):
        raise KeyError(record)
    with pytest.raises(KeyError):
        clip.audit_verify_public(trail, key, stop)
    with pytest.raises(TypeError):
        clip.audit_verify_public(trail, key, "not callable")
    with pytest.raises(clip.NotFoundError):
        clip.audit_verify_public(tmp_path / "missing", key)
    with pytest.raises(clip.StateError):
        log.export(tmp_path / "after-close")


def test_public_key_refused_without_a_master_key(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    with clip.Context(state_dir=empty, log=False) as c:
        with pytest.raises(clip.NoKeyError) as e:
            c.audit_public_key()
    assert e.value.errno == errno.ENOKEY and "mac.key" in e.value.strerror
