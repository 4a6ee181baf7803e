"""What an ExperimentSchedule does now (pure): the tick to start a run for, what a due tick waits
for, the runs to delete.

CronJob's rules: the most recent tick since the last one handled (a run started for it, or
missed), or since the schedule was created, is due; it is missed if it is older than
startingDeadlineSeconds, waits while suspended or while a run is under way with Forbid, and
replaces the runs under way with Replace. Only the most recent tick counts: a schedule that was
down or suspended for a week starts one run, not one per tick it slept through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from croniter import croniter

from esbench.api.models import SCHEDULED_AT, ConcurrencyPolicy, Phase, ScheduleSpec
from esbench.planning.status import recorded


class InvalidSchedule(ValueError):
    pass


@dataclass(frozen=True)
class Run:
    """One run a schedule created (an Experiment or a sweep), as the schedule sees it."""

    name: str
    scheduled: str  # the tick it was made for, as the API writes times
    phase: str | None
    completion: str | None
    recorded: bool

    @property
    def finished(self) -> bool:
        return self.phase in (Phase.SUCCEEDED, Phase.FAILED)

    @classmethod
    def of(cls, child: dict[str, Any]) -> Run:
        state = child.get("status") or {}
        return cls(child["metadata"]["name"], (child["metadata"].get("annotations") or {}).get(SCHEDULED_AT, ""),
                   state.get("phase"), state.get("completionTime"), recorded(child))


@dataclass
class Decision:
    start: datetime | None = None  # the tick to create a run for now
    replace: list[str] = field(default_factory=list)  # runs under way to delete first (Replace)
    waiting: str | None = None  # why a due tick waits
    missed: datetime | None = None  # a due tick given up, past startingDeadlineSeconds
    delete: list[str] = field(default_factory=list)  # finished runs beyond the history limits


def check(schedule: str) -> None:
    if not croniter.is_valid(schedule):
        raise InvalidSchedule(f"spec.schedule {schedule!r} is not a valid cron expression")


def latest_tick(schedule: str, now: datetime) -> datetime:
    """The schedule's most recent tick at or before now."""
    return croniter(schedule, now + timedelta(microseconds=1)).get_prev(datetime)


def decide(spec: ScheduleSpec, since: datetime, runs: list[Run], now: datetime, store: bool) -> Decision:
    """SINCE: the latest tick handled, or the schedule's creation. STORE: whether a results store
    keeps what a deleted run measured (without one, succeeded runs beyond the limit stay)."""
    decision = Decision(delete=_beyond_history(spec, runs, store))
    tick = latest_tick(spec.schedule, now)
    if tick <= since:
        return decision
    under_way = [run.name for run in runs if not run.finished]
    if spec.starting_deadline_seconds is not None and (now - tick).total_seconds() > spec.starting_deadline_seconds:
        decision.missed = tick
    elif spec.suspend:
        decision.waiting = "suspended"
    elif under_way and spec.concurrency_policy == ConcurrencyPolicy.FORBID:
        decision.waiting = f"{', '.join(under_way)} still running (concurrencyPolicy Forbid)"
    else:
        decision.start = tick
        if spec.concurrency_policy == ConcurrencyPolicy.REPLACE:
            decision.replace = under_way
    return decision


def _beyond_history(spec: ScheduleSpec, runs: list[Run], store: bool) -> list[str]:
    newest_first = sorted((run for run in runs if run.finished), key=lambda run: run.scheduled, reverse=True)
    succeeded = [run for run in newest_first if run.phase == Phase.SUCCEEDED]
    failed = [run for run in newest_first if run.phase == Phase.FAILED]
    old = succeeded[spec.successful_runs_history_limit:] + failed[spec.failed_runs_history_limit:]
    # A succeeded run holds its results until the store does; a failed one is never recorded.
    return [run.name for run in old if run.phase == Phase.FAILED or (store and run.recorded)]
