"""Tasks whose disk figures hold writes the nodes did not make while the task ran.

Elasticsearch's `fs.io_stats` count the whole block device of a data path, so whatever else
writes to that device (another process, or the kernel writing back pages dirtied before the
task) lands in a task's I/O figures, and its reads and service times compete with it. A task
in which the nodes indexed nothing, merged nothing and did not flush writes next to nothing
itself; when its device took more than a little, its figures are suspect, and the reader
should know before trusting them.
"""

from __future__ import annotations

from esbench.api import models

# Far above what a node writes while it only searches (its logs and state files: a few MiB a
# minute), far below a background copy or writeback of a corpus (gigabytes).
THRESHOLD_BYTES = 128 * 2**20


def _gib(size: float) -> str:
    return f"{size / 2**30:.2f} GiB"


def warnings(results: models.Results) -> list[str]:
    """One warning per such task; none where a figure it takes is not known (older results)."""
    found = []
    for task in results.tasks:
        resources = task.resources
        if resources is None or resources.io_write_bytes is None or resources.io_write_bytes < THRESHOLD_BYTES:
            continue
        if resources.index_operations != 0 or resources.merged_bytes != 0 or resources.flushes != 0:
            continue
        found.append(
            f"task {task.task}: the data path's disk took {_gib(resources.io_write_bytes)} of writes in "
            f"{resources.seconds:.0f} s while the nodes neither indexed, merged nor flushed: another process "
            "(or the writeback of pages written before the task) shared the disk with it, and its disk figures "
            "and maybe its times include that")
    return found
