"""What the reconcilers of Experiments, sweeps and schedules share: one lock per object, where
their Events go, and the deletion of a cluster they made."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from esbench.api.reasons import Reason
from esbench.controller.kube import Kube, Rejected

# (experiment body, event type "Normal"/"Warning", reason, message)
EventSink = Callable[[dict[str, Any], str, str, str], None]


class KeyedLocks:
    """One lock per object: events for one object arrive from several watches at once.

    Weakly kept: a lock lives while a reconcile holds or awaits it and goes by itself once no
    one does (the operator sees many objects over its life). Dropping it when its object is
    deleted would let a reconcile still holding it overlap with the next one of that name.
    """

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[tuple[str, str], threading.Lock] = weakref.WeakValueDictionary()
        self._guard = threading.Lock()

    def __call__(self, key: tuple[str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


def delete_cluster(kube: Kube, emit: EventSink, owner: dict[str, Any], cluster: str, uid: str) -> bool:
    """Deletes the OWNER's Elasticsearch CLUSTER (the one of that UID); whether it was deleted now. A
    refusal is said on the owner at each try, and raised: the handlers try again, backing off."""
    try:
        return kube.delete_elasticsearch(owner["metadata"]["namespace"], cluster, uid)
    except Rejected as rejected:
        emit(owner, "Warning", Reason.CLEANUP_FAILED, f"{rejected}; tried again later")
        raise
