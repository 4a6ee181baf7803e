"""The pure parts of an ExperimentSweep's lifecycle (progress, groups, scheduling, gates) and its manifests."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from esbench.analysis import stats
from esbench.api import models
from esbench.planning import grid, manifests, names, sweepstate

TEMPLATE = {"elasticsearch": {"version": "8.15.0"}, "workload": {"track": "smoke"}}
CODECS = {"field": "index.codec", "values": ["default", "best_compression"]}
VERSIONS = {"field": "elasticsearch.version", "values": ["8.15.0", "8.16.0"]}


def plan(*matrix: dict[str, Any], **fields: Any) -> grid.Plan:
    # These tests follow runs in the cells' order: the default order and warm-up have tests of their own.
    fields.setdefault("order", "Interleaved")
    if "warmup_runs" not in fields:
        fields["warmupRuns"] = 0
    return grid.plan(models.SweepSpec(template=fields.pop("template", TEMPLATE), matrix=list(matrix), **fields),
                     "sweep", "default")


def sweep(name: str = "bench") -> manifests.Sweep:
    return manifests.Sweep(name, "default", "sweep-uid", models.SweepSpec(template=TEMPLATE))


def child(cell: str, repetition: int, phase: str | None = None, reason: str | None = None,
          attempt: int = 1) -> dict[str, Any]:
    """A run's Experiment as the sweep created it, with the status its own reconciler wrote."""
    body = manifests.sweep_run_manifest(sweep(), cell, cell, TEMPLATE, repetition, attempt, None)
    if phase:
        body["status"] = {"phase": phase, "reason": reason}
    return body


def states(p: grid.Plan, children: list[dict[str, Any]], max_retries: int = 1) -> dict[tuple[str, int], str]:
    return {s.run.key: s.state for s in sweepstate.progress(p, children, max_retries)}


def to_start(p: grid.Plan, children: list[dict[str, Any]], parallelism: int = 1, reuse: bool = True) -> list:
    by_key = {s.run.key: s for s in sweepstate.progress(p, children, max_retries=1)}
    return [r.key for r in sweepstate.runs_to_start(p, by_key, sweepstate.groups(p, reuse), parallelism)]


# --- one decision per look ---------------------------------------------------------------


def test_a_decision_starts_runs_on_their_groups_cluster_and_its_report_lists_only_those_made():
    spec = models.SweepSpec(template=TEMPLATE, matrix=[VERSIONS], order="Interleaved", warmupRuns=0, parallelism=2)
    owner = manifests.Sweep("bench", "default", "sweep-uid", spec)
    decision = sweepstate.decide(grid.plan(spec, "bench", "default"), owner, [])
    assert [(s.run.key, s.attempt, s.cluster) for s in decision.starts] == [
        (("c0", 1), 1, "bench-g0"), (("c1", 1), 1, "bench-g1")]
    assert decision.starts[0].manifest["spec"]["target"] == {"elasticsearchRef": {"name": "bench-g0"}}
    assert not decision.releases
    # The second start refused (say, a quota): only the first is in status.runs, so the next look
    # starts the second rather than count it as deleted.
    runs = sweepstate.report(decision, spec, decision.starts[:1]).fields["runs"]
    assert [(r["name"], r["phase"]) for r in runs] == [(decision.starts[0].manifest["metadata"]["name"], "Pending")]
    assert sweepstate.report(decision, spec).fields["runs"] == []


def test_a_decision_releases_a_groups_cluster_once_its_runs_ended_and_reuses_an_unchanged_comparison():
    spec = models.SweepSpec(template=TEMPLATE, matrix=[CODECS], order="Interleaved", warmupRuns=0, repetitions=1)
    owner = manifests.Sweep("bench", "default", "sweep-uid", spec)
    p = grid.plan(spec, "bench", "default")
    ended = [child("c0", 1, "Succeeded"), child("c1", 1, "Failed", "RaceFailed"),
             child("c1", 1, "Failed", "RaceFailed", attempt=2)]
    first = sweepstate.decide(p, owner, ended)
    assert first.starts == [] and first.releases == [("bench-g0", True)]
    again = sweepstate.decide(p, owner, ended, previous=first.comparison)
    assert again.comparison is first.comparison, "no run succeeded since: the statistics are not made again"
    assert sweepstate.decide(p, owner, ended[:1], previous=first.comparison).comparison is first.comparison
    other = sweepstate.decide(p, owner, ended, previous=sweepstate.Comparison(("gone",), [], []))
    assert other.comparison.succeeded == (ended[0]["metadata"]["name"],)


# --- progress ------------------------------------------------------------------------------


def test_progress_groups_attempts_per_run_in_attempt_order():
    p = plan(CODECS)
    retry, first = child("c0", 1, "Benchmarking", attempt=2), child("c0", 1, "Failed", attempt=1)
    found = sweepstate.progress(p, [retry, first, child("c9", 1, "Succeeded")], max_retries=1)
    assert [s.run.key for s in found] == [("c0", 1), ("c1", 1), ("c0", 2), ("c1", 2), ("c0", 3), ("c1", 3)]
    assert found[0].attempts == [first, retry] and found[0].latest is retry
    assert all(not s.attempts for s in found[1:])  # a cell the plan does not have is not followed


def test_run_states_follow_the_latest_attempt():
    found = states(plan(CODECS, repetitions=1), [child("c0", 1, "Provisioning"), child("c1", 1, "Succeeded")])
    assert found == {("c0", 1): "Running", ("c1", 1): "Succeeded"}
    assert states(plan(CODECS, repetitions=1), [child("c0", 1)])[("c1", 1)] == "Pending"
    assert states(plan(CODECS, repetitions=1), [child("c0", 1)])[("c0", 1)] == "Running"  # no status yet


def test_a_failed_run_with_retries_left_is_pending_again_and_failed_after_the_last():
    p = plan(repetitions=1)
    first, second = child("c0", 1, "Failed", "RaceFailed"), child("c0", 1, "Failed", "RaceFailed", attempt=2)
    assert states(p, [first], max_retries=1)[("c0", 1)] == "Pending"
    assert states(p, [first, second], max_retries=1)[("c0", 1)] == "Failed"
    assert states(p, [first], max_retries=0)[("c0", 1)] == "Failed"


@pytest.mark.parametrize("reason", ["ClusterDisrupted", "RallyPodDeleted", "RallyPodEvicted"])
def test_a_run_disrupted_by_a_pods_end_is_retried(reason):
    """Not the spec's fault: the same run may well succeed on undisturbed pods."""
    first = child("c0", 1, "Failed", reason)
    assert states(plan(repetitions=1), [first], max_retries=1)[("c0", 1)] == "Pending"
    assert states(plan(repetitions=1), [first, child("c0", 1, "Failed", reason, attempt=2)])[("c0", 1)] == "Failed"


def test_a_shared_emptydir_cluster_a_disruption_emptied_is_made_anew_before_the_group_s_next_run():
    """ECK makes a replaced pod anew, empty, and it never joins the cluster it was part of: the
    retry, and every later run of the group, would wait out clusterReadyTimeoutSeconds."""
    def decided(storage: str, reason: str, max_retries: int) -> list[tuple[tuple[str, int], str | None]]:
        template = {**TEMPLATE, "elasticsearch": {**TEMPLATE["elasticsearch"], "storage": {"type": storage}}}
        spec = models.SweepSpec(template=template, matrix=[CODECS], order="Interleaved", warmupRuns=0,
                                maxRetries=max_retries)
        ended = child("c0", 1, "Failed", reason)
        ended["status"]["completionTime"] = "2026-12-03T10:00:00Z"
        decision = sweepstate.decide(grid.plan(spec, "bench", "default"), manifests.Sweep("bench", "default", "sweep-uid", spec),
                                     [ended])
        return [(s.run.key, s.stale_before) for s in decision.starts]

    assert decided("EmptyDir", "ClusterDisrupted", max_retries=1) == [(("c0", 1), "2026-12-03T10:00:00Z")]
    assert decided("EmptyDir", "ClusterDisrupted", max_retries=0) == [(("c1", 1), "2026-12-03T10:00:00Z")]
    assert decided("PersistentVolumeClaim", "ClusterDisrupted", max_retries=1) == [(("c0", 1), None)]
    assert decided("EmptyDir", "JobFailed", max_retries=1) == [(("c0", 1), None)]


def test_an_invalid_spec_is_never_retried():
    assert states(plan(repetitions=1), [child("c0", 1, "Failed", "InvalidSpec")], max_retries=5)[("c0", 1)] == "Failed"


def test_a_run_that_vanished_after_it_succeeded_keeps_its_outcome_and_figures():
    p = plan(repetitions=1)
    done = child("c0", 1, "Succeeded")
    done["status"]["results"] = {"raceId": "r1", "tasks": [{"task": "index-append"}]}
    records = sweepstate.run_records(sweepstate.progress(p, [done], max_retries=1))
    assert records == [{"name": "bench-c0-r1", "cell": "c0", "repetition": 1, "attempt": 1, "phase": "Succeeded",
                        "results": {"raceId": "r1", "tasks": [{"task": "index-append"}]}}]
    gone = sweepstate.progress(p, [], max_retries=1, records=records)  # deleted by hand, or by a TTL
    assert gone[0].state == "Succeeded"
    assert gone[0].latest["status"]["results"] == done["status"]["results"]
    assert sweepstate.runs_to_start(p, {s.run.key: s for s in gone}, sweepstate.groups(p, True), 1) == []
    assert sweepstate.run_records(gone) == records, "the record outlives the run"


def test_the_overhead_of_a_run_is_its_time_outside_rallys_task_windows_and_outlives_the_run():
    p = plan(CODECS, repetitions=1)
    done = []
    for cell, minutes in (("c0", 2), ("c1", 4)):
        run = child(cell, 1, "Succeeded")
        run["status"].update(startTime="2026-11-26T10:00:00Z", completionTime=f"2026-11-26T10:0{minutes}:00Z", results={
            "tasks": [{"task": "index-append", "resources": {"seconds": 20, "nodes": 1}},
                      {"task": "search", "resources": {"seconds": 10, "nodes": 1}}]})
        done.append(run)
    records = sweepstate.run_records(sweepstate.progress(p, done, max_retries=1))
    assert records[0]["startTime"] == "2026-11-26T10:00:00Z"
    # Runs of 120 and 240 s, 30 s of tasks each: the medians.
    expected = {"runs": 2, "runSeconds": 180.0, "taskSeconds": 30.0, "overheadSeconds": 150.0}
    assert sweepstate.timing(records) == expected
    gone = sweepstate.run_records(sweepstate.progress(p, [], max_retries=1, records=records))
    assert sweepstate.timing(gone) == expected
    assert sweepstate.timing([{**records[0], "results": {"tasks": [{"task": "t"}]}}]) is None  # no windows


def test_a_run_deleted_before_it_finished_is_a_failed_attempt_not_started_again_for_ever():
    p = plan(repetitions=1)
    records = sweepstate.run_records(sweepstate.progress(p, [child("c0", 1, "Benchmarking")], max_retries=1))
    gone = sweepstate.progress(p, [], max_retries=1, records=records)
    assert gone[0].state == "Pending", "one retry left"
    assert gone[0].latest["status"]["reason"] == sweepstate.RUN_DELETED
    retry = child("c0", 1, "Benchmarking", attempt=2)
    records = sweepstate.run_records(sweepstate.progress(p, [retry], max_retries=1, records=records))
    assert [(r["attempt"], r["phase"], r.get("reason")) for r in records] == [
        (1, "Failed", sweepstate.RUN_DELETED), (2, "Benchmarking", None)]
    final = sweepstate.progress(p, [], max_retries=1, records=records)
    assert final[0].state == "Failed"
    assert sweepstate.runs_to_start(p, {s.run.key: s for s in final}, sweepstate.groups(p, True), 1) == []


# --- groups ----------------------------------------------------------------------------------


def test_with_reuse_cells_differing_only_in_index_settings_form_one_group():
    p = plan({"field": "index.settings.index.translog.durability", "values": ["request", "async"]}, repetitions=2)
    assert [[r.key for r in runs] for runs in sweepstate.groups(p, reuse=True).values()] == [
        [("c0", 1), ("c1", 1), ("c0", 2), ("c1", 2)]]


def test_without_reuse_each_run_is_its_own_group():
    run_groups = sweepstate.groups(plan(CODECS, repetitions=2), reuse=False)
    assert [[r.key for r in runs] for runs in run_groups.values()] == [[("c0", 1)], [("c1", 1)], [("c0", 2)],
                                                                       [("c1", 2)]]


def test_runs_against_an_existing_cluster_always_share_one_group():
    target = {"target": {"elasticsearchRef": {"name": "es"}}, "workload": {"track": "smoke"}}
    assert len(sweepstate.groups(plan(CODECS, template=target), reuse=False)) == 1


# --- runs_to_start ---------------------------------------------------------------------------


def test_reuse_with_parallelism_one_starts_one_run_and_never_a_second_in_its_group():
    p = plan(CODECS, VERSIONS, repetitions=2)  # groups by version: c0+c2 on 8.15.0, c1+c3 on 8.16.0
    assert to_start(p, []) == [("c0", 1)]
    assert to_start(p, [child("c0", 1, "Benchmarking")]) == []


def test_a_group_at_work_keeps_its_slot_and_starts_its_next_run_in_plan_order():
    p = plan(CODECS, VERSIONS, repetitions=2)
    assert to_start(p, [child("c0", 1, "Succeeded")]) == [("c2", 1)]
    done = [child(c, r, "Succeeded") for c in ("c0", "c2") for r in (1, 2)]
    assert to_start(p, done) == [("c1", 1)]  # a finished group frees its slot


def test_parallelism_two_starts_one_run_in_each_version_group():
    assert to_start(plan(VERSIONS, repetitions=2), [], parallelism=2) == [("c0", 1), ("c1", 1)]


def test_without_reuse_parallelism_bounds_the_runs_at_once():
    p = plan(CODECS, repetitions=3)
    assert to_start(p, [], parallelism=3, reuse=False) == [("c0", 1), ("c1", 1), ("c0", 2)]
    assert to_start(p, [child("c0", 1, "Benchmarking")], parallelism=3, reuse=False) == [("c1", 1), ("c0", 2)]


def test_a_retry_comes_before_later_pending_runs_of_its_group():
    p = plan(CODECS, repetitions=2)
    assert to_start(p, [child("c0", 1, "Failed", "RaceFailed"), child("c1", 1, "Succeeded")]) == [("c0", 1)]


# --- gates -----------------------------------------------------------------------------------


def results(*throughputs: float) -> list[models.Results]:
    return [models.Results(tasks=[models.TaskResult(task="bulk", throughput=models.Throughput(median=t, unit="docs/s"))])
            for t in throughputs]


BASELINE = results(1000, 1010, 990, 1005, 995)
GATED = [("bulk", "throughput.median")]
ROWS_20_PERCENT_WORSE = stats.compare_cells({"c0": BASELINE, "c1": results(800, 808, 792, 804, 796)}, "c0",
                                            primary=GATED)
ROWS_UNCHANGED = stats.compare_cells({"c0": BASELINE, "c1": results(1000, 1012, 988, 1003, 997)}, "c0",
                                     primary=GATED)


def gate(max_regression: float, task: str = "bulk", cells: list[str] | None = None) -> models.Gate:
    return models.Gate(task=task, metric="throughput.median", max_regression_percent=max_regression, cells=cells)


def test_the_fixture_rows_say_what_their_names_say():
    assert [(c.cell, c.verdict) for c in ROWS_20_PERCENT_WORSE[0].cells] == [
        ("c0", stats.Verdict.BASELINE), ("c1", stats.Verdict.WORSE)]
    assert ROWS_UNCHANGED[0].cells[1].verdict == stats.Verdict.EQUIVALENT


@pytest.mark.parametrize("rows, max_regression", [(ROWS_UNCHANGED, 5), (ROWS_20_PERCENT_WORSE, 25)])
def test_a_gate_passes_when_complete_with_every_interval_within_the_limit(rows, max_regression):
    [verdict] = sweepstate.gate_results([gate(max_regression)], rows, complete=True)
    assert verdict["result"] == "Passed"


def test_a_gate_whose_interval_reaches_beyond_the_limit_is_undecided_not_passed():
    """Seen on Kubernetes: two runs per cell, the contender's interval [-98.9 %, +29150 %], and the
    gate passed. Non-inferiority must be shown, not assumed."""
    wide = stats.compare_cells({"c0": results(1000, 1900), "c1": results(700, 1600)}, "c0", primary=GATED)
    assert wide[0].cells[1].verdict == stats.Verdict.INCONCLUSIVE
    [verdict] = sweepstate.gate_results([gate(50)], wide, complete=True)
    assert verdict["result"] == "Undecided" and "more runs would settle it" in verdict["message"]
    # Worse, significantly, but not shown to be beyond the limit, nor within it.
    [verdict] = sweepstate.gate_results([gate(0)], ROWS_UNCHANGED, complete=True)
    assert verdict["result"] == "Undecided"
    report = sweepstate.status_report(plan(CODECS), [], {}, {}, models.SweepSpec(
        template=TEMPLATE, matrix=[CODECS], gates=[gate(50)]), wide, None)
    assert ("GatesPassed", False, "GateUndecided") in [c[:3] for c in report.conditions]


def test_a_gate_passes_a_true_regression_beyond_its_limit_at_most_at_the_stated_rate():
    """A contender truly 10 % slower, the gate allowing 5 %: five runs per cell, CV 2-10 %."""
    generator, sweeps, alpha, passed = random.Random(17), 2000, 0.05, 0
    for number in range(sweeps):
        sigma = (0.02, 0.05, 0.1)[number % 3]
        baseline, contender = ([level * math.exp(generator.gauss(0, sigma)) for _ in range(5)] for level in (1000, 900))
        rows = stats.compare_cells({"c0": results(*baseline), "c1": results(*contender)}, "c0", primary=GATED)
        [verdict] = sweepstate.gate_results([gate(5)], rows, complete=True)
        passed += verdict["result"] == "Passed"
    assert passed / sweeps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / sweeps)


def test_a_gate_fails_on_a_significant_regression_beyond_the_limit_even_before_completion():
    for complete in (False, True):
        [verdict] = sweepstate.gate_results([gate(10)], ROWS_20_PERCENT_WORSE, complete)
        assert verdict["result"] == "Failed"
        assert verdict["message"].startswith("significant regression beyond 10.0%: c1 -20.0%")


def test_a_gate_is_pending_while_the_sweep_runs():
    [verdict] = sweepstate.gate_results([gate(5)], ROWS_UNCHANGED, complete=False)
    assert verdict["result"] == "Pending"


def test_a_gate_fails_when_complete_without_data_for_its_task_or_cell():
    gates = [gate(5, task="search"), gate(5, cells=["c2"])]
    [no_task, no_cell] = sweepstate.gate_results(gates, ROWS_UNCHANGED, complete=True)
    assert (no_task["result"], no_task["message"]) == ("Failed", "no comparison for any cell")
    assert (no_cell["result"], no_cell["message"]) == ("Failed", "no comparison for c2")


# --- manifests and names --------------------------------------------------------------------


def test_a_run_on_a_shared_cluster_targets_it_and_is_owned_by_the_sweep():
    cell = plan(CODECS, VERSIONS).cells[3]
    run = manifests.sweep_run_manifest(sweep(), cell.id, cell.label, cell.spec, 2, 1, "bench-g1")
    assert run["kind"] == "Experiment" and run["metadata"]["name"] == "bench-c3-r2"
    assert run["spec"]["target"] == {"elasticsearchRef": {"name": "bench-g1"}} and "elasticsearch" not in run["spec"]
    assert run["spec"]["index"] == {"codec": "best_compression"}
    assert run["metadata"]["labels"].items() >= {"esbench.io/sweep": "bench", "esbench.io/cell": "c3",
                                                 "esbench.io/repetition": "2", "esbench.io/attempt": "1"}.items()
    [owner] = run["metadata"]["ownerReferences"]
    assert owner.items() >= {"apiVersion": "esbench.io/v1alpha1", "kind": "ExperimentSweep", "name": "bench",
                             "uid": "sweep-uid", "controller": True}.items()
    assert "elasticsearch" in manifests.sweep_run_manifest(sweep(), cell.id, cell.label, cell.spec, 2, 1, None)["spec"]


def test_a_run_races_its_rounds_per_round_values_under_its_cells_configuration():
    orders = {"field": "workload.trackParams.queries", "values": [["a", "b"], ["b", "a"]]}
    spec = models.SweepSpec(template=TEMPLATE, matrix=[CODECS], per_round=[orders])
    owner = manifests.Sweep("bench", "default", "sweep-uid", spec)
    cells = grid.plan(spec, "bench", "default").cells
    runs = {(c.id, r): manifests.sweep_run_manifest(owner, c.id, c.label, c.spec, r, 1, None) for c in cells for r in (1, 2)}
    assert runs["c1", 1]["spec"]["workload"]["trackParams"]["queries"] == ["a", "b"]
    assert runs["c0", 2]["spec"]["workload"]["trackParams"]["queries"] == runs["c1", 2]["spec"]["workload"][
        "trackParams"]["queries"] == ["b", "a"]  # every cell of a round alike: pairing by round compares like with like
    assert runs["c1", 2]["spec"]["index"] == cells[1].spec["index"]
    configuration = {key: run["metadata"]["annotations"][models.CONFIGURATION_ANNOTATION] for key, run in runs.items()}
    assert configuration["c1", 1] == configuration["c1", 2] != configuration["c0", 1]  # one series per cell


def test_run_names_carry_cell_repetition_and_retry_within_the_name_limit():
    assert names.sweep_run_name("bench", "c3", 2, 1) == "bench-c3-r2"
    assert names.sweep_run_name("bench", "c3", 2, 2) == "bench-c3-r2-a2"
    longest = names.sweep_run_name("s" * names.MAX_SWEEP_NAME, "c199", 50, 6)
    assert names.MAX_SWEEP_NAME == 24 and len(longest) <= names.MAX_EXPERIMENT_NAME == 36


def test_a_shared_cluster_is_owned_by_the_sweep():
    es = models.Elasticsearch(version="8.15.0", node_count=3)
    cluster = manifests.cluster_manifest(sweep(), names.sweep_cluster_name("bench", 0), es)
    assert cluster["metadata"]["name"] == "bench-g0"
    assert cluster["metadata"]["labels"]["esbench.io/sweep"] == "bench"
    assert cluster["metadata"]["ownerReferences"][0]["kind"] == "ExperimentSweep"
    assert cluster["spec"]["nodeSets"][0]["count"] == 3


def test_warmup_runs_go_first_and_are_left_out_of_the_comparison():
    p = plan(CODECS, repetitions=1, warmup_runs=1)
    assert to_start(p, []) == [("w0", 1)], "the shared cluster's first race is a warm-up"

    def succeeded(cell: str, throughput: float) -> dict[str, Any]:
        results = models.Results(tasks=[models.TaskResult(task="index-append", throughput=models.Throughput(
            median=throughput, unit="docs/s"))])
        return {**child(cell, 1, "Succeeded"), "status": {"phase": "Succeeded", "results": results.to_wire()}}

    children = [succeeded("w0", 10.0), succeeded("c0", 1000.0), succeeded("c1", 900.0)]
    rows = sweepstate.comparison(p, sweepstate.progress(p, children, 1), models.SweepSpec(template=TEMPLATE))
    row = next(r for r in rows if r.metric.key == "throughput.median")
    assert [(c.cell, c.summary.n, c.summary.median) for c in row.cells] == [("c0", 1, 1000.0), ("c1", 1, 900.0)]


def report_for(p: grid.Plan, children: list[dict[str, Any]], **spec: Any) -> sweepstate.StatusReport:
    sweep_spec = models.SweepSpec(template=TEMPLATE, **spec)
    states_ = sweepstate.progress(p, children, sweep_spec.max_retries)
    run_groups = sweepstate.groups(p, reuse=True)
    return sweepstate.status_report(p, states_, run_groups, {key: "bench-g0" for key in run_groups}, sweep_spec,
                                sweepstate.comparison(p, states_, sweep_spec))


def test_status_report_while_running_then_complete_with_a_failed_run():
    p = plan(CODECS, repetitions=1)
    running = report_for(p, [child("c0", 1, "Succeeded"), child("c1", 1, "Benchmarking")])
    assert not running.complete
    assert running.fields["phase"] == "Running" and running.fields["progress"]["summary"] == "1/2"
    assert running.conditions == [("Complete", False, "Running", "1/2 runs finished, 1 running")]
    assert "completionTime" not in running.fields
    assert [c["cluster"] for c in running.fields["cells"]] == ["bench-g0", "bench-g0"]

    done = report_for(p, [child("c0", 1, "Succeeded"), child("c1", 1, "Failed", "JobFailed", attempt=1),
                          child("c1", 1, "Failed", "JobFailed", attempt=2)])
    assert done.complete and done.fields["phase"] == "Failed" and done.fields["reason"] == "RunsFailed"
    assert done.fields["progress"]["retries"] == 1 and len(done.fields["failures"]) == 2
    assert done.conditions[-1][:3] == ("Complete", True, "RunsFailed") and "completionTime" in done.fields


def test_status_report_sets_gates_passed_only_when_it_can_say():
    p = plan(CODECS, repetitions=1)
    gate = [{"task": "index-append", "metric": "throughput.median", "maxRegressionPercent": 5}]
    running = report_for(p, [child("c0", 1, "Succeeded")], gates=gate)
    assert running.fields["gates"][0]["result"] == "Pending"
    assert [c[0] for c in running.conditions] == ["Complete"], "no verdict while the sweep runs"
    done = report_for(p, [child("c0", 1, "Succeeded"), child("c1", 1, "Succeeded")], gates=gate)
    assert done.conditions[0][:3] == ("GatesPassed", False, "GateFailed"), "no comparison: no pass"


def cpu_results(*percents: float) -> list[models.Results]:
    return [models.Results(tasks=[models.TaskResult(
        task="range-1950s", resources=models.TaskResources(seconds=60, nodes=1, process_cpu_percent=p))])
        for p in percents]


def test_a_gate_on_the_node_cpu_of_one_task_fails_when_that_task_costs_more_cpu():
    rows = stats.compare_cells({"c0": cpu_results(20, 21, 19, 20.5, 19.5), "c1": cpu_results(80, 81, 79, 80.5, 79.5)},
                               "c0", primary=[("range-1950s", "process_cpu.percent")])
    gate = models.Gate(task="range-1950s", metric="process_cpu.percent", max_regression_percent=50)
    [verdict] = sweepstate.gate_results([gate], rows, complete=True)
    assert verdict["result"] == "Failed" and "c1 +300.2% (interval +281.3% to +320.1%" in verdict["message"]


# --- repetitions until the answer is clear -----------------------------------------------------

ADAPTIVE = {"repetitions": 2, "maxRepetitions": 4, "gates": [
    {"task": "bulk", "metric": "throughput.median", "maxRegressionPercent": 50}], "statistics": {
    "targetWidthPercent": 10}}


def adaptive_plan(*matrix: dict[str, Any], **fields: Any) -> tuple[models.SweepSpec, grid.Plan]:
    spec = models.SweepSpec.model_validate({"template": TEMPLATE, "matrix": list(matrix), "order": "Interleaved",
                                            "warmupRuns": 0, **ADAPTIVE, **fields})
    return spec, grid.plan(spec, "sweep", "default")


def measured(run: grid.Run, throughput: float) -> dict[str, Any]:
    body = child(run.cell.id, run.repetition, "Succeeded")
    body["status"]["results"] = {"tasks": [{"task": "bulk", "throughput": {"median": throughput, "unit": "docs/s"}}]}
    return body


def play(spec: models.SweepSpec, p: grid.Plan, figures: dict[str, list[float]]) -> tuple[list, sweepstate.Rounds]:
    """Run the sweep to its end, the n-th run of a cell measuring figures[cell][n - 1]."""
    runs: list[dict[str, Any]] = []
    while True:
        rounds = sweepstate.with_rounds(p, spec, runs)
        states = sweepstate.progress(rounds.plan, runs, spec.max_retries)
        pending = [s.run for s in states if s.state == "Pending"]
        if not pending:
            return runs, rounds
        runs.append(measured(pending[0], figures[pending[0].cell.id][pending[0].repetition - 1]))


QUIET = [1000, 1004, 998, 1002]  # CV about 0.3 %: two runs give an interval a few pp wide
LOUD = [1000, 1300, 800, 1150]  # CV about 20 %


def test_further_rounds_go_on_for_the_cells_whose_primary_interval_is_too_wide_until_max():
    spec, p = adaptive_plan({"field": "index.refreshInterval", "values": ["1s", "30s", "-1"]})
    runs, rounds = play(spec, p, {"c0": QUIET, "c1": [900, 903, 899, 901], "c2": LOUD})
    made = [(r["metadata"]["labels"]["esbench.io/cell"], int(r["metadata"]["labels"]["esbench.io/repetition"]))
            for r in runs]
    # Two rounds of every cell, then rounds of the baseline and the wide cell only, up to 4.
    assert made == [("c0", 1), ("c1", 1), ("c2", 1), ("c0", 2), ("c1", 2), ("c2", 2),
                    ("c0", 3), ("c2", 3), ("c0", 4), ("c2", 4)]
    assert "settled after 2 runs" in rounds.stopped["c1"]  # 10 % slower, clearly
    assert rounds.stopped["c2"].startswith("maxRepetitions 4 reached with primary questions unsettled")
    report = sweepstate.status_report(rounds.plan, sweepstate.progress(rounds.plan, runs, 1), {}, {}, spec, [], None,
                                      rounds.stopped)
    assert report.complete and report.fields["progress"]["summary"] == "10/10"
    assert [c.get("stopped", "") != "" for c in report.fields["cells"]] == [False, True, True]


def test_with_compare_within_further_rounds_run_the_wide_cells_and_their_own_baselines_only():
    heaps = {"field": "elasticsearch.heap", "values": ["1g", "2g"]}
    spec, p = adaptive_plan(heaps, CODECS, compareWithin=["elasticsearch.heap"])
    runs, rounds = play(spec, p, {"c0": QUIET, "c1": [900, 903, 899, 901], "c2": QUIET, "c3": LOUD})
    made = [(r["metadata"]["labels"]["esbench.io/cell"], int(r["metadata"]["labels"]["esbench.io/repetition"]))
            for r in runs]
    assert made[8:] == [("c2", 3), ("c3", 3), ("c2", 4), ("c3", 4)]
    report = sweepstate.status_report(rounds.plan, sweepstate.progress(rounds.plan, runs, 1), {}, {}, spec, [], None,
                                      rounds.stopped)
    assert [c.get("baseline", False) for c in report.fields["cells"]] == [True, False, True, False]


def test_a_contender_stops_once_its_primary_questions_are_settled_and_noise_runs_to_the_maximum():
    spec, p = adaptive_plan(CODECS)
    equal, rounds = play(spec, p, {"c0": QUIET, "c1": [1001, 1003, 999, 1002]})  # Equivalent at once
    assert len(equal) == 4 and "settled after 2 runs" in rounds.stopped["c1"]
    faster, rounds = play(spec, p, {"c0": QUIET, "c1": [f * 1.3 for f in QUIET]})  # +30 %: Better at once
    assert len(faster) == 4 and "settled after 2 runs" in rounds.stopped["c1"]
    assert rounds.looks["c1"] == stats.look(0.05, 2, 2, 4)  # what its comparison is decided at
    loud, rounds = play(spec, p, {"c0": LOUD, "c1": LOUD})
    assert len(loud) == 8 and rounds.stopped["c1"].startswith("maxRepetitions 4 reached")


def test_without_max_repetitions_the_plan_is_fixed():
    p = plan(CODECS, repetitions=2)
    spec = models.SweepSpec(template=TEMPLATE, matrix=[CODECS], repetitions=2)
    assert sweepstate.with_rounds(p, spec, []) == sweepstate.Rounds(p, {})


def test_warmup_runs_go_on_until_two_in_a_row_agree_or_the_cap():
    """A node still warming up: 500, 800, 950, 960 docs/s in its warm-up runs. Within 5 %, the
    fourth agrees with the third; measured runs start only then."""
    spec = models.SweepSpec.model_validate({"template": TEMPLATE, "matrix": [CODECS], "repetitions": 2,
                                            "order": "Interleaved", "warmupRuns": 1,
                                            "warmupUntilStable": {"changePercent": 5, "maxRuns": 6}})
    p = grid.plan(spec, "sweep", "default")
    runs, rounds = play(spec, p, {"w0": [500, 800, 950, 960], "c0": QUIET, "c1": QUIET})
    made = [(r["metadata"]["labels"]["esbench.io/cell"], int(r["metadata"]["labels"]["esbench.io/repetition"]))
            for r in runs]
    assert made[:5] == [("w0", 1), ("w0", 2), ("w0", 3), ("w0", 4), ("c0", 1)]
    assert rounds.warmups == [{"cell": "w0", "runs": 4, "stable": True, "changePercent": 1.05}]
    capped = models.SweepSpec.model_validate({**spec.to_wire(), "warmupUntilStable": {"changePercent": 5, "maxRuns": 3}})
    runs, rounds = play(capped, grid.plan(capped, "sweep", "default"), {"w0": [500, 800, 950], "c0": QUIET, "c1": QUIET})
    assert rounds.warmups == [{"cell": "w0", "runs": 3, "stable": False, "changePercent": 18.75}]
    assert sum(r["metadata"]["labels"]["esbench.io/cell"] == "w0" for r in runs) == 3
