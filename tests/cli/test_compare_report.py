"""`esbench compare` and `esbench report` on real result files (made from the race.json
fixtures), on Rally's race.json itself, on `kubectl get -o json` lists, and on Experiments read
from a real API server."""

from __future__ import annotations

import csv
import html.parser
import io
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from esbench.analysis import compare, stats
from esbench.api import models, validation
from esbench.cli import local, localsweep
from esbench.planning import grid, manifests, sweepstate
from tests.support.result_files import fixed_rate_experiment, race_fixtures


def _names(files) -> list[str]:
    return [json.loads(f.read_text())["metadata"]["name"] for f in files]


def test_compare_prints_a_table_with_every_experiment_and_task(esbench, result_files):
    run = esbench("compare", *map(str, result_files))
    assert run.exit_code == 0, run.stderr
    for name in _names(result_files):
        assert name in run.stdout
    tasks = {t["task"] for f in result_files for t in json.loads(f.read_text())["status"]["results"]["tasks"]}
    for task in tasks:
        assert re.search(rf"│ {re.escape(task)} +│ throughput median", run.stdout)
    assert "store size" in run.stdout and f"Baseline: {_names(result_files)[0]}" in run.stdout


@pytest.mark.parametrize("format_", ["markdown", "csv", "json"])
def test_compare_writes_markdown_csv_and_json(esbench, result_files, tmp_path, format_):
    out = tmp_path / f"comparison.{format_}"
    run = esbench("compare", *map(str, result_files), "--format", format_, "--output", str(out))
    assert run.exit_code == 0, run.stderr
    text = out.read_text()
    names = _names(result_files)
    if format_ == "json":
        data = json.loads(text)
        assert data["baseline"] == names[0] and data["contenders"] == names[1:]
        row = next(r for r in data["rows"] if r["metric"] == "throughput.median")
        assert set(row["values"]) == set(names) and row["direction"] == "higher"
    elif format_ == "csv":
        lines = list(csv.DictReader(io.StringIO(text)))
        assert {line["experiment"] for line in lines} == set(names)
        assert "verdict" not in lines[0]  # single runs: differences, not verdicts
    else:
        assert text.startswith(f"| task / scope | metric | unit | {names[0]} (baseline) |")


def test_race_json_and_kubectl_lists_are_inputs_too(esbench, result_files, tmp_path):
    documents = [json.loads(f.read_text()) for f in result_files]
    listing = tmp_path / "all.json"
    listing.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}))
    race = race_fixtures()[0]
    run = esbench("compare", str(listing), str(race), "--format", "json")
    assert run.exit_code == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["contenders"][-1] == json.loads(race.read_text())["race-id"]
    assert data["baseline"] == documents[0]["metadata"]["name"]


def test_compare_refuses_a_single_experiment_and_unknown_inputs(esbench, result_files, tmp_path):
    assert esbench("compare", str(result_files[0])).exit_code == 2
    missing = esbench("compare", str(result_files[0]), str(tmp_path / "nope.json"))
    assert missing.exit_code == 1 and "nope.json: no such file" in missing.stderr


def test_compare_reads_experiments_by_name_from_the_api_server(esbench, result_files, control_plane, namespace):
    """What `kubectl get esx NAME -o json` returns and what `esbench run --output` writes are
    interchangeable: the same document, once stored in a real API server, compares the same."""
    custom = client.CustomObjectsApi(control_plane.api_client())
    document = json.loads(result_files[0].read_text())
    name = document["metadata"]["name"]
    custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL,
                                           {k: v for k, v in document.items() if k != "status"})
    custom.patch_namespaced_custom_object_status(models.GROUP, models.VERSION, namespace, models.PLURAL, name,
                                                 {"status": document["status"]})
    env = {"KUBECONFIG": str(control_plane.kubeconfig_path)}
    from_server = esbench("compare", name, str(result_files[1]), "--namespace", namespace, "--format", "json", env=env)
    from_file = esbench("compare", str(result_files[0]), str(result_files[1]), "--format", "json")
    assert from_server.exit_code == 0, from_server.stderr
    assert json.loads(from_server.stdout) == json.loads(from_file.stdout)

    absent = esbench("compare", "no-such-experiment", str(result_files[1]), "--namespace", namespace, env=env)
    assert absent.exit_code == 1
    assert f"no Experiment no-such-experiment in namespace {namespace}" in absent.stderr


class _Collector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "img":
            self.images.append(attributes.get("src", ""))
        for key in ("href", "src"):
            if attributes.get(key) and not attributes[key].startswith(("data:", "#")):
                self.links.append(attributes[key])

    def handle_data(self, data):
        self.text.append(data)


def test_html_report_is_self_contained_and_shows_every_configuration(esbench, result_files, tmp_path):
    out, markdown = tmp_path / "report.html", tmp_path / "report.md"
    run = esbench("report", *map(str, result_files), "--html", str(out), "--markdown", str(markdown))
    assert run.exit_code == 0, run.stderr
    page = _Collector()
    page.feed(out.read_text())
    text = " ".join(page.text)
    assert page.links == []  # nothing fetched from elsewhere: scripts, styles, images are inline
    assert page.images and all(src.startswith("data:image/svg+xml;base64,") for src in page.images)
    assert len(page.images) >= 3  # throughput, latency, store size (CPU only when nodes were sampled)
    for document in (json.loads(f.read_text()) for f in result_files):
        assert document["metadata"]["name"] in text
        assert document["status"]["clusterVersion"] in text
        index = document["spec"]["index"]
        for key in ("codec", "refreshInterval", "shards", "replicas"):
            if key in index:
                assert str(index[key]) in text
    for header in ("Configurations", "Results", "Charts", "codec", "shards", "replicas", "refresh", "track params"):
        assert header in text

    md = markdown.read_text()
    charts = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert charts and all((tmp_path / c).is_file() and (tmp_path / c).read_text().lstrip().startswith("<?xml")
                          for c in charts)
    for name in _names(result_files):
        assert name in md


def test_report_needs_somewhere_to_write(esbench, result_files):
    run = esbench("report", str(result_files[0]))
    assert run.exit_code == 2 and "--html" in run.stderr


def test_show_prints_each_experiments_tasks_cluster_figures_and_index_layout(esbench, result_files, tmp_path):
    document = json.loads(result_files[0].read_text())
    document["status"]["results"]["indices"] = [{
        "index": "codec-search", "shardCopies": 1, "segments": 1, "compoundSegments": 0, "documents": 280000,
        "sizeBytes": 2742109802, "attributes": {"Lucene90StoredFieldsFormat.mode": ["BEST_SPEED"]}}]
    path = tmp_path / "with-layout.json"
    path.write_text(json.dumps(document))
    run = esbench("show", str(path))
    assert run.exit_code == 0, run.stderr
    assert document["metadata"]["name"] in run.stdout
    for task in document["status"]["results"]["tasks"]:
        assert task["task"] in run.stdout
    assert "Tasks" in run.stdout and "Cluster and nodes" in run.stdout
    text = " ".join(run.stdout.split())
    assert "Indices as the race left them" in text and "Lucene90StoredFieldsFormat.mode: BEST_SPEED" in text
    assert "2.6 GiB" in text, text


def test_show_warns_of_a_task_whose_disk_took_writes_the_nodes_did_not_make(esbench, tmp_path):
    document = fixed_rate_experiment()
    clean, suspect = document["status"]["results"]["tasks"][1:3]
    suspect["resources"].update(ioWriteBytes=1.5 * 2**30, indexOperations=0, mergedBytes=0, flushes=0)
    path = tmp_path / "suspect.json"
    path.write_text(json.dumps(document))
    run = esbench("show", str(path))
    assert run.exit_code == 0, run.stderr
    text = " ".join(run.stdout.split())
    assert f"warning: fixed-rate: task {suspect['task']}: the data path's disk took 1.50 GiB" in text, text
    assert f"task {clean['task']}:" not in text


def test_show_prints_latency_beside_service_time_each_tasks_node_cpu_contrasts_and_the_environment(esbench, tmp_path):
    contrast = {"name": "range-vs-terms", "baseline": "range-1900-1989", "variants": ["terms-1900-1989"]}
    document = fixed_rate_experiment({"contrasts": [contrast]})
    path = tmp_path / "fixed-rate.json"
    path.write_text(json.dumps(document))
    run = esbench("show", str(path))
    assert run.exit_code == 0, run.stderr
    assert "service p50" in run.stdout and "node CPU" in run.stdout and "disk read" in run.stdout
    range_cpu = document["status"]["results"]["tasks"][1]["resources"]["processCpuPercent"]
    assert f"{range_cpu:.1f}%" in run.stdout
    text = " ".join(run.stdout.split())  # titles and long lines wrap at the terminal's width
    assert "Contrast range-vs-terms against task range-1900-1989" in text and "no interval and no verdict" in text
    assert "environment: Elasticsearch 8.7.1" in text and "sha256" in text
    # The document written by `esbench run` carries the contrast too.
    (wire,) = document["status"]["contrasts"]
    assert [c["cell"] for c in wire["rows"][0]["cells"]] == ["range-1900-1989", "terms-1900-1989"]


def _repeated_runs(result_files, tmp_path, codecs=("default", "best_compression"), labels=None,
                   jitters=(0.99, 1.0, 1.01), wobble=(1.0, 1.0, 1.0)):
    """Three runs of each codec, the Nth of each scaled by jitters[N]; the second codec's first
    task has 20 % less throughput, its Nth run times wobble[N]. With labels, the runs carry a
    sweep's labels: cell cN for the Nth codec, round N + 1 for its Nth run."""
    document = json.loads(result_files[0].read_text())
    task = document["status"]["results"]["tasks"][0]
    paths = []
    for cell, (codec, factor) in enumerate(zip(codecs, (1.0, 0.8), strict=True)):
        for repetition, jitter in enumerate(jitters):
            run = json.loads(json.dumps(document))
            run["metadata"]["name"] = f"{codec}-r{repetition}"
            if labels:
                run["metadata"]["name"] = f"{labels}-c{cell}-r{repetition}"
                run["metadata"]["labels"] = {"esbench.io/sweep": labels, "esbench.io/cell": f"c{cell}",
                                             "esbench.io/repetition": str(repetition + 1)}
                run["metadata"]["annotations"] = {"esbench.io/cell": f"index.codec={codec}"}
            run["spec"]["index"]["codec"] = codec
            own = wobble[repetition] if cell else 1.0
            run["status"]["results"]["tasks"][0]["throughput"]["median"] = (task["throughput"]["median"] * factor
                                                                            * jitter * own)
            paths.append(tmp_path / f"{run['metadata']['name']}.json")
            paths[-1].write_text(json.dumps(run))
    return task, paths


def test_repeated_runs_of_two_specs_get_the_sweeps_statistics(esbench, result_files, tmp_path):
    task, paths = _repeated_runs(result_files, tmp_path)
    primary = f"{task['task']}:throughput.median"
    shown = esbench("compare", *map(str, paths), "--repeated", "--primary", primary, "--format", "json")
    assert shown.exit_code == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["groups"] == {"g0": ["default-r0", "default-r1", "default-r2"],
                              "g1": ["best_compression-r0", "best_compression-r1", "best_compression-r2"]}
    assert data["corrections"]["primary"] == {"correction": "Holm", "comparisons": 1}
    row = next(r for r in data["comparison"] if r["subject"] == task["task"] and r["metric"] == "throughput.median")
    contender = row["cells"][1]
    assert row["family"] == "primary" and contender["verdict"] == "Worse"
    assert contender["changeLowPercent"] < -20 < contender["changeHighPercent"] < -15
    table = esbench("compare", *map(str, paths), "--repeated")
    assert table.exit_code == 0 and "g1: best_compression-r0" in table.stdout and "Worse" in table.stdout
    same = esbench("compare", *map(str, paths[:3]), "--repeated")
    assert same.exit_code == 2 and "every run given has the same spec" in same.stderr


def test_a_sweeps_cells_are_groups_even_when_two_share_a_spec(esbench, result_files, tmp_path):
    """An A/A sweep's two cells have one spec: its runs' labels tell them apart. Its warm-up run
    (cell w0) is no group: it is there to be discarded."""
    task, paths = _repeated_runs(result_files, tmp_path, codecs=("default", "default"), labels="aa")
    warmup = json.loads(paths[0].read_text())
    warmup["metadata"].update(name="aa-w0-r1", labels={"esbench.io/sweep": "aa", "esbench.io/cell": "w0"})
    paths.insert(0, tmp_path / "aa-w0-r1.json")
    paths[0].write_text(json.dumps(warmup))
    shown = esbench("compare", *map(str, paths), "--repeated", "--format", "json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["groups"] == {"c0": ["aa-c0-r0", "aa-c0-r1", "aa-c0-r2"],
                                                  "c1": ["aa-c1-r0", "aa-c1-r1", "aa-c1-r2"]}
    report = tmp_path / "report.md"
    assert esbench("report", *map(str, paths), "--markdown", str(report)).exit_code == 0
    assert "c1 (index.codec=default): 3 run(s)" in report.read_text() and "w0 (" not in report.read_text()


def test_paired_by_round_the_drift_of_a_sweeps_rounds_cancels_out(esbench, result_files, tmp_path):
    """Rounds that drift (a node warming up) hide a 20 % change between independent samples;
    with --paired each contender's run is compared with the baseline's run of the same round."""
    # Each round's ratio a little off 0.8: ratios that never vary would give no verdict at all.
    task, paths = _repeated_runs(result_files, tmp_path, labels="drift", jitters=(0.6, 1.0, 1.6),
                                 wobble=(1.0, 1.01, 0.99))
    question = f"{task['task']}:throughput.median"

    def verdict(*flags):
        shown = esbench("compare", *map(str, paths), "--repeated", "--primary", question, "--format", "json", *flags)
        assert shown.exit_code == 0, shown.stderr
        row = next(r for r in json.loads(shown.stdout)["comparison"]
                   if r["subject"] == task["task"] and r["metric"] == "throughput.median")
        return row["cells"][1]["verdict"]

    assert verdict() == "Inconclusive" and verdict("--paired") == "Worse"
    report = tmp_path / "report.md"
    assert esbench("report", *map(str, paths), "--paired", "--markdown", str(report)).exit_code == 0
    assert "same round (paired t)" in report.read_text()
    # Runs that carry no round cannot be paired: refused, not guessed.
    (tmp_path / "plain").mkdir()
    _, plain = _repeated_runs(result_files, tmp_path / "plain")
    refused = esbench("compare", *map(str, plain), "--repeated", "--paired")
    assert refused.exit_code == 2 and "no round" in refused.stderr
    assert esbench("compare", *map(str, paths), "--paired").exit_code == 2  # --paired compares repetitions


def test_within_a_spec_field_each_of_its_values_gets_a_baseline_of_its_own(esbench, result_files, tmp_path):
    """As a sweep's compareWithin: the codec within each heap. With 2g every run indexes twice as
    fast, so that against the first group alone 2g's runs would be +100 % or +60 %."""
    paths = []
    for heap, scale in (("1g", 1.0), ("2g", 2.0)):
        (tmp_path / heap).mkdir()
        task, made = _repeated_runs(result_files, tmp_path / heap)
        for path in made:
            run = json.loads(path.read_text())
            run["spec"]["elasticsearch"]["heap"] = heap
            run["status"]["results"]["tasks"][0]["throughput"]["median"] *= scale
            path.write_text(json.dumps(run))
        paths += made
    question = f"{task['task']}:throughput.median"
    shown = esbench("compare", *map(str, paths), "--repeated", "--primary", question, "--within",
                    "elasticsearch.heap", "--format", "json")
    assert shown.exit_code == 0, shown.stderr
    row = next(r for r in json.loads(shown.stdout)["comparison"]
               if r["subject"] == task["task"] and r["metric"] == "throughput.median")
    contenders = {c["cell"]: c for c in row["cells"] if c["verdict"] != "Baseline"}
    assert {cell: (c["against"], round(c["changePercent"])) for cell, c in contenders.items()} == {
        "g1": ("g0", -20), "g3": ("g2", -20)}
    table = esbench("compare", *map(str, paths), "--repeated", "--within", "elasticsearch.heap")
    assert table.exit_code == 0 and "Comparison against g0, g2" in table.stdout and "g3 vs g2" in table.stdout
    report = tmp_path / "report.md"
    assert esbench("report", *map(str, paths), "--within", "elasticsearch.heap", "--markdown", str(report)).exit_code == 0
    assert "first group with its elasticsearch.heap" in report.read_text() and "| g3 vs g2 |" in report.read_text()
    assert esbench("compare", *map(str, paths), "--within", "elasticsearch.heap").exit_code == 2  # repetitions only


def test_the_report_on_repeated_runs_opens_with_their_verdicts_and_charts_every_run(esbench, result_files, tmp_path):
    task, paths = _repeated_runs(result_files, tmp_path)
    out = tmp_path / "report.html"
    run = esbench("report", *map(str, paths), "--html", str(out), "--markdown", str(tmp_path / "report.md"),
                  "--primary", f"{task['task']}:throughput.median")
    assert run.exit_code == 0, run.stderr
    text = out.read_text()
    headings = re.findall(r"<h2>(.*?)</h2>", text)
    assert headings == ["Verdicts", "Every run", "Groups"], headings
    verdicts = text[text.index("<h2>Verdicts</h2>"):text.index("<h2>Every run</h2>")]
    first_row = re.search(r"<tbody><tr>(.*?)</tr>", verdicts).group(1)
    assert f"<td>{task['task']}</td><td>throughput.median *</td><td>g1</td>" in first_row and "Worse" in first_row
    assert "Holm over 1" in verdicts and "[-2" in first_row  # its interval, at the corrected level
    assert 'id="chart-runs"' in text and "g0: 3 run(s) (default-r0, default-r1, default-r2)" in text
    markdown = (tmp_path / "report.md").read_text()
    assert markdown.index("## Verdicts") < markdown.index("## Every run") < markdown.index("## Groups")
    assert (tmp_path / "report-runs.svg").exists()


# Three bulk sizes against the largest, the last cell (as study 004's re-test): paired by round.
BULK_SWEEP = {
    "apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": "bulk"},
    "spec": {
        "template": {"elasticsearch": {"version": "8.7.1"}, "workload": {"track": "smoke"}},
        "matrix": [{"field": "workload.trackParams.bulk_size", "values": [1000, 5000, 10000]}],
        "baseline": {"workload.trackParams.bulk_size": 10000},
        "repetitions": 4, "warmupRuns": 1,
        "statistics": {"paired": True, "primary": [{"task": "index-append", "metric": "throughput.median"}]},
    },
}


def _local_sweep_folder(folder: Path, sweep: dict[str, Any], throughput: Callable[[str, int], float]) -> dict:
    """A sweep's folder as `esbench run SWEEP.yaml` leaves it, made by localsweep's own pure parts
    (no node): each run's index-append task at throughput(cell, round) docs/s, its service time the
    inverse. Returns the ExperimentSweep with its status, as its sweep.json holds it."""
    stored = validation.admit(json.loads(json.dumps(sweep)), kind=models.SWEEP_KIND)
    name = stored["metadata"]["name"]
    spec = models.SweepSpec.model_validate(stored["spec"])
    plan = grid.plan(spec, name, localsweep.NAMESPACE)
    owner = manifests.Sweep(name, localsweep.NAMESPACE, "uid", spec)
    out = localsweep.Folder(folder)
    moment = datetime(2026, 12, 1, tzinfo=UTC)
    runs: list[dict] = []
    while True:
        decision = sweepstate.decide(plan, owner, runs, parallelism=1)
        document, _ = localsweep.sweep_document(stored, "uid", decision, spec, None, "2026-12-01T00:00:00Z")
        out.write_sweep(document)
        if not decision.starts:
            return document
        step = decision.starts[0]
        cell, repetition = step.run.cell, step.run.repetition
        child = validation.admit(manifests.sweep_run_manifest(owner, cell.id, cell.label, cell.spec, repetition,
                                                              step.attempt, None))
        rate = throughput(cell.id, repetition)
        results = models.Results(tasks=[models.TaskResult(
            task="index-append", throughput=models.Throughput(median=rate, unit="docs/s"),
            service_time=models.Percentiles(p50=1e6 / rate, unit="ms"))])
        out.write_run(local.experiment_document(
            child, succeeded=True, reason=local.RACE_SUCCEEDED[0], message=local.RACE_SUCCEEDED[1],
            race_id=child["metadata"]["name"], start_time=moment, completion_time=moment, results=results))
        runs.append(json.loads((out.runs / f"{child['metadata']['name']}.json").read_text()))


def _bulk_throughput(cell: str, round_: int) -> float:
    """c0 20 % and c1 10 % below c2, every round a few % apart (a node warming up) and a little noise."""
    base = {"w0": 500.0, "c0": 800.0, "c1": 900.0, "c2": 1000.0}[cell]
    return base * (1 + 0.05 * round_) * (1 + 0.01 * ((3 * round_ + int(cell[1:])) % 4 - 1.5))


def _verdict_cells(markdown: str) -> set[tuple[str, ...]]:
    """Task, metric, contender, baseline's median, change, p-values and verdict of each line of a
    Markdown report's verdicts."""
    found = set()
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 9 and cells[0] == "index-append":
            task, metric, group, baseline, _, _, change, p_values, verdict = cells
            found.add((task, metric.removesuffix(" *"), group, baseline, change, p_values, verdict.split(" (~")[0]))
    return found


def test_a_sweeps_report_says_what_the_sweep_said_against_its_own_baseline(esbench, tmp_path):
    """A report of a sweep's folder compares every cell with the sweep's baseline (here its last
    cell, not the first), with the sweep's statistics: its figures are the sweep's status.comparison."""
    sweep = _local_sweep_folder(tmp_path / "bulk", BULK_SWEEP, _bulk_throughput)
    report = tmp_path / "report.md"
    run = esbench("report", str(tmp_path / "bulk"), "--markdown", str(report))
    assert run.exit_code == 0, run.stderr
    text = report.read_text()
    assert text.startswith("# esbench report: sweep bulk\n")  # not its runs' names
    assert "each cell against its baseline, c2" in text and "same round (paired t)" in text
    assert "primary: Holm over 2" in text
    said = {(row["subject"], row["metric"], found["cell"], compare.format_value(stats.estimate(baseline), None),
             stats.change_text(found), stats.p_values_text(found), found["verdict"])
            for row in sweep["status"]["comparison"] if row["section"] == "task"
            for baseline, found in stats.contenders(row)}
    assert {cell for _, _, cell, *_ in said} == {"c0", "c1"}
    assert _verdict_cells(text) == said
    primary = {(cell, change) for _, metric, cell, _, change, _, _ in said if metric == "throughput.median"}
    assert {cell for cell, change in primary if change.startswith("-2")} == {"c0"}  # 20 % below c2, not c1 above c0
    assert "c2 (workload.trackParams.bulk_size=10000): 4 run(s)" in text and "bulk-c2-r4); the baseline" in text
    # The sweep says how it compares: the options that would say otherwise are refused.
    nested = tmp_path / "reports" / "bulk" / "report.md"  # folders that do not exist yet
    assert esbench("report", str(tmp_path / "bulk"), "--markdown", str(nested)).exit_code == 0
    assert nested.read_text().startswith("# esbench report: sweep bulk\n")
    refused = esbench("report", str(tmp_path / "bulk"), "--paired", "--markdown", str(report))
    assert refused.exit_code == 2 and "compared as the sweep did" in refused.stderr
    # `esbench compare --repeated` on the folder gives the same figures: the sweep's own.
    compared = esbench("compare", str(tmp_path / "bulk"), "--repeated", "--format", "json")
    assert compared.exit_code == 0, compared.stderr
    assert json.loads(compared.stdout)["comparison"] == sweep["status"]["comparison"]
    assert esbench("compare", str(tmp_path / "bulk"), "--repeated", "--primary", "x:throughput.median").exit_code == 2
    # One run per cell: differences, never verdicts, against the sweep's baseline all the same.
    once = json.loads(json.dumps(BULK_SWEEP))
    once["spec"].update(repetitions=1, statistics={})
    _local_sweep_folder(tmp_path / "once", once, _bulk_throughput)
    assert esbench("report", str(tmp_path / "once"), "--markdown", str(report)).exit_code == 0
    assert "| bulk-c2-r1 (baseline) |" in report.read_text() and "## Verdicts" not in report.read_text()


def test_a_folder_that_is_no_sweeps_is_refused_with_what_report_takes(esbench, result_files, tmp_path):
    """A folder of run files, or a sweep's runs/, says what report takes, not "no such file"."""
    folder = tmp_path / "runs-by-hand"
    folder.mkdir()
    for path in result_files:
        (folder / path.name).write_text(path.read_text())
    run = esbench("report", str(folder), "--markdown", str(tmp_path / "report.md"))
    assert run.exit_code == 1 and "no such file" not in run.stderr
    text = " ".join(run.stderr.split())
    assert "a folder, not a sweep's" in text and "give result files" in text.lower()
    assert f"give them: {folder}/*.json" in text
    _local_sweep_folder(tmp_path / "bulk", BULK_SWEEP, _bulk_throughput)
    runs = esbench("report", str(tmp_path / "bulk" / "runs"), "--markdown", str(tmp_path / "report.md"))
    assert runs.exit_code == 1 and f"give the sweep's folder, {tmp_path / 'bulk'}" in " ".join(runs.stderr.split())
