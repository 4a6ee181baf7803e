"""The operator's Elasticsearch results store read back by `esbench history pull`: a real node over
HTTPS with a user and a private CA; its races land in the local history as `history add` would
put the same files there."""

from __future__ import annotations

from esbench.esclient import Client
from esbench.history import records
from esbench.history.esstore import ElasticsearchStore
from esbench.history.localstore import LocalStore
from tests.support.elasticsearch import LATEST
from tests.support.history import nightly, write_list

SERIES = [400.0, 410.0, 395.0, 600.0, 610.0]


def test_history_pull_records_the_stores_races_and_sweeps_and_again_adds_nothing(esbench, clusters, tmp_path):
    node = clusters.get(LATEST, secure=True)
    remote = ElasticsearchStore(Client(node.url, node.username, node.password, node.ca_file))
    documents = nightly(SERIES)
    for document in documents:
        remote.add(records.record(document))
    sweep = {"apiVersion": "esbench.io/v1alpha1", "kind": "ExperimentSweep",
             "metadata": {"name": "codec", "namespace": "perf", "uid": "sweep-uid"},
             "spec": {}, "status": {"phase": "Succeeded", "completionTime": "2026-10-09T00:00:00Z"}}
    remote.add_sweep(sweep)

    env = {"ES_USERNAME": node.username, "ES_PASSWORD": node.password}
    pulled = esbench("history", "pull", node.url, "--ca-file", node.ca_file, env=env)
    assert pulled.exit_code == 0, pulled.stdout + pulled.stderr
    assert "5 race(s) recorded, 0 recorded before, 0 skipped, 1 sweep(s)" in pulled.stdout
    again = esbench("history", "pull", node.url, "--ca-file", node.ca_file, env=env)
    assert "0 race(s) recorded, 5 recorded before" in again.stdout, again.stdout + again.stderr
    assert node.password not in pulled.stdout + pulled.stderr

    # The same as recording the files themselves.
    pulled_store = LocalStore(tmp_path / "history.sqlite")
    added = esbench("history", "--store", "added.sqlite", "add", str(write_list(tmp_path / "runs.json", documents)))
    assert added.exit_code == 0, added.stderr
    added_store = LocalStore(tmp_path / "added.sqlite")
    (configuration,) = pulled_store.configurations()
    assert configuration == added_store.configurations()[0]
    assert [p.value for p in pulled_store.series(configuration.id, "ranges", "service_time.p50")] == SERIES
    assert pulled_store.sweeps()[0]["metadata"]["uid"] == "sweep-uid"

    wrong = esbench("history", "pull", node.url, "--ca-file", node.ca_file,
                    env={"ES_USERNAME": node.username, "ES_PASSWORD": "wrong"})
    assert wrong.exit_code == 1 and "HTTP 401" in wrong.stderr, wrong.stderr
