"""The local node's memory and CPU cgroups (localnode.cgroups), on a cgroup tree laid out in a
folder as the kernel lays out v1 and v2 (the real ones are used by tests/runner/test_io_regime.py
and tests/runner/test_studies.py)."""

import os
import time

import pytest

from esbench.localnode import cgroups


@pytest.fixture
def as_root(monkeypatch):
    monkeypatch.setattr(cgroups.os, "geteuid", lambda: 0)


def test_v1_limits_are_bytes_or_minus_one_and_what_reclaim_cannot_take_is_usage_less_file_pages(tmp_path, as_root):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712")
    group = cgroups.MemoryCgroup.create(root=tmp_path)
    assert group.path.parent == tmp_path / "memory" and not group.v2
    group.set_limit(512 * 2**20)
    assert (group.path / "memory.limit_in_bytes").read_text() == str(512 * 2**20)
    group.set_limit(None)
    assert (group.path / "memory.limit_in_bytes").read_text() == "-1"
    # Kernel memory is charged to usage, not to rss: it counts, the file pages do not.
    (group.path / "memory.usage_in_bytes").write_text("1000\n")
    (group.path / "memory.stat").write_text(
        "active_file 1\ninactive_file 2\ntotal_rss 700\ntotal_active_file 100\ntotal_inactive_file 50\n")
    assert group.unreclaimable_bytes() == 850
    # Per task (nodestats' probe): faults and file pages of the cgroup and its children.
    (group.path / "memory.stat").write_text("pgmajfault 3\ntotal_pgmajfault 42\ntotal_active_file 100\n"
                                            "total_inactive_file 50\nactive_file 1\ninactive_file 2\n")
    assert group.counters() == {"major_page_faults": 42, "page_cache_bytes": 150}


def test_empty_cgroups_left_by_killed_runs_are_removed_and_those_in_use_or_just_made_are_kept(tmp_path, as_root):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712")
    left, in_use, just_made = (tmp_path / "memory" / f"esbench-es-{n}" for n in ("left", "inuse", "new"))
    for group in (left, in_use, just_made):
        group.mkdir()
    (in_use / "cgroup.procs").write_text("4242\n")
    an_hour_ago = time.time() - 3600
    for group in (left, in_use):
        os.utime(group, (an_hour_ago, an_hour_ago))
    made = cgroups.MemoryCgroup.create(root=tmp_path)
    assert sorted(p.name for p in (tmp_path / "memory").iterdir() if p.is_dir()) == sorted(
        ["esbench-es-inuse", "esbench-es-new", made.path.name])


def test_v2_limits_are_bytes_or_max(tmp_path, as_root):
    (tmp_path / "cgroup.subtree_control").write_text("cpu io memory pids\n")
    group = cgroups.MemoryCgroup.create(root=tmp_path)
    assert group.path.parent == tmp_path and group.v2
    group.set_limit(None)
    assert (group.path / "memory.max").read_text() == "max"
    (group.path / "memory.current").write_text("20000\n")
    (group.path / "memory.stat").write_text("anon 4096\nfile 8192\nkernel 7000\nactive_file 5000\ninactive_file 3000\n")
    assert group.unreclaimable_bytes() == 12000
    (group.path / "memory.stat").write_text("anon 4096\npgmajfault 7\nactive_file 5000\ninactive_file 3000\n")
    assert group.counters() == {"major_page_faults": 7, "page_cache_bytes": 8000}
    (group.path / "memory.stat").write_text("anon 4096\n")
    with pytest.raises(cgroups.Unavailable, match="active_file"):
        group.unreclaimable_bytes()


def test_without_root_or_a_memory_controller_a_limit_cannot_be_honoured(tmp_path, monkeypatch):
    with pytest.raises(cgroups.Unavailable, match="no memory cgroup controller"):
        monkeypatch.setattr(cgroups.os, "geteuid", lambda: 0)
        cgroups.MemoryCgroup.create(root=tmp_path)
    monkeypatch.setattr(cgroups.os, "geteuid", lambda: 1000)
    with pytest.raises(cgroups.Unavailable, match="needs root"):
        cgroups.MemoryCgroup.create(root=tmp_path)


def test_a_cpu_limit_is_a_quota_of_a_100_ms_period_in_v1_and_v2(tmp_path, as_root):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    group = cgroups.CpuCgroup.create(root=tmp_path)
    assert group.path.parent == tmp_path / "cpu" and not group.v2
    group.set_limit(0.25)
    assert [(group.path / f"cpu.cfs_{name}_us").read_text() for name in ("period", "quota")] == ["100000", "25000"]
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "cgroup.subtree_control").write_text("cpu memory\n")
    group = cgroups.CpuCgroup.create(root=tmp_path / "v2")
    group.set_limit(1.5)
    assert (group.path / "cpu.max").read_text() == "150000 100000"
    with pytest.raises(cgroups.Unavailable, match="no cpu cgroup controller"):
        cgroups.CpuCgroup.create(root=tmp_path / "memory-only")
