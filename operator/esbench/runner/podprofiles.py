"""The profiles of a cluster whose pods record themselves (Kubernetes: see docs/profiles.md).

Each Elasticsearch pod runs async-profiler from its JVM's start and closes a JFR file at every turn
of its loop; a sidecar serves the finished ones (esbench.sidecar.nodeserver). After the race this
profiler waits until every node has finished a file that ends past the race, fetches the files
that overlap the race, and cuts each task's window out of them: the stacks of all nodes, summed.
"""

from __future__ import annotations

import collections
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from esbench.analysis import asyncprofiler, profiles
from esbench.api import models
from esbench.esclient import Client

POLL_SECONDS = 2.0


@dataclass
class PodProfiles:
    """Profiles the target's nodes by their own recordings (esbench.runner.race.Profiler)."""

    profile: models.Profile
    sources: list[str]  # each node's sidecar, https://POD.NAME-es-NODESET.NAMESPACE.svc:PORT
    work_dir: Path
    java: Path
    converter: Path
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    wait_seconds: float = 3 * asyncprofiler.RECORDING_LOOP_SECONDS

    def __post_init__(self) -> None:
        self.recording = asyncprofiler.recording(self.profile)
        self._started = self._ended = 0.0
        self._recordings: list[Path] = []  # one per node: its files of the race, joined (JFR reads chunk by chunk)

    def start(self) -> None:
        self._started = time.time()

    def stop(self) -> None:
        self._ended = time.time()  # the files are fetched when the first task is cut: not after a race that timed out

    def fetch(self) -> None:
        """Every node's recordings that overlap the race, once one ends past it: each node's joined."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for number, source in enumerate(self.sources):
            listed = self._finished_past(source, self._ended)
            joined = self.work_dir / f"node-{number}.jfr"
            with joined.open("wb") as out:
                for recording in listed:
                    if recording["end"] >= self._started and recording["start"] <= self._ended:
                        out.write(self._get(source, f"/recordings/{recording['name']}"))
            self._recordings.append(joined)

    def cut(self, start: float, end: float, stacks: Path, flame_graph: Path, title: str) -> None:
        """The window's stacks of every node, summed, as collapsed stacks; no flame graph (a report
        through the pod's log carries the stacks only; the converter draws one from them)."""
        if not self._recordings:
            self.fetch()
        summed: collections.Counter[tuple[str, ...]] = collections.Counter()
        for recording in self._recordings:
            if not recording.stat().st_size:  # a node that recorded nothing during the race
                continue
            node = stacks.with_name(f"{recording.stem}-{stacks.name}")
            asyncprofiler.cut(self.java, self.converter, self.profile.event, recording, start, end, node)
            summed.update(profiles.parse(node.read_text()).counts)
            node.unlink()
        stacks.write_text(profiles.to_text(profiles.Stacks(dict(summed))))

    def _finished_past(self, source: str, moment: float) -> list[dict[str, Any]]:
        """The node's finished recordings, once one of them ends after MOMENT."""
        deadline = time.monotonic() + self.wait_seconds
        while True:
            listed = json.loads(self._get(source, "/recordings"))
            if listed and listed[-1]["end"] >= moment:
                return listed
            if time.monotonic() > deadline:
                raise RuntimeError(f"{source} finished no recording past the race's end within {self.wait_seconds:.0f}s")
            time.sleep(POLL_SECONDS)

    def _get(self, source: str, path: str) -> bytes:
        # ECK's HTTP certificate names every pod of a node set (*.NAME-es-NODESET.NAMESPACE.svc).
        return Client(source, "elastic", self.password, self.ca_file).read(path, timeout=60)
