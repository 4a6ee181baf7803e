"""`esbench sweep`: a sweep's cells and comparison, from `kubectl get esxs NAME -o yaml` output (made here;
tests/integration/test_sweeps.py reads a status the operator wrote, by name from the kube context)."""

from __future__ import annotations

import json

import yaml
from rich.console import Console

from esbench.analysis import contrasts, stats
from esbench.api import models
from esbench.cli import rendering
from esbench.runner.results import summarize
from tests.support.experiments import successful_race_json


def sweep_document() -> dict:
    def results(throughput):
        summary = summarize(successful_race_json())
        summary.tasks[0].throughput.median = throughput
        summary.tasks[0].service_time.p50 *= 1000 / throughput  # an exploratory question with an answer
        return summary

    rows = stats.compare_cells({"c0": [results(t) for t in (1000, 1010, 990)],
                                "c1": [results(t) for t in (800, 805, 795)]}, "c0",
                               primary=[("index-append", "throughput.median")])
    return {
        "apiVersion": "esbench.io/v1alpha1", "kind": "ExperimentSweep", "metadata": {"name": "codec"},
        "spec": {"template": {}},
        "status": {
            "phase": "Succeeded", "reason": "Completed", "message": "All 6 runs succeeded", "baseline": "c0",
            "progress": {"summary": "6/6", "cells": 2, "runs": 6, "succeeded": 6},
            "cells": [{"id": "c0", "label": 'index.codec="default"', "baseline": True, "succeeded": 3,
                       "cluster": "codec-g0"},
                      {"id": "c1", "label": 'index.codec="best_compression"', "succeeded": 3, "cluster": "codec-g0",
                       "stopped": "primary intervals at most 3.2 pp wide after 3 runs, within the target 10 pp"}],
            "comparison": stats.to_wire(rows),
            "corrections": stats.corrections(rows),
            "timing": {"runs": 6, "runSeconds": 95.0, "taskSeconds": 3.2, "overheadSeconds": 91.8},
            "gates": [{"task": "index-append", "metric": "throughput.median", "maxRegressionPercent": 5,
                       "result": "Failed", "message": "significant regression beyond 5%: c1 -20.0%"}],
        },
    }


def test_sweep_prints_cells_comparison_and_gates(esbench, tmp_path):
    path = tmp_path / "codec.yaml"
    path.write_text(yaml.safe_dump(sweep_document()))
    run = esbench("sweep", str(path))
    assert run.exit_code == 0, run.stderr
    assert "codec: Succeeded (Completed) 6/6 runs finished" in run.stdout
    assert 'index.codec="best_compression"' in run.stdout and "c0 (baseline)" in run.stdout
    text = " ".join(run.stdout.split())
    assert "a run (median of 6): 95 s, of which Rally's tasks 3 s and overhead 92 s (97 %)" in text
    assert "primary intervals at most 3.2 pp wide after 3 runs" in text  # why c1 got no further round
    assert "Comparison against c0 (corrected for many comparisons: primary: Holm over 1; exploratory: " \
           "Benjamini-Hochberg over" in text
    # The contender's change on index-append throughput, its interval and its verdict, on one line.
    line = next(line for line in run.stdout.splitlines() if "throughput.median" in line)
    assert "-20.0 % [-21.6, -18.4]" in line and "<.001/<.001" in line and "Worse" in line
    assert "gate index-append throughput.median (at most 5% worse): Failed" in run.stdout


def test_sweep_json_is_the_status_comparison(esbench, tmp_path):
    document = sweep_document()
    path = tmp_path / "codec.json"
    path.write_text(json.dumps(document))
    run = esbench("sweep", str(path), "--format", "json")
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout) == document["status"]["comparison"]


def test_a_file_without_a_sweep_is_refused(esbench, tmp_path):
    path = tmp_path / "experiment.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "esbench.io/v1alpha1", "kind": "Experiment", "metadata": {}}))
    run = esbench("sweep", str(path))
    assert run.exit_code == 1 and "holds no ExperimentSweep" in run.stderr


def test_sweep_prints_each_cells_contrasts_over_its_runs(esbench, tmp_path):
    document = sweep_document()
    runs = [summarize(successful_race_json()) for _ in range(3)]
    workload = models.Workload(track="smoke", contrasts=[
        models.Contrast(name="queries", baseline="match-all", variants=["term-category"], metrics=["service_time.p50"])])
    document["status"]["contrasts"] = [{"cell": "c0", **c} for c in contrasts.to_wire(runs, workload)]
    path = tmp_path / "codec.yaml"
    path.write_text(yaml.safe_dump(document))
    run = esbench("sweep", str(path))
    assert run.exit_code == 0, run.stderr
    text = " ".join(run.stdout.split())
    assert "c0: contrast queries, against task match-all over the cell's runs" in text
    line = next(line for line in run.stdout.splitlines() if "term-category" in line)
    # Three identical runs each: a difference that never varied, not a certain verdict.
    assert "-16.4 %" in line and "InsufficientData" in line


def test_the_answer_fits_100_columns_with_the_primary_questions_first_and_the_rest_folded(esbench, tmp_path):
    """The primary question and the exploratory ones that found a difference, whole at 100 columns
    (numbers never fold); the exploratory comparisons without one are counted, and --all shows them."""
    document = sweep_document()
    rows = document["status"]["comparison"]
    undecided = [r for r in rows if r.get("family") != "primary"
                 and not any(c["verdict"] in ("Better", "Worse") for c in r["cells"])]
    assert undecided and len(undecided) < len(rows) - 1  # some exploratory rows have a verdict
    console = Console(width=100, record=True)
    with console.capture() as captured:
        rendering.print_sweep(console, document)
    lines = captured.get().splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 100
    table = lines[:next(n for n, line in enumerate(lines) if line.startswith("baseline, contender:"))]
    first = next(n for n, line in enumerate(table) if "throughput.median" in line)
    assert "-20.0 % [-21.6, -18.4]" in table[first] and "Worse" in table[first]
    assert all("throughput.median" not in line for line in table[first + 1:])  # the primary question first
    assert sum("Better" in line or "Worse" in line for line in table) == len(rows) - len(undecided)
    assert f"{len(undecided)} exploratory comparison(s) without a Better or Worse are not shown" in " ".join(lines)
    path = tmp_path / "codec.yaml"
    path.write_text(yaml.safe_dump(document))
    every = esbench("sweep", str(path), "--all")
    assert every.exit_code == 0 and "not shown" not in every.stdout
    assert all(r["metric"] in every.stdout for r in undecided)
