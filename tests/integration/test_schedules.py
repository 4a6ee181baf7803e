"""ExperimentSchedules on a real API server: a tick creates its run, the schedule follows it.

Real: kube-apiserver, controller-manager, the CRDs and the operator process (the chart's RBAC).
Stood in for: ECK's controller and the kubelet's work, as in test_experiment_lifecycle.py. The
decisions of every policy at every moment are unit-tested (tests/unit/test_schedulestate.py); here the
operator acts on the clock, so the one tick waited for is the next minute's.
"""

from __future__ import annotations

from datetime import datetime

from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.runner.results import summarize
from tests.support.experiments import es_exists, events, runner_log, wait_phase
from tests.support.schedules import create_schedule, get_schedule
from tests.support.waiting import wait_for

EXPERIMENT = {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}


def test_each_tick_creates_its_experiment_and_the_schedule_follows_it_to_its_end(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    created = create_schedule(apis, namespace, "nightly", schedule="* * * * *", experiment=EXPERIMENT)

    def first_run() -> dict | None:
        items = apis.custom.list_namespaced_custom_object(
            models.GROUP, models.VERSION, namespace, models.PLURAL, label_selector="esbench.io/schedule=nightly")["items"]
        return items[0] if items else None

    run = wait_for(first_run, timeout=75, what="the next minute's tick to create its Experiment")
    name = run["metadata"]["name"]
    tick = datetime.fromisoformat(run["metadata"]["annotations"][models.SCHEDULED_AT])
    assert tick.second == 0 and name == f"nightly-{int(tick.timestamp()) // 60}"
    assert run["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert run["spec"] == get_schedule(apis, namespace, "nightly")["spec"]["experiment"]
    following = wait_for(lambda: (s := get_schedule(apis, namespace, "nightly")).get("status", {}).get("active") and s,
                         timeout=30, what="the schedule to list its run as active")
    assert following["status"]["active"] == [name] and following["status"]["activeCount"] == 1
    assert following["status"]["lastScheduleTime"] == run["metadata"]["annotations"][models.SCHEDULED_AT]
    assert ("Normal", "RunStarted") in events(apis, namespace, "nightly")

    wait_for(lambda: es_exists(eck, namespace, name), what="the run's cluster")
    eck.make_ready(namespace, name)
    wait_phase(apis, namespace, name, "Benchmarking")
    standin_kubelet.finish_job_pod(namespace, f"{name}-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    done = wait_phase(apis, namespace, name, "Succeeded")
    ended = wait_for(lambda: (s := get_schedule(apis, namespace, "nightly"))["status"].get("lastSuccessfulTime") and s,
                     timeout=30, what="the schedule to see its run succeed")
    assert ended["status"]["lastSuccessfulTime"] == done["status"]["completionTime"]
    assert ended["status"]["activeCount"] == 0 and not ended["status"].get("active")


def test_a_cron_expression_croniter_refuses_is_said_and_starts_nothing(apis, namespace, operator):
    create_schedule(apis, namespace, "broken", schedule="61 * * * *", experiment=EXPERIMENT)
    refused = wait_for(lambda: (s := get_schedule(apis, namespace, "broken")).get("status", {}).get("reason") and s,
                       timeout=30, what="the schedule's status")
    assert refused["status"]["reason"] == "InvalidSpec"
    assert "'61 * * * *' is not a valid cron expression" in refused["status"]["message"]
    assert ("Warning", "InvalidSpec") in events(apis, namespace, "broken")
