"""What the history keeps of a finished Experiment, whichever store keeps it.

One record per race: the Experiment as it ended (spec, status, results, the environment it ran
in), Rally's race.json where the run still has it, and its figures as points. A series is one configuration's one figure of one subject (a
task, "cluster" or "nodes"); a configuration is the spec without what does not change what is
measured, identified by a hash, so the same spec run tonight and next month lands in one series.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from esbench.analysis import compare
from esbench.api import models

# How long a run may take and how long it is kept: not part of what it measures.
NOT_CONFIGURATION = ("lifecycle",)


class NotRecordable(ValueError):
    """A document that is not a finished Experiment with results."""


@dataclass(frozen=True)
class Point:
    subject: str  # a task, "cluster" or "nodes"
    metric: str  # compare's metric key, e.g. "service_time.p50"
    value: float
    unit: str | None


@dataclass(frozen=True)
class Record:
    race_id: str
    race_timestamp: str  # ISO 8601, UTC: when the race started
    experiment: str
    configuration: str
    track: str
    sweep: str | None  # a sweep's run: its sweep, cell and round
    cell: str | None
    repetition: int | None
    document: dict[str, Any]
    points: list[Point]
    race_json: dict[str, Any] | None = None  # Rally's own, where the run still has it


@dataclass(frozen=True)
class SeriesPoint:
    """One race's figure in a series, as a store reads it back."""

    race_id: str
    race_timestamp: str
    experiment: str
    value: float
    unit: str | None
    sweep: str | None = None  # a sweep's run: its sweep (namespace/name), whose runs measure together


def configuration_id(spec: dict[str, Any]) -> str:
    kept = {key: value for key, value in spec.items() if key not in NOT_CONFIGURATION}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def record(document: dict[str, Any], source: str | None = None, race_json: dict[str, Any] | None = None) -> Record:
    try:
        entry = compare.entry_from_document(document, source)
    except compare.NotComparable as error:
        raise NotRecordable(str(error)) from error
    status = document["status"]
    where = source or entry.label
    if status.get("phase") != models.Phase.SUCCEEDED:  # a failed race's figures (errors, a task cut short) are no point of a series
        raise NotRecordable(f"{where}: phase {status.get('phase')}, not Succeeded")
    if not document.get("spec"):
        raise NotRecordable(f"{where}: no spec, so no series to put it in")
    race_id = status.get("raceId") or entry.results.race_id
    timestamp = status.get("startTime") or status.get("completionTime")
    if not race_id or not timestamp:
        raise NotRecordable(f"{where}: no race id or start time in its status")
    labels = (document.get("metadata") or {}).get("labels") or {}
    annotations = (document.get("metadata") or {}).get("annotations") or {}
    if labels.get(models.CELL_LABEL, "").startswith(models.WARMUP_CELL_PREFIX):
        raise NotRecordable(f"{where}: a sweep's warm-up run, not a measurement")
    return Record(
        race_id=race_id,
        race_timestamp=timestamp,
        experiment=entry.label,
        configuration=annotations.get(models.CONFIGURATION_ANNOTATION) or configuration_id(document["spec"]),
        track=entry.results.track or document["spec"].get("workload", {}).get("track", ""),
        sweep=labels.get(models.SWEEP_LABEL),
        cell=labels.get(models.CELL_LABEL),
        repetition=entry.repetition,
        document=document,
        points=[Point(m.subject, m.metric.key, m.value, m.unit)
                for m in compare.measurements(entry.results) if m.value is not None],
        race_json=race_json,
    )
