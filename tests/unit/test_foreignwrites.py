"""A task whose disk took writes the nodes did not make while it ran is warned about: in the
race's own output, in comparisons of it, and (tests/unit/test_race_environment.py) in an Event."""

from __future__ import annotations

import pytest

from esbench.analysis import compare, foreignwrites
from esbench.api import models

GIB = 2**30


def task(name: str, written: float | None, indexed: float | None = 0, merged: float | None = 0,
         flushes: float | None = 0) -> models.TaskResult:
    return models.TaskResult(task=name, resources=models.TaskResources(
        seconds=80, nodes=1, io_write_bytes=written, index_operations=indexed, merged_bytes=merged, flushes=flushes))


def test_a_search_task_whose_disk_took_a_gigabyte_is_named_with_what_it_took():
    # Study 002's first search task after a restore, while a copied corpus was written back.
    results = models.Results(tasks=[task("random-hits", 1.57 * GIB), task("random-matches", 0.002 * GIB)])
    (warning,) = foreignwrites.warnings(results)
    assert warning.startswith("task random-hits: the data path's disk took 1.57 GiB of writes in 80 s")
    assert "neither indexed, merged nor flushed" in warning


@pytest.mark.parametrize("figures", [
    {"written": foreignwrites.THRESHOLD_BYTES - 1},  # a node's own logs and state, a little more
    {"written": GIB, "indexed": 1000},  # its own indexing wrote
    {"written": GIB, "merged": 0.9 * GIB},  # a force merge
    {"written": GIB, "flushes": 1},  # a flush wrote what refreshes left in the page cache
    {"written": GIB, "merged": None, "flushes": None},  # results from before these were sampled
    {"written": None},  # no I/O figures (not Linux)
])
def test_writes_the_nodes_made_or_cannot_be_told_apart_are_not_warned_about(figures):
    assert foreignwrites.warnings(models.Results(tasks=[task("t", **figures)])) == []


def test_a_comparison_names_the_experiment_whose_task_is_suspect():
    clean = compare.Entry("default", models.Results(tasks=[task("random-hits", 0.0)]))
    suspect = compare.Entry("best-compression", models.Results(tasks=[task("random-hits", 1.45 * GIB)]))
    warnings = compare.compare([clean, suspect]).warnings
    assert [w.split(": task")[0] for w in warnings] == ["best-compression"]
    assert compare.measurement_warnings([clean, suspect]) == warnings
