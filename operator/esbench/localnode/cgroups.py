"""Cgroups of its own for a local Elasticsearch node, so that its resource limits bound it as a
pod's bound a pod.

A memory limit bounds the page cache too: page cache is charged to the cgroup of the process
that first reads or writes a page, and a cgroup over its limit has its cache reclaimed first, so
with a limit below heap + store searches go to disk, the regime of an I/O-bound study. A CPU
limit is a CFS quota: the node's threads run at most that many CPUs' worth of each period.
Needs root and a writable controller (cgroup v1's `memory` or `cpu` hierarchy, or cgroup v2 with
the controller enabled); without them a limit cannot be honoured and `create` says why.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Self

ROOT = Path("/sys/fs/cgroup")
# A cgroup is made a moment before its node moves in: younger empty ones may be a starting run's.
LEFTOVER_AGE_SECONDS = 60
# The CFS period a CPU limit is a quota of (the kernel's default, and a pod's).
CFS_PERIOD_US = 100_000


class Unavailable(RuntimeError):
    """This machine (or user) cannot give a process a cgroup of its own for that controller."""


def _controller(root: Path, controller: str, v1_file: str) -> tuple[Path, bool] | None:
    """Where new cgroups of the controller go, and whether it is cgroup v2."""
    if (root / controller / v1_file).exists():
        return root / controller, False
    enabled = root / "cgroup.subtree_control"
    if enabled.exists() and controller in enabled.read_text().split():
        return root, True
    return None


def _remove_leftovers(parent: Path, name: str) -> None:
    """The empty cgroups of runs that were killed before they could remove their own."""
    for old in parent.glob(f"{name}-*"):
        procs = old / "cgroup.procs"
        try:
            if time.time() - old.stat().st_mtime < LEFTOVER_AGE_SECONDS or (procs.exists() and procs.read_text().strip()):
                continue
            old.rmdir()
        except OSError:
            continue  # in use after all, or removed meanwhile


@dataclass(frozen=True)
class Cgroup:
    CONTROLLER: ClassVar[str]
    V1_FILE: ClassVar[str]  # a file every cgroup of the controller's v1 hierarchy has

    path: Path
    v2: bool

    @classmethod
    def create(cls, name: str = "esbench-es", root: Path = ROOT) -> Self:
        controller = cls.CONTROLLER
        if os.geteuid() != 0:
            raise Unavailable(f"a {controller} limit for a local node needs root (it creates a cgroup)")
        found = _controller(root, controller, cls.V1_FILE)
        if found is None:
            raise Unavailable(f"no {controller} cgroup controller under {root}")
        parent, v2 = found
        _remove_leftovers(parent, name)
        path = parent / f"{name}-{uuid.uuid4().hex[:8]}"
        try:
            path.mkdir()
        except OSError as error:
            raise Unavailable(f"cannot create the {controller} cgroup {path}: {error}") from error
        return cls(path, v2)

    @property
    def procs(self) -> Path:
        """Write a pid here to move that process (and its future children) into the cgroup."""
        return self.path / "cgroup.procs"

    def remove(self, timeout: float = 10.0) -> None:
        """Once every process has left it (an exiting JVM takes a moment)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


@dataclass(frozen=True)
class MemoryCgroup(Cgroup):
    CONTROLLER = "memory"
    V1_FILE = "memory.limit_in_bytes"

    def set_limit(self, limit_bytes: int | None) -> None:
        """Bound memory, page cache included (None: no limit). Lowering it reclaims cache at once."""
        if self.v2:
            (self.path / "memory.max").write_text("max" if limit_bytes is None else str(limit_bytes))
        else:
            (self.path / "memory.limit_in_bytes").write_text("-1" if limit_bytes is None else str(limit_bytes))

    def unreclaimable_bytes(self) -> int:
        """What the cgroup holds that reclaim cannot take back without swap: its whole usage
        (the JVM's heap and native memory, and kernel memory, also charged here) less its file
        pages. A limit of this plus N leaves the page cache about N; a base of anonymous memory
        alone would let kernel memory eat into N."""
        usage = int((self.path / ("memory.current" if self.v2 else "memory.usage_in_bytes")).read_text())
        active, inactive = self._stat("active_file", "inactive_file")
        return usage - active - inactive

    def counters(self) -> dict[str, int]:
        """What Elasticsearch does not report of its node: the major page faults of the processes in
        the cgroup (pages read from disk on access: how an mmapped store is read) and the page
        cache charged to it (file pages, the JVM's own mapped files included)."""
        faults, active, inactive = self._stat("pgmajfault", "active_file", "inactive_file")
        return {"major_page_faults": faults, "page_cache_bytes": active + inactive}

    def _stat(self, *names: str) -> list[int]:
        """Figures of memory.stat for the cgroup and its children (v1 names those total_*)."""
        prefix = "" if self.v2 else "total_"
        fields = dict(line.split() for line in (self.path / "memory.stat").read_text().splitlines())
        try:
            return [int(fields[f"{prefix}{name}"]) for name in names]
        except KeyError as missing:
            raise Unavailable(f"{self.path / 'memory.stat'} has no {missing}") from None


@dataclass(frozen=True)
class CpuCgroup(Cgroup):
    CONTROLLER = "cpu"
    V1_FILE = "cpu.cfs_quota_us"

    def set_limit(self, cpus: float) -> None:
        """At most `cpus` CPUs' worth of each CFS period, as a pod's CPU limit."""
        quota = max(1000, round(cpus * CFS_PERIOD_US))  # the kernel's least quota is 1 ms
        if self.v2:
            (self.path / "cpu.max").write_text(f"{quota} {CFS_PERIOD_US}")
        else:
            (self.path / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            (self.path / "cpu.cfs_quota_us").write_text(str(quota))
