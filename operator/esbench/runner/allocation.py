"""Shards Elasticsearch refuses to allocate, watched while a race runs.

A track waits for the health it needs (`cluster-health`, retried until it succeeds) and a request
to an index without its primary fails only after the client's timeout: a shard Elasticsearch will
not allocate (a disk watermark, an allocation filter no node matches) would hold the race until
raceTimeoutSeconds and end it without saying why. The watch asks Elasticsearch why
(`_cluster/allocation/explain`) and stops the race once a refusal has lasted long enough.
"""

from __future__ import annotations

import threading
import time
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Seconds a refusal must last before the race is stopped: Elasticsearch refreshes the disk usage
# its watermarks compare every 30 s (cluster.info.update.interval), so a refusal shorter than
# two refreshes may be one that the next refresh lifts.
STUCK_SECONDS = 60.0
POLL_SECONDS = 5.0
# What `can_allocate` says of a shard that waiting will not place (not "throttled", "yes",
# "allocation_delayed" or "awaiting_info").
REFUSED = ("no", "no_valid_shard_copy")
HEALTH_PATH = "_cluster/health?filter_path=status"
SHARDS_PATH = "_cat/shards?format=json&h=index,shard,prirep,state"
EXPLAIN_PATH = "_cluster/allocation/explain"


@dataclass(frozen=True)
class Shard:
    index: str
    number: int
    primary: bool

    def __str__(self) -> str:
        return f"[{self.index}][{self.number}] ({'primary' if self.primary else 'replica'})"

    def explain_body(self) -> dict[str, Any]:
        return {"index": self.index, "shard": self.number, "primary": self.primary}


@dataclass(frozen=True)
class Refusal:
    shard: Shard
    why: str

    def __str__(self) -> str:
        return f"shard {self.shard}: {self.why}"


def unassigned(shards: list[dict[str, str]]) -> list[Shard]:
    """The unassigned shards of a `_cat/shards` answer, primaries first."""
    found = [Shard(s["index"], int(s["shard"]), s["prirep"] == "p") for s in shards if s.get("state") == "UNASSIGNED"]
    return sorted(found, key=lambda shard: not shard.primary)


def to_explain(health: str, shards: list[Shard], waits_for_green: bool) -> Shard | None:
    """The shard whose allocation could hold the race: an unassigned primary (red), or an unassigned
    replica (yellow) while the track waits for green; replicas are left alone when the track
    accepts yellow (rally.track_params asks for it when no node may hold them)."""
    if health == "red":
        return next((shard for shard in shards if shard.primary), None)
    if health == "yellow" and waits_for_green:
        return next((shard for shard in shards if not shard.primary), None)
    return None


def refusal(shard: Shard, explanation: dict[str, Any]) -> Refusal | None:
    """Why Elasticsearch refuses to allocate shard, from its allocation explanation; None when it
    will (or may yet) allocate it. Each node's deciders that say NO, with their own words."""
    decision = explanation.get("can_allocate")
    if decision not in REFUSED:
        return None
    nodes = []
    for node in explanation.get("node_allocation_decisions") or []:
        nos = [f"{d.get('decider')}: {d.get('explanation')}" for d in node.get("deciders") or []
               if d.get("decision") == "NO"]
        if nos:
            nodes.append(f"node {node.get('node_name')}: {'; '.join(nos)}")
    why = "; ".join(nodes) or explanation.get("allocate_explanation") or f"can_allocate {decision}"
    return Refusal(shard, why)


class Watch:
    """Polls the cluster's health in a daemon thread while a race runs; once one shard has been
    refused for stuck_seconds, records it in `stuck` and sets `stop`.

    A poll that fails is skipped: the watch must never break the race it observes; a cluster that
    will not tell (a user without the monitor privilege) is left unwatched, and `problem` says so.
    """

    def __init__(self, get: Callable[[str], Any], post: Callable[[str, dict[str, Any]], Any], *,
                 waits_for_green: bool, stuck_seconds: float = STUCK_SECONDS, interval: float = POLL_SECONDS):
        self._get = get
        self._post = post
        self._waits_for_green = waits_for_green
        self._stuck_seconds = stuck_seconds
        self._interval = interval
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name="allocation", daemon=True)
        self.stop = threading.Event()
        self.stuck: Refusal | None = None
        self.last: Refusal | None = None  # the newest refusal seen, lasting or not
        self.problem: str | None = None  # why the cluster could not be watched

    def _run(self) -> None:
        held: Shard | None = None  # the shard refused at every poll since `since`
        since = 0.0
        while not self._finished.wait(self._interval):
            try:
                found = self.check()
            except urllib.error.HTTPError as e:
                if e.code in (401, 403):
                    self.problem = f"shard allocation is not watched: Elasticsearch refused to tell it (HTTP {e.code})"
                    return
                continue
            except Exception:
                continue
            if found is None:
                held = None
                continue
            self.last = found
            # The same shard, whatever the words: a disk decider's free bytes change at each refresh.
            if found.shard != held:
                held, since = found.shard, time.monotonic()
            elif time.monotonic() - since >= self._stuck_seconds:
                self.stuck = found
                self.stop.set()
                return

    def check(self) -> Refusal | None:
        """The refusal holding the race now, if any."""
        health = self._get(HEALTH_PATH)["status"]
        if health == "green":
            return None
        shard = to_explain(health, unassigned(self._get(SHARDS_PATH)), self._waits_for_green)
        return refusal(shard, self._post(EXPLAIN_PATH, shard.explain_body())) if shard else None

    def start(self) -> Watch:
        self._thread.start()
        return self

    def finish(self) -> None:
        self._finished.set()
        self._thread.join(timeout=30)
