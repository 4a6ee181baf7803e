"""The history without a server: records of finished runs, the SQLite store, and `esbench
history` over series with and without a regression."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from esbench.api import models
from esbench.cli.main import main
from esbench.history import records
from esbench.history.localstore import LocalStore, UnknownConfiguration
from esbench.planning import manifests
from tests.support.history import STUDY, nightly, write_list


def _run(cell: str, repetition: int) -> dict:
    return json.loads((STUDY / "runs" / f"period-search-versions-{cell}-r{repetition}.json").read_text())


def test_the_runs_of_one_cell_share_a_configuration_and_the_cells_differ():
    ids = {cell: {records.record(_run(cell, r)).configuration for r in range(1, 6)} for cell in ("c0", "c1")}
    assert len(ids["c0"]) == len(ids["c1"]) == 1
    assert ids["c0"] != ids["c1"]


def test_a_sweeps_runs_on_its_shared_cluster_stay_in_their_cells_series_from_one_sweep_to_the_next():
    """On Kubernetes a run on the sweep's shared cluster names that cluster (NAME-g0) in its spec in
    place of the cell's elasticsearch: each night's sweep would otherwise start a series of its own."""
    measured_alone = _run("c0", 1)

    def on_shared_cluster(sweep: str) -> dict:
        owner = manifests.Sweep(sweep, "default", "uid", models.SweepSpec(template=measured_alone["spec"]))
        run = manifests.sweep_run_manifest(owner, "c0", "template", measured_alone["spec"], 1, 1, f"{sweep}-g0")
        assert "elasticsearch" not in run["spec"]
        run["metadata"]["annotations"]["kopf.zalando.org/last-handled-configuration"] = "{}"
        # As the operator hands it to the results store.
        recorded = manifests.as_recorded({**measured_alone, "metadata": run["metadata"], "spec": run["spec"]})
        assert list(recorded["metadata"]["annotations"]) == ["esbench.io/cell", "esbench.io/configuration"]
        return recorded

    tonight, tomorrow = (records.record(on_shared_cluster(sweep)) for sweep in ("nightly-29929853", "nightly-29931293"))
    assert tonight.configuration == tomorrow.configuration == records.record(measured_alone).configuration


def test_how_long_a_run_may_take_is_not_part_of_its_configuration():
    document = _run("c0", 1)
    longer = copy.deepcopy(document)
    longer["spec"]["lifecycle"] = {"raceTimeoutSeconds": 99999}
    other_version = copy.deepcopy(document)
    other_version["spec"]["elasticsearch"]["version"] = "9.0.0"
    assert records.configuration_id(longer["spec"]) == records.configuration_id(document["spec"])
    assert records.configuration_id(other_version["spec"]) != records.configuration_id(document["spec"])


def test_a_record_holds_every_figure_of_the_run():
    record = records.record(_run("c0", 2))
    assert record.race_id == _run("c0", 2)["status"]["raceId"]
    assert (record.sweep, record.cell, record.repetition) == ("period-search-versions", "c0", 2)
    by_key = {(p.subject, p.metric): p for p in record.points}
    ranges = next(t for t in record.document["status"]["results"]["tasks"] if t["task"] == "ranges")
    assert by_key["ranges", "service_time.p50"].value == ranges["serviceTime"]["p50"]
    assert by_key["ranges", "service_time.p50"].unit == "ms"
    assert ("cluster", "store_size") in by_key


def test_failed_and_warm_up_runs_are_not_recorded():
    failed = _run("c0", 1)
    failed["status"].pop("results")
    failed["status"]["phase"] = "Failed"
    failed_with_figures = _run("c0", 1)
    failed_with_figures["status"].update(phase="Failed", reason="RaceErrors")
    warm_up = _run("c0", 1)
    warm_up["metadata"]["labels"]["esbench.io/cell"] = "w0"
    with pytest.raises(records.NotRecordable, match="no results"):
        records.record(failed)
    with pytest.raises(records.NotRecordable, match="phase Failed, not Succeeded"):
        records.record(failed_with_figures)
    with pytest.raises(records.NotRecordable, match="warm-up"):
        records.record(warm_up)


def test_a_race_is_recorded_once_and_its_series_come_back_in_time_order(tmp_path):
    store = LocalStore(tmp_path / "history.sqlite")
    runs = nightly([10.0, 12.0, 11.0])
    for document in reversed(runs):
        assert store.add(records.record(document))
    assert not store.add(records.record(runs[0]))
    configuration = records.record(runs[0]).configuration
    assert [p.value for p in store.series(configuration, "ranges", "service_time.p50")] == [10.0, 12.0, 11.0]
    ((summary),) = store.configurations()
    assert (summary.races, summary.first, summary.last, summary.last_experiment) == (
        3, "2026-10-01T02:00:00Z", "2026-10-03T02:00:00Z", "nightly-2")
    assert "ranges" in store.subjects(configuration)
    assert store.resolve(configuration[:6]) == configuration
    with pytest.raises(UnknownConfiguration, match="no configuration"):
        store.resolve("zz")


def _history(tmp_path: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["history", "--store", str(tmp_path / "history.sqlite"), *args])
    assert result.exit_code == 0, result.output
    return result.output


def _write(folder: Path, documents: list[dict]) -> Path:
    folder.mkdir()
    return write_list(folder / "runs.json", documents)


def test_history_finds_a_regression_at_the_run_it_began_and_nothing_in_an_a_a_series(tmp_path):
    rng = np.random.default_rng(11)
    steady = list(20 * rng.lognormal(0, 0.08, 12))
    regressed = nightly(steady[:7] + [v * 1.4 for v in steady[7:]])
    added = _history(tmp_path, "add", str(_write(tmp_path / "a", regressed)))
    assert "12 race(s) recorded, 0 recorded before" in added
    configuration = records.record(regressed[0]).configuration
    assert configuration in _history(tmp_path, "list")
    shown = json.loads(_history(tmp_path, "show", configuration[:8], "--task", "ranges", "--format", "json"))
    ((series),) = shown["series"]
    assert [(c["index"], c["raceId"]) for c in series["changePoints"]] == [(7, "race-7")]
    assert series["changePoints"][0]["changePercent"] == pytest.approx(40, abs=10)
    assert "regression +" in _history(tmp_path, "show", configuration[:8], "--task", "ranges")

    other = tmp_path / "aa"
    other.mkdir()
    a_a = nightly(steady)
    for document in a_a:
        document["spec"]["workload"]["trackParams"] = {"seed": 99}  # another configuration
        document["status"]["raceId"] += "-aa"
    _history(other, "add", str(_write(other / "in", a_a)))
    shown = json.loads(_history(other, "show", records.record(a_a[0]).configuration, "--task", "ranges",
                                "--format", "json"))
    assert shown["series"][0]["changePoints"] == []


def test_adding_a_sweep_folder_records_its_measured_runs_and_the_sweep_and_again_adds_no_race(tmp_path):
    first = _history(tmp_path, "add", str(STUDY))
    assert "10 race(s) recorded, 0 recorded before, 0 skipped, 1 sweep(s)" in first
    assert "10 recorded before" in _history(tmp_path, "add", str(STUDY))
    (sweep,) = LocalStore(tmp_path / "history.sqlite").sweeps()
    assert sweep["status"]["comparison"] == json.loads((STUDY / "sweep.json").read_text())["status"]["comparison"]


def test_a_run_is_remembered_with_rallys_race_json_and_a_store_that_fails_fails_no_run(tmp_path):
    store = LocalStore(tmp_path / "history.sqlite")
    race_json = {"rally-version": "2.13.0", "results": {"op_metrics": []}}
    assert store.remember(_run("c0", 3), race_json).startswith("recorded in the history: configuration ")
    with sqlite3.connect(store.path) as connection:
        (stored,) = connection.execute("SELECT race_json FROM races").fetchone()
    assert json.loads(stored) == race_json
    failed = _run("c0", 4)
    failed["status"].pop("results")
    assert store.remember(failed) is None
    (tmp_path / "file").write_text("")
    unwritable = LocalStore(tmp_path / "file" / "history.sqlite")  # its folder is a file
    assert unwritable.remember(_run("c0", 3)).startswith(f"not recorded in the history {unwritable.path}")


def test_the_history_page_charts_each_series_and_lists_its_change_points(tmp_path):
    rng = np.random.default_rng(5)
    steady = list(20 * rng.lognormal(0, 0.05, 10))
    regressed = nightly(steady[:6] + [v * 1.5 for v in steady[6:]])
    _history(tmp_path, "add", str(_write(tmp_path / "in", regressed)))
    configuration = records.record(regressed[0]).configuration
    written = _history(tmp_path, "show", configuration[:8], "--task", "ranges", "--html", str(tmp_path / "h.html"))
    assert "history page:" in written
    page = (tmp_path / "h.html").read_text()
    assert page.count('src="data:image/svg+xml;base64,') == 1
    assert "<td>2026-10-07T02:00:00Z</td><td>nightly-6</td><td>regression</td>" in page
    assert "Every run (10)" in page and "period-search" in page  # the runs, and the spec that was run


def _check(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["history", "--store", str(tmp_path / "history.sqlite"), "check", *args])
    return result.exit_code, result.output


STEADY = [20.1, 19.6, 20.4, 20.0, 19.8, 20.3, 20.2, 19.7, 20.0, 20.5]


def test_one_bad_run_is_suspected_and_a_normal_run_after_it_clears_it(tmp_path):
    runs = nightly([*STEADY, 29.0, 20.1])
    _history(tmp_path, "add", str(_write(tmp_path / "bad", runs[:11])))
    code, text = _check(tmp_path)
    assert code == 3, text
    assert "ranges service_time.p50: +44" in text and "from race race-10" in text and "suspected" in text
    _history(tmp_path, "add", str(_write(tmp_path / "again", runs[11:])))
    code, text = _check(tmp_path)
    assert (code, text.splitlines()[0].endswith("0 with a regression at its end")) == (0, True), text


def test_a_regression_that_holds_on_the_next_run_is_confirmed_and_reported_once(tmp_path):
    runs = nightly([*STEADY, 29.0, 28.5])
    _history(tmp_path, "add", str(_write(tmp_path / "in", runs)))
    configuration = records.record(runs[0]).configuration
    code, text = _check(tmp_path, "--format", "prometheus")
    assert code == 4, text
    assert (f'esbench_regression_state{{configuration="{configuration}",task="ranges",metric="service_time.p50"}} 2'
            in text.splitlines())
    assert f'esbench_regression_state{{configuration="{configuration}",task="ranges",metric="throughput.median"}} 0' in text
    code, text = _check(tmp_path, configuration[:6])
    assert code == 0 and "confirmed, reported before" in text


def test_a_steady_series_and_an_improvement_raise_nothing(tmp_path):
    _history(tmp_path, "add", str(_write(tmp_path / "in", nightly([*STEADY, 14.0, 14.2, 13.9]))))
    code, text = _check(tmp_path, "--format", "json")
    assert code == 0, text
    assert {c["state"] for c in json.loads(text)} == {"steady"}


def test_the_html_report_links_the_history_page_of_each_configuration_with_several_races(tmp_path):
    runs = nightly([20.0, 21.0, 19.5, 20.5, 30.0, 31.0, 30.5, 29.5])
    _history(tmp_path, "add", str(_write(tmp_path / "nights", runs)))
    alone = nightly([25.0])[0]
    alone["spec"]["workload"]["trackParams"] = {"seed": 7}  # a configuration of one race: no history yet
    alone["status"]["raceId"] = alone["status"]["results"]["raceId"] = "race-alone"
    _history(tmp_path, "add", str(_write(tmp_path / "alone", [alone])))
    (tmp_path / "last.json").write_text(json.dumps(runs[-1]))
    (tmp_path / "other.json").write_text(json.dumps(alone))

    report = tmp_path / "out" / "report.html"
    report.parent.mkdir()
    made = CliRunner().invoke(main, ["report", str(tmp_path / "last.json"), str(tmp_path / "other.json"),
                                     "--html", str(report)], env={"ESBENCH_HISTORY": str(tmp_path / "history.sqlite")})
    assert made.exit_code == 0, made.output
    assert "(+ 1 history page(s))" in made.output
    configuration = records.record(runs[0]).configuration
    page = (report.parent / f"report.history-{configuration}.html").read_text()
    html = report.read_text()
    assert f'<a href="report.history-{configuration}.html">{configuration}: 8 races (nightly-7 of this report)</a>' in html
    assert "race-7" in page and "data:image/svg+xml" in page
    assert records.record(alone).configuration not in html
