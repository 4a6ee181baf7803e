"""An ExperimentSchedule's reconcile: on each tick of its cron schedule, an Experiment or a sweep
(what the schedule decides is schedulestate.py's).

Level-triggered like the others: each call reads the schedule and its runs (found by label)
afresh. A tick's run is named after the tick, so a repeated call or a restart never creates it
twice; the runs it deletes (Replace, the history limits) are found again at the next call if a
deletion did not happen.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from esbench.api.models import Phase, ScheduleStatus
from esbench.api.reasons import Reason
from esbench.controller import manifests, schedulestate, status
from esbench.controller.kube import Kube, Rejected
from esbench.controller.lifecycle import EventSink, KeyedLocks

SCHEDULING = "Scheduling"  # the condition: whether ticks start runs


class ScheduleReconciler:
    def __init__(self, kube: Kube, emit: EventSink, store: bool,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        """STORE: whether a results store keeps what a deleted run measured."""
        self.kube = kube
        self.emit = emit
        self.store = store
        self.clock = clock
        self.locks = KeyedLocks()

    def reconcile(self, namespace: str, name: str) -> None:
        with self.locks((namespace, name)):
            body = self.kube.get_schedule(namespace, name)
            if body is None or body["metadata"].get("deletionTimestamp"):
                return
            try:
                schedule = manifests.Schedule.from_body(body)
                schedulestate.check(schedule.spec.schedule)
            except (ValidationError, schedulestate.InvalidSchedule) as error:
                message = str(error) if isinstance(error, schedulestate.InvalidSchedule) else "; ".join(
                    e["msg"] for e in error.errors())
                if (body.get("status") or {}).get("reason") != Reason.INVALID_SPEC:
                    self.emit(body, "Warning", Reason.INVALID_SPEC, message)
                self._patch(body, {"reason": Reason.INVALID_SPEC, "message": message},
                            (SCHEDULING, False, Reason.INVALID_SPEC, message))
                return
            self._step(body, schedule)

    def _step(self, body: dict[str, Any], schedule: manifests.Schedule) -> None:
        current = body.get("status") or {}
        # What each tick makes: sweeps or Experiments, listed, created and deleted alike.
        list_runs, create_run, delete_run = (
            (self.kube.list_sweeps, self.kube.create_sweep, self.kube.delete_sweep) if schedule.spec.sweep
            else (self.kube.list_experiments, self.kube.create_experiment, self.kube.delete_experiment))
        listed = list_runs(schedule.namespace, f"{manifests.SCHEDULE_LABEL}={schedule.name}")
        children = [child for child in listed if any(
            ref.get("uid") == schedule.uid for ref in child["metadata"].get("ownerReferences") or [])]
        runs = [schedulestate.Run.of(child) for child in children]
        handled = [current.get("lastScheduleTime"), current.get("lastMissedTime"), body["metadata"]["creationTimestamp"]]
        since = max(status.parse(moment) for moment in handled if moment)
        decision = schedulestate.decide(schedule.spec, since, runs, self.clock(), self.store)

        for name in decision.replace + decision.delete:
            delete_run(schedule.namespace, name)
        fields: dict[str, Any] = {}
        condition = (SCHEDULING, not schedule.spec.suspend, Reason.SUSPENDED if schedule.spec.suspend
                     else Reason.SCHEDULED, f"schedule {schedule.spec.schedule} (UTC)")
        if decision.start:
            manifest = manifests.schedule_run_manifest(schedule, body["spec"], decision.start)
            started = manifest["metadata"]["name"]
            try:
                create_run(manifest)
            except Rejected as rejected:  # e.g. a quota: said, and tried again at the next look
                fields.update(reason=Reason.REJECTED, message=str(rejected))
                condition = (SCHEDULING, False, Reason.REJECTED, str(rejected))
            else:
                fields.update(lastScheduleTime=status.timestamp(decision.start), reason=Reason.RUN_STARTED,
                              message=f"{started} started for the tick of {status.timestamp(decision.start)}")
                # (Made already if a crash came between its creation and this status: named after its tick.)
                runs = [run for run in runs if run.name not in [*decision.replace, started]]
                runs.append(schedulestate.Run(started, status.timestamp(decision.start), None, None, False))
                self.emit(body, "Normal", Reason.RUN_STARTED, fields["message"])
        elif decision.missed:
            message = (f"the tick of {status.timestamp(decision.missed)} was not started within "
                       f"startingDeadlineSeconds ({schedule.spec.starting_deadline_seconds})")
            fields.update(lastMissedTime=status.timestamp(decision.missed), missed=(current.get("missed") or 0) + 1,
                          reason=Reason.MISSED, message=message)
            self.emit(body, "Warning", Reason.MISSED, message)
        elif decision.waiting:
            fields.update(reason=Reason.WAITING, message=f"the tick waits: {decision.waiting}")
        kept = [run for run in runs if run.name not in decision.delete]
        active = sorted(run.name for run in kept if not run.finished)
        successes = [run.completion for run in kept if run.phase == Phase.SUCCEEDED and run.completion]
        if current.get("lastSuccessfulTime"):  # the run it was may be deleted since
            successes.append(current["lastSuccessfulTime"])
        fields.update(active=active, activeCount=len(active), lastSuccessfulTime=max(successes, default=None))
        self._patch(body, fields, condition)

    def _patch(self, body: dict[str, Any], fields: dict[str, Any], *conditions: tuple[str, bool, str, str]) -> None:
        patch = status.patch_of(ScheduleStatus, body, fields, *conditions)
        if patch is not None:
            self.kube.patch_schedule_status(body["metadata"]["namespace"], body["metadata"]["name"], patch)
