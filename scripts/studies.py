"""Runs the full-size seed studies (examples/studies/*/experiment-*.yaml) on this machine with
`esbench run`, one Experiment after the other, and writes their figures next to them:
results/<experiment>.json (the Experiment with its status, as the operator writes it) and
results/figures.md (`esbench show` of each, then `esbench compare` of them all).

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

REPO = Path(__file__).resolve().parents[1]
STUDIES = REPO / "examples" / "studies"
ESBENCH = REPO / ".venv" / "bin" / "esbench"


def esbench(*args: str) -> str:
    done = subprocess.run([str(ESBENCH), *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    if done.returncode != 0:
        raise SystemExit(f"esbench {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def run_study(folder: Path) -> None:
    results = folder / "results"
    results.mkdir(exist_ok=True)
    outputs = []
    for experiment in sorted(folder.glob("experiment-*.yaml")):
        output = results / f"{experiment.stem}.json"
        started = time.monotonic()
        print(f"{folder.name}: {experiment.name} ...", flush=True)
        esbench("run", str(experiment), "--output", str(output))
        print(f"{folder.name}: {experiment.name} done in {time.monotonic() - started:.0f} s", flush=True)
        outputs.append(str(output))
    figures = [f"# Figures of {folder.name}\n", "Written by scripts/studies.py; see README.md for what they mean.\n"]
    for output in outputs:
        figures.append(f"## {Path(output).stem}\n\n```\n{esbench('show', output)}```\n")
    if len(outputs) > 1:
        figures.append(f"## Comparison\n\n{esbench('compare', *outputs, '--format', 'markdown')}\n")
    (results / "figures.md").write_text("\n".join(figures))
    print(f"{folder.name}: figures in {results / 'figures.md'}", flush=True)


def main() -> None:
    wanted = sys.argv[1:] or sorted(p.name for p in STUDIES.iterdir() if list(p.glob("experiment-*.yaml")))
    for name in wanted:
        run_study(STUDIES / name)


if __name__ == "__main__":
    main()
