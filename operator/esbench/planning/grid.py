"""An ExperimentSweep's plan, pure: its cells, the order of its runs, and which runs share a cluster.

A cell is one configuration (the template with one value per matrix axis); a run is one
repetition of a cell. Everything here is deterministic in the spec (a shuffled order comes
from the spec's seed), so the plan is the same after every operator restart.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
from dataclasses import dataclass
from typing import Any

from esbench.api import models, validation
from esbench.planning import names

MAX_CELLS = 200  # child names carry the cell id (c0..c199) within the name length limit
# Combinations of the matrix before exclude, counted before expanding. (CEL cannot count them at
# admission: it does not see the untyped matrix values.)
MAX_COMBINATIONS = 10_000


class InvalidSweep(ValueError):
    pass


@dataclass(frozen=True)
class Cell:
    id: str  # c0, c1, ...: stable, short (it goes into child names)
    values: dict[str, Any]  # field -> value, as the matrix (or include) gave them
    spec: dict[str, Any]  # the Experiment spec of this cell

    @property
    def label(self) -> str:
        return ", ".join(f"{field}={json.dumps(value)}" for field, value in self.values.items()) or "template"


@dataclass(frozen=True)
class Run:
    cell: Cell
    repetition: int  # 1-based

    @property
    def key(self) -> tuple[str, int]:
        return self.cell.id, self.repetition


@dataclass(frozen=True)
class Plan:
    cells: list[Cell]  # the compared cells (warm-up runs have cells of their own: w0, w1, ...)
    baselines: dict[str, str]  # each cell's id: the id of the cell it is compared with (a baseline: its own)
    runs: list[Run]  # in the order they are started, warm-up runs first

    def cell(self, cell_id: str) -> Cell:
        return next(cell for cell in self.cells if cell.id == cell_id)

    @property
    def baseline(self) -> Cell:
        """The first cell's baseline (with compareWithin, one of several)."""
        return self.cell(self.baselines[self.cells[0].id])

    def is_baseline(self, cell_id: str) -> bool:
        return self.baselines[cell_id] == cell_id


def with_value(spec: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    result = copy.deepcopy(spec)
    *parents, last = models.field_path(field)
    node = result
    for key in parents:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[last] = value
    return result


def round_spec(cell_spec: dict[str, Any], per_round: list[models.RoundAxis] | None, repetition: int) -> dict[str, Any]:
    """The spec a cell's run of this round races: the cell's, with each perRound field's value of the round."""
    for axis in per_round or []:
        cell_spec = with_value(cell_spec, axis.field, axis.values[(repetition - 1) % len(axis.values)])
    return cell_spec


def cluster_key(cell_spec: dict[str, Any]) -> str:
    """Cells with the same key can share one cluster (one after another, each with a fresh index).

    The cluster is fixed by spec.elasticsearch, and by spec.profile (its nodes record from their
    start: a cell without a profile must not run on them); the track is part of the key too,
    because Rally's store size and segment count cover every index on the cluster, and a track
    only deletes its own indices before it starts.
    """
    workload = cell_spec.get("workload") or {}
    identity = {key: workload.get(key) for key in ("track", "source", "repository")}
    return json.dumps([cell_spec.get("elasticsearch"), cell_spec.get("target"), identity, cell_spec.get("profile")],
                      sort_keys=True)


def _check_field(field: str) -> None:
    # Admission refuses these in the matrix and in include already (the same rules, models/sweep.py);
    # the planner checks again for sweeps admitted before those rules existed.
    if any(field == guarded or field.startswith(f"{guarded}.") for guarded in models.TEMPLATE_ONLY_FIELDS):
        raise InvalidSweep(f"field {field!r} cannot vary between cells: set it in the template, where admission "
                           "checks it against the sweep's creator")
    keys = models.field_path(field)
    if keys[0] not in models.SPEC_SECTIONS or len(keys) < 2 or "" in keys:
        raise InvalidSweep(f"field {field!r} is not a field of the Experiment spec "
                           f"(it must start with one of {', '.join(models.SPEC_SECTIONS)} and name a field inside it)")


def _matches(values: dict[str, Any], selector: dict[str, Any]) -> bool:
    return all(field in values and values[field] == value for field, value in selector.items())


def _assignments(spec: models.SweepSpec) -> list[dict[str, Any]]:
    fields = [axis.field for axis in spec.matrix]
    if len(set(fields)) != len(fields):
        raise InvalidSweep("matrix names a field twice")
    for selector in spec.exclude or []:
        unknown = set(selector) - set(fields)
        if unknown:  # a misspelt field would silently exclude nothing
            raise InvalidSweep(f"exclude names {', '.join(sorted(unknown))}, which no matrix axis has")
    combinations = math.prod(len(axis.values) for axis in spec.matrix)
    if combinations > MAX_COMBINATIONS:  # before expanding: the product grows fast
        raise InvalidSweep(f"the matrix has {combinations} combinations; at most {MAX_COMBINATIONS} are supported")
    assignments = [dict(zip(fields, combination, strict=True)) for combination in
                   itertools.product(*(axis.values for axis in spec.matrix))]
    assignments = [a for a in assignments if not any(_matches(a, selector) for selector in spec.exclude or [])]
    for extra in spec.include or []:
        if extra not in assignments:
            assignments.append(dict(extra))
    if len(assignments) > MAX_CELLS:
        raise InvalidSweep(f"the matrix makes {len(assignments)} cells; at most {MAX_CELLS} are supported")
    return assignments


def cells(spec: models.SweepSpec, name: str, namespace: str) -> list[Cell]:
    """Every cell, each checked as the API server would check an Experiment with its spec and
    the longest name a run of this sweep gets (names limit what ECK can make of nodeSets)."""
    assignments = _assignments(spec)
    longest_run = names.sweep_run_name(name, f"c{len(assignments) - 1}", max(spec.most_repetitions, spec.most_warmup_runs),
                                       spec.max_retries + 1)
    # The rounds' values repeat after the lists' least common multiple of rounds: those, or every
    # round a run can have (warm-up runs count their own), hold every spec a run will race. (The
    # CRD's rules alone check perRound's fields: no sweep with perRound predates them.)
    rounds = ()
    if spec.per_round:
        every_round = math.lcm(*(len(axis.values) for axis in spec.per_round))
        rounds = range(1, min(every_round, max(spec.most_repetitions, spec.most_warmup_runs)) + 1)

    def admitted(cell: Cell, where: str = "") -> dict[str, Any]:
        document = {"apiVersion": models.API_VERSION, "kind": models.KIND,
                    "metadata": {"name": longest_run, "namespace": namespace}, "spec": cell.spec}
        try:
            checked = validation.admit(document)
            validation.parse_spec(checked)
        except validation.Rejected as error:
            raise InvalidSweep(f"cell {cell.id} ({cell.label}){where}: {error.message}") from None
        return checked["spec"]

    result = []
    for number, values in enumerate(assignments):
        cell_spec = spec.template
        for field, value in values.items():
            _check_field(field)
            cell_spec = with_value(cell_spec, field, value)
        cell = Cell(f"c{number}", values, cell_spec)
        cell = Cell(cell.id, values, admitted(cell))
        for repetition in rounds:
            admitted(Cell(cell.id, values, round_spec(cell.spec, spec.per_round, repetition)), f" in round {repetition}")
        result.append(cell)
    if not result:
        raise InvalidSweep("the matrix leaves no cells (every combination is excluded)")
    return result


def williams_row(size: int, row: int) -> list[int]:
    """Row `row` of a Williams design for `size` treatments: a Latin square (every treatment in
    every position once over its rows) in which each treatment also follows every other equally
    often; an odd size needs its rows reversed as well, 2 * size rows in all."""
    first = [0]
    for step in range(1, size):
        first.append((step + 1) // 2 if step % 2 else size - step // 2)
    rows = size if size % 2 == 0 else 2 * size
    row %= rows
    shifted = [(symbol + row % size) % size for symbol in first]
    return shifted[::-1] if row >= size else shifted


def round_order(cells: list[Cell], repetition: int, order: models.RunOrder, seed: int) -> list[Cell]:
    """The cells of one round (all, or those a further round runs) in the order they race.

    Counterbalanced: the round's row of a Williams design over the cells, their letters drawn from
    the seed, so that over the rounds every cell races in every position equally often and a node
    that warms up run by run within a round spreads over the cells instead of favouring the last.
    Interleaved keeps the cells' order in every round (its risk: the baseline always first).
    """
    if order == models.RunOrder.COUNTERBALANCED:
        # The same seeded letters for the first rounds and for further ones (a subset of cells).
        lettered = sorted(cells, key=lambda cell: random.Random(f"{seed}/{cell.id}").random())
        return [lettered[symbol] for symbol in williams_row(len(lettered), repetition - 1)]
    if order == models.RunOrder.SHUFFLED:
        shuffled = list(cells)
        random.Random(seed * 1000 + repetition).shuffle(shuffled)
        return shuffled
    return list(cells)


def run_order(cell_list: list[Cell], repetitions: int, order: models.RunOrder, seed: int) -> list[Run]:
    if order == models.RunOrder.SEQUENTIAL:
        return [Run(cell, repetition) for cell in cell_list for repetition in range(1, repetitions + 1)]
    return [Run(cell, repetition) for repetition in range(1, repetitions + 1)
            for cell in round_order(cell_list, repetition, order, seed)]


def baselines(cell_list: list[Cell], spec: models.SweepSpec) -> dict[str, str]:
    """Each cell's baseline: the first cell matching spec.baseline (default: the first cell's values)
    among the cells with its own values of the compareWithin fields."""
    within = spec.compare_within or []
    named = set(spec.baseline or {}) & set(within)
    if named:  # the fields are typed in the CRD, the baseline's keys are not: checked here
        raise InvalidSweep(f"baseline names {', '.join(sorted(named))}, which compareWithin gives a baseline per value")
    selector = spec.baseline or {f: v for f, v in cell_list[0].values.items() if f not in within}
    result = {}
    for cell in cell_list:
        level = {field: cell.values[field] for field in within if field in cell.values}  # include may lack one
        chosen = next((c for c in cell_list if _matches(c.values, {**selector, **level})), None)
        if chosen is None:
            where = f" with {json.dumps(level)}" if within else ""
            raise InvalidSweep(f"baseline {json.dumps(selector)} matches no cell{where}")
        result[cell.id] = chosen.id
    return result


def plan(spec: models.SweepSpec, name: str, namespace: str) -> Plan:
    cell_list = cells(spec, name, namespace)
    baseline_of = baselines(cell_list, spec)
    for gate in spec.gates or []:
        unknown = set(gate.cells or []) - {cell.id for cell in cell_list}
        if unknown:
            raise InvalidSweep(f"gate on {gate.task} {gate.metric} names unknown cells {sorted(unknown)}")
        gated_baselines = sorted(c for c in gate.cells or [] if baseline_of[c] == c)
        if gated_baselines:
            raise InvalidSweep(f"gate on {gate.task} {gate.metric} names the baseline {', '.join(gated_baselines)}: "
                               "gates compare the other cells against it")
    runs = run_order(cell_list, spec.repetitions, spec.order, spec.seed)
    return Plan(cell_list, baseline_of, warmup_runs(runs, spec) + runs)


def warmup_runs(runs: list[Run], spec: models.SweepSpec) -> list[Run]:
    """spec.warmupRuns runs of each shared cluster's first cell, to go before the measured ones.

    Their cells are w0, w1, ... (one per cluster): never compared. A cluster of its own per run
    (no reuse) starts as cold for every cell, so there is nothing to even out.
    """
    first_cell: dict[str, Cell] = {}
    for run in runs:
        if spec.cluster_reuse or "target" in run.cell.spec:
            first_cell.setdefault(cluster_key(run.cell.spec), run.cell)
    return [Run(Cell(f"{models.WARMUP_CELL_PREFIX}{number}", cell.values, cell.spec), repetition)
            for number, cell in enumerate(first_cell.values())
            for repetition in range(1, spec.warmup_runs + 1)]
