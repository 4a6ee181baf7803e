"""Each offline-runnable seed study (examples/studies/) runs here for real at a reduced size,
asserting that the measurement it depends on is present and sane. Full sizes: `make studies`."""

from __future__ import annotations

import copy
import itertools
import urllib.error

import pytest
import yaml

from esbench.analysis import contrasts
from esbench.api import models
from esbench.planning import grid
from tests.support.elasticsearch import LATEST
from tests.support.result_files import FIXTURES

STUDIES = FIXTURES.parents[2] / "examples" / "studies"
QUERIES = ["match-terms", "ranges", "integer-range", "decades-and-edges", "terms-only"]  # the study's `queries`: no `match`


def study_document(path: str) -> dict:
    (document,) = [d for d in yaml.safe_load_all((STUDIES / path).read_text()) if d]
    return document


def study_spec(path: str, **workload_changes) -> dict:
    """The study's Experiment spec (a sweep's template) with these workload fields replaced."""
    document = study_document(path)
    spec = copy.deepcopy(document["spec"]["template"] if document["kind"] == models.SWEEP_KIND else document["spec"])
    for field, value in workload_changes.items():
        spec["workload"][field] = value
    return spec


@pytest.mark.measures
def test_001_node_cpu_per_query_form_at_a_fixed_rate(clusters, race):
    """Reduced: 3000 people, each form 1 s first, then 5 s per form after 1 s of warm-up (the study:
    1M, 10 s, 20 s after 5 s), at the study's 20 requests/s from 4 clients, the forms in the order
    of the sweep's second round."""
    path = "001-range-queries-cpu/sweep.yaml"
    per_round = models.SweepSpec.model_validate(study_document(path)["spec"]).per_round
    study = study_spec(path)
    order = grid.round_spec(study, per_round, 2)["workload"]["trackParams"]["queries"]
    assert sorted(order) == sorted(QUERIES) and order != QUERIES
    assert study["workload"]["trackParams"]["warm_up_seconds"] > 0
    spec = study_spec(path, trackParams={"doc_count": 3000, "queries": order, "warm_up_seconds": 1, "idle_seconds": 4},
                      load={**study["workload"]["load"], "timePeriodSeconds": 5, "warmupTimePeriodSeconds": 1})
    assert spec["elasticsearch"]["version"] == LATEST
    cluster = clusters.get(LATEST)
    run = race(spec, cluster.url)
    assert run.exit_code == 0, run.output
    results = run.report.results
    tasks = {t.task: t for t in results.tasks}
    for name in QUERIES:
        assert tasks[name].throughput.median == pytest.approx(20, rel=0.05), name
        assert tasks[name].resources.process_cpu_percent > 0, name
    # Each form warmed up first, in the round's order, then the idle task, then the forms measured.
    sequence = [tasks[f"warm-up-{n}"] for n in order] + [tasks[n] for n in order]
    for earlier, later in itertools.pairwise(sequence):  # one after the other
        assert earlier.end <= later.start
    # Net CPU is net of the node's background in the idle task (a Rally sleep, which Rally's report
    # leaves out), after indexing: below every form's rate.
    assert results.idle.task == "idle" and results.idle.seconds >= 4
    for name in QUERIES:
        resources = tasks[name].resources
        assert 0 < resources.process_cpu_ms_net < resources.process_cpu_ms, name
    settings = cluster.client.get("period-search/_settings")["period-search"]["settings"]["index"]
    assert settings["queries"]["cache"]["enabled"] == "false"
    # The study's answer: each period form against the query without a period, from one race.
    workload = models.ExperimentSpec.model_validate(spec).workload
    found = {contrast["name"]: contrast for contrast in contrasts.to_wire([results], workload)}
    expected = {"period-forms": ["match-terms", "ranges", "integer-range", "decades-and-edges", "terms-only"],
                "against-ranges": ["ranges", "integer-range", "decades-and-edges", "terms-only"]}  # the seed's answer
    assert set(found) == set(expected)
    for name, cells in expected.items():
        cpu = next(r for r in found[name]["rows"] if r["metric"] == "process_cpu.percent")
        assert [c["cell"] for c in cpu["cells"]] == cells, name
        assert "missingTasks" not in found[name]



CODEC_SETUP = ["delete-index", "create-index", "check-cluster-health", "index-append", "force-merge",
               "refresh-after-force-merge", "flush-after-force-merge"]
MiB = 2**20


@pytest.mark.measures
def test_002_random_hits_read_the_disk_when_the_store_is_several_times_the_page_cache(clusters, race):
    """Reduced: 170000 events of about 2.4 KB, 10 s at 4 requests/s from 8 clients
    (the study: 280000 events of about 11.8 KB under a 1000 MiB limit, 60 s at 8 from 4; its store is over 1 GB,
    so not compound, where this one's is: here stored fields are read through mmap, there with
    reads), best_compression on the study's version (9.2.4: zstd, as
    in the seed; its integ-test-zip lacks `GET /` and needs Java 21, so this also proves that
    esbench adds the one and finds the other). The node runs in a memory cgroup of its own (as
    root); its limit is lowered only for the searches, to what reclaim cannot take from it
    (heap, native and kernel memory) plus 64 MiB: the page cache gets about that, shared with
    the JVM's own mapped files (less room would let the heap's growth kill the node). Indexing
    under a tight limit could push the node's native memory over it. This node keeps the
    suite's mmap setting (off); the study turns it on.

    A fixed rate is only measured if it is held, so this sends half the study's rate from twice its
    clients: each client every 2 s, not every 500 ms. The hits' service time follows the host's disk
    (its readahead most: each miss through mmap faults in a window of it) and what of the JVM's own
    mapped files stays cached: at 8 requests/s, p50 from 95 to 730 ms and p90 up to 1.1 s from run to
    run and host to host (on a disk with 8 MiB of readahead, 35 MiB read a request), which neither 4
    nor 8 clients could hold."""
    rate, clients, period, warmup = 4, 8, 10, 2
    spec = study_spec("002-best-compression-io/sweep.yaml",
                      trackParams={"doc_count": 170000, "seed": 7, "message_bytes": 2000},
                      load={"targetThroughput": rate, "clients": clients, "timePeriodSeconds": period,
                            "warmupTimePeriodSeconds": warmup})
    spec["index"]["codec"] = "best_compression"  # one of the sweep's cells
    cluster = clusters.get(spec["elasticsearch"]["version"])
    if cluster.memory is None:
        pytest.fail("the node has no memory cgroup of its own: this test needs root (as `make test` runs)")
    del spec["workload"]["excludeTasks"]
    indexed = race({**spec, "workload": {**spec["workload"], "includeTasks": CODEC_SETUP}}, cluster.url)
    assert indexed.exit_code == 0, indexed.output
    store = indexed.report.results.cluster.store_size_bytes
    cache_left = 64 * MiB
    assert store > 3 * cache_left, "the store must be several times the page cache left"

    cluster.memory.set_limit(cluster.memory.unreclaimable_bytes() + cache_left)
    try:
        searched = race({**spec, "workload": {**spec["workload"], "includeTasks": ["random-hits", "count-errors"]}},
                        cluster.url)
    finally:
        cluster.memory.set_limit(None)
    assert searched.exit_code == 0, searched.output
    tasks = {t.task: t for t in searched.report.results.tasks}
    hits, control = tasks["random-hits"], tasks["count-errors"]
    print(f"store {store / MiB:.1f} MiB; random-hits {hits.throughput.median} ops/s, latency p90 {hits.latency.p90} ms, service p50 "
          f"{hits.service_time.p50} ms, p90 {hits.service_time.p90} ms, reads {hits.resources.io_read_bytes / MiB:.1f} MiB in "
          f"{hits.resources.io_read_operations} operations; count-errors {control.resources.io_read_bytes / MiB:.1f} MiB")
    # Held: no request waited for its turn (latency counts from it, service time from the send), and
    # Rally's median of per-second rates, a few requests each, near the rate.
    assert hits.latency.p90 <= hits.service_time.p90 + 50, (hits.latency, hits.service_time)
    assert hits.throughput.median == pytest.approx(rate, rel=0.15)
    # Hits scattered over a store that does not fit: most requests go to the disk.
    assert hits.resources.io_read_operations >= rate * (period + warmup) / 2, hits.resources
    assert control.resources.io_read_bytes < hits.resources.io_read_bytes / 5, (control.resources, hits.resources)
    settings = cluster.client.get("codec-search/_settings")["codec-search"]["settings"]["index"]
    assert settings["codec"] == "best_compression"
    # The seed's codec: stored fields in zstd, in its best_compression mode (level 3, 240 KB blocks;
    # a release build's default is LZ4, Lucene90 BEST_SPEED; 7.17's and 8.7's best_compression is DEFLATE).
    shards = cluster.client.get("codec-search/_segments")["indices"]["codec-search"]["shards"]
    modes = {value for copies in shards.values() for copy in copies for segment in copy["segments"].values()
             for key, value in segment.get("attributes", {}).items() if key.startswith("Zstd")}
    assert modes == {"BEST_COMPRESSION"}, shards

# Study 000 reduced is raced profiled, by `esbench run`: tests/cli/test_profile.py.


def test_003_the_esql_study_runs_up_to_its_queries_where_es_ql_is_missing(clusters, race):
    """ES|QL is not in the offline distribution, so the study cannot answer here; this runs the
    track for real up to its queries (real esrally renders it and loads its parameter source,
    real Elasticsearch indexes and merges) and shows that every fraction task, and only they,
    fail for want of ES|QL. Reduced: 5000 documents, three of the twelve fractions."""
    spec = study_spec("003-esql-stored-fields/target.yaml",
                      trackParams={"doc_count": 5000, "fractions": [100.0, 99.9, 10.0],
                                   "search_warmup_iterations": 0, "search_iterations": 2},
                      onError="continue")
    cluster = clusters.get(LATEST)
    del spec["target"]
    spec["elasticsearch"] = {"version": LATEST}
    run = race(spec, cluster.url)
    assert run.report.failure.kind == "RaceErrors", run.output
    rates = {t.task: t.error_rate for t in run.report.results.tasks}
    fractions = ["fraction-100.0", "fraction-099.9", "fraction-010.0"]
    assert [t for t, rate in rates.items() if rate] == fractions and all(rates[t] == 1 for t in fractions)
    assert "index-append" in rates
    assert cluster.client.get("esql-stored-fields/_count")["count"] == 5000
    assert run.report.results.cluster.segment_count == 1  # force-merged, as the PR did
    # What each of those requests got: this distribution has no ES|QL endpoint (/_query reads as an index).
    with pytest.raises(urllib.error.HTTPError) as refused:
        cluster.client.request("POST", "_query", {"query": "FROM esql-stored-fields | STATS SUM(LENGTH(text))"})
    assert refused.value.code == 405 and "Incorrect HTTP method for uri [/_query]" in refused.value.read().decode()


def test_004_bulk_rejections_are_counted_and_the_race_goes_on(clusters, race):
    """Reduced: 32 clients each send their share, 800 documents of about 5 KB, in one bulk
    (bulk_bytes 5 MB is more than a share) at once (the study: 1 to 64 clients,
    100000 documents of about 5 KB in bulks of 5 MB). Together that is more than the 8.7.1
    test node's indexing pressure limit (10 % of its 1 GB heap), so the node refuses some bulks
    whole (429). The race must go on and count them, and the documents the node really indexed
    must be told apart from Rally's throughput, which counts the refused ones too. About
    two minutes here, with the node already started."""
    clients, docs_per_client = 32, 800
    (document,) = [d for d in yaml.safe_load_all((STUDIES / "004-indexing-curves/curve-clients.yaml").read_text())]
    spec = copy.deepcopy(document["spec"]["template"])
    assert spec["elasticsearch"]["version"] == LATEST and spec["workload"]["maxErrorRate"] == 1
    spec["workload"]["trackParams"].update(doc_count=clients * docs_per_client, bulk_bytes=5_000_000,
                                           bulk_indexing_clients=clients)
    cluster = clusters.get(LATEST)
    run = race(spec, cluster.url)
    assert run.exit_code == 0, run.output
    bulk = next(t for t in run.report.results.tasks if t.task == "index-append")
    indexed = cluster.client.get("indexing/_count")["count"]
    print(f"error rate {bulk.error_rate}, write rejections {bulk.resources.write_rejections}, indexed {indexed}, "
          f"Rally's throughput {bulk.throughput.median} docs/s")
    assert 0 < bulk.error_rate < 1 and bulk.resources.write_rejections >= 1, bulk
    # Refused bulks are missing from the index (Rally's client retries a 429 three times at
    # once, then gives up); the node's own count of what it indexed says how many.
    assert indexed < clients * docs_per_client
    # The node's own count over the race is exact; the task's share is interpolated between
    # samples at the window's ends (2 s apart against a window of about 30 s), so it is not.
    (node,) = run.report.results.nodes
    assert node.indexing_total == indexed
    assert 0 < bulk.resources.index_operations <= indexed * 1.01
    assert "within workload.maxErrorRate" in run.output
