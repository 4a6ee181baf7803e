"""#39's proof on real runs (docs/history.md): a nightly series of one configuration in which
Elasticsearch gets slower from a known night on is flagged at that night once a second run
confirms it, and an A/A series of the same length raises nothing.

Each night is `esbench run bench/history-nightly.yaml --es-home HOME` (a real local node, real
esrally), recorded in a history of the series' own, then `esbench history check`; when that says
"suspected" (exit 3), the night is run again at once and checked again, as a nightly job would.
The regression is a build of the same version that runs with the JIT's first tier only
(`-XX:TieredStopAtLevel=1` in the distribution's config/jvm.options.d): what a slower build
looks like to a benchmark, while the spec, and so the configuration's series, stay the same.
Writes OUT/{a-a,regression}/ (each night's result, the history, its page) and OUT/summary.md.

Usage: .venv/bin/python bench/history_regression.py [OUT]   (root; about 25 min on 2 cores)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "bench" / "history-nightly.yaml"
NIGHTS = 10
SLOW_FROM = 6  # the first slow night (0-based)
TASK, METRIC = "paginate-full-source", "service_time.p50"


def homes(folder: Path) -> dict[bool, Path]:
    """The distribution as released, and the same one with only the JIT's first tier."""
    from esbench.localnode import localcluster

    version = yaml.safe_load(SPEC.read_text())["spec"]["elasticsearch"]["version"]
    found = {}
    for slow in (False, True):
        home = localcluster.unpack(localcluster.distribution_zip(version), folder / ("slow" if slow else "released"))
        if slow:
            (home / "config" / "jvm.options.d").mkdir(exist_ok=True)
            (home / "config" / "jvm.options.d" / "regression.options").write_text("-XX:TieredStopAtLevel=1\n")
        found[slow] = home
    return found


def esbench(*args: str, history: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "ESBENCH_HISTORY": str(history)}
    return subprocess.run([sys.executable, "-m", "esbench.cli", *args], env=environment, capture_output=True,
                          text=True, check=False)


def night(folder: Path, name: str, home: Path) -> float:
    result = folder / f"{name}.json"
    done = esbench("run", str(SPEC), "--es-home", str(home), "-o", str(result), history=folder / "history.sqlite")
    if done.returncode != 0:
        raise SystemExit(f"{name}: esbench run failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    (task,) = [t for t in json.loads(result.read_text())["status"]["results"]["tasks"] if t["task"] == TASK]
    return task["serviceTime"]["p50"]


def check(folder: Path) -> tuple[int, dict]:
    done = esbench("history", "check", "--metric", METRIC, "--format", "json", history=folder / "history.sqlite")
    if done.returncode not in (0, 3, 4):
        raise SystemExit(f"history check failed ({done.returncode}): {done.stdout}{done.stderr}")
    (series,) = [c for c in json.loads(done.stdout) if c["subject"] == TASK]
    return done.returncode, series


def series(out: Path, name: str, regression: bool, found: dict[bool, Path]) -> list[str]:
    folder = out / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    lines = []
    for number in range(NIGHTS):
        slow = regression and number >= SLOW_FROM
        values = [night(folder, f"night-{number:02d}", found[slow])]
        code, state = check(folder)
        if code == 3:  # suspected: confirmed or cleared by a second run of the same night
            values.append(night(folder, f"night-{number:02d}-again", found[slow]))
            code, state = check(folder)
        lines.append(f"| {name} | {number} | {'slow' if slow else 'released'} | "
                     f"{' then '.join(f'{v:.0f} ms' for v in values)} | {state['state']}"
                     f"{', reported now' if state['reportedNow'] else ''} | {code} |")
        print(lines[-1], flush=True)
    configuration = state["configuration"]
    esbench("history", "show", configuration, "--task", TASK, "--metric", METRIC, "--html",
            str(folder / "history.html"), history=folder / "history.sqlite")
    return lines


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "bench" / "results" / "history-regression")
    found = homes(out / "distributions")
    lines = ["| series | night | build | paginate-full-source service p50 | check | exit |", "|---|---|---|---|---|---|"]
    lines += series(out, "a-a", False, found)
    lines += series(out, "regression", True, found)
    shutil.rmtree(out / "distributions")
    (out / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
