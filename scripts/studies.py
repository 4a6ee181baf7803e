"""Runs the seed studies' sweeps (examples/studies/*/build*.yaml, sweep*.yaml, curve-*.yaml) at full size on
this machine with `esbench run`, and writes their figures beside them: results/<file>/ holds the
sweep as `esbench run` leaves it (sweep.json with its status: comparison, contrasts, gates; runs/,
each run's Experiment with its status) and report.md (`esbench report` of the runs: the verdicts
with their intervals, every run charted).

    .venv/bin/python scripts/studies.py [STUDY | STUDY/FILE ...]    # e.g. 001-range-queries-cpu

A study runs its verdict and the builds it restores; a sweep beyond it (a map, a re-test), marked
`esbench.io/studies: on-request` in its metadata, runs when named as STUDY/FILE, after the
builds whose snapshots it restores: each study's verdict fits its time (002 two hours, the others one), its
further sweeps add theirs (its README's "Run it"). Run again, a sweep goes on where it stopped. A sweep that one offline node cannot run (more than
one node, or a track that needs what Maven Central's integ-test-zip lacks) is left out with its
reason: it runs on Kubernetes (`kubectl apply -f`).

A build whose results are committed runs again into a folder beside the snapshots it makes (its
committed results were made where their snapshots are): on a machine that has the snapshots it
is done at once. A sweep committed with another spec than its file admits today (a field the API
gained since, written with its default) is left as committed: going on would mix runs of two specs.

Needs root (each node runs in a memory cgroup limited to the spec's memory limit) and a quiet
machine: the studies measure node CPU and I/O, which anything else running would distort.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from esbench.api import models, validation
from esbench.cli import localsweep
from esbench.localnode import localcluster
from esbench.planning import grid
from esbench.runner import indexreuse, race, rally

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "examples" / "studies"
ESBENCH = REPO / ".venv" / "bin" / "esbench"
# Bundled tracks that need modules the integ-test-zip has not (its note lists them).
NEEDS_FULL_DISTRIBUTION = {"esql-stored-fields": "ES|QL"}
# The annotation of a sweep that runs only when named, and its value.
ON_REQUEST = ("esbench.io/studies", "on-request")
# A sweep's verdicts are results, not failures of this script.
FINISHED = {0, localsweep.EXIT_GATE_FAILED, localsweep.EXIT_RUNS_FAILED}


def esbench(*args: str, cwd: Path | None = None, accept: set[int] = frozenset({0})) -> str:
    done = subprocess.run([str(ESBENCH), *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
                          cwd=cwd)
    if done.returncode not in accept:
        raise SystemExit(f"esbench {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def not_here(spec: models.SweepSpec) -> str | None:
    """Why one offline node cannot run this sweep, or None."""
    template = models.ExperimentSpec.model_validate(spec.template)
    nodes = template.elasticsearch.nodes()
    if nodes > 1:
        return f"{nodes} nodes (a local run has one)"
    needs = NEEDS_FULL_DISTRIBUTION.get(template.workload.track)
    return f"track {template.workload.track} needs {needs}, which the offline distribution lacks" if needs else None


def run_sweep(folder: Path, path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    spec = models.SweepSpec.model_validate(document["spec"])
    reason = not_here(spec)
    if reason:
        print(f"{folder.name}: {path.name} left out: {reason}; run it on Kubernetes", flush=True)
        return
    results = folder / "results"
    output = results / path.stem
    if path in builds(folder) and (output / localsweep.SWEEP_FILE).exists():
        output = localcluster.snapshot_root() / "studies" / folder.name / path.stem
    elif made_with_another_spec(document, output):
        print(f"{folder.name}: {path.name} left as committed: {output.relative_to(folder)} holds it with another spec",
              flush=True)
        return
    started = time.monotonic()
    print(f"{folder.name}: {path.name} -> {output} ...", flush=True)
    esbench("run", str(path), "--output", str(output), accept=FINISHED)
    print(f"{folder.name}: {path.name} done in {time.monotonic() - started:.0f} s", flush=True)
    if not output.is_relative_to(results):
        return
    # The report of a sweep's folder says what the sweep said (its status.comparison). From the results
    # folder: the report names the runs by their files there, not by this machine's path.
    esbench("report", path.stem, "--markdown", f"{path.stem}/report.md", "--title", f"{folder.name}: {path.name}",
            cwd=results)
    print(f"{folder.name}: report in {(output / 'report.md').relative_to(folder)}", flush=True)


def made_with_another_spec(document: dict, output: Path) -> bool:
    try:
        localsweep.Folder(output).read(validation.admit(document, kind=models.SWEEP_KIND))
    except localsweep.FolderInUse:
        return True
    return False


def builds(folder: Path) -> list[Path]:
    """The study's sweeps that make the snapshots (workload.reuseIndex) its other sweeps restore."""
    return sorted(folder.glob("build*.yaml"))


def sweeps(folder: Path) -> list[Path]:
    """Every sweep of the study (the tests read the same files), its builds first."""
    return [*builds(folder), *sorted(folder.glob("sweep*.yaml")), *sorted(folder.glob("curve-*.yaml"))]


def snapshot_names(sweep: Path) -> set[str]:
    """The workload.reuseIndex snapshots the sweep's cells restore (or build), as the runner names them."""
    document = yaml.safe_load(sweep.read_text())
    spec = models.SweepSpec.model_validate(document["spec"])
    result = set()
    for cell in grid.cells(spec, document["metadata"]["name"], "default"):
        experiment = models.ExperimentSpec.model_validate(cell.spec)
        if experiment.workload.reuse_index:
            params = rally.track_params(experiment, 1)
            name, _ = indexreuse.name_snapshot(experiment.workload, params, experiment.elasticsearch.version,
                                               race.TRACKS_DIR)
            result.add(name)
    return result


def on_request(path: Path) -> bool:
    annotations = (yaml.safe_load(path.read_text()).get("metadata") or {}).get("annotations") or {}
    return annotations.get(ON_REQUEST[0]) == ON_REQUEST[1]


def chosen(argument: str) -> list[Path]:
    """What an argument runs: STUDY, its sweeps but those on request; STUDY/FILE, the study's
    builds that take the snapshots it restores, then that file."""
    name, _, file = argument.partition("/")
    folder = STUDIES / name
    if not file:
        return [path for path in sweeps(folder) if not on_request(path)]
    path = folder / file
    if path not in sweeps(folder):
        raise SystemExit(f"{argument}: not a sweep of {name}: {', '.join(p.name for p in sweeps(folder))}")
    needed = snapshot_names(path)
    return [*(build for build in builds(folder) if build != path and snapshot_names(build) & needed), path]


def main() -> None:
    wanted = sys.argv[1:] or sorted(p.name for p in STUDIES.iterdir() if p.is_dir() and sweeps(p))
    for argument in wanted:
        for path in chosen(argument):
            run_sweep(path.parent, path)


if __name__ == "__main__":
    main()
