"""Series for the history's tests: one configuration's runs a night apart, made from a real run
of study 001 (its Experiment as `esbench run` wrote it), with task `ranges` taking given medians."""

from __future__ import annotations

import copy
import json
from pathlib import Path

STUDY = Path(__file__).resolve().parents[2] / "examples" / "studies" / "001-range-queries-cpu" / "results" / "sweep"


def nightly(values: list[float]) -> list[dict]:
    template = json.loads((STUDY / "runs" / "period-search-versions-c0-r1.json").read_text())
    runs = []
    for night, value in enumerate(values):
        document = copy.deepcopy(template)
        document["metadata"]["name"] = f"nightly-{night}"
        document["metadata"]["labels"] = {}  # an Experiment of its own, not a sweep's run: its spec is its configuration
        for sweep_run in ("esbench.io/cell", "esbench.io/configuration"):
            document["metadata"]["annotations"].pop(sweep_run, None)
        document["status"]["raceId"] = document["status"]["results"]["raceId"] = f"race-{night}"
        document["status"]["startTime"] = f"2026-10-{night + 1:02d}T02:00:00Z"
        (task,) = [t for t in document["status"]["results"]["tasks"] if t["task"] == "ranges"]
        task["serviceTime"]["p50"] = value
        runs.append(document)
    return runs


def write_list(path: Path, documents: list[dict]) -> Path:
    """As `kubectl get esx -o json` writes them."""
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}))
    return path
