"""The ExperimentSweep: a grid of Experiments (its cells) over the fields of a template spec,
repeated in rounds and compared with a baseline, and its status."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from esbench.api.models.common import Conditions, Int64, Model, Records, StatusReason, Timestamp, cel_list
from esbench.api.models.experiment import METRIC_NAMES, ExperimentSpec, TaskName
from esbench.api.openapi import SchemaOf, rules

SWEEP_KIND = "ExperimentSweep"
SWEEP_PLURAL = "experimentsweeps"


# The sections of the spec a cell may vary, and what it may not: what the chart's admission policy
# checks against the creator of a sweep in its template (the Secrets and clusters a run would be
# handed, and code of the user's choice), since the runs are created by the operator, not by
# that user. The matrix field's rules below and the operator's planner read both. An include
# cell's fields are the keys of a map of free JSON values, which CEL cannot see (the API server
# cannot type such a map for CEL): the chart's admission policy refuses them (on dyn values), and
# the planner again, before any run, as InvalidSpec.
SPEC_SECTIONS = ("elasticsearch", "index", "workload", "rally", "lifecycle", "profile")
TEMPLATE_ONLY_FIELDS = ("target", "rally.image", "elasticsearch.image", "workload.source", "workload.repository")
_SPEC_FIELD = rf"'^({'|'.join(SPEC_SECTIONS)})\\.[A-Za-z0-9_.-]+$'"
_TEMPLATE_ONLY_MESSAGE = (f"{', '.join(TEMPLATE_ONLY_FIELDS[:-1])} and {TEMPLATE_ONLY_FIELDS[-1]} cannot vary between "
                          "cells: set them in the template, where admission checks them against the sweep's creator")
_SECTIONS_MESSAGE = f"a field of the Experiment spec under {', '.join(SPEC_SECTIONS[:-1])} or {SPEC_SECTIONS[-1]}"
# Maps whose keys are free (and may contain dots): the rest of a field's name is one key.
_MAP_FIELDS = ("index.settings", "elasticsearch.config", "workload.trackParams")


def field_path(field: str) -> list[str]:
    """The keys of a sweep's field name: index.settings.index.translog.durability is 3 keys, not 5."""
    for map_field in _MAP_FIELDS:
        if field.startswith(map_field + "."):
            return [*map_field.split("."), field[len(map_field) + 1:]]
    return field.split(".")


def field_value(spec: dict[str, Any], field: str) -> Any:
    """The value of a sweep's field in an Experiment spec (its wire form), or None."""
    node: Any = spec
    for key in field_path(field):
        node = node.get(key) if isinstance(node, dict) else None
    return node


_MATRIX_FIELD = f"!{cel_list(TEMPLATE_ONLY_FIELDS)}.exists(g, self == g || self.startsWith(g + '.'))"
_MATRIX_SECTION = f"self.matches({_SPEC_FIELD})"


class Axis(Model):
    """One dimension of the grid: a field of the Experiment spec and the values it takes."""

    field: str = Field(
        max_length=256,
        description="A field of the Experiment spec, e.g. index.codec, elasticsearch.version, "
                    "workload.trackParams.bulk_size, index.settings.index.translog.durability (after "
                    "index.settings., elasticsearch.config. and workload.trackParams. the rest is one key).",
        json_schema_extra=rules((_MATRIX_SECTION, f"matrix field must be {_SECTIONS_MESSAGE}, e.g. index.codec"),
                                (_MATRIX_FIELD, _TEMPLATE_ONLY_MESSAGE)))
    values: list[Any] = Field(min_length=1, max_length=50)


class RoundAxis(Model):
    """A track parameter that takes another value each round, the same in every cell of the round."""

    field: str = Field(
        max_length=256,
        description="workload.trackParams.NAME, e.g. workload.trackParams.queries (the rest is one key).",
        json_schema_extra=rules((r"self.matches('^workload\\.trackParams\\.[A-Za-z0-9_.-]+$')",
                                 "perRound field must be a track parameter, workload.trackParams.NAME: a round may "
                                 "change what the track asks, never the cluster, the index or the track, which the "
                                 "cells compare"),))
    values: list[Any] = Field(
        min_length=1, max_length=50,
        description="Round r (from 1) takes value number r modulo their count: the first round the first value; "
                    "warm-up runs count their own rounds from 1.")


class RunOrder(str, Enum):
    # Every cell once per round, rounds one after another: slow drift (warm caches, a
    # fragmenting disk, a noisy neighbour) spreads over all cells instead of biasing one. Within
    # a round, a node that still warms up favours whichever cell races last: Counterbalanced
    # turns the order round by round so that no cell holds one position.
    COUNTERBALANCED = "Counterbalanced"
    INTERLEAVED = "Interleaved"  # the cells' own order in every round: the baseline always first
    SHUFFLED = "Shuffled"  # as Interleaved, with each round in a seeded random order
    SEQUENTIAL = "Sequential"  # all repetitions of a cell, then the next: open to drift


class SignificanceTest(str, Enum):
    WELCH_T = "WelchT"  # ratio of geometric means, Welch's t interval
    MANN_WHITNEY_U = "MannWhitneyU"  # Hodges-Lehmann ratio, the interval inverting the rank test


class Question(Model):
    """A task and metric a sweep asks about."""

    task: TaskName = Field(description="A Rally task, or cluster / nodes for node-level figures.")
    metric: Literal[METRIC_NAMES] = Field(description="As in esbench compare.")


class Statistics(Model):
    test: SignificanceTest = Field(
        SignificanceTest.WELCH_T,
        description="How each contender's change against the baseline gets its interval and p-value, on the "
                    "logarithms of the figures (a ratio): WelchT gives the ratio of geometric means with Welch's t "
                    "interval; MannWhitneyU the Hodges-Lehmann ratio with the interval of the rank test, robust to "
                    "an outlying run (needs 4+ repetitions per cell to ever exclude no change at 95 %).")
    confidence: float = Field(0.95, gt=0.5, lt=1)
    noise_threshold_percent: float = Field(
        5.0, gt=0,
        description="The change that does not matter: a comparison whose interval lies within +-this is "
                    "Equivalent; a cell whose coefficient of variation exceeds it is flagged noisy.")
    paired: bool = Field(
        False,
        description="Compare each contender's run with the baseline's run of the same round (the ratio of the two), "
                    "a paired t interval: drift between rounds (a node warming up over the sweep) cancels out. Needs "
                    "order Counterbalanced, Interleaved or Shuffled and test WelchT.")
    target_width_percent: float | None = Field(
        None, gt=0, le=200,
        description="With maxRepetitions: a contender whose primary questions are unsettled stops once each of their "
                    "intervals is at most this wide, in % on the log scale (100 times the log ratio's width; default "
                    "twice noiseThresholdPercent, the width an Equivalent interval can have).")
    primary: list[Question] | None = Field(
        None, max_length=20,
        description="The sweep's primary questions (with its gates'): their comparisons are corrected together by "
                    "Holm; every other comparison is exploratory, corrected by Benjamini-Hochberg.")


class Gate(Question):
    """A regression gate: no contender may be significantly worse than the baseline by more than this."""

    max_regression_percent: float = Field(ge=0)
    cells: list[Annotated[str, Field(pattern="^c[0-9]+$")]] | None = Field(
        None, max_length=200, description="Cell ids (c1, c2, ...) to gate; default every contender.")


class WarmupUntilStable(Model):
    """Warm-up runs beyond warmupRuns until the node has settled, within a cap."""

    change_percent: float = Field(
        5.0, gt=0, le=100,
        description="Settled when every primary figure of a warm-up run (the primary questions', or each task's "
                    "throughput and service-time medians) is within this of the warm-up run before it.")
    max_runs: int = Field(5, ge=2, le=20, description="Warm-up runs at most, per shared cluster.")


class SweepSpec(Model):
    # A gate compares repetitions: with one run per cell there is a difference, never a verdict,
    # so the gate could never fail. (repetitions defaults to 3.)
    model_config = ConfigDict(json_schema_extra=rules(
        ("!has(self.gates) || !has(self.repetitions) || self.repetitions >= 2",
         "gates need repetitions of 2 or more: one run per cell gives a difference, not a verdict, and a gate "
         "could never fail"),
        ("!has(self.maxRepetitions) || self.maxRepetitions > (has(self.repetitions) ? self.repetitions : 3)",
         "maxRepetitions must be more than repetitions (the rounds every cell runs)"),
        ("!has(self.statistics) || !has(self.statistics.paired) || !self.statistics.paired || "
         "((!has(self.order) || self.order != 'Sequential') && "
         "(!has(self.statistics.test) || self.statistics.test == 'WelchT'))",
         "statistics.paired compares the runs of one round: it needs order Counterbalanced, Interleaved or Shuffled "
         "and test WelchT"),
        ("!has(self.perRound) || !has(self.matrix) || !self.perRound.exists(r, self.matrix.exists(a, a.field == r.field))",
         "a field is either a matrix axis (compared) or perRound (varied, not compared), not both"),
        ("!has(self.compareWithin) || self.compareWithin.all(f, has(self.matrix) && "
         "self.matrix.exists(a, a.field == f))",
         "compareWithin names matrix fields: the levels each of which gets a baseline of its own"),
        ("!has(self.compareWithin) || !has(self.matrix) || "
         "self.matrix.exists(a, !self.compareWithin.exists(f, f == a.field))",
         "compareWithin must leave a matrix field to compare: within every level of all the matrix's fields, "
         "a cell has nothing to be compared with"),
        ("!has(self.maxRepetitions) || has(self.gates) || (has(self.statistics) && has(self.statistics.primary))",
         "maxRepetitions needs a primary question (statistics.primary or gates): further rounds go on until its "
         "intervals are narrow enough"),
    ))

    template: Annotated[dict[str, Any], SchemaOf(
        ExperimentSpec, "An Experiment spec, checked as the Experiment CRD checks one. Every cell is this spec with "
                        "the matrix's values set.")]
    matrix: list[Axis] = Field(
        [], max_length=8, description="The axes of the grid; the cells are every combination of their values.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["field"]})
    per_round: list[RoundAxis] | None = Field(
        None, max_length=4,
        description="Track parameters that change from round to round and are not compared: every cell of a round "
                    "gets the same value, so paired statistics still compare like with like. For what must vary "
                    "across repetitions to average out, such as the order of a track's tasks (a task always run "
                    "first, after indexing, would meet other caches and merges than one always run last).",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["field"]})
    include: list[dict[str, Any]] | None = Field(
        None, max_length=50,
        description="Extra cells, each as {field: value} (with no matrix: one knob at a time against the "
                    "template).")
    exclude: list[dict[str, Any]] | None = Field(
        None, max_length=50,
        description="Cells to leave out, each selected by {field: value} (every given field must match).")
    baseline: dict[str, Any] | None = Field(
        None, description="The baseline cell as {field: value}; defaults to the first cell.")
    compare_within: list[Annotated[str, Field(max_length=256)]] | None = Field(
        None, max_length=7, json_schema_extra={"x-kubernetes-list-type": "set"},
        description="Matrix fields each of whose values has a baseline of its own: a cell is compared with the cell "
                    "that has the baseline's values and the cell's own values of these fields (index.codec within "
                    "each elasticsearch.resources, say, not across them). The comparisons of every level are "
                    "corrected together.")
    repetitions: int = Field(
        3, ge=1, le=50,
        description="Runs per cell. One run per configuration is noise; 5 or more make the tests meaningful.")
    max_repetitions: int | None = Field(
        None, ge=2, le=50,
        description="Repetitions until the answer is clear: after `repetitions` rounds and after each further one, "
                    "a contender stops once its primary questions are settled (Better, Worse or Equivalent) or their "
                    "intervals are no wider than statistics.targetWidthPercent, else it runs another round with its "
                    "baseline, up to this many runs per cell. Each look tests at a level from a group-sequential "
                    "design (Lan-DeMets spending, Pocock type), so stopping early keeps the chance of a false "
                    "verdict at 1 - confidence.")
    parallelism: int = Field(
        1, ge=1, le=50,
        description="Clusters at work at once (runs at once without clusterReuse). Parallel runs share the nodes' "
                    "CPU, disks and network, and measure each other.")
    order: RunOrder = Field(
        RunOrder.COUNTERBALANCED,
        description="Counterbalanced runs every cell once per round, each round in the next row of a Williams "
                    "design (seeded): over the rounds every cell races in every position equally often, so a node "
                    "that warms up within a round cannot pose as an effect. Interleaved keeps the cells' order in "
                    "every round (the baseline always first: within-round drift becomes a bias that pairing makes "
                    "look precise); Shuffled shuffles each round (seeded); Sequential runs a cell's repetitions back "
                    "to back.")
    seed: int = Field(0, description="Seed of the Counterbalanced and Shuffled orders.")
    cluster_reuse: bool = Field(
        True, description="Cells with the same elasticsearch spec and track share one cluster owned by the sweep "
                          "(NAME-g<n>) and run one after another on it, each race with a fresh index (the track "
                          "deletes and creates it). On an emptyDir, a run that ended ClusterDisrupted has the "
                          "cluster deleted and made anew before the group's next run: a node ECK makes anew there "
                          "is empty and never rejoins (Event ClusterRenewed).")
    # Right after a node starts, the JIT and the caches make the first races slower, which would
    # bias the first cells.
    warmup_runs: int = Field(
        1, ge=0, le=10,
        description="Runs at the start of each shared cluster that are not counted (cells w0, w1, ...), so that JIT "
                    "warm-up and cold caches do not bias the first cells. Only with clusterReuse (or spec.target).")
    warmup_until_stable: WarmupUntilStable | None = Field(
        None, description="Further warm-up runs, after warmupRuns, until two in a row agree within changePercent "
                          "(status.warmups says how many ran and whether the node settled).")
    max_retries: int = Field(1, ge=0, le=5, description="Attempts after a failed run (not after InvalidSpec).")
    statistics: Statistics = Statistics()
    gates: list[Gate] | None = Field(
        None, max_length=20,
        description="Regression gates for CI; condition GatesPassed turns False when a contender is significantly "
                    "worse than the baseline by more than the allowed change. A gate's task and metric are a primary "
                    "question of the sweep.")

    @property
    def most_repetitions(self) -> int:
        return max(self.repetitions, self.max_repetitions or 0)

    @property
    def most_warmup_runs(self) -> int:
        until = self.warmup_until_stable
        return max(self.warmup_runs, until.max_runs if until and self.warmup_runs else 0)

    @property
    def target_width_percent(self) -> float:
        return self.statistics.target_width_percent or 2 * self.statistics.noise_threshold_percent

    def primary_questions(self) -> list[tuple[str, str]]:
        """(task, metric) of statistics.primary and of the gates: the comparisons corrected together."""
        questions = [*(self.statistics.primary or []), *(self.gates or [])]
        return list(dict.fromkeys((q.task, q.metric) for q in questions))


SWEEP_NAME_RULES = rules(
    # Runs are named SWEEP-cN-rN[-aN] and must fit the Experiment's 36 characters.
    ("self.metadata.name.size() <= 24",
     "metadata.name must be at most 24 characters (its runs are named NAME-c<cell>-r<repetition>[-a<attempt>])"),
    ("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
     "metadata.name must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending "
     "with a letter or digit (its runs and clusters are named after it)"),
)


class SweepPhase(str, Enum):
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"  # every run succeeded (gates are a separate condition)
    FAILED = "Failed"  # invalid, or some runs failed after their retries (partial results stay)


SWEEP_TERMINAL_PHASES = (SweepPhase.SUCCEEDED, SweepPhase.FAILED)


class SweepProgress(Model):
    cells: int | None = None
    runs: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    running: int | None = None
    pending: int | None = None
    retries: int | None = None
    summary: str | None = None


class RunTiming(Model):
    runs: int | None = Field(None, description="Succeeded runs with task windows, that the medians are over.")
    run_seconds: float | None = Field(None, description="A run from its creation to its completion.")
    task_seconds: float | None = Field(None, description="Rally's task windows in a run, summed.")
    overhead_seconds: float | None = Field(
        None, description="The rest: cluster, Rally's start, index creation, corpus, cleanup.")


class Correction(Model):
    correction: str | None = Field(None, description="Holm (primary) or Benjamini-Hochberg (exploratory).")
    comparisons: int | None = Field(None, description="Comparisons with a p-value in the family.")


class Corrections(Model):
    primary: Correction | None = None
    exploratory: Correction | None = None


class OrderEffect(Model):
    """A linear model of the figure's logarithm: a level per cell and per round, one slope for the
    run's position in its round."""

    task: str | None = None
    metric: str | None = None
    state: Literal["Detected", "NotDetected", "Confounded", "InsufficientData"] | None = Field(
        None, description="Detected: the position explains the figure (Holm-adjusted p below 1 - confidence); "
                          "Confounded: every cell raced in one position, so the two cannot be told apart.")
    runs: int | None = None
    per_position_percent: float | None = Field(None, description="The change from one position to the next.")
    low_percent: float | None = None
    high_percent: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None


class SweepStatus(Model):
    phase: SweepPhase | None = None
    reason: StatusReason | None = None
    message: str | None = None
    observed_generation: Int64 | None = None
    start_time: Timestamp | None = None
    completion_time: Timestamp | None = None
    baseline: str | None = Field(
        None, description="The baseline cell (with compareWithin, the first level's: cells marks every level's, and "
                          "each comparison names its own in against).")
    clusters: list[str] | None = None
    progress: SweepProgress | None = None
    cells: Records | None = Field(None, description="Each cell, its values, its shared cluster and its runs by state.")
    failures: Records | None = Field(None, description="The latest failed runs (including those retried).")
    runs: Records | None = Field(
        None, description="Every run seen, with its outcome and, once it succeeded, Rally's figures (kept when the "
                          "run is deleted).")
    comparison: Records | None = Field(
        None, description="Per task and metric (primary or exploratory), each cell's n, median, mean, stdDev, "
                          "cvPercent and confidence interval of the mean; for a contender its change vs its baseline "
                          "(named in against where there are several) with its interval (adjusted and raw), raw and adjusted p-values, verdict (Better, Worse, "
                          "Equivalent, Inconclusive with runsNeeded, InsufficientData), the smallest effect it could "
                          "detect (detectablePercent) and the noisy flag.")
    timing: RunTiming | None = Field(None, description="Where a run's time goes, as medians over the runs.")
    corrections: Corrections | None = Field(
        None, description="How each family of comparisons was corrected for their number.")
    contrasts: Records | None = Field(
        None, description="Per cell, the template's workload.contrasts over the cell's repetitions, with the same "
                          "statistics as the comparison.")
    gates: Records | None = Field(
        None, description="Each gate's result: Passed (every contender's interval within the allowed regression), "
                          "Failed (significantly worse beyond it), Undecided (the sweep ended with an interval "
                          "reaching beyond it) or Pending, with a message.")
    warmups: Records | None = Field(
        None, description="With warmupUntilStable: per warm-up cell, the warm-up runs made, the last change between "
                          "two of them (changePercent) and whether the node settled (stable).")
    order_effects: list[OrderEffect] | None = Field(
        None, description="Per primary question (or each task's throughput and service time medians), whether a run's "
                          "position in its round explains its figure beyond its cell (condition OrderEffect).")
    conditions: Conditions | None = None
