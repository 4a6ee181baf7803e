"""Downloading Elasticsearch for `esbench run`: the zip is kept only once its SHA-1 is verified,
against Maven Central's .sha1 or, where it serves none, one recorded in esbench. A local HTTP
server stands in for Maven Central, so that the download path runs on every CI machine (warm
caches never download)."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from esbench.localnode import localcluster

ZIP = b"PK\x05\x06" + bytes(18)  # an empty zip archive: what is verified is its bytes


@pytest.fixture
def maven(tmp_path, monkeypatch):
    """A repository folder served over HTTP as localcluster.MAVEN_BASE, and the GET paths it saw."""
    root = tmp_path / "repository"
    root.mkdir()
    seen: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self):
            seen.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(localcluster, "MAVEN_BASE", f"http://127.0.0.1:{server.server_address[1]}")
    yield root, seen
    server.shutdown()


def publish(root: Path, version: str, sha1: str | None) -> None:
    folder = root / version
    folder.mkdir()
    (folder / f"elasticsearch-{version}.zip").write_bytes(ZIP)
    if sha1 is not None:
        (folder / f"elasticsearch-{version}.zip.sha1").write_text(f"{sha1}  elasticsearch-{version}.zip\n")


def test_a_zip_whose_sha1_matches_is_kept_and_not_downloaded_again(maven, tmp_path):
    root, seen = maven
    publish(root, "8.7.1", hashlib.sha1(ZIP).hexdigest())
    cached = localcluster.distribution_zip("8.7.1", cache=tmp_path / "cache")
    assert cached.read_bytes() == ZIP
    assert localcluster.distribution_zip("8.7.1", cache=tmp_path / "cache") == cached
    assert [path for path in seen if path.endswith(".zip")] == ["/8.7.1/elasticsearch-8.7.1.zip"]


def test_a_zip_whose_sha1_differs_is_refused_and_nothing_is_kept(maven, tmp_path):
    root, _ = maven
    publish(root, "8.7.1", "0" * 40)
    with pytest.raises(RuntimeError, match="sha1 mismatch"):
        localcluster.distribution_zip("8.7.1", cache=tmp_path / "cache")
    assert list((tmp_path / "cache" / "elasticsearch").iterdir()) == []


def test_a_zip_without_sha1_is_refused_unless_esbench_recorded_one(maven, tmp_path, monkeypatch):
    root, _ = maven
    publish(root, "9.9.9", None)
    with pytest.raises(RuntimeError, match="without its .sha1, so it cannot be verified"):
        localcluster.distribution_zip("9.9.9", cache=tmp_path / "cache")
    monkeypatch.setitem(localcluster.RECORDED_SHA1, "9.9.9", hashlib.sha1(ZIP).hexdigest())
    assert localcluster.distribution_zip("9.9.9", cache=tmp_path / "cache").read_bytes() == ZIP
    monkeypatch.setitem(localcluster.RECORDED_SHA1, "9.9.9", "1" * 40)
    with pytest.raises(RuntimeError, match="sha1 mismatch"):
        localcluster.distribution_zip("9.9.9", cache=tmp_path / "other-cache")
