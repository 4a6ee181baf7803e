"""`esbench run SWEEP.yaml`: an ExperimentSweep on this machine, without Kubernetes.

The operator's plan (grid.plan: cells, include/exclude, order and seed, warm-up runs,
repetitions), its retries, statistics, gates and status (sweepstate), from the same code; only
where the runs race differs. Runs go one at a time, in plan order. Runs that the operator would
put on one shared cluster (same elasticsearch spec and track: NAME-g<n>) share one local node,
started before the group's first run and stopped after its last, each race with a fresh index
(the track deletes and creates it); without clusterReuse each run starts its own node. With
--es-url every run races that cluster.

The output folder holds what the operator would hold:
  sweep.json        the ExperimentSweep with its status, rewritten as each run ends
  runs/NAME.json    each run's Experiment with its status, written as it ends
Run again on the same folder, a sweep goes on where it stopped: a run with a file is not made
again, and a run interrupted before it ended left no file, so it is made (once) again.

What to do next is the operator's own decision (sweepstate.decide), with parallelism 1;
`sweep_document` is pure; `run` is the I/O around them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from esbench.api import models, validation
from esbench.api.models import SweepPhase, SweepSpec, SweepStatus
from esbench.api.reasons import Reason
from esbench.cli import local
from esbench.planning import grid, manifests, status, sweepstate

SWEEP_FILE = "sweep.json"
RUNS = "runs"
NAMESPACE = "local"  # in the runs' metadata, where the operator writes the sweep's namespace
EXIT_GATE_FAILED = 20
EXIT_RUNS_FAILED = 21
EXIT_GATE_UNDECIDED = 22


class FolderInUse(Exception):
    """The output folder holds another sweep, or this sweep with another spec."""


@dataclass
class Folder:
    path: Path

    @property
    def runs(self) -> Path:
        return self.path / RUNS

    def read(self, stored: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """The sweep as last written here, and its runs so far. A folder of another sweep, or of
        this one with another spec, is refused: its runs would not be comparable."""
        sweep_file = self.path / SWEEP_FILE
        if not sweep_file.exists():
            if self.runs.exists() and any(self.runs.glob("*.json")):
                raise FolderInUse(f"{self.path} holds runs but no {SWEEP_FILE}: give another folder")
            return None, []
        previous = json.loads(sweep_file.read_text())
        name = (previous.get("metadata") or {}).get("name")
        if name != stored["metadata"]["name"] or previous.get("spec") != stored["spec"]:
            raise FolderInUse(f"{self.path} holds sweep {name} with another spec: its runs would not be comparable "
                              "with these; give another folder (--output)")
        return previous, [json.loads(path.read_text()) for path in sorted(self.runs.glob("*.json"))]

    def write_run(self, document: dict[str, Any]) -> None:
        self.runs.mkdir(parents=True, exist_ok=True)
        _write(self.runs / f"{document['metadata']['name']}.json", document)

    def write_sweep(self, document: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        _write(self.path / SWEEP_FILE, document)


def _write(path: Path, document: dict[str, Any]) -> None:
    # Whole or not at all: an interrupted write must not leave half a run behind.
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(document, indent=2) + "\n")
    partial.replace(path)


# --- pure parts ----------------------------------------------------------------------------


def sweep_document(stored: dict[str, Any], uid: str, decision: sweepstate.Decision, spec: SweepSpec,
                   previous: dict[str, Any] | None, now: str) -> tuple[dict[str, Any], sweepstate.StatusReport]:
    """The ExperimentSweep with the status the operator would write for these runs."""
    name = stored["metadata"]["name"]
    report = sweepstate.report(decision, spec)
    before = (previous or {}).get("status") or {}
    report.fields["startTime"] = before.get("startTime") or now
    if report.complete:
        report.fields["completionTime"] = now
    conditions = before.get("conditions")
    for type_, ok, reason, message in report.conditions:
        conditions = status.with_condition(conditions, type_, ok, reason, message, now, None)
    state = status.checked(SweepStatus, {**report.fields, "conditions": conditions})
    document = {"apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND,
                "metadata": {"name": name, "uid": uid, "annotations": {"esbench.io/run": "local"}},
                "spec": stored["spec"], "status": state}
    return document, report


def exit_code(report: sweepstate.StatusReport) -> int:
    """0 when every run succeeded and every gate holds; else the first of: a gate failed, runs
    failed, a gate cannot tell (a CI job must not read an undecided gate as a pass)."""
    results = [g["result"] for g in report.fields.get("gates", [])]
    if "Failed" in results:
        return EXIT_GATE_FAILED
    if report.fields["phase"] == SweepPhase.FAILED.value:
        return EXIT_RUNS_FAILED
    if "Undecided" in results:
        return EXIT_GATE_UNDECIDED
    return 0


def eta(seconds: list[float], left: int) -> str:
    if not seconds:
        return "ETA after the first run"
    remaining = sum(seconds) / len(seconds) * left
    return f"about {int(remaining // 60)} min {int(remaining % 60):02d} s left (mean run {sum(seconds) / len(seconds):.0f} s)"


# --- I/O ------------------------------------------------------------------------------------


@dataclass
class SweepOutcome:
    document: dict[str, Any]
    exit_code: int
    made: int  # runs made by this call (not those found in the folder)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Nodes:
    """The local node of the group at work, started for its first run and stopped after its last."""

    def __init__(self, options: local.Options, progress: local.Progress):
        self.options, self.progress = options, progress
        self.stack = contextlib.ExitStack()
        self.group: str | None = None
        self.node: local.SharedNode | None = None

    def for_group(self, group: str, spec: models.ExperimentSpec) -> local.SharedNode:
        if group != self.group:
            self.stack.close()
            self.group, self.node = None, None
            self.node = self.stack.enter_context(local.shared_node(spec, self.options, self.progress))
            self.group = group
        assert self.node is not None
        return self.node

    def __enter__(self) -> _Nodes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()


def run(stored: dict[str, Any], spec: SweepSpec, options: local.Options, progress: local.Progress,
        folder: Path) -> SweepOutcome:
    """Make the admitted sweep `stored`'s runs that the folder does not hold yet, one at a time."""
    name = stored["metadata"]["name"]
    plan = grid.plan(spec, name, NAMESPACE)
    out = Folder(folder)
    previous, runs = out.read(stored)
    uid = (previous or {}).get("metadata", {}).get("uid") or str(uuid.uuid4())
    sweep = manifests.Sweep(name, NAMESPACE, uid, spec)
    if runs:
        progress.note(f"{len(runs)} run(s) already in {folder}: going on from there")
    durations: list[float] = []
    made = 0
    with _Nodes(options, progress) as nodes:
        while True:
            # Once per run, with parallelism 1: one run at a time, as the operator would.
            decision = sweepstate.decide(plan, sweep, runs, parallelism=1)
            document, report = sweep_document(stored, uid, decision, spec, previous, _now())
            out.write_sweep(document)
            previous = document
            if not decision.starts:
                if options.history and (recorded := options.history.remember(document)):
                    progress.note(recorded)
                return SweepOutcome(document, exit_code(report), made)
            following = decision.starts[0]
            run_, attempt = following.run, following.attempt
            # The local node stands in for the shared cluster: the run makes its own or uses the group's.
            manifest = manifests.sweep_run_manifest(sweep, run_.cell.id, run_.cell.label, run_.cell.spec,
                                                    run_.repetition, attempt, None)
            child = validation.admit(manifest)
            child_spec = validation.parse_spec(child)
            counts = report.fields["progress"]
            retry = f", attempt {attempt}" if attempt > 1 else ""
            progress.note(f"run {child['metadata']['name']} (cell {run_.cell.id}: {run_.cell.label}, repetition "
                          f"{run_.repetition}{retry}); {counts['summary']} runs done, "
                          f"{eta(durations, counts['runs'] - counts['succeeded'] - counts['failed'])}")
            started = time.monotonic()
            shared = None
            if following.cluster and not options.es_url:
                try:
                    shared = nodes.for_group(following.group, child_spec)
                except local.ClusterNotReady as error:
                    failed = local.experiment_document(
                        child, succeeded=False, reason=Reason.CLUSTER_NOT_READY, message=str(error),
                        race_id=str(uuid.uuid4()), start_time=datetime.now(UTC), completion_time=datetime.now(UTC))
                    out.write_run(failed)
                    runs.append(failed)
                    made += 1
                    continue
            per_run = dataclasses.replace(options, work_dir=options.work_dir / child["metadata"]["name"]
                                          ) if options.work_dir else options
            outcome = local.run(child, child_spec, per_run, progress, shared,
                                profiles_to=out.runs / f"{child['metadata']['name']}.profiles")
            durations.append(time.monotonic() - started)
            out.write_run(outcome.document)
            if options.history and (recorded := options.history.remember(
                    outcome.document, outcome.report.race_json if outcome.report else None)):
                progress.note(recorded)
            runs.append(outcome.document)
            made += 1
