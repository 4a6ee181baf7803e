"""Every example Experiment is a valid spec that the runner can turn into a race."""

import json
from pathlib import Path

import pytest
import yaml

from esbench.api import models, validation
from esbench.cli import localsweep
from esbench.runner import race, rally
from scripts import studies

ROOT = Path(__file__).resolve().parents[2] / "examples"
# Studies: their Experiments (003's cluster-*.yaml and target.yaml); the studies' ExperimentSweeps
# (what make studies runs) are checked by the API server (tests/integration).
EXAMPLES = sorted(ROOT.glob("*.yaml")) + sorted(
    {*ROOT.glob("studies/*/*.yaml")} - {p for study in ROOT.glob("studies/*") for p in studies.sweeps(study)})
REPLICAS = {"indexing-knobs.yaml": 1}


def test_there_is_an_example_per_question():
    names = {p.name for p in EXAMPLES}
    assert {"quickstart.yaml", "indexing-knobs.yaml", "source-filtering.yaml", "range-queries.yaml",
            "codec-search.yaml", "codec-search-default.yaml", "geonames-rally-tracks.yaml"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_an_example_is_one_valid_experiment(path):
    (document,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert document["apiVersion"] == models.API_VERSION and document["kind"] == models.KIND
    assert document["metadata"]["name"]
    spec = models.ExperimentSpec.model_validate(document["spec"])
    assert race.spec_rejection(spec) is None  # the typed spec, back on the wire, passes the CRD again
    # An existing cluster's data nodes are counted live; one node is the least it can have.
    data_nodes = rally.data_node_count(spec.elasticsearch) if spec.elasticsearch else 1
    params = rally.track_params(spec, data_nodes)
    command = rally.race_command(spec, esrally=["esrally"], race_id="r", target_hosts="es:9200",
                                 params_file="p.json", client_options_file="c.json", track_path="/t")
    assert command[1] == "race"
    # Every example's replicas fit on its data nodes (indexing-knobs: 3 nodes, 1 replica; the
    # others: 1 node, 0 replicas), so each race waits for green, Rally's default.
    assert params["number_of_replicas"] == REPLICAS.get(path.name, 0)
    assert "cluster_health" not in params


def test_the_codec_pair_differs_only_in_codec_and_name():
    def load(name):
        return yaml.safe_load((EXAMPLES[0].parent / name).read_text())

    best, default = load("codec-search.yaml"), load("codec-search-default.yaml")
    assert (best["spec"]["index"].pop("codec"), default["spec"]["index"].pop("codec")) == ("best_compression", "default")
    assert best["spec"] == default["spec"]


@pytest.mark.parametrize("study", [p for p in sorted(ROOT.glob("studies/*")) if studies.builds(p)], ids=lambda p: p.name)
def test_a_studys_sweeps_restore_the_snapshots_its_builds_take(study):
    # A drift (a param changed in one file only) would not fail a race: it would build the index
    # again, under the sweep's own memory limit, which took 53 minutes for 002's.
    built = set().union(*(studies.snapshot_names(build) for build in studies.builds(study)))
    assert built
    for sweep in studies.sweeps(study):
        assert studies.snapshot_names(sweep) <= built, sweep.name
    # What make studies runs unasked restores only what it builds, so that it never builds an
    # index under a search sweep's limit.
    unasked = [path for path in studies.sweeps(study) if not studies.on_request(path)]
    unasked_builds = [path for path in unasked if path in studies.builds(study)]
    assert set().union(*map(studies.snapshot_names, unasked)) <= set().union(*map(studies.snapshot_names, unasked_builds))


def test_make_studies_builds_again_beside_the_snapshots_and_leaves_a_sweep_of_another_spec_as_committed(
        tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(studies, "esbench", lambda *args, **kwargs: calls.append(args) or "")
    monkeypatch.setenv("ESBENCH_SNAPSHOTS", str(tmp_path / "snapshots"))
    study = ROOT / "studies" / "002-best-compression-io"
    assert (study / "results" / "build" / "sweep.json").exists()
    studies.run_sweep(study, study / "build.yaml")  # where its committed results were made, not here
    assert calls == [("run", str(study / "build.yaml"), "--output",
                      str(tmp_path / "snapshots" / "studies" / study.name / "build"))]

    copy = tmp_path / "study"
    (copy / "results" / "sweep").mkdir(parents=True)
    document = yaml.safe_load((study / "sweep.yaml").read_text())
    (copy / "sweep.yaml").write_text(yaml.safe_dump(document))
    admitted = validation.admit(document, kind=models.SWEEP_KIND)
    committed = copy / "results" / "sweep" / localsweep.SWEEP_FILE
    committed.write_text(json.dumps(admitted))
    calls.clear()
    studies.run_sweep(copy, copy / "sweep.yaml")  # goes on where it stopped, then reports
    assert [call[0] for call in calls] == ["run", "report"]
    admitted["spec"]["repetitions"] += 1
    committed.write_text(json.dumps(admitted))
    calls.clear()
    studies.run_sweep(copy, copy / "sweep.yaml")
    assert calls == [] and "sweep.yaml left as committed: results/sweep holds it with another spec" in capsys.readouterr().out


def test_make_studies_runs_a_studys_verdict_and_what_is_on_request_with_the_builds_it_restores():
    def names(argument: str) -> list[str]:
        return [path.name for path in studies.chosen(argument)]

    assert names("002-best-compression-io") == ["build.yaml", "sweep.yaml"]
    assert names("002-best-compression-io/sweep-map.yaml") == ["build.yaml", "sweep-map.yaml"]
    assert names("002-best-compression-io/sweep-map-40kb.yaml") == ["build-40kb.yaml", "sweep-map-40kb.yaml"]
    assert names("001-range-queries-cpu") == ["sweep.yaml"]
    assert names("001-range-queries-cpu/sweep-integer-range.yaml") == ["sweep-integer-range.yaml"]
    with pytest.raises(SystemExit, match="not a sweep of 001-range-queries-cpu"):
        studies.chosen("001-range-queries-cpu/sweep-nope.yaml")
