"""workload.reuseIndex: a bundled track's index built once, then restored from a snapshot.

The runner names the snapshot after everything that shapes the index and asks the target
whether its repository holds it; the track takes or restores it (its `index_snapshot` param),
and Elasticsearch writes the files, into a filesystem repository at a location of its nodes'
path.repo: the one local mode gives, else a folder of the path.repo the nodes list. The runner
never touches the files, so the location may be a volume of remote nodes.

Settings that only decide how a node reads the files (READ_PATH_SETTINGS) are not part of the
snapshot: the index is built without them and they are applied as it is restored, so that one
built index serves races that read it through different stores.
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
from pathlib import Path
from typing import Any

from esbench.api import models
from esbench.esclient import Client
from esbench.runner import environment

REPOSITORY = "esbench-index-reuse"
# Elasticsearch's store type (hybridfs, mmapfs, niofs) and what it preloads: neither changes a
# file's bytes, and both may be given to a restore (its index_settings).
READ_PATH_SETTINGS = ("index.store.type", "index.store.preload")
# Each reuse track's params that only drive its searches (what they ask, how many, in which
# order): races that differ in these alone restore the same index, so that a sweep may vary
# them round by round. A param not listed names another snapshot: one a track gains costs a
# rebuild until it is listed, never a wrong index.
_SEARCH_PARAMS = ("search_clients", "search_iterations", "search_warmup_iterations")
SEARCH_PARAMS = {
    "codec-search": (*_SEARCH_PARAMS, "fetch_size", "random_hits_size", "random_matches_size"),
    "source-filtering": (*_SEARCH_PARAMS, "exports", "export_count", "page_size"),
}


def take_read_path_settings(params: dict[str, Any]) -> dict[str, Any]:
    """Moves READ_PATH_SETTINGS out of params' index_settings (in place) and returns them."""
    settings = params.get("index_settings") or {}
    read_path = {name: settings.pop(name) for name in READ_PATH_SETTINGS if name in settings}
    if not settings:
        params.pop("index_settings", None)
    return read_path


def track_sha256(track: str, tracks_dir: Path) -> str:
    """The digest of what the bundled track renders and runs: its files and the shared parts, but
    its README (rewording it must not cost a rebuild)."""
    files = [path for path in environment.bundled_track_files(track, tracks_dir) if path.suffix != ".md"]
    return environment.files_sha256(files, tracks_dir)


def snapshot_name(workload: models.Workload, params: dict[str, Any], version: str, track_sha256: str) -> str:
    """The same name for the same index: the version that writes it, the track's files, the
    workload (test mode and the task filters too) and the track params, but workload.load's, workload.capacity's and
    the track's SEARCH_PARAMS (they only drive searches)."""
    searches = {*(workload.load.track_params() if workload.load else {}), *SEARCH_PARAMS.get(workload.track, ())}
    shaping = {
        "version": version,
        "track_sha256": track_sha256,
        # trackParams are in params, with spec.index's settings merged into them.
        "workload": workload.model_dump(mode="json", exclude={"load", "capacity", "contrasts", "track_params"}),
        "params": {name: value for name, value in params.items() if name not in searches},
    }
    digest = hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()
    return f"{workload.track}-{digest[:24]}"


def name_snapshot(workload: models.Workload, params: dict[str, Any], version: str,
                  tracks_dir: Path) -> tuple[str, dict[str, Any]]:
    """A race's snapshot and the read-path settings its restore applies: takes those settings out
    of params (in place) and names the snapshot after what remains."""
    read_path = take_read_path_settings(params)
    return snapshot_name(workload, params, version, track_sha256(workload.track, tracks_dir)), read_path


def repository_location(target: Client) -> str | None:
    """Where the target's nodes keep snapshots, when they say so alike: a folder of the one path.repo
    every node lists (a cluster esbench made for a sweep has one, see planning/manifests.py; a
    multi-node cluster needs it on a filesystem they share). None when they list none, or differ."""
    answer = target.get("_nodes/settings?filter_path=nodes.*.settings.path.repo", timeout=60)
    nodes = (answer or {}).get("nodes") or {}
    roots = set()
    for node in nodes.values():
        repo = ((node.get("settings") or {}).get("path") or {}).get("repo")
        roots.add(tuple([repo] if isinstance(repo, str) else repo or ()))
    if len(roots) != 1 or len(root := roots.pop()) != 1:
        return None
    # A folder of its own: the root may hold the repositories of others.
    return f"{root[0].rstrip('/')}/{REPOSITORY}"


def holds(target: Client, location: str, snapshot: str) -> bool:
    """Whether the repository at location holds snapshot (registered first: a new node knows none).
    A location the nodes cannot use is a ValueError with Elasticsearch's reason."""
    try:
        target.request("PUT", f"_snapshot/{REPOSITORY}", {"type": "fs", "settings": {"location": location}}, timeout=60)
    except urllib.error.HTTPError as e:
        raise ValueError(f"HTTP {e.code}: {_reason(e)}") from e
    try:
        target.get(f"_snapshot/{REPOSITORY}/{snapshot}", timeout=60)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return False
        raise
    return True


def _reason(error: urllib.error.HTTPError) -> str:
    try:
        return json.loads(error.read())["error"]["reason"]
    except (ValueError, KeyError, TypeError, OSError):
        return str(error.reason)
