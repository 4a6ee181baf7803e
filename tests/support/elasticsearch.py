"""Real Elasticsearch nodes for the runner and CLI tests (one pool per test process).

Thin on purpose: downloading, verifying, unpacking and starting live in esbench.localnode.localcluster,
which local mode (`esbench run`) reuses. Here: which versions, and one node per version (and
security setting) for the whole session, started on first use.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from esbench.localnode.localcluster import LocalCluster, start

# The versions every bundled track is raced on. Studies may ask for others (002: 9.2.4, whose
# integ-test-zip lacks `GET /` and which needs Java 21: esbench.localnode.localcluster copes with both).
VERSIONS = ("7.17.29", "8.7.1")
LATEST = VERSIONS[-1]


class Clusters:
    def __init__(self) -> None:
        self._running: dict[tuple[str, bool], LocalCluster] = {}
        # Each node's path.repo (workload.reuseIndex), for the session; not under pytest's
        # tmp_path, which the node's user cannot enter.
        self._snapshots = Path(tempfile.mkdtemp(prefix="esbench-test-snapshots-"))
        self._snapshots.chmod(0o755)

    def get(self, version: str, secure: bool = False) -> LocalCluster:
        key = (version, secure)
        if key not in self._running:
            repository = self._snapshots / f"{version}-{'secure' if secure else 'plain'}"
            self._running[key] = start(version, secure=secure, snapshot_repository=repository)
        cluster = self._running[key]
        delete_all_indices(cluster)  # every test starts from an empty cluster
        return cluster

    def stop_all(self) -> None:
        for cluster in self._running.values():
            cluster.stop()
        self._running.clear()
        shutil.rmtree(self._snapshots, ignore_errors=True)


def delete_all_indices(cluster: LocalCluster) -> None:
    # By name: 8.x refuses wildcard deletes (action.destructive_requires_name).
    for index in cluster.client.get("_cat/indices?format=json&h=index"):
        cluster.client.request("DELETE", index["index"])
