"""The reproducibility record of a race (models.Environment): which esbench, Rally, track,
Elasticsearch build, JVM, kernel and hardware produced its numbers.

Elasticsearch's side comes from its own APIs (`GET /`, node info, node stats); the load
driver's from the machine Rally runs on; the track's identity from its files or from Rally's
checkout. Each part is best effort: a figure that cannot be read stays empty and never fails
the race. The parsing functions are pure; `track_identity` and `load_driver` read local files.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
import os
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from esbench.api import models
from esbench.runner.nodestats import value_at
from esbench.runner.rally import GIT_REPOSITORY_NAME

NODES_INFO_PATH = "_nodes/jvm,os,settings?filter_path=" + ",".join(
    f"nodes.*.{p}"
    for p in (
        "name",
        "jvm.vm_name",
        "jvm.version",
        "jvm.mem.heap_max_in_bytes",
        "os.pretty_name",
        "os.version",
        "os.arch",
        "os.available_processors",
        "os.allocated_processors",
        "settings.node.store.allow_mmap",
    )
)
CGROUP_ROOT = Path("/sys/fs/cgroup")
NODES_CGROUP_PATH = ("_nodes/stats/os?filter_path=nodes.*.os.mem.total_in_bytes,nodes.*.os.cgroup.memory.limit_in_bytes,"
                     "nodes.*.os.cgroup.cpu.cfs_quota_micros,nodes.*.os.cgroup.cpu.cfs_period_micros")


def processors(info: dict[str, Any]) -> dict[str, int]:
    """Node id -> processors the JVM sees (what process.cpu.percent is relative to)."""
    return {
        node_id: count
        for node_id, node in (info.get("nodes") or {}).items()
        if isinstance(count := value_at(node, "os.available_processors"), int) and count > 0
    }


# cgroup v1 says "no limit" with the largest page-aligned byte count a signed 64-bit integer holds
# (9223372036854771712 with 4 KiB pages); no machine has a quarter of that.
NO_MEMORY_LIMIT_FROM = 2**62


def _integer(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value.strip()) if isinstance(value, str) and value.strip().isdigit() else None


def memory_limit(limit_in_bytes: Any) -> int | None:
    """The memory limit of a node's cgroup from its `os.cgroup.memory.limit_in_bytes`: a string,
    as Elasticsearch passes on the file it read (v1's memory.limit_in_bytes, v2's memory.max);
    None where there is none ("max" in v2, v1's largest count) or Elasticsearch found no cgroup."""
    limit = _integer(limit_in_bytes)
    return None if limit is None or limit >= NO_MEMORY_LIMIT_FROM else limit


def cpu_limit(quota_micros: Any, period_micros: Any) -> float | None:
    """The CPUs a node's cgroup quota allows of each period; None without a quota (-1) or a cgroup."""
    if not isinstance(quota_micros, int) or not isinstance(period_micros, int) or quota_micros <= 0 or period_micros <= 0:
        return None
    return quota_micros / period_micros


def nodes(info: dict[str, Any], stats: dict[str, Any]) -> list[models.NodeEnvironment]:
    """Per node, from the answers to NODES_INFO_PATH and NODES_CGROUP_PATH, sorted by name."""
    found = []
    for node_id, node in (info.get("nodes") or {}).items():
        memory = (stats.get("nodes") or {}).get(node_id) or {}
        jvm = [v for v in (value_at(node, "jvm.vm_name"), value_at(node, "jvm.version")) if v]
        found.append(models.NodeEnvironment(
            node=node.get("name", node_id),
            jvm=" ".join(jvm) or None,
            os=value_at(node, "os.pretty_name"),
            kernel=value_at(node, "os.version"),
            arch=value_at(node, "os.arch"),
            available_processors=value_at(node, "os.available_processors"),
            allocated_processors=value_at(node, "os.allocated_processors"),
            memory_bytes=_integer(value_at(memory, "os.mem.total_in_bytes")),
            cgroup_memory_limit_bytes=memory_limit(value_at(memory, "os.cgroup.memory.limit_in_bytes")),
            cgroup_cpu_limit=cpu_limit(value_at(memory, "os.cgroup.cpu.cfs_quota_micros"),
                                       value_at(memory, "os.cgroup.cpu.cfs_period_micros")),
            heap_max_bytes=_integer(value_at(node, "jvm.mem.heap_max_in_bytes")),
            mmap=str(value_at(node, "settings.node.store.allow_mmap") or "true").lower() == "true",
        ))
    return sorted(found, key=lambda n: n.node)


def read_nodes(get: Callable[[str], Any]) -> tuple[list[models.NodeEnvironment], dict[str, int]]:
    """The nodes' environment and processors from a live cluster (empty where it will not say,
    e.g. to a user without the monitor privilege)."""
    answers = []
    for path in (NODES_INFO_PATH, NODES_CGROUP_PATH):
        try:
            answers.append(get(path) or {})
        except (OSError, ValueError):
            answers.append({})
    info, stats = answers
    return nodes(info, stats), processors(info)


def files_sha256(files: list[Path], root: Path) -> str:
    """One digest over files: their paths relative to root and their bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def checkout_revision(repository: Path) -> str | None:
    """The commit of a git checkout (Rally's copy of a track repository), or None."""
    try:
        done = subprocess.run(["git", "-C", str(repository), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def bundled_track_files(track: str, tracks_dir: Path) -> list[Path]:
    """A bundled track's files and the parts shared by the tracks (tracks_dir/*.j2)."""
    files = [p for p in (tracks_dir / track).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return [*files, *tracks_dir.glob("*.j2")]


def track_identity(workload: models.Workload, tracks_dir: Path, rally_home: Path) -> models.TrackIdentity:
    """A bundled track by the digest of its files (shared parts included), any other by the
    commit of the checkout Rally raced from (RALLY_HOME/.rally/benchmarks/tracks/<repository>)."""
    identity = models.TrackIdentity(source=workload.source, name=workload.track)
    if workload.source == models.TrackSource.BUNDLED:
        identity.sha256 = files_sha256(bundled_track_files(workload.track, tracks_dir), tracks_dir)
    else:
        repository = "default" if workload.source == models.TrackSource.RALLY_TRACKS else GIT_REPOSITORY_NAME
        identity.revision = checkout_revision(rally_home / ".rally" / "benchmarks" / "tracks" / repository)
    return identity


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def cpu_cgroup(proc_cgroup: str, root: Path = CGROUP_ROOT) -> Path | None:
    """The directory of this process's CPU cgroup, from /proc/self/cgroup: the v1 hierarchy that
    holds the `cpu` controller, else the v2 one. A container sees its own cgroup at the
    hierarchy's root, so the root is tried when the path is not there."""
    candidates: list[Path] = []
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            candidates = [root / controllers / path.lstrip("/"), root / controllers]
            break
        if controllers == "":
            candidates = [root / path.lstrip("/"), root]
    return next((c for c in candidates if (c / "cpu.stat").exists()), None)


def cpu_cgroup_state(directory: Path) -> dict[str, float]:
    """The CFS bandwidth figures of a CPU cgroup (v1 or v2): `limit` in CPUs (absent without a
    quota), `periods`, `throttled_periods` and `throttled_seconds` so far."""
    stat = dict(line.split() for line in (directory / "cpu.stat").read_text().splitlines() if " " in line)
    state: dict[str, float] = {"periods": int(stat.get("nr_periods", 0)), "throttled_periods": int(stat.get("nr_throttled", 0))}
    if "throttled_usec" in stat:  # v2
        state["throttled_seconds"] = int(stat["throttled_usec"]) / 1e6
        quota, period = (directory / "cpu.max").read_text().split()
    else:
        state["throttled_seconds"] = int(stat.get("throttled_time", 0)) / 1e9
        quota, period = ((directory / f"cpu.cfs_{name}_us").read_text().strip() for name in ("quota", "period"))
    if quota not in ("max", "-1"):
        state["limit"] = int(quota) / int(period)
    return state


def load_driver_counters(race_id: str, proc: Path = Path("/proc")) -> dict[str, float]:
    """What the load driver has spent so far: the CPU seconds of the race's esrally processes (each
    names its race id; the cgroup may hold other processes), the CPUs it may use (its affinity, and
    its cgroup's CPU limit when lower), and its cgroup's CFS figures where they can be read."""
    ticks = os.sysconf("SC_CLK_TCK")
    argument = f"\0--race-id={race_id}\0".encode()  # arguments end with a NUL in /proc/PID/cmdline
    cpu_seconds = 0.0
    for directory in proc.glob("[0-9]*"):
        try:
            if argument not in b"\0" + (directory / "cmdline").read_bytes():
                continue
            fields = (directory / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        cpu_seconds += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (proc(5) fields 14 and 15)
    cgroup = read_cpu_cgroup() or {}
    processors = min(len(os.sched_getaffinity(0)), cgroup.get("limit", math.inf))
    return {**cgroup, "cpu_seconds": cpu_seconds, "processors": processors}


def read_cpu_cgroup() -> dict[str, float] | None:
    """This process's CPU cgroup state, or None where it cannot be read."""
    try:
        directory = cpu_cgroup(Path("/proc/self/cgroup").read_text())
        return cpu_cgroup_state(directory) if directory else None
    except (OSError, ValueError):
        return None


def load_driver(cgroup_before: dict[str, float] | None = None,
                cgroup_after: dict[str, float] | None = None) -> models.LoadDriverEnvironment:
    """Where Rally ran; with its CPU cgroup read before and after the race, how much the cgroup's
    CPU limit throttled it meanwhile (Rally shares the runner's cgroup)."""
    usable = sorted(os.sched_getaffinity(0))
    environment = models.LoadDriverEnvironment(
        kernel=platform.release(),
        cpu_model=_cpu_model(),
        processors=len(usable),
        cpus=usable,
        python=platform.python_version(),
    )
    if cgroup_before and cgroup_after:
        environment.cpu_limit = cgroup_after.get("limit")
        environment.cpu_periods = int(cgroup_after["periods"] - cgroup_before["periods"])
        environment.cpu_throttled_periods = int(cgroup_after["throttled_periods"] - cgroup_before["throttled_periods"])
        environment.cpu_throttled_seconds = cgroup_after["throttled_seconds"] - cgroup_before["throttled_seconds"]
    return environment


def esbench_version() -> str | None:
    try:
        return importlib.metadata.version("esbench")
    except importlib.metadata.PackageNotFoundError:
        return None


def cluster(root: dict[str, Any]) -> dict[str, Any]:
    """The Environment fields from `GET /`."""
    version = root.get("version") or {}
    return {
        "elasticsearch_version": version.get("number"),
        "elasticsearch_build_hash": version.get("build_hash"),
        "elasticsearch_build_flavor": version.get("build_flavor"),
        "lucene_version": version.get("lucene_version"),
    }
