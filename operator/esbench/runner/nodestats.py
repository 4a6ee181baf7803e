"""Per-node CPU, heap, GC and request counters sampled from `_nodes/stats` during a race.

Rally's race.json has no CPU figures for a cluster it did not provision, and CPU is often the
first question ("was it CPU-bound?"). A background thread polls every couple of seconds;
`summarize` turns the samples into models.NodeSample (pure).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from esbench.api import models

STATS_PATH = (
    "_nodes/stats/jvm,os,process,indices?filter_path="
    + ",".join(
        f"nodes.*.{p}"
        for p in (
            "name",
            "os.cpu.percent",
            "process.cpu.percent",
            "jvm.mem.heap_used_in_bytes",
            "jvm.gc.collectors",
            "indices.indexing.index_total",
            "indices.search.query_total",
        )
    )
)


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
            try:
                self.samples.append(self._fetch())
            except Exception:
                self.errors += 1
            if self._stop.wait(self._interval):
                return

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


def _get(doc: dict[str, Any], path: str) -> Any:
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


def _increase(stats: list[dict[str, Any]], path: str) -> int | None:
    """How much a counter grew over the samples.

    Node-level index counters fall when an index is deleted (tracks delete their index first),
    so only the rises between consecutive samples are added up.
    """
    values = [v for s in stats if isinstance(v := _get(s, path), (int, float))]
    if not values:
        return None
    return int(sum(max(0, b - a) for a, b in pairwise(values)))


def summarize(samples: list[dict[str, Any]]) -> list[models.NodeSample]:
    """Per node: mean and p90 of the gauges, growth of the counters."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    names: dict[str, str] = {}
    for sample in samples:
        for node_id, stats in (sample.get("nodes") or {}).items():
            by_node.setdefault(node_id, []).append(stats)
            names[node_id] = stats.get("name", node_id)
    result = []
    for node_id, stats in sorted(by_node.items(), key=lambda item: names[item[0]]):
        def gauge(path: str, stats: list[dict[str, Any]] = stats) -> models.Distribution | None:
            return _distribution([float(v) for s in stats if isinstance(v := _get(s, path), (int, float))])

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
                search_query_total=_increase(stats, "indices.search.query_total"),
            )
        )
    return result
