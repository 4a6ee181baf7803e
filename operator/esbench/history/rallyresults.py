"""Rally's results documents of one race.json: what Rally's own Elasticsearch results store
indexes for a race (`rally-results-YYYY-MM`, one document per figure, each carrying the race's
identity), so that dashboards and tools made for Rally's results read esbench's too.

The shape is Rally's (esrally.metrics: Race.to_result_dicts and GlobalStats.as_flat_list);
tests/unit/test_rally_results.py holds these documents equal to what Rally's code makes of the
same race.json.
"""

from __future__ import annotations

import re
from typing import Any

INDEX_PREFIX = "rally-results-"
# Figures of one task: (key in op_metrics, given as one number rather than a distribution)
TASK_FIGURES = (("throughput", False), ("latency", False), ("service_time", False), ("processing_time", False),
                ("error_rate", True), ("duration", True))
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-(.+))?$")


def index_name(race: dict[str, Any]) -> str:
    """The month of the race, as Rally names its results indices (its timestamps are UTC)."""
    timestamp = race["race-timestamp"]  # Rally's basic format, e.g. 20261121T090612Z
    return f"{INDEX_PREFIX}{timestamp[:4]}-{timestamp[4:6]}"


def documents(race: dict[str, Any]) -> list[dict[str, Any]]:
    cluster = race.get("cluster") or {}
    car = race.get("car")
    common: dict[str, Any] = {
        "rally-version": race.get("rally-version"),
        "rally-revision": race.get("rally-revision"),
        "environment": race.get("environment"),
        "race-id": race["race-id"],
        "race-timestamp": race["race-timestamp"],
        "distribution-version": cluster.get("distribution-version"),
        "distribution-flavor": cluster.get("distribution-flavor"),
        "user-tags": race.get("user-tags") or {},
        "track": str(race.get("track")),
        "challenge": race.get("challenge") or None,
        "car": "+".join(car) if isinstance(car, list) else car,
        # Rally's flag to hide a result logically (e.g. to show only the latest).
        "active": True,
    }
    version = _VERSION.match(cluster.get("distribution-version") or "")
    if version:
        common["distribution-major-version"] = int(version.group(1))
    optional = {"team-revision": cluster.get("team-revision"), "track-revision": race.get("track-revision"),
                "track-params": race.get("track-params"), "car-params": race.get("car-params"),
                "plugin-params": race.get("plugin-params"), "meta": race.get("meta")}
    common.update({key: value for key, value in optional.items() if value})
    return [{**common, **figure} for figure in _figures(race.get("results") or {})]


def _figures(results: dict[str, Any]) -> list[dict[str, Any]]:
    figures: list[dict[str, Any]] = []
    for name, value in results.items():
        if name == "op_metrics":
            for task in value:
                figures += [_task_figure(task, key, single) for key, single in TASK_FIGURES if key in task]
        elif name == "ml_processing_time":
            figures += [{"job": job["job"], "name": name,
                         "value": {stat: job[stat] for stat in ("min", "mean", "median", "max")}} for job in value]
        elif name.startswith("total_transform_") and value is not None:
            figures += [{"id": item["id"], "name": name, "value": {"single": item["mean"]}} for item in value]
        elif name.startswith("disk_usage_") and value is not None:
            figures += [{"index": item["index"], "field": item["field"], "name": name, "value": {"single": item["value"]}}
                        for item in value]
        elif name.endswith("_time_per_shard"):
            if value:
                figures.append({"name": name, "value": value})
        elif value is not None:
            figures.append({"name": name, "value": {"single": value}})
    return sorted(figures, key=lambda figure: figure["name"])  # stable: by name, as Rally orders them


def _task_figure(task: dict[str, Any], key: str, single: bool) -> dict[str, Any]:
    figure = {"task": task["task"], "operation": task["operation"], "name": key,
              "value": {"single": task[key]} if single else task[key]}
    if "meta" in task:
        figure["meta"] = task["meta"]
    return figure
