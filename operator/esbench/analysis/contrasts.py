"""Within-race contrasts: tasks of one race that are variants of one question, compared with
a baseline task of the same race (models.Contrast).

Seed questions are often asked inside one race: the same paginated search with the whole
`_source`, without it, with one field from `_source` or through `fields`. The tasks share the
cluster, the data and the moment, so comparing them with each other is the cleanest contrast
there is. Each task of a contrast is treated as a cell of stats.compare_cells, with the tasks'
figures as its samples, paired by race: one race gives the change only (its verdict says
InsufficientData); the repetitions of a sweep's cell give the interval and the verdict. A contrast's rows are
exploratory comparisons, corrected together (Benjamini-Hochberg): the metrics it names are its family.

Pure: Results in, stats.Rows out, and their wire form for a status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from esbench.analysis import compare, stats
from esbench.api import models

DEFAULT_METRICS = ("service_time.p50", "service_time.p99", "latency.p50", "throughput.median", "process_cpu.percent")
METRICS = tuple(metric.key for metric, _ in compare.TASK_METRICS)


def _as_cell(runs: Sequence[models.Results], task: str, subject: str) -> list[tuple[int, models.Results]]:
    """One task's figures from each run that has it, with the run's position, renamed to the
    contrast so that its rows line up."""
    return [
        (position, models.Results(tasks=[t.model_copy(update={"task": subject})]))
        for position, results in enumerate(runs)
        for t in results.tasks
        if t.task == task
    ]


def compare_tasks(runs: Sequence[models.Results], contrast: models.Contrast,
                  statistics: models.Statistics | None = None) -> list[stats.Row]:
    """One Row per metric of the contrast; its cells are the baseline task and the variants.

    The tasks of one race share its node and its moment, so each variant is compared race by
    race with the baseline (the paired t interval, with the Welch t test): what differs between
    races (a node warming up over a sweep) cancels out."""
    statistics = statistics or models.Statistics()
    found = {task: _as_cell(runs, task, contrast.name) for task in (contrast.baseline, *contrast.variants)}
    cells = {task: [results for _, results in figures] for task, figures in found.items()}
    races = {task: [position for position, _ in figures] for task, figures in found.items()}
    by_race = statistics.model_copy(update={"paired": statistics.test == models.SignificanceTest.WELCH_T})
    wanted = contrast.metrics or DEFAULT_METRICS
    rows = stats.compare_cells(cells, contrast.baseline, by_race, rounds=races, metrics=wanted)
    return sorted(rows, key=lambda r: wanted.index(r.metric.key))


def to_wire(runs: Sequence[models.Results], workload: models.Workload,
            statistics: models.Statistics | None = None) -> list[dict[str, Any]]:
    """The workload's contrasts over these runs, for a status (empty when none is declared)."""
    found = []
    for contrast in workload.contrasts or []:
        missing = [t for t in (contrast.baseline, *contrast.variants) if not _as_cell(runs, t, contrast.name)]
        rows = compare_tasks(runs, contrast, statistics)
        entry: dict[str, Any] = {"name": contrast.name, "baseline": contrast.baseline,
                                 "corrections": stats.corrections(rows), "rows": stats.to_wire(rows)}
        if missing:
            entry["missingTasks"] = missing  # a typo, or a task the race did not report
        found.append(entry)
    return found
