"""Every bundled track runs for real (esrally against real Elasticsearch) and does what it says.

Races run in Rally's --test-mode with corpora of at most 1000 documents, which test mode
indexes whole. One full race (range-queries at fixed rates) checks the non-test-mode path.
"""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest

from esbench.api import models
from esbench.runner import race as race_module
from esbench.runner import requestsamples
from esbench.runner.corpus import TEST_MODE_COUNT
from tests.support import track_modules
from tests.support.elasticsearch import LATEST, VERSIONS

DOC_COUNT = 600
INDEX_SPEC = {
    "shards": 2,
    "replicas": 1,  # one node: yellow is all the track may wait for
    "refreshInterval": "7s",
    "codec": "best_compression",
    "settings": {"index.max_result_window": 12345},
}
TRACK_PARAMS = {
    "smoke": {"doc_count": DOC_COUNT},
    "indexing": {"doc_count": DOC_COUNT, "bulk_size": 100, "bulk_indexing_clients": 2},
    "source-filtering": {"doc_count": DOC_COUNT, "body_bytes": 2048, "page_size": 100},
    "range-queries": {"doc_count": DOC_COUNT},
    "codec-search": {"doc_count": DOC_COUNT, "fetch_size": 100},
    "period-search": {"doc_count": DOC_COUNT},
}


def spec(track: str, *, index: dict | None = None, test_mode: bool = True, **workload) -> dict:
    return {
        "elasticsearch": {"version": "8.7.1"},
        "index": INDEX_SPEC if index is None else index,
        "workload": {"track": track, "testMode": test_mode, **workload},
    }


def index_name(track: str) -> str:
    return track  # each bundled track indexes into an index named after it


def count_documents(cluster, index: str) -> int:
    cluster.client.request("POST", f"{index}/_refresh")  # the indexing track flushes, not refreshes
    return cluster.client.get(f"{index}/_count")["count"]


# esql-stored-fields needs ES|QL, which the offline distribution lacks: its race up to the
# queries is tests/runner/test_studies.py::test_003_...
OFFLINE_TRACKS = [t for t in models.BUNDLED_TRACKS if t != "esql-stored-fields"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("track", OFFLINE_TRACKS)
def test_bundled_track_indexes_its_whole_corpus_with_the_spec_index_settings(clusters, race, version, track):
    cluster = clusters.get(version)
    run = race(spec(track, trackParams=TRACK_PARAMS[track]), cluster.url)

    assert run.exit_code == 0, run.output
    assert run.report.succeeded and run.report.failure is None
    results = run.report.results
    assert results.track == track and results.distribution_version == version
    assert results.track_params["cluster_health"] == "yellow"

    assert count_documents(cluster, index_name(track)) == DOC_COUNT
    assert results.tasks and all(t.error_rate == 0 for t in results.tasks)
    assert {"index-append"} <= {t.task for t in results.tasks}
    # The launcher kept every task's requests (test mode sends too few of them for a steady state).
    assert all(t.steady_state and t.steady_state.samples > 0 for t in results.tasks), results.tasks
    assert results.cluster.store_size_bytes > 0
    assert results.cluster.segment_count >= 1

    settings = cluster.client.get(f"{index_name(track)}/_settings")[index_name(track)]["settings"]["index"]
    assert settings["codec"] == "best_compression"
    assert settings["number_of_shards"] == "2"
    assert settings["number_of_replicas"] == "1"
    assert settings["refresh_interval"] == "7s"
    assert settings["max_result_window"] == "12345"

    (node,) = results.nodes
    assert node.samples >= 2
    assert node.process_cpu_percent.mean is not None and node.os_cpu_percent.p90 is not None
    assert node.heap_used_bytes.mean > 0
    assert node.indexing_total >= DOC_COUNT  # primaries; replicas stay unassigned on one node

    assert run.report.race_json["race-id"] == results.race_id


def test_range_and_terms_queries_of_range_queries_track_match_the_same_documents(clusters, race):
    cluster = clusters.get(LATEST)
    run = race(spec("range-queries", index={}, trackParams={"doc_count": DOC_COUNT}), cluster.url)
    assert run.exit_code == 0, run.output
    cluster.client.request("POST", "range-queries/_refresh")

    def hits(query):
        body = {"size": 0, "track_total_hits": True, "query": query}
        return cluster.client.request("POST", "range-queries/_search", body)["hits"]["total"]["value"]

    for first, last in ((1950, 1959), (1900, 1989)):
        overlap = {"bool": {"filter": [{"range": {"start_year": {"lte": last}}}, {"range": {"end_year": {"gte": first}}}]}}
        in_decades = {"terms": {"decades": [str(d) for d in range(first, last + 1, 10)]}}
        assert 0 < hits(overlap) == hits(in_decades) < DOC_COUNT


@pytest.mark.measures
def test_fixed_rates_are_held_and_each_task_gets_the_node_cpu_of_its_own_window(clusters, race):
    """workload.load drives Rally's schedule; task windows come from Rally's log, and a task at a
    low fixed rate costs less node CPU than the same kind of query back to back in the same race.
    Not in test mode: Rally's test mode drops target throughputs and shortens time periods. The
    slow task compared is the second query task: the first one's window also holds the search
    path's first compilations and the bulk task's tail."""
    cluster = clusters.get(LATEST)
    rates = {"range-1950s": 10, "terms-1950s": 10}
    run = race(spec("range-queries", index={}, test_mode=False, trackParams={"doc_count": 5000},
                    load={"taskTargetThroughputs": rates, "timePeriodSeconds": 6, "warmupTimePeriodSeconds": 1}),
               cluster.url)
    assert run.exit_code == 0, run.output
    tasks = {t.task: t for t in run.report.results.tasks}
    for name, rate in rates.items():
        assert tasks[name].throughput.median == pytest.approx(rate, rel=0.05), name  # the stated tolerance: 5 %
        assert tasks[name].latency.p50 >= tasks[name].service_time.p50
    ordered = sorted(tasks.values(), key=lambda t: t.start)
    def gap(earlier, later) -> float:
        return (datetime.fromisoformat(later.start) - datetime.fromisoformat(earlier.end)).total_seconds()

    assert all(gap(*pair) >= 0 for pair in itertools.pairwise(ordered))
    # Rally waits 1 s before each step; its workers, polling every 5 s unpatched, would see the
    # end of a 7 s query task 3 s late (esrally_launcher.py polls every 0.5 s).
    queries = [t for t in ordered if t.task != "index-append"]  # steps that follow one another
    assert max(gap(*pair) for pair in itertools.pairwise(queries)) < 2.5
    assert run.report.results.idle.seconds >= race_module.IDLE_LEAD_SECONDS
    for name in ("range-1950s", "terms-1950s", "range-1900-1989", "terms-1900-1989"):
        # 1 s of warm-up and 6 s measured, as Rally logged it.
        assert 7 <= tasks[name].resources.seconds < 8, name
    busy, idle = tasks["terms-1900-1989"].resources, tasks["terms-1950s"].resources
    assert idle.process_cpu_percent < busy.process_cpu_percent / 2, (idle, busy)
    assert busy.process_cpu_ms > 0 and busy.heap_used_bytes > 0 and busy.io_read_bytes is not None
    assert (run.work_dir / "node-stats.json").exists()
    # Each task's steady state, from its requests as the launcher kept them from Rally.
    assert (run.work_dir / requestsamples.FILE).exists()
    assert all(t.steady_state and t.steady_state.samples > 0 for t in tasks.values()), tasks
    # Six seconds at a fixed rate may not be enough for a query to settle: one that did not says why.
    queries = {name: tasks[name].steady_state for name in ("range-1950s", "terms-1950s", "range-1900-1989",
                                                           "terms-1900-1989")}
    assert all(steady.samples >= 50 and (steady.reached or steady.problem) for steady in queries.values()), queries
    settled = {name: steady for name, steady in queries.items() if steady.reached}
    assert settled, queries
    for name, steady in settled.items():
        assert 0 <= steady.start_seconds < tasks[name].resources.seconds and 0 < steady.kept <= steady.samples, name
        assert steady.service_time.p50 > 0 and steady.throughput.mean > 0, name


@pytest.mark.measures
def test_a_capacity_search_probes_the_task_alone_on_the_races_index_and_ends_with_a_bracket(clusters, race):
    """workload.capacity, reduced: few short probes of a query, after a race that built the index. Where the capacity lies depends on the host; what must hold does not: the search
    ends for a reason of its own within its budget, the capacity is a rate that held and no
    driver-limited one, and the probes did not index again."""
    cluster = clusters.get(LATEST)
    capacity = {"task": "range-1950s", "objective": {"metric": "latency.p90", "maxMilliseconds": 250},
                "minTargetThroughput": 32, "maxTargetThroughput": 1024, "precisionPercent": 50, "maxProbes": 5,
                "confirmations": 0, "probeSeconds": 3, "warmupSeconds": 1, "warmupProbes": 2}
    run = race(spec("range-queries", index={}, test_mode=False, trackParams={"doc_count": 5000},
                    load={"clients": 4, "timePeriodSeconds": 2, "warmupTimePeriodSeconds": 1},
                    capacity=capacity), cluster.url)
    assert run.exit_code == 0, run.output
    found = run.report.results.capacity
    assert found is not None, run.output
    assert found.stop in {"Converged", "BudgetSpent", "AboveRange", "DriverLimited"}, found.message
    assert 1 <= len(found.probes) <= 5 and all(32 <= p.target_throughput <= 1024 for p in found.probes)
    held = {p.target_throughput for p in found.probes if p.verdict == "Passed"}
    assert found.capacity in held and found.capacity not in {
        p.target_throughput for p in found.probes if p.verdict == "DriverLimited"}, found
    assert found.upper is None or found.capacity < found.upper <= found.capacity * 1.5 or found.stop != "Converged"
    # Four clients at a service time of milliseconds send a few hundred a second at most, and esrally shares
    # this machine's two cores with the node: said, not taken for the cluster's limit.
    limited = [p for p in found.probes if p.verdict == "DriverLimited"]
    assert all(p.driver and ("clients" in p.driver or "CPU" in p.driver) for p in limited), limited
    for probe in found.probes:
        assert probe.throughput > 0 and probe.latency.p90 >= probe.service_time.p90 * 0.99 and probe.seconds > 4
        assert probe.node_cpu_percent is not None and probe.disk_read_bytes_per_second is not None, probe
    documents = run.report.results.nodes[0].indexing_total
    assert count_documents(cluster, index_name("range-queries")) == 5000 and documents is not None
    # Two warm-up probes first, flat out (no target throughput), not judged; each probe the task alone.
    assert [(p.target_throughput, p.verdict) for p in found.warmup] == [(None, None), (None, None)], found.warmup
    # Flat out: four clients at a few ms each send far more than the lowest rate searched.
    assert all(p.throughput > 2 * 32 for p in found.warmup) and "capacity warm-up: " in run.output, found.warmup
    assert run.output.count("--include-tasks=range-1950s") == len(found.warmup) + len(found.probes)


def test_an_objective_no_rate_holds_is_below_the_range_after_its_first_rate_the_low_end_and_its_confirmation(
        clusters, race):
    cluster = clusters.get(LATEST)
    capacity = {"task": "range-1950s", "objective": {"metric": "service_time.p50", "maxMilliseconds": 0.001},
                "minTargetThroughput": 5, "maxTargetThroughput": 50, "maxProbes": 4, "probeSeconds": 2,
                "warmupSeconds": 0, "warmupProbes": 0}
    run = race(spec("range-queries", index={}, test_mode=False, trackParams={"doc_count": 1000},
                    excludeTasks=["terms-1950s", "range-1900-1989", "terms-1900-1989"],
                    load={"timePeriodSeconds": 1, "warmupTimePeriodSeconds": 0}, capacity=capacity), cluster.url)
    assert run.exit_code == 0, run.output
    found = run.report.results.capacity
    assert (found.stop, found.capacity, found.upper) == ("BelowRange", None, 5), found.message
    first, *low_end = [(p.target_throughput, p.verdict) for p in found.probes]
    assert 5 <= first[0] < 10 and first[1] == "Failed", found.probes  # the race's lattice starts within a step
    assert low_end == ([] if first[0] == 5 else [(5, "Failed")]) + [(5, "Failed")], found.probes


def test_a_probe_whose_requests_fell_behind_their_schedule_does_not_hold_whatever_its_latency(clusters, race):
    """One client asked for 2,000 ops/s or more sends what its answers allow, a few hundred: each
    request starts later behind its schedule than the last, by seconds at the probe's end, yet under
    the objective's 5 s. The probe fails on its lag's growth, and its clients are said to be the
    limit; where the race's first rate was above the range's low end, the low end is probed too."""
    cluster = clusters.get(LATEST)
    capacity = {"task": "range-1950s", "objective": {"metric": "latency.p90", "maxMilliseconds": 5000},
                "minTargetThroughput": 2000, "maxTargetThroughput": 4000, "maxProbes": 2, "confirmations": 0,
                "probeSeconds": 4, "warmupSeconds": 1, "warmupProbes": 0}
    run = race(spec("range-queries", index={}, test_mode=False, trackParams={"doc_count": 1000},
                    excludeTasks=["terms-1950s", "range-1900-1989", "terms-1900-1989"],
                    load={"clients": 1, "timePeriodSeconds": 1, "warmupTimePeriodSeconds": 0}, capacity=capacity),
               cluster.url)
    assert run.exit_code == 0, run.output
    found = run.report.results.capacity
    assert [p.target_throughput for p in found.probes][-1] == 2000 and len(found.probes) <= 2, found.probes
    for behind in found.probes:
        assert behind.lag_growth_percent > 50 and behind.latency.p90 < 5000, behind
        assert behind.verdict == "DriverLimited" and "1 client(s)" in behind.driver, behind
    assert (found.stop, found.capacity) == ("DriverLimited", None), found.message


def test_a_bulk_size_in_bytes_becomes_documents_of_the_generated_corpus_and_the_mapping_variants_reach_the_index(
        clusters, race):
    """Also the index-size variants of study 004 (one race for both: the suite's time)."""
    cluster = clusters.get(LATEST)
    params = {"doc_count": DOC_COUNT, "message_bytes": 5000, "bulk_bytes": 100_000,
              "source_enabled": False, "message_mapping": "keyword-stored", "force_merge_segments": 1}
    run = race(spec("indexing", index={}, trackParams=params), cluster.url)
    assert run.exit_code == 0, run.output
    line = next(line for line in run.output.splitlines() if line.startswith("esbench: bulk_bytes 100000 is bulk_size"))
    bulk_size = run.report.results.track_params["bulk_size"]
    assert "bulk_bytes" not in run.report.results.track_params and f"bulk_size {bulk_size} " in line
    assert 16 <= bulk_size <= 22  # 100 kB of documents of about 5.3 kB
    assert count_documents(cluster, "indexing") == DOC_COUNT
    mappings = cluster.client.get("indexing/_mapping")["indexing"]["mappings"]
    assert mappings["_source"] == {"enabled": False}
    assert mappings["properties"]["message"] == {"type": "keyword", "ignore_above": 10922, "store": True}
    assert run.report.results.cluster.segment_count == 1  # force-merged (short tasks have no figures of their own)


def test_every_period_form_of_period_search_finds_the_same_people(clusters, race):
    """The seed's four ways of writing "lived between A and B", as the track's parameter source
    (run by Rally; loaded here from the file) builds them, for the windows it draws."""
    cluster = clusters.get(LATEST)
    run = race(spec("period-search", index={}, trackParams={"doc_count": 2000}), cluster.url)
    assert run.exit_code == 0, run.output
    cluster.client.request("POST", "period-search/_refresh")
    track = track_modules.parameter_source("period-search")
    source = track.PeriodQuery(None, {"variant": "ranges", "surnames": [], "tags": [], "seed": 7})
    windows = [(first := source._random.randint(1600, 1950), first + source._random.randint(10, 60)) for _ in range(25)]
    windows += [(1900, 1950), (1908, 1952), (1600, 1700), (1599, 1601)]  # round and odd bounds

    def hits(variant, first, last):
        body = {"size": 0, "track_total_hits": True,
                "query": {"bool": {"filter": track.overlap(variant, first, last)}}}
        return cluster.client.request("POST", "period-search/_search", body)["hits"]["total"]["value"]

    for first, last in windows:
        counts = {variant: hits(variant, first, last)
                  for variant in ("ranges", "integer-range", "decades-and-edges", "terms-only")}
        assert len(set(counts.values())) == 1, (first, last, counts)
    assert hits("ranges", 1900, 1950) > 0


def test_best_compression_stores_the_same_corpus_in_less_space_and_a_reused_index_comes_back_as_built(clusters, race):
    """workload.reuseIndex: the first race of a spec builds its index, snapshots it and searches a
    restored copy; a later race of the same spec restores that copy and indexes nothing, and one
    that only reads it through another store type restores the same copy into that store. The
    runner is not told where the snapshots go: it finds the node's path.repo, as on Kubernetes."""
    cluster = clusters.get(LATEST)
    store, layout, snapshots = {}, {}, {}
    for codec, settings in (("default", {}), ("best_compression", {}), ("default", {"index.store.type": "niofs"})):
        run = race(spec("codec-search", index={"codec": codec, "settings": settings}, trackParams={"doc_count": 1000},
                        reuseIndex=True), cluster.url)
        assert run.exit_code == 0, run.output
        assert count_documents(cluster, "codec-search") == 1000
        results = run.report.results
        reuse, tasks = results.track_params["index_snapshot"], {t.task for t in results.tasks}
        segments = cluster.client.get("codec-search/_segments")["indices"]["codec-search"]["shards"]
        searched = sorted((name, s["num_docs"], s["size_in_bytes"], s.get("attributes"))
                          for copies in segments.values() for copy in copies for name, s in copy["segments"].items())
        # The segments the race recorded are the ones the test reads, in the codec's stored-fields mode.
        (recorded,) = [i for i in results.indices if i.index == "codec-search"]
        assert (recorded.segments, recorded.documents, recorded.size_bytes) == (
            len(searched), 1000, sum(size for _, _, size, _ in searched))
        assert recorded.attributes["Lucene90StoredFieldsFormat.mode"] == [
            "BEST_COMPRESSION" if codec == "best_compression" else "BEST_SPEED"]
        read_path = cluster.client.get("codec-search/_settings")["codec-search"]["settings"]["index"].get("store", {})
        assert read_path.get("type") == ("niofs" if settings else None), read_path
        if codec in layout:  # the second race of default
            assert reuse == {**snapshots[codec], "restore": True, "index_settings": settings}, run.output
            assert "index-append" not in tasks and searched == layout[codec]
            assert results.cluster.store_size_bytes == store[codec]
        else:
            assert reuse["restore"] is False and "index-append" in tasks, run.output
            snapshots[codec], layout[codec] = reuse, searched
            store[codec] = results.cluster.store_size_bytes
    assert store["best_compression"] < 0.9 * store["default"], store
    held = cluster.client.get("_snapshot/esbench-index-reuse/_all")["snapshots"]
    assert sorted(s["snapshot"] for s in held) == sorted(s["snapshot"] for s in snapshots.values())
    location = cluster.client.get("_snapshot/esbench-index-reuse")["esbench-index-reuse"]["settings"]["location"]
    assert location == f"{cluster.snapshot_repository}/esbench-index-reuse"


def test_an_export_of_the_newest_documents_reads_only_those_and_its_index_is_restored_in_the_next_race(clusters, race):
    """source-filtering with export_count (each export pages through the newest documents only)
    and workload.reuseIndex: the second race exports from a restored copy of the first's index,
    in another order of exports (which names the same snapshot)."""
    cluster = clusters.get(LATEST)
    params = {"doc_count": 300, "body_bytes": 512, "page_size": 50, "export_count": 100,
              "search_warmup_iterations": 1, "search_iterations": 2}
    exports = ["paginate-full-source", "paginate-no-source", "paginate-source-title", "paginate-fields-title",
               "paginate-source-body", "paginate-fields-body"]
    built = None
    for attempt, order in (("build", exports), ("restore", exports[::-1])):
        run = race(spec("source-filtering", index={}, trackParams={**params, "exports": order}, reuseIndex=True,
                        test_mode=False),
                   cluster.url, snapshot_repository=cluster.snapshot_repository)
        assert run.exit_code == 0, run.output
        results = run.report.results
        assert results.track_params["index_snapshot"]["restore"] is (attempt == "restore"), run.output
        assert ("index-append" in {t.task for t in results.tasks}) is (attempt == "build")
        assert [t.task for t in results.tasks if t.task.startswith("paginate-")] == order
        # Six exports of three passes each (one warm-up), each pass 100 documents in two pages of
        # 50: the index's search counters start at the restore, before the first export.
        search = cluster.client.get("source-filtering/_stats/search")["indices"]["source-filtering"]["total"]["search"]
        assert (search["query_total"], search["fetch_total"]) == (6 * 3 * 2, 6 * 3 * 2), search
        assert count_documents(cluster, "source-filtering") == 300
        layout = [(i.segments, i.documents, i.size_bytes) for i in results.indices if i.index == "source-filtering"]
        assert layout == (built or layout) and layout[0][0] == 1
        built = layout


def test_a_race_over_tls_with_credentials_never_reveals_the_password(clusters, race):
    cluster = clusters.get(LATEST, secure=True)
    run = race(spec("smoke", index={}, trackParams={"doc_count": 1500}), cluster.url,
               ca_file=cluster.ca_file, username=cluster.username, password=cluster.password)

    assert run.exit_code == 0, run.output
    # Test mode indexes the 1k file the corpus generator writes beside the full corpus.
    assert count_documents(cluster, "smoke") == TEST_MODE_COUNT
    assert cluster.password not in run.output
    options = run.work_dir / "client-options.json"
    assert options.stat().st_mode & 0o777 == 0o600
    assert f"--client-options={options}" in run.output  # a path on the command line, not the secret
    leaking = [
        str(path) for path in run.work_dir.rglob("*")
        if path.is_file() and path != options and cluster.password.encode() in path.read_bytes()
    ]
    assert leaking == []
