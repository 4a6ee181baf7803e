"""Rally's race.json -> models.Results: numbers taken exactly as Rally reports them (no rounding,
no unit conversion), so a status can always be traced back to the race that produced it."""

from __future__ import annotations

from typing import Any

from esbench.api import models

# race.json percentile keys -> our field names.
_PERCENTILES = {"50_0": "p50", "90_0": "p90", "99_0": "p99", "100_0": "p100"}

# race.json node-level keys -> models.ClusterResult fields (ms and bytes, as Rally reports them).
_CLUSTER = {
    "total_time": "indexing_time_ms",
    "merge_time": "merge_time_ms",
    "refresh_time": "refresh_time_ms",
    "flush_time": "flush_time_ms",
    "young_gc_time": "young_gc_time_ms",
    "old_gc_time": "old_gc_time_ms",
    "store_size": "store_size_bytes",
    "translog_size": "translog_size_bytes",
    "segment_count": "segment_count",
}


def _number(value: Any) -> float | None:
    # Rally writes null or [] for figures it could not collect (e.g. ZGC figures under G1).
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _percentiles(metric: dict[str, Any] | None) -> models.Percentiles | None:
    if not metric:
        return None
    return models.Percentiles(
        unit=metric.get("unit"), **{field: _number(metric.get(key)) for key, field in _PERCENTILES.items()}
    )


def _task(op: dict[str, Any]) -> models.TaskResult:
    throughput = op.get("throughput")
    return models.TaskResult(
        task=op["task"],
        operation=op.get("operation"),
        throughput=models.Throughput(median=_number(throughput.get("median")), unit=throughput.get("unit"))
        if throughput
        else None,
        latency=_percentiles(op.get("latency")),
        service_time=_percentiles(op.get("service_time")),
        error_rate=_number(op.get("error_rate")),
        duration=_number(op.get("duration")),
    )


def summarize(race: dict[str, Any]) -> models.Results:
    """The parts of a race.json that go into an Experiment's status."""
    results = race.get("results") or {}
    cluster = {field: _number(results.get(key)) for key, field in _CLUSTER.items()}
    return models.Results(
        race_id=race.get("race-id"),
        track=race.get("track"),
        challenge=race.get("challenge"),
        rally_version=race.get("rally-version"),
        distribution_version=(race.get("cluster") or {}).get("distribution-version"),
        track_params=race.get("track-params"),
        tasks=[_task(op) for op in results.get("op_metrics", [])],
        cluster=models.ClusterResult(**cluster) if any(v is not None for v in cluster.values()) else None,
    )


def max_error_rate(results: models.Results) -> float:
    return max((t.error_rate or 0.0 for t in results.tasks), default=0.0)
