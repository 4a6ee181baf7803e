"""Each task's requests as Rally measured them, which esrally_launcher.py writes at the race's end
(race.json keeps only their percentiles), and the steady state found in them."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from esbench.analysis import steadystate
from esbench.api import models

FILE = "samples.json.gz"
ENVIRONMENT = "ESBENCH_SAMPLES_FILE"  # where esrally_launcher.py writes them
# What reading a samples file cut short or not the launcher's raises.
UNREADABLE = (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError)
LAG = "schedule_lag"  # esrally_launcher.py's LAG: each request's latency less its service time (ms)


def series(found: dict[str, Any]) -> steadystate.Series:
    """One figure's samples, in time order (several clients' requests interleave)."""
    ordered = sorted(zip(found["seconds"], found["values"], strict=True))
    return steadystate.Series(seconds=[s for s, _ in ordered], values=[v for _, v in ordered], unit=found.get("unit"))


def read(path: Path) -> dict[str, dict[str, steadystate.Series]]:
    """Per task, its figures' samples (service_time, latency, throughput, schedule_lag) by name."""
    with gzip.open(path, "rt") as file:
        tasks = json.load(file)["tasks"]
    return {task: {name: series(found) for name, found in figures.items()} for task, figures in tasks.items()}


def lag(path: Path, task: str) -> steadystate.Series | None:
    """The task's requests' lag behind their schedule; None when none was kept."""
    try:
        return read(path).get(task, {}).get(LAG)
    except UNREADABLE:
        return None


def attach_steady_states(summary: models.Results, path: Path) -> str | None:
    """Each task's steady state into its result, or why none was looked for (no samples: none kept
    by the launcher, or none measured); returns that reason when some task has it."""
    try:
        tasks = read(path)
    except FileNotFoundError:
        tasks, problem = {}, f"no request samples from esrally ({path.name} missing)"
    except UNREADABLE as e:
        tasks, problem = {}, f"the request samples in {path.name} cannot be read ({type(e).__name__}: {e})"
    else:
        problem = "no measured requests among the samples"
    missing = []
    for task in summary.tasks:
        figures = tasks.get(task.task, {})
        if "service_time" in figures:
            task.steady_state = steadystate.summarize(figures["service_time"], figures.get("throughput"))
        else:
            task.steady_state = models.SteadyState(reached=False, samples=0, problem=problem)
            missing.append(task.task)
    return f"{problem}: no steady state for {', '.join(missing)}" if missing else None
