"""Every succeeded Experiment recorded in the results store, which outlives it.

Real: the store (an Elasticsearch node over HTTPS with a user and a private CA, as the runner
tests start them), the operator process with the chart's RBAC for a configured resultsStore, and
what the earlier tests of this directory use (API server, controllers). The Rally pod's log is
stood in for as in test_experiment_lifecycle.py: the runner's real report of a real race.json.
"""

from __future__ import annotations

import copy
import socket
from datetime import UTC, datetime

import numpy as np
import pytest

from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.api.reasons import ConditionType, Reason
from esbench.history import rallyresults, records
from esbench.history.esstore import RACES_INDEX, SWEEPS_INDEX, ElasticsearchStore
from esbench.planning import grid, manifests
from esbench.planning import status as experiment_status
from esbench.planning.status import recorded
from esbench.runner.results import summarize
from tests.support.elasticsearch import LATEST
from tests.support.experiments import (
    condition,
    es_exists,
    events,
    get_experiment,
    run_to_benchmarking,
    runner_log,
    wait_phase,
)
from tests.support.helm import operator_access
from tests.support.operator_process import OperatorProcess
from tests.support.schedules import create_schedule, get_schedule, printed
from tests.support.sweeps import CODECS, TEMPLATE, Driver, create_sweep, get_sweep, phase, runs
from tests.support.waiting import wait_for


@pytest.fixture
def store(clusters):
    return clusters.get(LATEST, secure=True)  # emptied for each test


@pytest.fixture(scope="module")
def store_access(control_plane, helm):
    """What the chart grants an operator with a results store (get on ConfigMaps besides)."""
    values = {"resultsStore": {"url": "https://results.example:9200"}}
    namespace = control_plane.create_namespace("esbench-store-")
    with operator_access(helm, control_plane, namespace, release="esbench-store", values=values) as kubeconfig:
        yield kubeconfig


class Operators:
    """Operator processes writing to the store at a given URL; each one's log is checked at the end."""

    def __init__(self, kubeconfig, store, tmp_path):
        self.kubeconfig, self.store, self.tmp_path = kubeconfig, store, tmp_path
        (tmp_path / "password").write_text(store.password + "\n")  # as a Secret's file
        self.started: list[OperatorProcess] = []

    def start(self, url: str) -> OperatorProcess:
        operator = OperatorProcess(
            self.kubeconfig, self.tmp_path / f"operator-{len(self.started)}.log",
            ESBENCH_JOB_DEADLINE_GRACE_SECONDS="5", ESBENCH_RESULTS_STORE_URL=url,
            ESBENCH_RESULTS_STORE_USERNAME=self.store.username,
            ESBENCH_RESULTS_STORE_PASSWORD_FILE=str(self.tmp_path / "password"),
            ESBENCH_RESULTS_STORE_CA_FILE=self.store.ca_file)
        self.started.append(operator.start())
        return operator

    def stop(self) -> None:
        for operator in self.started:
            operator.stop()
            log = operator.log_path.read_text(errors="replace")
            print(f"{operator.log_path.name} (last lines):\n" + "\n".join(log.splitlines()[-100:]))
            assert "failed with an exception" not in log and "resync of" not in log, log
            assert self.store.password not in log


@pytest.fixture
def operators(store_access, store, tmp_path):
    started = Operators(store_access, store, tmp_path)
    yield started
    started.stop()


def finish_race(apis, eck, standin_kubelet, namespace: str, name: str, race_json: dict) -> dict:
    created = run_to_benchmarking(apis, eck, namespace, name, lifecycle={"ttlSecondsAfterFinished": 0})
    standin_kubelet.finish_job_pod(namespace, f"{name}-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    return created


def gone(apis, namespace: str, name: str) -> bool:
    return name not in [e["metadata"]["name"] for e in apis.custom.list_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.PLURAL)["items"]]


def stored_race(store, race_id: str) -> dict:
    return store.client.get(f"{RACES_INDEX}/_doc/{race_id}")["_source"]


def test_a_succeeded_experiment_is_recorded_with_rallys_results_documents_before_its_ttl_deletes_it(
        apis, eck, standin_kubelet, namespace, operators, store, race_json):
    operators.start(store.url)
    created = finish_race(apis, eck, standin_kubelet, namespace, "kept", race_json)
    # Recorded, then deleted by its TTL (0 s): the store is where its results live on.
    wait_for(lambda: gone(apis, namespace, "kept"), timeout=60, what="the TTL deletion once recorded")
    assert ("Normal", Reason.RECORDED) in events(apis, namespace, "kept")

    race_id = created["metadata"]["uid"]
    race = stored_race(store, race_id)
    assert (race["namespace"], race["experiment"], race["track"]) == (namespace, "kept", "smoke")
    assert race["configuration"] == records.configuration_id(race["document"]["spec"])
    assert race["document"]["status"]["phase"] == "Succeeded" and race["document"]["status"]["raceId"] == race_id
    assert race["race-json"] == race_json  # read back from the Experiment's ConfigMap
    points = {(p["subject"], p["metric"]): p["value"] for p in race["points"]}
    assert points[("index-append", "throughput.median")] > 0

    # Rally's own documents, as Rally's results store would hold them, each naming its Experiment.
    found = store.client.get(f"{rallyresults.index_name(race_json)}/_search?size=1000")["hits"]["hits"]
    expected = rallyresults.documents(race_json)
    assert len(found) == len(expected) > 10
    by_id = {hit["_id"]: hit["_source"] for hit in found}
    for n, document in enumerate(expected):
        stored = by_id[f"{race_id}-{n}"]
        assert stored.pop("esbench") == {"namespace": namespace, "experiment": "kept",
                                         "configuration": race["configuration"], "sweep": None, "cell": None,
                                         "repetition": None}
        assert stored == document
    # Rally's mapping: a keyword to aggregate on, and its race timestamp as a date.
    mapping = store.client.get(f"{rallyresults.index_name(race_json)}/_mapping")
    fields = next(iter(mapping.values()))["mappings"]["properties"]
    assert fields["track"]["type"] == "keyword" and fields["race-timestamp"]["type"] == "date"


def test_a_store_that_is_down_holds_the_ttl_and_an_operator_killed_before_the_write_loses_nothing(
        apis, eck, standin_kubelet, namespace, operators, store, race_json):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"https://127.0.0.1:{s.getsockname()[1]}"  # closed again: nothing listens there
    first = operators.start(down)
    created = finish_race(apis, eck, standin_kubelet, namespace, "later", race_json)

    def refused() -> dict | None:
        experiment = get_experiment(apis, namespace, "later")
        recorded = experiment_status.condition(experiment.get("status") or {}, ConditionType.RECORDED)
        return experiment if recorded and recorded["reason"] == Reason.STORE_UNAVAILABLE else None

    experiment = wait_for(refused, timeout=60, what="the Recorded condition to say the store is down")
    assert experiment["status"]["phase"] == "Succeeded"
    assert condition(experiment, ConditionType.RECORDED)["status"] == "False"
    assert "cannot be reached" in condition(experiment, ConditionType.RECORDED)["message"]
    assert ("Warning", Reason.STORE_UNAVAILABLE) in events(apis, namespace, "later")
    # Tried again (the backoff's first step is one resync), its TTL long past: still there.
    wait_for(lambda: "2 in a row" in first.log_path.read_text(), timeout=30, what="a second attempt to record it")
    assert not gone(apis, namespace, "later")

    first.kill()  # between the result and its recording
    operators.start(store.url)
    wait_for(lambda: gone(apis, namespace, "later"), timeout=60, what="the TTL deletion once recorded")
    assert stored_race(store, created["metadata"]["uid"])["experiment"] == "later"


def test_a_finished_sweep_and_each_run_but_its_warm_up_are_recorded(
        apis, eck, standin_kubelet, namespace, operators, store, race_json):
    operators.start(store.url)
    created = create_sweep(apis, namespace, "codec", matrix=CODECS, repetitions=1, warmupRuns=1)
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "codec")
    for throughput in (100.0, 1000.0, 800.0):  # the warm-up, then c0 and c1
        driver.finish(driver.next_benchmarking(), throughput)
    driver.wait_done()
    sweep = wait_for(lambda: (s := get_sweep(apis, namespace, "codec")) and recorded(s) and s, timeout=30,
                     what="the sweep's Recorded condition")
    # Each run is recorded as it ends, by its own reconcile: maybe after the sweep that saw it end.
    wait_for(lambda: sum(map(recorded, runs(apis, namespace, "codec"))) == 2, timeout=30,
             what="the two measured runs' Recorded conditions")

    uid = created["metadata"]["uid"]
    stored = store.client.get(f"{SWEEPS_INDEX}/_doc/{uid}")["_source"]
    assert (stored["sweep"], stored["namespace"], stored["phase"]) == ("codec", namespace, "Succeeded")
    assert stored["document"]["status"]["comparison"] == sweep["status"]["comparison"]
    races = store.client.get(f"{RACES_INDEX}/_search?size=10&q=sweep:codec")["hits"]["hits"]
    assert sorted((race["_source"]["cell"], race["_source"]["repetition"]) for race in races) == [("c0", 1), ("c1", 1)]
    assert len({race["_source"]["configuration"] for race in races}) == 2  # a series per cell


def slower(race_json: dict, factor: float, race_id: str) -> dict:
    """The race made FACTOR times costlier: each task's service time times it, its throughput divided."""
    changed = copy.deepcopy(race_json)
    changed["race-id"] = race_id
    for task in changed["results"]["op_metrics"]:
        for key in ("50_0", "100_0", "mean"):
            task["service_time"][key] *= factor
        for key in ("min", "mean", "median", "max"):
            task["throughput"][key] /= factor
    return changed


def past_run(spec: dict, namespace: str, day: int, race_json: dict, metadata: dict | None = None) -> records.Record:
    """A run of the schedule's spec on an earlier night, as the store would hold it. METADATA: a sweep's
    run's, as its manifest has it."""
    results = summarize(race_json).model_dump(mode="json", by_alias=True, exclude_none=True)
    document = {"apiVersion": models.API_VERSION, "kind": models.KIND,
                "metadata": metadata or {"name": f"watched-{day}", "namespace": namespace}, "spec": spec,
                "status": {"phase": "Succeeded", "raceId": race_json["race-id"],
                           "startTime": f"2026-10-{day:02d}T02:00:00Z", "results": results}}
    return records.record(document)


def test_a_scheduled_regression_is_confirmed_by_one_more_run_then_reported_once(
        apis, eck, standin_kubelet, namespace, operators, store, race_json):
    """Eleven steady nights in the store, then a night 30 % costlier: suspected, so the schedule runs
    its Experiment once more at once; that run is as slow, so the regression is reported, once."""
    operator = operators.start(store.url)
    created = create_schedule(apis, namespace, "watched", schedule="0 0 1 1 *",  # no tick during the test
                              experiment={"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}})
    spec = created["spec"]["experiment"]
    writer = ElasticsearchStore(store.client)
    for day, factor in enumerate(np.random.default_rng(7).lognormal(0.0, 0.03, 11), start=1):
        writer.add(past_run(spec, namespace, day, slower(race_json, factor, f"night-{day}")))

    def race(name: str, factor: float) -> None:
        wait_for(lambda: es_exists(eck, namespace, name), what=f"{name}'s cluster")
        eck.make_ready(namespace, name)
        wait_phase(apis, namespace, name, "Benchmarking")
        costlier = slower(race_json, factor, name)
        standin_kubelet.finish_job_pod(namespace, f"{name}-rally", runner_log(
            RaceReport(succeeded=True, results=summarize(costlier), race_json=costlier)), exit_code=0)

    # Tonight's tick's run, as the schedule creates it (the test does not wait for a real tick).
    manifest = manifests.schedule_run_manifest(manifests.Schedule.from_body(created), created["spec"],
                                               datetime(2026, 11, 27, 2, tzinfo=UTC))
    apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, manifest)
    tonight = manifest["metadata"]["name"]
    race(tonight, 1.3)
    confirming = wait_for(lambda: (get_schedule(apis, namespace, "watched").get("status") or {}).get(
        "regressionCheck", {}).get("confirmingRun"), timeout=60, what="a run to confirm the suspected regression")
    assert confirming == f"{tonight}c"
    suspected = get_schedule(apis, namespace, "watched")
    assert condition(suspected, "Regression")["reason"] == "RegressionSuspected"
    assert printed(apis, namespace, "watched")["Regression"] == "False"
    assert {r["state"] for r in suspected["status"]["regressionCheck"]["regressions"]} == {"Suspected"}
    assert 'esbench_regression_state{configuration=' in operator.metrics() and "} 1.0" in operator.metrics()

    race(confirming, 1.31)

    reported = wait_for(lambda: (s := get_schedule(apis, namespace, "watched")) and (
        (experiment_status.condition(s.get("status") or {}, "Regression") or {}).get("status") == "True") and s,
        timeout=60, what="the regression to be confirmed")
    check = reported["status"]["regressionCheck"]
    assert check["run"] == confirming and check["races"] == 13
    assert printed(apis, namespace, "watched")["Regression"] == "True"  # kubectl get esxcron
    assert {(r["state"], r["firstRun"]) for r in check["regressions"]} == {("Confirmed", tonight)}
    # Every task's service time and throughput: 3 tasks, 2 metrics.
    assert check["series"] == 6 and len(check["regressions"]) == 6
    warnings = [e for e in events(apis, namespace, "watched") if e == ("Warning", "RegressionConfirmed")]
    assert len(warnings) == 1  # once, naming every series
    scraped = [line for line in operator.metrics().splitlines() if line.startswith("esbench_regression_state{")]
    assert len(scraped) == 6 and all(line.endswith(" 2.0") and 'schedule="watched"' in line for line in scraped)


def test_a_schedule_of_sweeps_watches_each_cells_series_a_night_being_one_point(
        apis, eck, standin_kubelet, namespace, operators, store, race_json):
    """Eleven nights of a two-cell sweep (two repetitions each) in the store, as the operator ran them on
    each night's shared cluster; tonight cell c1 is 30 % costlier in both repetitions: suspected (one
    night, whatever its repetitions), so the schedule runs its sweep once more at once; that sweep is
    as slow: the regression of c1, and of c1 alone, is reported once."""
    operators.start(store.url)
    created = create_schedule(apis, namespace, "cells", schedule="0 0 1 1 *",  # no tick during the test
                              sweep={"template": TEMPLATE, "matrix": CODECS, "repetitions": 2, "warmupRuns": 0})
    schedule = manifests.Schedule.from_body(created)
    cells = grid.cells(schedule.spec.sweep, "cells", namespace)
    writer = ElasticsearchStore(store.client)
    noise = iter(np.random.default_rng(8).lognormal(0.0, 0.03, 44))
    for day in range(1, 12):
        sweep = manifests.Sweep(f"cells-{day}", namespace, f"uid-{day}", schedule.spec.sweep)
        for cell in cells:
            for repetition in (1, 2):
                run = manifests.sweep_run_manifest(sweep, cell.id, cell.label, cell.spec, repetition, 1,
                                                   f"cells-{day}-g0")
                writer.add(past_run(run["spec"], namespace, day, slower(race_json, next(noise), run["metadata"]["name"]),
                                    {**run["metadata"], "namespace": namespace}))

    def night(sweep: str, c1_factor: float) -> None:
        driver = Driver(apis, eck, standin_kubelet, namespace, race_json, sweep)
        for _ in range(4):
            child = driver.next_benchmarking()
            factor = c1_factor if child["metadata"]["labels"]["esbench.io/cell"] == "c1" else 1.0
            costlier = slower(race_json, factor, child["metadata"]["name"])
            standin_kubelet.finish_job_pod(namespace, f"{child['metadata']['name']}-rally", runner_log(
                RaceReport(succeeded=True, results=summarize(costlier), race_json=costlier)), exit_code=0)
        assert phase(driver.wait_done()) == "Succeeded"

    manifest = manifests.schedule_run_manifest(schedule, created["spec"], datetime(2026, 11, 27, 2, tzinfo=UTC))
    apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, manifest)
    tonight = manifest["metadata"]["name"]
    night(tonight, 1.3)
    confirming = wait_for(lambda: (get_schedule(apis, namespace, "cells").get("status") or {}).get(
        "regressionCheck", {}).get("confirmingRun"), timeout=60, what="a sweep to confirm the suspected regression",
        diagnose=lambda: str(get_schedule(apis, namespace, "cells").get("status")))
    assert confirming == f"{tonight}c" and get_sweep(apis, namespace, confirming)["kind"] == models.SWEEP_KIND
    suspected = get_schedule(apis, namespace, "cells")["status"]["regressionCheck"]
    assert {(r["state"], r["cell"]) for r in suspected["regressions"]} == {("Suspected", "c1")}

    night(confirming, 1.31)

    reported = wait_for(lambda: (s := get_schedule(apis, namespace, "cells")) and (
        (experiment_status.condition(s.get("status") or {}, "Regression") or {}).get("status") == "True") and s,
        timeout=60, what="the regression to be confirmed")
    check = reported["status"]["regressionCheck"]
    # Every night's four runs joined their cells' series, tonight's and the confirming sweep's too.
    assert (check["run"], check["races"], check["configurations"]) == (
        confirming, 52, [records.configuration_id(cell.spec) for cell in cells])
    # Of 2 cells x 3 tasks x 2 metrics, c1's six.
    assert check["series"] == 12 and len(check["regressions"]) == 6
    assert {(r["state"], r["cell"], r["firstRun"]) for r in check["regressions"]} == {("Confirmed", "c1", tonight)}
    warnings = [e for e in events(apis, namespace, "cells") if e == ("Warning", "RegressionConfirmed")]
    assert len(warnings) == 1
