"""workload.reuseIndex's snapshot names: one per index, whatever drives the searches or reads the files;
and where a target keeps them. The snapshots themselves are taken and restored on real Elasticsearch in
tests/runner/test_bundled_tracks (and on Kubernetes in tests/e2e/test_sweep_e2e)."""

import re
import shutil
from pathlib import Path

import pytest

from esbench.api import models
from esbench.runner import indexreuse, rally

VERSION, FILES = "8.7.1", "a" * 64
TRACKS = Path(indexreuse.__file__).parent / "tracks"


def name(workload=None, index=None, version=VERSION, files=FILES, track="codec-search"):
    spec = models.ExperimentSpec.model_validate({
        "elasticsearch": {"version": VERSION}, "index": index or {"codec": "best_compression"},
        "workload": {"track": track, "reuseIndex": True, "trackParams": {"doc_count": 1000},
                     **(workload or {})}})
    params = rally.track_params(spec, 1)
    indexreuse.take_read_path_settings(params)  # as the runner does before naming
    return indexreuse.snapshot_name(spec.workload, params, version, files)


def test_the_same_spec_names_the_same_snapshot_after_its_track():
    assert name() == name() and name().startswith("codec-search-")


def test_what_drives_the_searches_only_names_the_same_snapshot():
    load = {"load": {"targetThroughput": 8, "clients": 4, "timePeriodSeconds": 60}}
    assert name(load) == name() == name({"contrasts": [{"name": "c", "baseline": "random-hits", "variants": ["x"]}]})
    capacity = {"task": "random-hits", "objective": {"metric": "latency.p99", "maxMilliseconds": 100},
                "minTargetThroughput": 5, "maxTargetThroughput": 50}
    assert name({"capacity": capacity}) == name()
    searches = {"doc_count": 1000, "random_hits_size": 50, "search_iterations": 3, "search_clients": 2}
    assert name({"trackParams": searches}) == name()


def test_the_order_and_size_of_the_exports_name_the_same_snapshot():
    exports = {"doc_count": 1000, "exports": ["paginate-no-source", "paginate-full-source"], "export_count": 100,
               "page_size": 50}
    assert name({"trackParams": exports}, track="source-filtering") == name(track="source-filtering")
    assert name({"trackParams": {"doc_count": 1001}}, track="source-filtering") != name(track="source-filtering")


@pytest.mark.parametrize("track", models.INDEX_REUSE_TRACKS)
def test_each_reuse_track_lists_the_search_params_its_files_use(track):
    """A name there that the track does not read (misspelt, or renamed since) would leave the
    param it meant naming snapshots."""
    files = "".join(path.read_text() for path in [*(TRACKS / track).glob("*.json"), *TRACKS.glob("*.j2")])
    assert [param for param in indexreuse.SEARCH_PARAMS[track] if not re.search(rf"\b{param}\b", files)] == []


def test_how_a_node_reads_the_files_names_the_same_snapshot_and_is_given_to_the_restore():
    read_path = {"index.store.type": "mmapfs", "index.store.preload": "fdt"}
    assert name(index={"codec": "best_compression", "settings": read_path}) == name()
    spec = models.ExperimentSpec.model_validate({
        "elasticsearch": {"version": VERSION},
        "index": {"codec": "default", "settings": {**read_path, "index.number_of_routing_shards": 4}},
        "workload": {"track": "codec-search", "reuseIndex": True}})
    params = rally.track_params(spec, 1)
    assert indexreuse.take_read_path_settings(params) == read_path
    assert params["index_settings"] == {"index.codec": "default", "index.number_of_routing_shards": 4}


@pytest.mark.parametrize("change", [
    {"index": {"codec": "default"}},
    {"index": {"codec": "best_compression", "shards": 2}},
    {"index": {"codec": "best_compression", "settings": {"index.sort.field": "@timestamp"}}},
    {"workload": {"trackParams": {"doc_count": 1001}}},
    {"workload": {"trackParams": {"doc_count": 1000, "message_bytes": 12000}}},
    {"workload": {"testMode": True}},
    {"workload": {"excludeTasks": ["force-merge"]}},
    {"version": "8.7.2"},
    {"files": "b" * 64},
])
def test_whatever_shapes_the_index_names_another_snapshot(change):
    assert name(**change) != name()


def test_the_tracks_files_name_the_snapshot_but_its_readme_does_not(tmp_path):
    tracks = tmp_path / "tracks"
    shutil.copytree(TRACKS, tracks, ignore=shutil.ignore_patterns("__pycache__"))
    before = indexreuse.track_sha256("codec-search", tracks)
    (tracks / "codec-search" / "README.md").write_text("reworded")
    assert indexreuse.track_sha256("codec-search", tracks) == before
    (tracks / "index-reuse.j2").write_text((tracks / "index-reuse.j2").read_text() + "\n")
    assert indexreuse.track_sha256("codec-search", tracks) != before


class Answers:
    """A target that answers _nodes/settings as Elasticsearch does (path.repo: a list, or a string)."""

    def __init__(self, *repos):
        self.nodes = {f"n{i}": {"settings": {"path": {"repo": repo}}} if repo is not None else {}
                      for i, repo in enumerate(repos)}

    def get(self, path, timeout=10.0):
        assert path.startswith("_nodes/settings")
        return {"nodes": self.nodes} if self.nodes else {}


@pytest.mark.parametrize(("repos", "location"), [
    ((["/esbench/snapshots"],), "/esbench/snapshots/esbench-index-reuse"),
    (("/mnt/shared/",), "/mnt/shared/esbench-index-reuse"),
    ((["/mnt/shared"], ["/mnt/shared"]), "/mnt/shared/esbench-index-reuse"),
    ((["/mnt/a"], ["/mnt/b"]), None),  # not one filesystem, as far as the runner can tell
    ((["/mnt/a"], None), None),
    ((["/mnt/a", "/mnt/b"],), None),  # which one is not for the runner to guess
    ((None,), None),
    ((), None),
])
def test_a_target_without_a_given_repository_offers_a_folder_of_the_path_repo_all_its_nodes_list(repos, location):
    assert indexreuse.repository_location(Answers(*repos)) == location
