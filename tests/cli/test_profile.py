"""Profiles (spec.profile): async-profiler attached to the node `esbench run` starts, the race's
recording cut by the tasks' windows, and two profiles compared (`esbench profile`). Real
Elasticsearch, real esrally, the real profiler from Maven Central. The race is study 000's,
reduced: this is also that study's test."""

from __future__ import annotations

import gzip
import itertools
import json

import yaml

from esbench.analysis import contrasts, profiles
from esbench.api import models
from tests.runner.test_studies import study_spec


def _stacks(folder, task: models.TaskResult) -> profiles.Stacks:
    return profiles.parse(gzip.decompress((folder / task.profile.stacks).read_bytes()).decode())


SOURCE_TASKS = ["paginate-full-source", "paginate-no-source", "paginate-source-title", "paginate-fields-title",
                "paginate-source-body", "paginate-fields-body"]


def test_a_profiled_run_has_a_profile_per_task_and_finds_each_tasks_hot_path(esbench, esrally, tmp_path):
    """Study 000 reduced, profiled on CPU time: its six ways of returning fields on 8.7.1, the
    newest 1000 of 2000 documents of about 8 KB in pages of 500 (the study: 25000 of 100000 of
    about 38 KB in pages of 1000), one warm-up and three measured exports per task. Each run
    builds its index (the study restores it: tests/runner/test_bundled_tracks)."""
    spec = study_spec("000-source-filtering/sweep.yaml", reuseIndex=False,
                      trackParams={"doc_count": 2000, "export_count": 1000, "body_bytes": 8000, "page_size": 500,
                                   "search_warmup_iterations": 1, "search_iterations": 3})
    spec["profile"] = {"event": "cpu", "intervalMillis": 1}  # ten times the default's samples in these short tasks
    spec["elasticsearch"]["heap"] = "512m"
    experiment = {"apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": "profiled"}, "spec": spec}
    (tmp_path / "profiled.yaml").write_text(yaml.safe_dump(experiment))
    run = esbench("run", "profiled.yaml", "--output", "profiled.json", env={"ESBENCH_ESRALLY": esrally})
    assert run.exit_code == 0, run.stdout + run.stderr

    results = models.Results.model_validate(json.loads((tmp_path / "profiled.json").read_text())["status"]["results"])
    assert results.profile == models.ProfileRecording(profiler="async-profiler 4.6", event="cpu", interval="1ms",
                                                      folder="profiled.profiles")
    tasks = {t.task: t for t in results.tasks}
    # The study's race: a merged index exported six ways, one after the other, compared task by task.
    assert results.cluster.segment_count == 1  # force-merged, as the seed's PMC track does
    for earlier, later in itertools.pairwise(tasks[n] for n in SOURCE_TASKS):
        assert earlier.end <= later.start
    for name in SOURCE_TASKS:
        assert tasks[name].service_time.p50 > 0 and tasks[name].error_rate == 0, name
    (contrast,) = contrasts.to_wire([results], models.ExperimentSpec.model_validate(spec).workload)
    p50 = next(r for r in contrast["rows"] if r["metric"] == "service_time.p50")
    assert [c["cell"] for c in p50["cells"]] == SOURCE_TASKS and "missingTasks" not in contrast

    folder = tmp_path / "profiled.profiles"
    for task in tasks.values():  # every task has its window's profile
        assert task.profile and task.profile.samples > 0 and task.profile.top, task.task
        assert (folder / task.profile.flame_graph).read_text().startswith("<!DOCTYPE html>")
        assert _stacks(folder, task).samples == task.profile.samples  # nothing left out at this size
    full, none = (_stacks(folder, tasks[name]) for name in ("paginate-full-source", "paginate-no-source"))
    # The fetch phase's known hot path when it returns whole documents: decompressing stored fields
    # (8.7's default codec, LZ4). Without _source it still reads each hit's stored _id, in the same blocks.
    assert full.share(r"LZ4\.decompress") > 0.05, profiles.top_frames(full)
    assert none.share(r"LZ4\.decompress") > 0.05, profiles.top_frames(none)
    # Each window holds its own task: the node serves HTTPS (spec.elasticsearch.tls), and only the
    # export that returns whole documents sends megabytes per page through the cipher. Both exports
    # send as many pages, so their CPU time in the cipher compares as counts; as shares it would
    # also move with everything else the whole documents cost.
    cipher = r"^com\.sun\.crypto\.provider\."
    assert full.share(cipher) > 0.02 and full.inclusive(cipher) > 4 * none.inclusive(cipher), (
        full.inclusive(cipher), none.inclusive(cipher), full.samples, none.samples)

    show = esbench("show", "profiled.json")
    assert "Where each task's samples were taken (async-profiler 4.6, cpu, every 1ms)" in show.stdout
    (tmp_path / "reports").mkdir()
    report = esbench("report", "profiled.json", "--markdown", "reports/report.md", "--html", "reports/report.html")
    assert report.exit_code == 0, report.stdout + report.stderr
    for name, link in (("report.md", "[flame graph](../profiled.profiles/paginate-full-source.html)"),
                       ("report.html", 'href="../profiled.profiles/paginate-full-source.html"')):
        assert link in (tmp_path / "reports" / name).read_text(), name

    diff = esbench("profile", "profiled.json", "--task", "paginate-full-source", "--baseline-task",
                   "paginate-no-source", "--html", "diff.html")
    assert diff.exit_code == 0, diff.stdout + diff.stderr
    moved = profiles.changes(none, full, 15)
    assert all(row.frame in diff.stdout and f"{row.change:+.1f} pp" in diff.stdout for row in moved[:5]), diff.stdout
    assert any(row.frame.startswith("com.sun.crypto.provider.") and row.change > 0 for row in moved), moved
    assert (tmp_path / "diff.html").read_text().startswith("<!DOCTYPE html>")


def test_a_profile_needs_a_node_that_esbench_starts(esbench, esrally, clusters, tmp_path):
    spec = {"elasticsearch": {"version": "8.7.1"}, "profile": {"event": "wall"},
            "workload": {"track": "smoke", "testMode": True, "trackParams": {"doc_count": 100}}}
    experiment = {"apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": "remote"}, "spec": spec}
    (tmp_path / "remote.yaml").write_text(yaml.safe_dump(experiment))
    run = esbench("run", "remote.yaml", "--es-url", clusters.get("8.7.1").url, "--output", "remote.json",
                  "--work-dir", "work", env={"ESBENCH_ESRALLY": esrally})  # a failed run keeps its work dir
    assert run.exit_code == 10, run.stdout + run.stderr
    status = json.loads((tmp_path / "remote.json").read_text())["status"]
    assert status["reason"] == "InvalidSpec" and "cannot attach a profiler to this target" in status["message"]
