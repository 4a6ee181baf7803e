"""Per-node CPU, heap, GC, I/O and request counters sampled from `_nodes/stats` during a race.

Rally's race.json has no CPU figures for a cluster it did not provision, and CPU is often the
first question ("was it CPU-bound?"). A background thread polls every couple of seconds and
stamps each answer with the local time it was read; `summarize` turns the samples into
models.NodeSample over the whole race, `task_resources` into models.TaskResources over one
task's window (both pure).
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from esbench.api import models
from esbench.runner.taskwindows import TaskWindow

STATS_PATH = (
    "_nodes/stats/jvm,os,process,indices,fs,thread_pool,indexing_pressure?filter_path="
    + ",".join(
        f"nodes.*.{p}"
        for p in (
            "name",
            "os.cpu.percent",
            "os.cgroup.cpuacct.usage_nanos",
            "process.cpu.percent",
            "process.cpu.total_in_millis",
            "jvm.mem.heap_used_in_bytes",
            "jvm.gc.collectors",
            "indices.indexing.index_total",
            "indices.docs.count",
            "indices.search.query_total",
            "indices.merges.total_size_in_bytes",
            "indices.flush.total",
            "fs.io_stats.total",
            "thread_pool.write.rejected",
            "indexing_pressure.memory.total",
        )
    )
)
# The local time (seconds since the epoch) a sample was read, added to Elasticsearch's answer.
SAMPLED_AT = "sampled_at"
# Counters Elasticsearch does not report, read by esbench beside each answer (esbench.sidecar.nodeprobe,
# a local node's memory cgroup) and put into the node's stats under this key.
PROBED = "esbench_probe"
# The name a probe gives a local node, which esbench does not name: Elasticsearch's own for the node a
# request reaches (`_nodes/_local`).
LOCAL_NODE = "_local"
# What the load driver has spent (environment.load_driver_counters), read beside each answer: its
# CPU and its CPU limit's throttling within a task's window, not over esrally's start too.
LOAD_DRIVER = "esbench_load_driver"


def with_probe(answer: dict[str, Any], probed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The answer with each node's probed counters (PROBED: counters by node name) in its stats; the
    LOCAL_NODE's go to the answer's only node."""
    nodes = answer.get("nodes") or {}
    for stats in nodes.values():
        counters = probed.get(stats.get("name")) or (probed.get(LOCAL_NODE) if len(nodes) == 1 else None)
        if counters:
            stats[PROBED] = counters
    return answer


class Sampler:
    """Calls fetch() every interval seconds in a daemon thread until stop(); keeps the answers.

    A failed poll is skipped, not fatal: sampling must never break the race it observes.
    """

    def __init__(self, fetch: Callable[[], dict[str, Any]], interval: float = 2.0):
        self._fetch = fetch
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nodestats", daemon=True)
        self.samples: list[dict[str, Any]] = []
        self.errors = 0

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self._interval):
                # Once more when stopped (esrally has exited): the race's last task ended less than an
                # interval ago, maybe after the last sample, and its counters need one past its end.
                self._sample()
                return

    def _sample(self) -> None:
        try:
            asked = time.time()
            answer = self._fetch()
            # The node read its counters somewhere between question and answer.
            self.samples.append({**answer, SAMPLED_AT: (asked + time.time()) / 2})
        except Exception:
            self.errors += 1

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join(timeout=30)
        return self.samples


def _p90(values: list[float]) -> float:
    # Nearest-rank percentile: always one of the observed values.
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def _distribution(values: list[float]) -> models.Distribution | None:
    if not values:
        return None
    return models.Distribution(mean=sum(values) / len(values), p90=_p90(values))


def value_at(doc: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc

# Counters of rejected bulk work (indexing_pressure exists from 7.9; absent counters are skipped).
WRITE_REJECTION_COUNTERS = (
    "thread_pool.write.rejected",
    *(f"indexing_pressure.memory.total.{stage}_rejections" for stage in ("coordinating", "primary", "replica")),
)


def _increase(stats: list[dict[str, Any]], path: str) -> int | None:
    """How much a counter grew over the samples.

    Node-level index counters fall when an index is deleted (tracks delete their index first),
    so only the rises between consecutive samples are added up.
    """
    values = [v for s in stats if isinstance(v := value_at(s, path), (int, float))]
    if not values:
        return None
    return int(sum(max(0, b - a) for a, b in pairwise(values)))


def _last(stats: list[dict[str, Any]], path: str) -> int | None:
    values = [v for s in stats if isinstance(v := value_at(s, path), int)]
    return values[-1] if values else None


def summarize(samples: list[dict[str, Any]]) -> list[models.NodeSample]:
    """Per node: mean and p90 of the gauges, growth of the counters, the documents held at the end."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    names: dict[str, str] = {}
    for sample in samples:
        for node_id, stats in (sample.get("nodes") or {}).items():
            by_node.setdefault(node_id, []).append(stats)
            names[node_id] = stats.get("name", node_id)
    result = []
    for node_id, stats in sorted(by_node.items(), key=lambda item: names[item[0]]):
        def gauge(path: str, stats: list[dict[str, Any]] = stats) -> models.Distribution | None:
            return _distribution([float(v) for s in stats if isinstance(v := value_at(s, path), (int, float))])

        result.append(
            models.NodeSample(
                node=names[node_id],
                samples=len(stats),
                process_cpu_percent=gauge("process.cpu.percent"),
                os_cpu_percent=gauge("os.cpu.percent"),
                heap_used_bytes=gauge("jvm.mem.heap_used_in_bytes"),
                gc_young_count=_increase(stats, "jvm.gc.collectors.young.collection_count"),
                gc_young_time_ms=_increase(stats, "jvm.gc.collectors.young.collection_time_in_millis"),
                gc_old_count=_increase(stats, "jvm.gc.collectors.old.collection_count"),
                gc_old_time_ms=_increase(stats, "jvm.gc.collectors.old.collection_time_in_millis"),
                indexing_total=_increase(stats, "indices.indexing.index_total"),
                docs_count=_last(stats, "indices.docs.count"),
                search_query_total=_increase(stats, "indices.search.query_total"),
                process_cpu_ms=_increase(stats, "process.cpu.total_in_millis"),
                io_read_bytes=_kilobytes(_increase(stats, "fs.io_stats.total.read_kilobytes")),
                io_write_bytes=_kilobytes(_increase(stats, "fs.io_stats.total.write_kilobytes")),
            )
        )
    return result


def _kilobytes(value: Any) -> Any:  # int stays int, float float, None None
    return None if value is None else value * 1024


def _series(samples: list[dict[str, Any]], node_id: str, path: str) -> list[tuple[float, float]]:
    return [
        (sample[SAMPLED_AT], float(value))
        for sample in samples
        if SAMPLED_AT in sample and isinstance(value := value_at((sample.get("nodes") or {}).get(node_id, {}), path), (int, float))
    ]


def _at(series: list[tuple[float, float]], when: float) -> float | None:
    """A counter's value at a moment between two samples, by linear interpolation."""
    times = [t for t, _ in series]
    i = bisect.bisect_left(times, when)
    if i == len(series) or (i == 0 and times[0] > when):
        return None  # outside the sampled span: not known
    if times[i] == when:
        return series[i][1]
    (t0, v0), (t1, v1) = series[i - 1], series[i]
    return v0 + (v1 - v0) * (when - t0) / (t1 - t0)


def _counter_increase(series: list[tuple[float, float]], window: TaskWindow) -> float | None:
    start, end = _at(series, window.start), _at(series, window.end)
    if start is None or end is None or end < start:  # not sampled around the window, or a restart
        return None
    return end - start


@dataclass(frozen=True)
class DriverWindow:
    """The load driver within a task's window."""

    processors: float  # the CPUs it may use
    cpu_share: float | None  # of those, the share its esrally processes used
    periods: float | None  # its cgroup's CFS periods, where it has a CPU limit
    throttled_periods: float | None
    # The time its CPU limit held it back, over the window's: the kernel sums it over the CPUs it
    # was held back on, so with more than one this overstates, never understates.
    throttled_share: float | None
    limit: float | None  # CPUs


def load_driver_in(samples: list[dict[str, Any]], window: TaskWindow) -> DriverWindow | None:
    """What the load driver spent within the window; None where it was not sampled."""
    def increase(key: str) -> float | None:
        return _counter_increase([(sample[SAMPLED_AT], float(sample[LOAD_DRIVER][key])) for sample in samples
                                  if SAMPLED_AT in sample and key in (sample.get(LOAD_DRIVER) or {})], window)

    last = next((sample[LOAD_DRIVER] for sample in reversed(samples) if sample.get(LOAD_DRIVER)), None)
    if last is None or window.seconds <= 0:
        return None
    cpu_seconds, throttled_seconds = increase("cpu_seconds"), increase("throttled_seconds")
    return DriverWindow(
        processors=last["processors"], limit=last.get("limit"), periods=increase("periods"),
        throttled_periods=increase("throttled_periods"),
        throttled_share=None if throttled_seconds is None else throttled_seconds / window.seconds,
        cpu_share=None if cpu_seconds is None else cpu_seconds / (window.seconds * last["processors"]))


def _gauge_mean(series: list[tuple[float, float]], window: TaskWindow) -> float | None:
    inside = [v for t, v in series if window.start <= t <= window.end]
    return sum(inside) / len(inside) if inside else None


def _sum(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


MIN_IDLE_SECONDS = 3.0  # shorter, one sample interval's jitter would be most of it


def idle_window(samples: list[dict[str, Any]], before: float, task: TaskWindow | None = None) -> models.IdleWindow | None:
    """The nodes' CPU rate while no task ran, if long enough to tell: over the track's own idle
    task if it has one (TASK), else from the first sample to `before` (the first task's start)."""
    window = task
    if window is None:
        times = [sample[SAMPLED_AT] for sample in samples if SAMPLED_AT in sample]
        if not times:
            return None
        window = TaskWindow("before the first task", times[0], before)
    if window.seconds < MIN_IDLE_SECONDS:
        return None
    node_ids = sorted({node_id for sample in samples for node_id in sample.get("nodes") or {}})
    cpu = [_counter_increase(_series(samples, node_id, "process.cpu.total_in_millis"), window) for node_id in node_ids]
    if not cpu or any(v is None for v in cpu):
        return None
    return models.IdleWindow(seconds=window.seconds, process_cpu_ms_per_second=sum(cpu) / window.seconds,
                             task=task.task if task else None)


def task_resources(
    samples: list[dict[str, Any]], window: TaskWindow, processors_by_node: dict[str, int]
) -> models.TaskResources | None:
    """The cluster's figures over one task's window; None when no node was sampled around it."""
    node_ids = sorted({node_id for sample in samples for node_id in sample.get("nodes") or {}})
    per_node = []
    for node_id in node_ids:
        def increase(path: str, node_id: str = node_id) -> float | None:
            return _counter_increase(_series(samples, node_id, path), window)

        def mean(path: str, node_id: str = node_id) -> float | None:
            return _gauge_mean(_series(samples, node_id, path), window)

        cpu_ms = increase("process.cpu.total_in_millis")
        count = processors_by_node.get(node_id)
        gc = [increase(f"jvm.gc.collectors.{kind}.collection_time_in_millis") for kind in ("young", "old")]
        cgroup_nanos = increase("os.cgroup.cpuacct.usage_nanos")
        read_kb, write_kb = increase("fs.io_stats.total.read_kilobytes"), increase("fs.io_stats.total.write_kilobytes")
        # Bulk work the node refused: a full write queue, or indexing pressure's memory limit.
        rejections = [increase(path) for path in WRITE_REJECTION_COUNTERS]
        per_node.append({
            "process_cpu_ms": cpu_ms,
            "process_cpu_percent": 100 * cpu_ms / (window.seconds * 1000 * count)
            if cpu_ms is not None and count and window.seconds > 0 else None,
            "cgroup_cpu_ms": None if cgroup_nanos is None else cgroup_nanos / 1e6,
            "os_cpu_percent": mean("os.cpu.percent"),
            "heap_used_bytes": mean("jvm.mem.heap_used_in_bytes"),
            "gc_time_ms": _sum(gc) if all(v is not None for v in gc) else None,
            "io_read_bytes": _kilobytes(read_kb),
            "io_read_operations": increase("fs.io_stats.total.read_operations"),
            "io_write_bytes": _kilobytes(write_kb),
            "write_rejections": _sum(rejections),
            "index_operations": increase("indices.indexing.index_total"),
            "merged_bytes": increase("indices.merges.total_size_in_bytes"),
            "flushes": increase("indices.flush.total"),
            "jit_cpu_ms": increase(f"{PROBED}.jit_cpu_ms"),
            "gc_cpu_ms": increase(f"{PROBED}.gc_cpu_ms"),
            "major_page_faults": increase(f"{PROBED}.major_page_faults"),
            "page_cache_bytes": mean(f"{PROBED}.page_cache_bytes"),
            "index_files": _index_files(samples, node_id, window),
        })
    if not any(v is not None for node in per_node for v in node.values()):
        return None

    def over_nodes(key: str) -> list[float | None]:
        return [node[key] for node in per_node]

    cpu_percents = [v for v in over_nodes("process_cpu_percent") if v is not None]
    return models.TaskResources(
        seconds=window.seconds,
        nodes=len(per_node),
        process_cpu_percent=_mean(over_nodes("process_cpu_percent")),
        process_cpu_percent_max=max(cpu_percents) if cpu_percents else None,
        process_cpu_ms=_sum(over_nodes("process_cpu_ms")),
        cgroup_cpu_ms=_sum(over_nodes("cgroup_cpu_ms")),
        os_cpu_percent=_mean(over_nodes("os_cpu_percent")),
        heap_used_bytes=_mean(over_nodes("heap_used_bytes")),
        gc_time_ms=_sum(over_nodes("gc_time_ms")),
        io_read_bytes=_sum(over_nodes("io_read_bytes")),
        io_read_operations=_sum(over_nodes("io_read_operations")),
        io_write_bytes=_sum(over_nodes("io_write_bytes")),
        write_rejections=_sum(over_nodes("write_rejections")),
        index_operations=_sum(over_nodes("index_operations")),
        merged_bytes=_sum(over_nodes("merged_bytes")),
        flushes=_sum(over_nodes("flushes")),
        jit_cpu_ms=_sum(over_nodes("jit_cpu_ms")),
        gc_cpu_ms=_sum(over_nodes("gc_cpu_ms")),
        major_page_faults=_sum(over_nodes("major_page_faults")),
        page_cache_bytes=_sum(over_nodes("page_cache_bytes")),
        index_files=_summed_files(over_nodes("index_files")),
    )


def _summed_files(per_node: list[Any]) -> dict[str, models.IndexFiles] | None:
    """The nodes' index files by extension, summed over the nodes that have them."""
    found = [files for files in per_node if files]
    if not found:
        return None
    extensions = sorted({extension for files in found for extension in files})
    return {extension: models.IndexFiles(
        size_bytes=sum(files[extension].size_bytes for files in found if extension in files),
        cached_bytes=sum(files[extension].cached_bytes for files in found if extension in files))
        for extension in extensions}


def _index_files(samples: list[dict[str, Any]], node_id: str, window: TaskWindow) -> dict[str, models.IndexFiles] | None:
    """The probe's index files by extension, each figure a mean over the samples inside the window
    (an extension missing from a sample, such as a segment a merge made or removed, counts 0 there)."""
    inside = []
    for sample in samples:
        files = value_at((sample.get("nodes") or {}).get(node_id, {}), f"{PROBED}.index_files")
        if isinstance(files, dict) and window.start <= sample.get(SAMPLED_AT, -1) <= window.end:
            inside.append(files)

    def mean(extension: str, figure: str) -> float:
        return sum(files.get(extension, {}).get(figure, 0) for files in inside) / len(inside)

    extensions = sorted({extension for files in inside for extension in files})
    return {extension: models.IndexFiles(size_bytes=mean(extension, "size"), cached_bytes=mean(extension, "cached"))
            for extension in extensions} or None
