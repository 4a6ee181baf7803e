"""The shard-allocation watch: which shard holds a race, why Elasticsearch refuses it (real 8.7.1
answers, tests/fixtures/allocation), and when the race is stopped."""

from __future__ import annotations

import copy
import io
import json
import time
import urllib.error
from pathlib import Path

import pytest

from esbench.runner import allocation
from esbench.runner.allocation import Shard

ANSWERS = json.loads((Path(__file__).parents[1] / "fixtures/allocation/explain-8.7.1.json").read_text())
DISK = Shard("disk", 0, True)


def test_unassigned_shards_come_primaries_first():
    assert allocation.unassigned(ANSWERS["shards"]) == [
        Shard("filtered", 0, True), Shard("disk", 0, True), Shard("filtered", 0, False)]
    assert allocation.unassigned([{"index": "a", "shard": "0", "prirep": "p", "state": "STARTED"}]) == []


@pytest.mark.parametrize(("health", "waits_for_green", "explained"), [
    ("red", True, Shard("primary", 0, True)),
    ("red", False, Shard("primary", 0, True)),
    ("yellow", True, Shard("replica", 1, False)),
    # The track accepts yellow (replicas no node may hold): replicas do not hold the race.
    ("yellow", False, None),
    ("green", True, None),
])
def test_the_shard_explained_is_the_one_the_race_waits_for(health, waits_for_green, explained):
    shards = [Shard("replica", 1, False), Shard("primary", 0, True)] if health == "red" else [Shard("replica", 1, False)]
    assert allocation.to_explain(health, sorted(shards, key=lambda s: not s.primary), waits_for_green) == explained


def test_a_refusal_says_each_nodes_deciders_in_elasticsearchs_words():
    disk = allocation.refusal(DISK, ANSWERS["disk"])
    assert str(disk) == ("shard [disk][0] (primary): node vm: disk_threshold: the node is above the high watermark "
                         "cluster setting [cluster.routing.allocation.disk.watermark.high=200tb], having less than the "
                         "minimum required [200tb] free space, actual free: [76.4gb], actual used: [69.6%]")
    filtered = allocation.refusal(Shard("filtered", 0, True), ANSWERS["filtered"])
    assert filtered.why.startswith('node vm: filter: node does not match index setting [index.routing.allocation.require] '
                                   'filters [_name:"nowhere"]; disk_threshold: the node is above the high watermark')
    replica = allocation.refusal(Shard("filtered", 0, False), ANSWERS["replica"])
    assert str(replica).startswith("shard [filtered][0] (replica): node vm: replica_after_primary_active: ")


def test_a_shard_elasticsearch_may_yet_allocate_is_no_refusal():
    for decision in ("yes", "throttled", "allocation_delayed", "awaiting_info"):
        assert allocation.refusal(DISK, {**ANSWERS["disk"], "can_allocate": decision}) is None
    # No copy to allocate: no node's deciders to quote, Elasticsearch's summary instead.
    lost = {"can_allocate": "no_valid_shard_copy",
            "allocate_explanation": "Elasticsearch can't allocate this shard because there are no copies of its data"}
    assert allocation.refusal(DISK, lost).why == lost["allocate_explanation"]


class Cluster:
    """The three answers the watch asks for, from the fixture unless changed."""

    def __init__(self, health: str = "red"):
        self.health = health
        self.explain = copy.deepcopy(ANSWERS["disk"])
        self.forbidden = False
        self.polls = 0

    def get(self, path: str):
        if self.forbidden:
            raise urllib.error.HTTPError(path, 403, "Forbidden", {}, io.BytesIO())
        self.polls += 1
        if path == allocation.HEALTH_PATH:
            return {"status": self.health}
        assert path == allocation.SHARDS_PATH
        return [{"index": "disk", "shard": "0", "prirep": "p", "state": "UNASSIGNED"}]

    def post(self, path: str, body: dict):
        assert (path, body) == (allocation.EXPLAIN_PATH, {"index": "disk", "shard": 0, "primary": True})
        # The disk decider's free bytes differ from one refresh to the next.
        self.explain["node_allocation_decisions"][0]["deciders"][0]["explanation"] += "."
        return self.explain


def eventually(condition, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def watch(cluster: Cluster, stuck_seconds: float = 0.2) -> allocation.Watch:
    return allocation.Watch(cluster.get, cluster.post, waits_for_green=True, stuck_seconds=stuck_seconds,
                            interval=0.01).start()


def test_a_shard_refused_for_the_whole_grace_stops_the_race_whatever_its_words():
    cluster = Cluster()
    watching = watch(cluster)
    assert watching.stop.wait(5)
    watching.finish()
    assert watching.stuck.shard == DISK and "disk_threshold" in watching.stuck.why


def test_a_refusal_that_ends_within_the_grace_does_not_stop_the_race_and_one_that_returns_starts_anew():
    cluster = Cluster()
    watching = watch(cluster, stuck_seconds=1.0)
    eventually(lambda: cluster.polls >= 6)
    cluster.health = "green"
    assert not watching.stop.wait(1.2)
    assert watching.stuck is None and watching.last.shard == DISK  # the timeout's message may name it
    cluster.health = "red"  # refused again: its grace counts from now
    assert not watching.stop.wait(0.5)
    assert watching.stop.wait(5)
    watching.finish()


def test_a_cluster_that_will_not_tell_is_left_unwatched_and_says_so():
    cluster = Cluster()
    cluster.forbidden = True
    watching = watch(cluster, stuck_seconds=0)
    eventually(lambda: watching.problem is not None)
    watching.finish()
    assert watching.stuck is None and "HTTP 403" in watching.problem
