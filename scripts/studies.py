"""Runs the full-size seed studies (examples/studies/*/experiment-*.yaml) on this machine with
`esbench run`, one Experiment after the other, and writes their figures next to them:
results/<experiment>.json (the Experiment with its status, as the operator writes it) and
results/figures.md (`esbench show` of each, then `esbench compare` of them all).

A study's curves (curve-*.yaml: ExperimentSweeps of one node that vary one setting) run the same
way, cell by cell in the sweep's own order: results/<curve>/<run>.json, and a report with the
curve chart (`esbench report`) in results/<curve>/report.md.

    .venv/bin/python scripts/studies.py [STUDY ...]      # e.g. 001-range-queries-cpu

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

from esbench.api import models
from esbench.controller import grid, names

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "examples" / "studies"
ESBENCH = REPO / ".venv" / "bin" / "esbench"


def esbench(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run([str(ESBENCH), *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"},
                          cwd=cwd)
    if done.returncode != 0:
        raise SystemExit(f"esbench {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def run_experiment(study: str, experiment: Path, output: Path) -> str:
    started = time.monotonic()
    print(f"{study}: {experiment.name} ...", flush=True)
    esbench("run", str(experiment), "--output", str(output))
    print(f"{study}: {experiment.name} done in {time.monotonic() - started:.0f} s", flush=True)
    return str(output)


def run_curve(folder: Path, curve: Path) -> None:
    """Every run of the sweep, warm-up runs first, each as an Experiment of its own on a fresh node."""
    document = yaml.safe_load(curve.read_text())
    name = document["metadata"]["name"]
    plan = grid.plan(models.SweepSpec.model_validate(document["spec"]), name, "default")
    results = folder / "results" / curve.stem
    results.mkdir(parents=True, exist_ok=True)
    measured = []
    for run in plan.runs:
        run_name = names.sweep_run_name(name, run.cell.id, run.repetition, attempt=1)
        experiment = results / f"{run_name}.yaml"
        experiment.write_text(yaml.safe_dump({"apiVersion": models.API_VERSION, "kind": models.KIND,
                                              "metadata": {"name": run_name}, "spec": run.cell.spec}))
        output = run_experiment(folder.name, experiment, results / f"{run_name}.json")
        if run.cell in plan.cells:  # warm-up runs are not compared
            measured.append(output)
    # From the results folder: the report names each run by its file there, not by this machine's path.
    esbench("report", *(Path(m).name for m in measured), "--markdown", "report.md", "--title", f"{folder.name}: {name}",
            cwd=results)
    print(f"{folder.name}: {curve.stem} report in {results / 'report.md'}", flush=True)


def run_study(folder: Path) -> None:
    results = folder / "results"
    results.mkdir(exist_ok=True)
    for curve in sorted(folder.glob("curve-*.yaml")):
        run_curve(folder, curve)
    outputs = [run_experiment(folder.name, experiment, results / f"{experiment.stem}.json")
               for experiment in sorted(folder.glob("experiment-*.yaml"))]
    if not outputs:
        return
    figures = [f"# Figures of {folder.name}\n", "Written by scripts/studies.py; see README.md for what they mean.\n"]
    for output in outputs:
        figures.append(f"## {Path(output).stem}\n\n```\n{esbench('show', output)}```\n")
    if len(outputs) > 1:
        figures.append(f"## Comparison\n\n{esbench('compare', *outputs, '--format', 'markdown')}\n")
    (results / "figures.md").write_text("\n".join(figures))
    print(f"{folder.name}: figures in {results / 'figures.md'}", flush=True)


def main() -> None:
    wanted = sys.argv[1:] or sorted(p.name for p in STUDIES.iterdir()
                                    if list(p.glob("experiment-*.yaml")) or list(p.glob("curve-*.yaml")))
    for name in wanted:
        run_study(STUDIES / name)


if __name__ == "__main__":
    main()
