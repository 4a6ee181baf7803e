"""The local node's memory cgroup (cli.memorycgroup), on a cgroup tree laid out in a folder as
the kernel lays out v1 and v2 (the real one is used by tests/runner/test_io_regime.py)."""

import pytest

from esbench.cli import memorycgroup


@pytest.fixture
def as_root(monkeypatch):
    monkeypatch.setattr(memorycgroup.os, "geteuid", lambda: 0)


def test_v1_limits_are_bytes_or_minus_one_and_anonymous_memory_is_total_rss(tmp_path, as_root):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712")
    group = memorycgroup.MemoryCgroup.create(root=tmp_path)
    assert group.path.parent == tmp_path / "memory" and not group.v2
    group.set_limit(512 * 2**20)
    assert (group.path / "memory.limit_in_bytes").read_text() == str(512 * 2**20)
    group.set_limit(None)
    assert (group.path / "memory.limit_in_bytes").read_text() == "-1"
    (group.path / "memory.stat").write_text("cache 100\nrss 5\ntotal_cache 100\ntotal_rss 700\n")
    assert group.anonymous_bytes() == 700


def test_v2_limits_are_bytes_or_max(tmp_path, as_root):
    (tmp_path / "cgroup.subtree_control").write_text("cpu io memory pids\n")
    group = memorycgroup.MemoryCgroup.create(root=tmp_path)
    assert group.path.parent == tmp_path and group.v2
    group.set_limit(None)
    assert (group.path / "memory.max").read_text() == "max"
    (group.path / "memory.stat").write_text("anon 4096\nfile 8192\n")
    assert group.anonymous_bytes() == 4096


def test_without_root_or_a_memory_controller_a_limit_cannot_be_honoured(tmp_path, monkeypatch):
    with pytest.raises(memorycgroup.Unavailable, match="no memory cgroup controller"):
        monkeypatch.setattr(memorycgroup.os, "geteuid", lambda: 0)
        memorycgroup.MemoryCgroup.create(root=tmp_path)
    monkeypatch.setattr(memorycgroup.os, "geteuid", lambda: 1000)
    with pytest.raises(memorycgroup.Unavailable, match="needs root"):
        memorycgroup.MemoryCgroup.create(root=tmp_path)
