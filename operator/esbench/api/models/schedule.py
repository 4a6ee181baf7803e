"""The ExperimentSchedule: an Experiment or a sweep created on a cron schedule, and its status,
with the regression check over the series of its runs."""

from __future__ import annotations

from enum import Enum

from pydantic import ConfigDict, Field

from esbench.api.models.common import Conditions, Int64, Model, StatusReason, Timestamp
from esbench.api.models.experiment import ExperimentSpec
from esbench.api.models.sweep import SweepSpec
from esbench.api.openapi import rules

SCHEDULE_KIND = "ExperimentSchedule"
SCHEDULE_PLURAL = "experimentschedules"
# The five fields of cron or one of its macros; croniter checks the values when the operator reads it.
CRON = r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+(\s+\S+){4})$"


class ConcurrencyPolicy(str, Enum):
    """What a tick does while an earlier run of the schedule is unfinished (CronJob's policies)."""

    FORBID = "Forbid"
    ALLOW = "Allow"
    REPLACE = "Replace"


class ScheduleSpec(Model):
    model_config = ConfigDict(json_schema_extra=rules(
        ("has(self.experiment) != has(self.sweep)", "set exactly one of experiment and sweep: what each tick creates")))

    schedule: str = Field(pattern=CRON, description="When, in cron syntax (five fields, in UTC), as a CronJob's.")
    suspend: bool = Field(False, description="No new run while true; runs under way go on.")
    concurrency_policy: ConcurrencyPolicy = Field(
        ConcurrencyPolicy.FORBID,
        description="While an earlier run is unfinished, a tick waits for it (Forbid: two benchmarks at once would "
                    "measure each other), starts beside it (Allow), or deletes it first (Replace).")
    starting_deadline_seconds: int | None = Field(
        None, ge=10, description="A tick not started within this many seconds (the operator down, Forbid waiting) "
                                 "is missed rather than started late. Unset: started however late.")
    successful_runs_history_limit: int = Field(
        3, ge=0, le=100, description="Succeeded runs kept as objects, the newest; older ones are deleted once the "
                                     "results store holds them (the store keeps every result).")
    failed_runs_history_limit: int = Field(1, ge=0, le=100, description="Failed runs kept as objects, the newest.")
    experiment: ExperimentSpec | None = Field(None, description="The Experiment each tick creates.")
    sweep: SweepSpec | None = Field(None, description="The ExperimentSweep each tick creates.")


SCHEDULE_NAME_RULES = rules(
    # Each tick's run is NAME-<minutes since the epoch> (8 digits, as a CronJob names its Jobs), a
    # run confirming it the same with a "c", and must fit an Experiment's 36 characters or a sweep's 24.
    ("self.metadata.name.size() <= (has(self.spec.sweep) ? 14 : 26)",
     "metadata.name must be at most 26 characters, 14 for a sweep (each run is named NAME-<minutes since the epoch>, "
     "a run that confirms a regression NAME-<minutes>c)"),
    ("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
     "metadata.name must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending "
     "with a letter or digit (its runs are named after it)"),
)


class RegressionState(str, Enum):
    SUSPECTED = "Suspected"  # one run after the change: a confirming run is made
    CONFIRMED = "Confirmed"


class SeriesRegression(Model):
    """A series of the schedule's runs whose newest change point is a regression."""

    configuration: str = Field(description="The series' configuration (esbench history's id of the spec).")
    cell: str | None = Field(None, description="For a schedule of sweeps: the cell whose runs make the series.")
    task: str
    metric: str
    state: RegressionState
    change_percent: float | None = None
    pvalue: float
    first_run: str = Field(description="The first of the schedule's runs after the change point.")
    first_race_id: str


class RegressionCheck(Model):
    """The change points of the series of the schedule's runs, found by Apache Otava in the results store after
    the newest run was recorded. A sweep's run is one point of each cell's series: the median of its
    repetitions, which share a cluster and a night."""

    run: str = Field(description="The newest run the check covers.")
    scheduled_at: Timestamp = Field(description="That run's tick (or, for a confirming run, its creation).")
    configurations: list[str] = Field(
        description="The configurations watched (esbench history's ids of their specs): the Experiment's, or each "
                    "cell's of the sweep.")
    races: int = Field(description="Races of these configurations in the store.")
    series: int = Field(description="Series checked: each configuration's tasks' watched metrics.")
    regressions: list[SeriesRegression] | None = None
    confirming_run: str | None = Field(None, description="The run made to confirm a suspected regression.")


class ScheduleStatus(Model):
    reason: StatusReason | None = None
    message: str | None = None
    observed_generation: Int64 | None = None
    last_schedule_time: Timestamp | None = Field(None, description="The latest tick a run was created for.")
    last_successful_time: Timestamp | None = Field(None, description="When the latest run that succeeded ended.")
    last_missed_time: Timestamp | None = Field(None, description="The latest tick missed (startingDeadlineSeconds).")
    active: list[str] | None = Field(None, description="The runs under way.")
    active_count: int | None = None
    missed: int | None = Field(None, description="Ticks missed in all (startingDeadlineSeconds).")
    regression_check: RegressionCheck | None = Field(
        None, description="With a results store: the latest check of the schedule's series for a regression (the "
                          "Regression condition says the outcome).")
    conditions: Conditions | None = None
