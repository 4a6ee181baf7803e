"""What a schedule does at a moment (planning.schedulestate): CronJob's rules for the tick that is
due, the concurrency policies, the starting deadline, suspension and the history limits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from esbench.api import crds, models, validation
from esbench.api.models import ScheduleSpec
from esbench.planning import manifests, names
from esbench.planning.schedulestate import InvalidSchedule, Run, check, decide, latest_tick

NIGHTLY = {"schedule": "0 2 * * *", "experiment": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}}
CREATED = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def spec(**changes) -> ScheduleSpec:
    return ScheduleSpec.model_validate({**NIGHTLY, **changes})


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


def run(name: str, day: int, phase: str | None, recorded: bool = False) -> Run:
    return Run(name, f"2026-11-{day:02d}T02:00:00Z", phase, f"2026-11-{day:02d}T02:30:00Z" if phase else None, recorded)


def test_the_first_tick_after_the_creation_starts_a_run_and_nothing_is_due_until_the_next():
    assert decide(spec(), CREATED, [], at(1, 23), store=False).start is None
    assert decide(spec(), CREATED, [], at(2, 2, 0, 5), store=False).start == at(2, 2)
    assert decide(spec(), at(2, 2), [run("n-1", 2, None)], at(2, 14), store=False).start is None


def test_a_schedule_down_for_days_starts_one_run_for_the_latest_tick():
    assert decide(spec(), at(2, 2), [], at(6, 9), store=False).start == at(6, 2)


@pytest.mark.parametrize("policy, start, replace, waiting", [
    ("Forbid", None, [], "n-1 still running (concurrencyPolicy Forbid)"),
    ("Allow", at(3, 2), [], None),
    ("Replace", at(3, 2), ["n-1"], None),
])
def test_a_run_under_way_at_the_next_tick(policy, start, replace, waiting):
    decision = decide(spec(concurrencyPolicy=policy), at(2, 2), [run("n-1", 2, None)], at(3, 2, 0, 10), store=False)
    assert (decision.start, decision.replace, decision.waiting) == (start, replace, waiting)


def test_forbid_starts_the_waiting_tick_once_the_run_ends_unless_past_the_deadline():
    ended = [run("n-1", 2, "Succeeded")]
    assert decide(spec(), at(2, 2), ended, at(3, 4), store=False).start == at(3, 2)
    late = decide(spec(startingDeadlineSeconds=3600), at(2, 2), ended, at(3, 4), store=False)
    assert (late.start, late.missed) == (None, at(3, 2))


def test_a_suspended_schedule_starts_nothing_and_its_tick_runs_when_resumed_within_the_deadline():
    assert decide(spec(suspend=True), at(2, 2), [], at(3, 2, 1), store=False).waiting == "suspended"
    assert decide(spec(startingDeadlineSeconds=600), at(2, 2), [], at(3, 2, 5), store=False).start == at(3, 2)


def test_finished_runs_beyond_the_limits_go_the_succeeded_ones_once_the_store_holds_them():
    runs = [run(f"n-{day}", day, "Succeeded", recorded=day != 2) for day in (2, 3, 4, 5)] + [
        run(f"f-{day}", day, "Failed") for day in (6, 7)] + [run("n-8", 8, None)]
    limits = spec(successfulRunsHistoryLimit=2, failedRunsHistoryLimit=1)
    # The newest two succeeded and the newest failed stay; n-2 is not in the store yet.
    assert sorted(decide(limits, at(8, 2), runs, at(8, 3), store=True).delete) == ["f-6", "n-3"]
    # Without a store a succeeded run is the only record of what it measured.
    assert decide(limits, at(8, 2), runs, at(8, 3), store=False).delete == ["f-6"]


def test_cron_expressions_are_checked_and_macros_understood():
    check("*/15 * * * 1-5")
    assert latest_tick("@hourly", at(3, 10, 59)) == at(3, 10)
    with pytest.raises(InvalidSchedule, match="not a valid cron expression"):
        check("61 * * * *")


def test_a_ticks_run_is_named_after_the_tick_and_carries_the_schedules_spec_as_stored():
    body = {"metadata": {"name": "nightly", "namespace": "perf", "uid": "u-1"}, "spec": NIGHTLY}
    schedule = manifests.Schedule.from_body(body)
    made = manifests.schedule_run_manifest(schedule, body["spec"], at(3, 2))
    assert made["kind"] == "Experiment" and made["spec"] == NIGHTLY["experiment"]
    assert made["metadata"]["name"] == names.scheduled_run_name("nightly", at(3, 2).timestamp()) == "nightly-29894520"
    assert made["metadata"]["labels"]["esbench.io/schedule"] == "nightly"
    assert made["metadata"]["annotations"] == {models.SCHEDULED_AT: "2026-11-03T02:00:00Z"}
    assert made["metadata"]["ownerReferences"][0]["kind"] == "ExperimentSchedule"


@pytest.mark.parametrize("kind, longest", [(models.KIND, 26), (models.SWEEP_KIND, 14)])
def test_the_longest_schedule_name_admitted_leaves_room_for_its_runs_and_their_confirming_runs(kind, longest):
    section = {"sweep": {"template": NIGHTLY["experiment"], "matrix": [{"field": "index.codec",
                                                                       "values": ["default", "best_compression"]}]}}
    def schedule(name: str) -> dict:
        body = {"apiVersion": models.API_VERSION, "kind": models.SCHEDULE_KIND, "metadata": {"name": name},
                "spec": {"schedule": NIGHTLY["schedule"], **(section if kind == models.SWEEP_KIND else
                                                             {"experiment": NIGHTLY["experiment"]})}}
        return validation.admit(body, crds.schedule()["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
                                models.SCHEDULE_KIND)

    with pytest.raises(validation.Rejected, match="at most 26 characters, 14 for a sweep"):
        schedule("n" * (longest + 1))
    admitted = schedule("n" * longest)
    owner = manifests.Schedule.from_body({**admitted, "metadata": {**admitted["metadata"], "namespace": "perf",
                                                                    "uid": "u-1"}})
    tick = manifests.schedule_run_manifest(owner, admitted["spec"], datetime.fromtimestamp(99_999_999 * 60, UTC))
    confirming = manifests.schedule_run_manifest(owner, admitted["spec"], at(3, 2), confirms=tick["metadata"]["name"])
    assert len(tick["metadata"]["name"]) == longest + 9  # the last 8-digit minute
    for run in (tick, confirming):  # each admitted as its kind, its name's rule included
        assert validation.admit(run, kind=kind)["kind"] == kind
