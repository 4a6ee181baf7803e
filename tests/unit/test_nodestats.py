"""_nodes/stats samples -> per-node figures (api.NodeSample)."""

import json
import time

import pytest

from esbench.api import models
from esbench.runner import environment, nodestats, race, taskwindows
from esbench.runner.taskwindows import TaskWindow
from tests.support.result_files import FIXTURES
from tests.support.waiting import wait_for

FIXED_RATE = FIXTURES / "8.7.1-range-queries-fixed-rate"


def sample(cpu, os_cpu, heap, young, index_total, query_total, node_id="n1", name="es-0", docs=None):
    return {"nodes": {node_id: {
        "name": name,
        "process": {"cpu": {"percent": cpu}},
        "os": {"cpu": {"percent": os_cpu}},
        "jvm": {"mem": {"heap_used_in_bytes": heap},
                "gc": {"collectors": {"young": {"collection_count": young, "collection_time_in_millis": 10 * young},
                                      "old": {"collection_count": 0, "collection_time_in_millis": 0}}}},
        "indices": {"indexing": {"index_total": index_total}, "search": {"query_total": query_total},
                    "docs": {"count": index_total if docs is None else docs}},
    }}}


def test_gauges_give_mean_and_nearest_rank_p90_and_counters_their_growth():
    samples = [sample(cpu, 50, 100 * cpu, young=i, index_total=1000 * i, query_total=i)
               for i, cpu in enumerate([10, 20, 30, 40, 50, 60, 70, 80, 90, 100])]
    (node,) = nodestats.summarize(samples)
    assert node.node == "es-0" and node.samples == 10
    assert node.process_cpu_percent.mean == 55 and node.process_cpu_percent.p90 == 90
    assert node.os_cpu_percent.mean == 50 and node.os_cpu_percent.p90 == 50
    assert node.heap_used_bytes.mean == 5500
    assert (node.gc_young_count, node.gc_young_time_ms, node.gc_old_count, node.gc_old_time_ms) == (9, 90, 0, 0)
    assert (node.indexing_total, node.search_query_total) == (9000, 9)
    assert node.docs_count == 9000  # the last sample's


def test_an_index_kept_from_an_earlier_race_shows_in_the_documents_held_not_in_the_indexed_count():
    # (indexed so far, documents held): a fresh index is deleted first and then holds what was
    # indexed; a kept one still holds the earlier race's 5,000.
    fresh = [sample(1, 1, 1, 0, indexed, 0, docs=docs) for indexed, docs in ((0, 5000), (0, 0), (1000, 1000))]
    kept = [sample(1, 1, 1, 0, indexed, 0, docs=docs) for indexed, docs in ((0, 5000), (0, 5000), (1000, 6000))]
    (fresh_node,), (kept_node,) = nodestats.summarize(fresh), nodestats.summarize(kept)
    assert fresh_node.indexing_total == kept_node.indexing_total == 1000
    assert (fresh_node.docs_count, kept_node.docs_count) == (1000, 6000)


def test_a_deleted_index_does_not_make_counters_negative():
    # The track deletes its index first: node-level totals fall, then grow again.
    samples = [sample(1, 1, 1, 0, total, 0) for total in (5000, 5000, 0, 300, 1000)]
    (node,) = nodestats.summarize(samples)
    assert node.indexing_total == 1000


def test_nodes_are_reported_by_name_and_missing_figures_stay_empty():
    samples = [
        {"nodes": {"b": {"name": "es-1"}, "a": sample(5, 5, 5, 0, 0, 0)["nodes"]["n1"]}},
        {"nodes": {"b": {"name": "es-1"}}},
    ]
    first, second = nodestats.summarize(samples)
    assert (first.node, first.samples, second.node, second.samples) == ("es-0", 1, "es-1", 2)
    assert second.process_cpu_percent is None and second.indexing_total is None


def test_no_samples_no_nodes():
    assert nodestats.summarize([]) == []


def test_the_sampler_keeps_answers_and_skips_failures():
    calls = iter([{"nodes": {}}, RuntimeError("boom"), {"nodes": {}}])

    def fetch():
        answer = next(calls, {"nodes": {}})
        if isinstance(answer, Exception):
            raise answer
        return answer

    sampler = nodestats.Sampler(fetch, interval=0.01).start()
    wait_for(lambda: len(sampler.samples) >= 3, timeout=10, what="three answers after the failure", interval=0.01)
    samples = sampler.stop()
    assert len(samples) >= 3 and sampler.errors == 1


def test_the_sampler_samples_once_more_when_stopped_so_the_last_task_has_a_sample_past_its_end():
    sampler = nodestats.Sampler(lambda: {"nodes": {}}, interval=60).start()
    wait_for(lambda: sampler.samples, timeout=10, what="the first sample", interval=0.01)
    stopped_at = time.time()
    samples = sampler.stop()
    assert len(samples) == 2 and samples[-1][nodestats.SAMPLED_AT] >= stopped_at


# --- per task: counters at the window's ends, gauges inside it --------------------------------

def timed(at, cpu_ms, heap=0, read_kb=0, young_ms=0, node_id="n1"):
    return {nodestats.SAMPLED_AT: at, "nodes": {node_id: {
        "name": node_id,
        "process": {"cpu": {"total_in_millis": cpu_ms}},
        "jvm": {"mem": {"heap_used_in_bytes": heap},
                "gc": {"collectors": {"young": {"collection_time_in_millis": young_ms},
                                      "old": {"collection_time_in_millis": 0}}}},
        "fs": {"io_stats": {"total": {"read_kilobytes": read_kb, "read_operations": read_kb // 4,
                                      "write_kilobytes": 0}}},
    }}}


def test_counters_are_interpolated_at_the_window_ends_and_cpu_percent_is_per_processor():
    samples = [timed(0, 0, heap=100, read_kb=0), timed(5, 5000, heap=300, read_kb=400, young_ms=50),
               timed(10, 10000, heap=500, read_kb=400, young_ms=50)]
    window = taskwindows.TaskWindow("t", 2.5, 7.5)
    figures = nodestats.task_resources(samples, window, {"n1": 2})
    assert figures.seconds == 5 and figures.nodes == 1
    assert figures.process_cpu_ms == 5000  # 1 core busy for 5 s...
    assert figures.process_cpu_percent == 50 == figures.process_cpu_percent_max  # ...of 2 processors
    assert figures.heap_used_bytes == 300  # only the sample inside the window
    assert figures.io_read_bytes == 200 * 1024 and figures.io_read_operations == 50
    assert figures.gc_time_ms == 25 and figures.io_write_bytes == 0


def test_nodes_are_summed_or_averaged_and_the_busiest_node_is_named_by_its_figure():
    samples = [{nodestats.SAMPLED_AT: at, "nodes": {**timed(at, cpu_a)["nodes"], **timed(at, cpu_b, node_id="n2")["nodes"]}}
               for at, cpu_a, cpu_b in ((0, 0, 0), (10, 2000, 8000))]
    figures = nodestats.task_resources(samples, taskwindows.TaskWindow("t", 0, 10), {"n1": 1, "n2": 1})
    assert figures.nodes == 2 and figures.process_cpu_ms == 10000
    assert figures.process_cpu_percent == 50 and figures.process_cpu_percent_max == 80


def test_write_rejections_add_the_thread_pool_and_indexing_pressure_and_indexed_documents_are_counted():
    def with_writes(at, rejected, coordinating, primary, indexed):
        sample = timed(at, 0)
        sample["nodes"]["n1"].update(
            thread_pool={"write": {"rejected": rejected}},
            indexing_pressure={"memory": {"total": {"coordinating_rejections": coordinating,
                                                    "primary_rejections": primary, "replica_rejections": 0}}},
            indices={"indexing": {"index_total": indexed}})
        return sample

    samples = [with_writes(0, 1, 5, 0, 0), with_writes(10, 3, 9, 1, 800)]
    figures = nodestats.task_resources(samples, taskwindows.TaskWindow("t", 0, 10), {"n1": 1})
    assert figures.write_rejections == 2 + 4 + 1 and figures.index_operations == 800
    # 7.x before 7.9 has no indexing pressure: the thread pool alone.
    for sample in samples:
        del sample["nodes"]["n1"]["indexing_pressure"]
    assert nodestats.task_resources(samples, taskwindows.TaskWindow("t", 0, 10), {"n1": 1}).write_rejections == 2


def test_what_the_nodes_merged_and_flushed_is_counted_per_task():
    """What the nodes themselves write besides indexing: a search task's disk writes are theirs
    only if these grew (analysis/foreignwrites.py)."""
    def with_merges(at, merged, flushes):
        sample = timed(at, 0)
        sample["nodes"]["n1"]["indices"] = {"merges": {"total_size_in_bytes": merged}, "flush": {"total": flushes}}
        return sample

    samples = [with_merges(0, 0, 3), with_merges(10, 5000, 4), with_merges(20, 5000, 4)]
    merging = nodestats.task_resources(samples, taskwindows.TaskWindow("force-merge", 0, 10), {"n1": 1})
    searching = nodestats.task_resources(samples, taskwindows.TaskWindow("search", 10, 20), {"n1": 1})
    assert (merging.merged_bytes, merging.flushes) == (5000, 1)
    assert (searching.merged_bytes, searching.flushes) == (0, 0)
    assert {"indices.merges.total_size_in_bytes", "indices.flush.total"} <= {
        path.removeprefix("nodes.*.") for path in nodestats.STATS_PATH.split("filter_path=")[1].split(",")}


def local(counters):
    return {nodestats.LOCAL_NODE: counters}


def test_a_probes_counters_reach_the_one_nodes_task_figures():
    """Local mode adds what Elasticsearch does not report (the node's memory cgroup and threads) to its answers."""
    samples = [nodestats.with_probe(timed(at, 0), local({"major_page_faults": faults, "page_cache_bytes": cache,
                                                         "jit_cpu_ms": jit, "gc_cpu_ms": gc}))
               for at, faults, cache, jit, gc in ((0, 100, 10, 5, 1), (5, 400, 30, 65, 2), (10, 1100, 50, 85, 4))]
    figures = nodestats.task_resources(samples, taskwindows.TaskWindow("t", 0, 10), {"n1": 1})
    assert figures.major_page_faults == 1000 and figures.page_cache_bytes == 30
    assert figures.jit_cpu_ms == 80 and figures.gc_cpu_ms == 3
    # Without a probe (an existing cluster) the figures are unknown, not zero.
    plain = nodestats.task_resources([timed(0, 0), timed(10, 0)], taskwindows.TaskWindow("t", 0, 10), {"n1": 1})
    assert plain.major_page_faults is None and plain.page_cache_bytes is None and plain.jit_cpu_ms is None
    # A local node's probe names no node: an answer from two is not given one node's counters.
    two = {"nodes": {**timed(0, 0)["nodes"], **timed(0, 0, node_id="n2")["nodes"]}}
    assert all(nodestats.PROBED not in node for node in nodestats.with_probe(two, local({"major_page_faults": 1}))["nodes"].values())


def test_each_pods_counters_reach_its_own_node_and_the_task_figures_sum_the_nodes():
    """On Kubernetes each pod's sidecar names its node (the pod's name, ECK's node name): counters go
    to that node, and a task's figures add up the nodes (index files by extension)."""
    def sample(at, jit_a, jit_b, files_b):
        answer = {nodestats.SAMPLED_AT: at, "nodes": {**timed(at, 0, node_id="id-a")["nodes"], **timed(at, 0, node_id="id-b")["nodes"]}}
        answer["nodes"]["id-a"]["name"], answer["nodes"]["id-b"]["name"] = "es-default-0", "es-default-1"
        return nodestats.with_probe(answer, {
            "es-default-1": {"jit_cpu_ms": jit_b, "major_page_faults": 0, "index_files": files_b},
            "es-default-0": {"jit_cpu_ms": jit_a, "major_page_faults": 0, "index_files": {"fdt": {"size": 10, "cached": 10}}},
            "es-other-0": {"jit_cpu_ms": 10_000}})  # no such node in the answer: left out

    samples = [sample(0, 5, 100, {"fdt": {"size": 30, "cached": 0}}),
               sample(10, 15, 400, {"fdt": {"size": 30, "cached": 20}, "doc": {"size": 4, "cached": 4}})]
    assert samples[0]["nodes"]["id-b"][nodestats.PROBED]["jit_cpu_ms"] == 100
    figures = nodestats.task_resources(samples, taskwindows.TaskWindow("t", 0, 10), {"id-a": 1, "id-b": 1})
    assert figures.jit_cpu_ms == 10 + 300 and figures.major_page_faults == 0
    assert figures.index_files == {"fdt": models.IndexFiles(size_bytes=10 + 30, cached_bytes=10 + 10),
                                   "doc": models.IndexFiles(size_bytes=2, cached_bytes=2)}
    # A pod whose sidecar did not answer leaves its node without counters, even as the answer's only node.
    lone = nodestats.with_probe(timed(0, 0, node_id="es-default-2"), {"es-default-0": {"jit_cpu_ms": 1}})
    assert nodestats.PROBED not in lone["nodes"]["es-default-2"]


def test_the_index_files_in_the_page_cache_are_means_over_the_samples_inside_the_window():
    files = [{"fdt": {"size": 1000, "cached": 100}},
             {"fdt": {"size": 1000, "cached": 300}, "doc": {"size": 50, "cached": 50}},
             {"fdt": {"size": 1000, "cached": 800}}]
    samples = [nodestats.with_probe(timed(at, 0), local({"index_files": probed})) for at, probed in zip((0, 5, 20), files, strict=True)]
    figures = nodestats.task_resources(samples, taskwindows.TaskWindow("t", 0, 10), {"n1": 1})
    # A file that appears in some samples (a segment a merge made or removed) counts as none in the others.
    assert figures.index_files == {"fdt": models.IndexFiles(size_bytes=1000, cached_bytes=200),
                                   "doc": models.IndexFiles(size_bytes=25, cached_bytes=25)}
    assert nodestats.task_resources(samples, taskwindows.TaskWindow("t", 11, 19), {"n1": 1}).index_files is None


def test_a_window_outside_the_sampled_span_or_without_processors_leaves_figures_unknown():
    samples = [timed(10, 0), timed(20, 1000)]
    early = nodestats.task_resources(samples, taskwindows.TaskWindow("early", 5, 15), {"n1": 2})
    assert early.process_cpu_ms is None and early.process_cpu_percent is None  # no sample before 5
    assert early.heap_used_bytes == 0  # the gauge sampled at 10 is inside
    assert nodestats.task_resources(samples, taskwindows.TaskWindow("late", 30, 40), {"n1": 2}) is None
    unknown_processors = nodestats.task_resources(samples, taskwindows.TaskWindow("t", 10, 20), {})
    assert unknown_processors.process_cpu_ms == 1000 and unknown_processors.process_cpu_percent is None


def test_a_restarted_node_gives_no_cpu_figure_rather_than_a_negative_one():
    samples = [timed(0, 9000), timed(10, 100)]
    assert nodestats.task_resources(samples, taskwindows.TaskWindow("t", 0, 10), {"n1": 1}).process_cpu_ms is None


def test_on_a_real_race_a_task_at_5_ops_costs_less_cpu_than_the_same_query_back_to_back():
    """The fixed-rate fixture: range-1950s at 5 ops/s, terms-1950s at 50 ops/s, the nine-decade
    queries back to back, on one 2-processor node (tests/fixtures/race/README.md)."""
    samples = json.loads((FIXED_RATE / "node-stats.json").read_text())
    processors = environment.processors(json.loads((FIXED_RATE / "nodes-info.json").read_text()))
    windows = taskwindows.parse((FIXED_RATE / "rally.log").read_text())
    cpu = {name: nodestats.task_resources(samples, windows[name], processors).process_cpu_percent
           for name in ("range-1950s", "terms-1950s", "range-1900-1989", "terms-1900-1989")}
    assert list(processors.values()) == [2]
    assert 0 < cpu["range-1950s"] < cpu["terms-1950s"] < cpu["range-1900-1989"]
    assert cpu["range-1950s"] < 25 and cpu["range-1900-1989"] > 40
    indexing = nodestats.task_resources(samples, windows["index-append"], processors)
    assert indexing.io_write_bytes > 0 and indexing.process_cpu_percent > cpu["range-1950s"]


def test_the_idle_window_runs_from_the_first_sample_to_the_first_task_when_long_enough():
    samples = [timed(0, 0, heap=1, read_kb=0), timed(5, 500, heap=1, read_kb=0), timed(10, 10500, heap=1, read_kb=0)]
    idle = nodestats.idle_window(samples, before=5)
    assert (idle.seconds, idle.process_cpu_ms_per_second) == (5, 100)  # 500 ms of CPU in 5 s
    assert nodestats.idle_window(samples, before=2) is None  # too short to tell
    assert nodestats.idle_window([], before=5) is None


def test_a_tracks_idle_task_is_the_idle_window_and_what_every_task_is_net_of():
    # The node busy as it starts (1000 ms/s), quiet by the track's idle task (100 ms/s), then a query.
    samples = [timed(t, cpu, heap=1, read_kb=0) for t, cpu in ((0, 0), (4, 4000), (10, 4600), (16, 5200), (20, 7200))]
    assert nodestats.idle_window(samples, before=4).process_cpu_ms_per_second == 1000
    windows = {"idle": TaskWindow("idle", 4, 16), "query": TaskWindow("query", 16, 20)}
    summary = models.Results(tasks=[models.TaskResult(task="query"), models.TaskResult(task="idle")])
    race.attribute_to_tasks(summary, windows, samples, {"n1": 1})
    assert summary.idle == models.IdleWindow(seconds=12, process_cpu_ms_per_second=100, task="idle")
    (query, idle) = summary.tasks
    assert (query.resources.process_cpu_ms, query.resources.process_cpu_ms_net) == (2000, 1600)
    assert idle.resources.process_cpu_ms_net == 0
    assert nodestats.idle_window(samples, 4, TaskWindow("idle", 4, 6)) is None  # too short to tell


def test_on_a_real_race_the_idle_rate_is_below_every_query_tasks_and_net_cpu_below_gross():
    samples = json.loads((FIXED_RATE / "node-stats.json").read_text())
    processors = environment.processors(json.loads((FIXED_RATE / "nodes-info.json").read_text()))
    windows = taskwindows.parse((FIXED_RATE / "rally.log").read_text())
    idle = nodestats.idle_window(samples, min(w.start for w in windows.values()))
    assert idle is not None and idle.seconds >= nodestats.MIN_IDLE_SECONDS
    busy = nodestats.task_resources(samples, windows["range-1900-1989"], processors)
    assert 0 < idle.process_cpu_ms_per_second < busy.process_cpu_ms / busy.seconds


def test_what_the_load_driver_spent_is_read_within_the_task_s_window_not_over_esrally_s_start():
    """esrally's start, throttled in every period under a pod's CPU limit and busy (0 to 4 s: 40 of
    40 periods, 2 s held back, 1.8 CPU seconds), comes before the task's window; within it (4 to
    10 s), 3 of 60 periods were throttled, for 0.15 s, and the driver used 1.5 of 6 CPU seconds."""
    def sample(at: float, periods: int, throttled: int, held: float, cpu: float) -> dict:
        return {nodestats.SAMPLED_AT: at, "nodes": {},
                nodestats.LOAD_DRIVER: {"limit": 1.0, "periods": periods, "throttled_periods": throttled,
                                        "throttled_seconds": held, "cpu_seconds": cpu, "processors": 1.0}}

    samples = [sample(0, 0, 0, 0.0, 0.0), sample(4, 40, 40, 2.0, 1.8), sample(6, 60, 41, 2.05, 2.3),
               sample(10, 100, 43, 2.15, 3.3)]
    driver = nodestats.load_driver_in(samples, taskwindows.TaskWindow("t", 4, 10))
    assert (driver.limit, driver.periods, driver.throttled_periods) == (1.0, 60, 3)
    assert driver.throttled_share == pytest.approx(0.15 / 6)
    assert driver.cpu_share == pytest.approx(1.5 / 6)
    assert nodestats.load_driver_in(samples, taskwindows.TaskWindow("t", 5, 8)).throttled_periods == 1.5  # 40.5 to 42
    outside = nodestats.load_driver_in(samples, taskwindows.TaskWindow("t", 4, 11))  # not sampled past its end
    assert (outside.periods, outside.throttled_share, outside.cpu_share) == (None, None, None)
    assert nodestats.load_driver_in([{**s, nodestats.LOAD_DRIVER: None} for s in samples],
                                    taskwindows.TaskWindow("t", 4, 10)) is None  # nothing read
    # No CPU limit (a local run): the CPU share alone.
    free = [{**s, nodestats.LOAD_DRIVER: {"cpu_seconds": s[nodestats.LOAD_DRIVER]["cpu_seconds"], "processors": 2}}
            for s in samples]
    driver = nodestats.load_driver_in(free, taskwindows.TaskWindow("t", 4, 10))
    assert (driver.periods, driver.limit, driver.cpu_share) == (None, None, pytest.approx(1.5 / 12))
