"""_nodes/stats samples -> per-node figures (api.NodeSample)."""

from esbench.runner import nodestats
from tests.support.waiting import wait_for


def sample(cpu, os_cpu, heap, young, index_total, query_total, node_id="n1", name="es-0"):
    return {"nodes": {node_id: {
        "name": name,
        "process": {"cpu": {"percent": cpu}},
        "os": {"cpu": {"percent": os_cpu}},
        "jvm": {"mem": {"heap_used_in_bytes": heap},
                "gc": {"collectors": {"young": {"collection_count": young, "collection_time_in_millis": 10 * young},
                                      "old": {"collection_count": 0, "collection_time_in_millis": 0}}}},
        "indices": {"indexing": {"index_total": index_total}, "search": {"query_total": query_total}},
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
