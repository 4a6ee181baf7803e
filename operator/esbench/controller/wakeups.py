"""When the operator looks at an object again, besides the watch events that bring it.

The operator has event handlers only: kopf adds a finalizer to objects with timers or daemons,
and a finalizer would make Experiments undeletable whenever the operator is down. Deadlines,
TTLs, missed events and failed reconciles are covered by one operator-wide resync loop
(handlers.py), which asks an Agenda per kind which objects are due. What an Experiment needs is
decided in one place, `next_look`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from esbench.api.models import TERMINAL_PHASES, Phase, lifecycle_setting
from esbench.api.reasons import ConditionType
from esbench.planning import manifests, status

Key = tuple[str, str]  # (namespace, name)

# An Experiment that waits for its own cluster or for its Job is brought back by their watch
# events; the resync still looks at it every this many resync intervals (5 min by default), in case
# one was missed. A last resort: kopf lists every object again whenever a watch breaks.
WATCHED_WAIT_RESYNCS = 30
# After a failed reconcile: tried again after 1, 2, 4, 8, 16, then every 32 resync intervals.
MAX_BACKOFF_DOUBLINGS = 5
logger = logging.getLogger(__name__)


def next_look(body: dict[str, Any], resync_seconds: float) -> float | None:
    """How long the Experiment can go without a look that no watch event would bring; None if it
    needs none (finished, with no TTL to keep and nothing left to record).

    Waiting for its own cluster or for its Job, their watch events bring the operator back: it
    needs a look at its deadline (clusterReadyTimeoutSeconds from its creation; a race's deadline
    is the Job's own) and, in case an event was missed, every WATCHED_WAIT_RESYNCS resyncs. Any
    other wait (ECK not installed, a namesake's cluster going, a cluster it does not own, a TTL)
    has no event to wait for: every resync. (Read at every resync, 1,000 running Experiments
    would be 2,000 reads per resync, nearly all of them for nothing.)"""
    phase = (body.get("status") or {}).get("phase")
    if phase in [p.value for p in TERMINAL_PHASES]:
        recorded = status.condition(body["status"], ConditionType.RECORDED)
        ttl = lifecycle_setting(body.get("spec") or {}, "ttlSecondsAfterFinished")
        return None if ttl is None and not (recorded and recorded["status"] == "False") else resync_seconds
    watched = WATCHED_WAIT_RESYNCS * resync_seconds
    if phase == Phase.BENCHMARKING:
        return watched
    if phase == Phase.PROVISIONING:
        try:
            experiment = manifests.Experiment.from_body(body)
        except ValidationError:  # its next reconcile fails it
            return resync_seconds
        if experiment.owns_cluster:
            deadline = status.time_left(body, experiment.spec.lifecycle.cluster_ready_timeout_seconds)
            return max(0.0, min(watched, deadline))
    return resync_seconds


@dataclass(frozen=True)
class Failures:
    in_a_row: int
    retry_at: float  # on the agenda's clock


class Agenda:
    """The objects of one kind that need looks, and when each is next due.

    A tracked object is due once it has gone unattended for as long as it may (0: at every pass
    of the resync loop). An object whose last reconcile failed is due by its backoff instead,
    tracked or not: a finished Experiment whose cluster could not be deleted would otherwise wait
    for the cluster's next change or an operator restart, and a refusal that lasts would cost the
    API server and the log at every pass.

    Shared by kopf's worker threads and the resync loop: each step is one dict operation.
    """

    def __init__(self, resync_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.resync_seconds = resync_seconds
        self.clock = clock
        self._unattended: dict[Key, float] = {}
        self._next: dict[Key, float] = {}
        self._failed: dict[Key, Failures] = {}

    def track(self, key: Key, unattended: float) -> None:
        self._unattended[key] = unattended
        self._next[key] = self.clock() + unattended

    def untrack(self, key: Key) -> None:
        self._unattended.pop(key, None)
        self._next.pop(key, None)

    def forget(self, key: Key) -> None:
        """The object is deleted: nothing is due for it any more."""
        self.untrack(key)
        self._failed.pop(key, None)

    def tracked(self, key: Key) -> bool:
        return key in self._unattended

    def look_soon(self, key: Key) -> None:
        """At the next pass (a reconcile that could not finish yet), if it is tracked."""
        if key in self._unattended:
            self._next[key] = self.clock()

    def succeeded(self, key: Key) -> None:
        self._failed.pop(key, None)

    def failed(self, key: Key, what: str, error: Exception) -> bool:
        """Counts one more failure in a row and sets when it is tried again. Whether it is the first
        in a row: that one is for the caller to raise, to be logged with its traceback; each later
        one is a line here."""
        in_a_row = (previous.in_a_row if (previous := self._failed.get(key)) else 0) + 1
        delay = self.resync_seconds * 2 ** min(in_a_row - 1, MAX_BACKOFF_DOUBLINGS)
        self._failed[key] = Failures(in_a_row, self.clock() + delay)
        if in_a_row > 1:
            logger.warning("%s failed again (%d in a row; next try in %.0fs): %s", what, in_a_row, delay, error)
        return in_a_row == 1

    def due(self) -> list[Key]:
        """What to look at now, in order; each tracked one is then not due again for its interval."""
        now = self.clock()
        looks = {key for key in list(self._unattended)
                 if key not in self._failed and self._next.get(key, now) <= now}
        for key in looks:  # before the reconcile: what it does (a look_soon, say) says better
            self._next[key] = now + self._unattended.get(key, self.resync_seconds)
        retries = {key for key, failures in list(self._failed.items()) if failures.retry_at <= now}
        return sorted(looks | retries)
