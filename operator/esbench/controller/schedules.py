"""An ExperimentSchedule's reconcile: on each tick of its cron schedule, an Experiment or a sweep
(what the schedule decides is schedulestate.py's); with a results store, a schedule watches its
series for regressions after each run (regressionwatch.py).

Level-triggered like the others: each call reads the schedule and its runs (found by label)
afresh. A tick's run is named after the tick, so a repeated call or a restart never creates it
twice; the runs it deletes (Replace, the history limits) are found again at the next call if a
deletion did not happen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from esbench.analysis import changepoints
from esbench.api.models import (
    CELL_LABEL,
    SCHEDULE_LABEL,
    SWEEP_LABEL,
    WARMUP_CELL_PREFIX,
    Phase,
    ScheduleStatus,
    SweepSpec,
)
from esbench.api.reasons import ConditionType, Reason
from esbench.controller import metrics, regressionwatch
from esbench.controller.kube import Kube, Rejected
from esbench.controller.reconciling import EventSink, KeyedLocks
from esbench.history import records
from esbench.history.esstore import ElasticsearchStore
from esbench.planning import grid, manifests, schedulestate, status
from esbench.planning.status import ConditionUpdate, recorded

logger = logging.getLogger(__name__)


class ScheduleReconciler:
    def __init__(self, kube: Kube, emit: EventSink, store: ElasticsearchStore | None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        """STORE: the results store, which keeps what a deleted run measured, and the series
        watched for regressions."""
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
                            (ConditionType.SCHEDULING, False, Reason.INVALID_SPEC, message))
                return
            self._step(body, schedule)

    def _step(self, body: dict[str, Any], schedule: manifests.Schedule) -> None:
        current = body.get("status") or {}
        # What each tick makes: sweeps or Experiments, listed, created and deleted alike.
        list_runs, create_run, delete_run = (
            (self.kube.list_sweeps, self.kube.create_sweep, self.kube.delete_sweep) if schedule.spec.sweep
            else (self.kube.list_experiments, self.kube.create_experiment, self.kube.delete_experiment))
        listed = list_runs(schedule.namespace, f"{SCHEDULE_LABEL}={schedule.name}")
        children = [child for child in listed if any(
            ref.get("uid") == schedule.uid for ref in child["metadata"].get("ownerReferences") or [])]
        runs = [schedulestate.Run.of(child) for child in children]
        handled = [current.get("lastScheduleTime"), current.get("lastMissedTime"), body["metadata"]["creationTimestamp"]]
        since = max(status.parse(moment) for moment in handled if moment)
        decision = schedulestate.decide(schedule.spec, since, runs, self.clock(), self.store is not None)

        for name in decision.replace + decision.delete:
            delete_run(schedule.namespace, name)
        fields: dict[str, Any] = {}
        condition: ConditionUpdate = (ConditionType.SCHEDULING, not schedule.spec.suspend,
                                      Reason.SUSPENDED if schedule.spec.suspend else Reason.SCHEDULED,
                                      f"schedule {schedule.spec.schedule} (UTC)")
        if decision.start:
            manifest = manifests.schedule_run_manifest(schedule, body["spec"], decision.start)
            started = manifest["metadata"]["name"]
            try:
                create_run(manifest)
            except Rejected as rejected:  # e.g. a quota: said, and tried again at the next look
                fields.update(reason=Reason.REJECTED, message=str(rejected))
                condition = (ConditionType.SCHEDULING, False, Reason.REJECTED, str(rejected))
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
        conditions = [condition]
        if self.store is not None:
            busy = any(not run.finished for run in runs if run.name not in decision.delete)
            check, watched, confirming = self._watch(body, schedule, runs, children, busy, create_run)
            fields["regressionCheck"] = check
            conditions.append(watched)
            if confirming:
                runs.append(schedulestate.Run(confirming, status.now(), None, None, False))
        kept = [run for run in runs if run.name not in decision.delete]
        active = sorted(run.name for run in kept if not run.finished)
        successes = [run.completion for run in kept if run.phase == Phase.SUCCEEDED and run.completion]
        if current.get("lastSuccessfulTime"):  # the run it was may be deleted since
            successes.append(current["lastSuccessfulTime"])
        fields.update(active=active, activeCount=len(active), lastSuccessfulTime=max(successes, default=None))
        self._patch(body, fields, *conditions)

    def _watch(self, body: dict[str, Any], schedule: manifests.Schedule, runs: list[schedulestate.Run],
               children: list[dict[str, Any]], busy: bool, create_run: Callable[[dict[str, Any]], Any]
               ) -> tuple[dict[str, Any] | None, ConditionUpdate, str | None]:
        """The regression check of the newest recorded run, made once per run, its condition, and
        the confirming run started now (by CREATE_RUN), if any: once nothing else runs (BUSY: a run
        is under way). Raises StoreUnavailable."""
        assert self.store is not None
        before = (body.get("status") or {}).get("regressionCheck")
        check = before
        newest = max((run for run in runs if run.phase == Phase.SUCCEEDED and run.recorded),
                     key=lambda run: run.scheduled, default=None)
        watched = None
        if newest is not None and (before is None or newest.scheduled > before["scheduledAt"]):
            watched = self._watched(schedule, next(child for child in children
                                                   if child["metadata"]["name"] == newest.name))
        if newest is not None and watched is not None:
            try:
                python = changepoints.otava_python()
            except changepoints.OtavaMissing as error:
                return before, (ConditionType.REGRESSION, False, Reason.CHECK_FAILED, str(error)), None
            series = self.store.series(list(watched), changepoints.WATCHED_METRICS)
            check = regressionwatch.check(newest.name, newest.scheduled, watched, series, python, before)
            confirmed = regressionwatch.newly_confirmed(check, before)
            if confirmed:
                self.emit(body, "Warning", Reason.REGRESSION_CONFIRMED,
                          f"regression confirmed by run {check['run']}: "
                          + "; ".join(map(regressionwatch.describe, confirmed)))
        if check is None:
            return None, (ConditionType.REGRESSION, False, Reason.NO_REGRESSION,
                          "no run of the schedule recorded yet"), None
        suspect = regressionwatch.to_confirm(check)
        confirming = None
        if suspect is not None and not busy:
            manifest = manifests.schedule_run_manifest(schedule, body["spec"], self.clock(), confirms=suspect)
            try:
                create_run(manifest)
            except Rejected as rejected:  # e.g. a quota: logged, and tried again at the next look
                logger.warning("%s/%s: the run to confirm a regression: %s", schedule.namespace, schedule.name,
                               rejected)
            else:
                confirming = manifest["metadata"]["name"]
                check = {**check, "confirmingRun": confirming}
                self.emit(body, "Normal", Reason.RUN_STARTED,
                          f"{confirming} started to confirm a regression suspected after {suspect}")
        metrics.show(schedule.namespace, schedule.name, check)
        return check, regressionwatch.condition(check), confirming

    def _watched(self, schedule: manifests.Schedule, run: dict[str, Any]) -> dict[str, str | None] | None:
        """The configurations a recorded RUN measured, each with its sweep cell (None for an
        Experiment); None while a sweep's measured runs are not all in the store: each is recorded
        by its own reconcile, maybe after the sweep."""
        if not schedule.spec.sweep:
            return {records.configuration_id(run["spec"]): None}
        name = run["metadata"]["name"]
        for child in self.kube.list_experiments(schedule.namespace, f"{SWEEP_LABEL}={name}"):
            measured = not child["metadata"]["labels"].get(CELL_LABEL, "").startswith(WARMUP_CELL_PREFIX)
            if measured and (child.get("status") or {}).get("phase") == Phase.SUCCEEDED and not recorded(child):
                return None
        cells = grid.cells(SweepSpec.model_validate(run["spec"]), name, schedule.namespace)
        return {records.configuration_id(cell.spec): cell.id for cell in cells}

    def _patch(self, body: dict[str, Any], fields: dict[str, Any], *conditions: ConditionUpdate) -> None:
        patch = status.patch_of(ScheduleStatus, body, fields, *conditions)
        if patch is not None:
            self.kube.patch_schedule_status(body["metadata"]["namespace"], body["metadata"]["name"], patch)
