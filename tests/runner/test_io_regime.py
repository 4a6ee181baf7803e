"""Disk I/O per task, and the regime it reveals: the same searches read the store from disk
when the page cache left under a memory limit cannot hold it, and from memory when it can.

Real Elasticsearch (the session's 8.7.1 node, which runs in a memory cgroup of its own as
root: esbench.localnode.cgroups), real esrally. The limit is lowered only for the second race,
which only searches: indexing under a tight limit could push the node's native memory over it.
"""

from __future__ import annotations

import pytest

from tests.support.elasticsearch import LATEST

MiB = 2**20
SETUP = ["delete-index", "create-index", "check-cluster-health", "index-append", "refresh-after-index"]
PASS = "paginate-full-source"  # one operation reads every document's stored fields


def spec(tasks: list[str]) -> dict:
    return {"elasticsearch": {"version": LATEST}, "workload": {
        "track": "source-filtering", "includeTasks": tasks,
        "trackParams": {"doc_count": 10000, "body_bytes": 8192, "page_size": 1000,
                        "search_iterations": 2, "search_warmup_iterations": 1}}}


@pytest.mark.measures
def test_disk_reads_of_a_task_move_only_when_the_page_cache_cannot_hold_the_store(clusters, race):
    cluster = clusters.get(LATEST)
    if cluster.memory is None:
        pytest.fail("the node has no memory cgroup of its own: this test needs root (as `make test` runs)")
    cached = race(spec([*SETUP, PASS]), cluster.url)
    assert cached.exit_code == 0, cached.output
    store = cached.report.results.cluster.store_size_bytes
    reads_cached = {t.task: t for t in cached.report.results.tasks}[PASS].resources.io_read_bytes

    cache_left = 32 * MiB
    limit = cluster.memory.unreclaimable_bytes() + cache_left
    cluster.memory.set_limit(limit)
    try:
        bound = race(spec([PASS]), cluster.url)  # the index of the first race, searched again
    finally:
        cluster.memory.set_limit(None)
    assert bound.exit_code == 0, bound.output
    (task,) = bound.report.results.tasks
    reads_bound = task.resources.io_read_bytes

    assert store > 2 * cache_left, "the store must be several times the page cache left"
    # Three passes (one warm-up) over a store that does not fit: most of it comes from disk each time.
    assert reads_bound > store, (reads_bound, store)
    # Written pages stayed cached without a limit: the same passes barely touch the disk.
    assert reads_cached < reads_bound / 5, (reads_cached, reads_bound)
    # The reproducibility record says what bounded the page cache.
    (node,) = bound.report.results.environment.nodes
    assert node.cgroup_memory_limit_bytes == limit
