"""A track from a Git repository reaches Rally through rally.ini, at the pinned revision.

Offline stand-ins for github.com: the spec names an https URL, as the CRD requires, and git's
own url.<base>.insteadOf (set through GIT_CONFIG_* in the environment Rally inherits) sends it to
a local repository; the corpus is served over HTTP from localhost, as rally-tracks' corpora are
served from their base-url. A RallyTracks source differs only in the repository URL.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import threading

import pytest

from esbench.runner import corpus
from esbench.runner.race import TRACKS_DIR
from tests.support.elasticsearch import LATEST


def git(*args: str, cwd) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def corpus_server(tmp_path):
    """An HTTP server for a folder of corpus files; yields (folder, base URL)."""
    folder = tmp_path / "corpus-server"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield folder, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_a_track_from_a_git_repository_runs_at_the_pinned_revision(clusters, race, tmp_path, corpus_server):
    served, base_url = corpus_server
    repo = tmp_path / "tracks-repo"
    track = repo / "logs-from-git"
    shutil.copytree(TRACKS_DIR / "smoke", track)
    corpus.generate(track, "smoke", {"doc_count": 300})
    # Like rally-tracks: the repository holds the corpus definition, the data lives at base-url.
    for name in (corpus.DOCUMENTS, corpus.TEST_MODE_DOCUMENTS):
        shutil.move(track / name, served / name)
    definition = json.loads((track / corpus.CORPUS_DEFINITION).read_text())
    definition["base-url"] = base_url
    (track / corpus.CORPUS_DEFINITION).write_text(json.dumps(definition))
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("-c", "user.name=esbench", "-c", "user.email=esbench@example.invalid", "commit", "-qm", "track", cwd=repo)
    revision = git("rev-parse", "HEAD", cwd=repo)
    git("-c", "user.name=esbench", "-c", "user.email=esbench@example.invalid", "commit", "-qm", "later",
        "--allow-empty", cwd=repo)
    (track / "track.json").write_text("not even JSON")  # uncommitted: Rally must use the pinned revision

    cluster = clusters.get(LATEST)
    url = "https://github.com/esbench-offline/tracks.git"
    redirect = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{repo}.insteadOf", "GIT_CONFIG_VALUE_0": url}
    run = race({"elasticsearch": {"version": LATEST},
                "workload": {"source": "Git", "track": "logs-from-git", "testMode": True,
                             "repository": {"url": url, "revision": revision}}}, cluster.url, extra_env=redirect)

    assert run.exit_code == 0, run.output
    assert run.report.results.track == "logs-from-git"
    assert f"--track-revision={revision}" in run.output and "--track-repository=esbench" in run.output
    cluster.client.request("POST", "smoke/_refresh")
    assert cluster.client.get("smoke/_count")["count"] == 300
