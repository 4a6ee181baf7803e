"""Each offline-runnable seed study (examples/studies/) runs here for real at a reduced size,
asserting that the measurement it depends on is present and sane. Full sizes: `make studies`."""

from __future__ import annotations

import copy
import itertools

import pytest
import yaml

from esbench.analysis import contrasts
from esbench.api import models
from tests.runner.elasticsearch import LATEST
from tests.support.result_files import FIXTURES

STUDIES = FIXTURES.parents[2] / "examples" / "studies"
QUERIES = ["match", "match-terms", "ranges", "integer-range", "decades-and-edges", "terms-only"]


def study_spec(path: str, **workload_changes) -> dict:
    (document,) = [d for d in yaml.safe_load_all((STUDIES / path).read_text()) if d]
    spec = copy.deepcopy(document["spec"])
    for field, value in workload_changes.items():
        spec["workload"][field] = value
    return spec


def test_001_node_cpu_per_query_form_at_a_fixed_rate(clusters, race):
    """Reduced: 3000 people, 20 requests/s for 5 s per form (the study: 1M, 6/s for 60 s). A
    higher rate than the seed's keeps Rally's throughput median within 5 % of the target over
    a short period (it counts requests in 1 s buckets)."""
    spec = study_spec("001-range-queries-cpu/experiment-8-7.yaml",
                      trackParams={"doc_count": 3000},
                      load={"targetThroughput": 20, "timePeriodSeconds": 5, "warmupTimePeriodSeconds": 1})
    assert spec["elasticsearch"]["version"] == LATEST
    cluster = clusters.get(LATEST)
    run = race(spec, cluster.url)
    assert run.exit_code == 0, run.output
    results = run.report.results
    tasks = {t.task: t for t in results.tasks}
    for name in QUERIES:
        assert tasks[name].throughput.median == pytest.approx(20, rel=0.05), name
        assert tasks[name].resources.process_cpu_percent > 0, name
    for earlier, later in itertools.pairwise(sorted((tasks[n] for n in QUERIES), key=lambda t: t.start)):
        assert earlier.end <= later.start
    settings = cluster.client.get("period-search/_settings")["period-search"]["settings"]["index"]
    assert settings["queries"]["cache"]["enabled"] == "false"
    # The study's answer: each period form against the query without a period, from one race.
    workload = models.ExperimentSpec.model_validate(spec).workload
    (contrast,) = contrasts.to_wire([results], workload)
    cpu = next(r for r in contrast["rows"] if r["metric"] == "process_cpu.percent")
    assert [c["cell"] for c in cpu["cells"]] == ["match-terms", "ranges", "integer-range", "decades-and-edges",
                                                 "terms-only"]
    assert "missingTasks" not in contrast
