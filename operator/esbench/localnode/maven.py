"""Artefacts from Maven Central (the one registry here that serves Elasticsearch and
async-profiler), downloaded once into a cache and kept only once their SHA-1 is verified."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from pathlib import Path

CENTRAL = "https://repo1.maven.org/maven2"


def download(url: str, target: Path, sha1: str) -> Path:
    """URL's bytes at target, if their SHA-1 is sha1; an existing target is taken as verified."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    digest = hashlib.sha1()
    with urllib.request.urlopen(url, timeout=60) as response, open(partial, "wb") as out:
        while chunk := response.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != sha1:
        partial.unlink()
        raise RuntimeError(f"sha1 mismatch for {url}: got {digest.hexdigest()}, expected {sha1}")
    partial.rename(target)  # only a verified file ever carries the final name
    return target


def published_sha1(url: str, recorded: dict[str, str]) -> str:
    """The SHA-1 Maven Central publishes beside URL (its .sha1 file)."""
    try:
        with urllib.request.urlopen(f"{url}.sha1", timeout=60) as response:
            return response.read().decode().split()[0].strip()
    except urllib.error.HTTPError as error:
        if error.code != 404:
            raise
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60):
            pass  # the artefact itself is there (a 404 here is the caller's "no such version")
        raise RuntimeError(f"Maven Central serves {url} without its .sha1, so it cannot be verified "
                           f"(recorded SHA-1s: {', '.join(recorded)})") from error
