"""kopf handlers: thin entry points that hand every event to the lifecycle's reconcile.

Run with `esbench operator` (or `kopf run -m esbench.controller.handlers --all-namespaces`).

Only event handlers are used (wakeups.py says why); the looks that no event brings (deadlines,
TTLs, retries) come from one operator-wide resync loop, which asks a wakeups.Agenda per kind what is due.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable
from typing import Any

import kopf
import kubernetes

from esbench.api import models
from esbench.api.models import EXPERIMENT_LABEL, SCHEDULE_LABEL, SWEEP_LABEL
from esbench.controller import metrics
from esbench.controller.config import Settings
from esbench.controller.experimentstate import race_ended
from esbench.controller.kube import ECK_GROUP, ECK_PLURAL, ECK_VERSION, BoundedApiClient, Gone, Kube
from esbench.controller.lifecycle import Reconciler, RetryLater
from esbench.controller.schedules import ScheduleReconciler
from esbench.controller.sweeps import SweepReconciler
from esbench.controller.wakeups import Agenda, next_look
from esbench.history.esstore import StoreUnavailable
from esbench.planning.status import recorded

SETTINGS = Settings.from_env()

_reconciler: Reconciler | None = None
_sweep_reconciler: SweepReconciler | None = None
_schedule_reconciler: ScheduleReconciler | None = None
# Experiments that still need looks (unfinished, or waiting for their TTL), and unfinished sweeps
# (at every resync: a sweep's own runs bring most of its news).
_experiments = Agenda(SETTINGS.resync_seconds)
_sweeps = Agenda(SETTINGS.resync_seconds)
# Every schedule, at every resync: its next tick is a look no event brings.
_schedules = Agenda(SETTINGS.resync_seconds)
logger = logging.getLogger(__name__)


def _api_client() -> kubernetes.client.ApiClient:
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()
    configuration = kubernetes.client.Configuration.get_default_copy()
    # One connection per worker thread and per side reader (Reconciler.side_reads), so that
    # concurrent Experiments do not queue.
    configuration.connection_pool_maxsize = 2 * SETTINGS.max_workers
    return BoundedApiClient(configuration)


class _NoDiffBase(kopf.DiffBaseStorage):
    """No last-handled state: only event handlers are used (see above), and kopf diffs an object
    against such a state for change handlers only. Its default storage still deep-copies every
    object of every watch event to build one, a cost that shows in make bench's steady state."""

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        pass


def tune(settings: kopf.OperatorSettings) -> None:
    # Handler failures become Warning Events on the Experiment; routine progress does not.
    settings.posting.level = logging.WARNING
    settings.execution.max_workers = SETTINGS.max_workers
    settings.watching.server_timeout = 300
    # The API server sends only esbench's own Jobs and clusters: the operator neither receives nor
    # parses the events of every other Job and Elasticsearch in the cluster to filter them itself.
    settings.watching.label_selectors["batch", "v1", "jobs"] = EXPERIMENT_LABEL
    settings.watching.label_selectors[ECK_GROUP, ECK_VERSION, ECK_PLURAL] = EXPERIMENT_LABEL
    settings.persistence.diffbase_storage = _NoDiffBase()


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    global _reconciler, _sweep_reconciler, _schedule_reconciler
    tune(settings)
    # The kubelet probes liveness every few seconds; those requests are not news.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    kube = Kube(_api_client())
    _reconciler = Reconciler(kube, SETTINGS, kube.post_event)
    _sweep_reconciler = SweepReconciler(kube, kube.post_event, _reconciler.store, SETTINGS)
    _schedule_reconciler = ScheduleReconciler(kube, kube.post_event, _reconciler.store)
    asyncio.get_running_loop().create_task(_resync_forever())
    # What exists by now (modules, pydantic's schemas, kopf's and the client's machinery) lives as
    # long as the process: kept out of the collector's full passes, which stop every thread and
    # come every few seconds under load, it no longer makes each of them long.
    gc.freeze()


def _reconcile(namespace: str, name: str, job: dict[str, Any] | None = None,
               cluster: dict[str, Any] | None = None) -> None:
    assert _reconciler is not None, "startup handler has not run"
    key = (namespace, name)
    try:
        left = _reconciler.reconcile(namespace, name, job, cluster)
    except RetryLater as error:  # the resync loop comes back to it, at its next pass
        logger.info("%s/%s: %s", namespace, name, error)
        _experiments.look_soon(key)
    except Gone:  # deleted meanwhile: its children go with it (owner references)
        logger.info("%s/%s was deleted while it was reconciled", namespace, name)
    except StoreUnavailable as error:  # said on the Experiment; tried again, backing off
        if _experiments.failed(key, f"recording {namespace}/{name}", error):
            logger.warning("%s/%s: not recorded yet: %s", namespace, name, error)
        return
    except Exception as error:
        if _experiments.failed(key, f"{namespace}/{name}", error):
            raise  # logged with its traceback by kopf or by the resync loop
        return
    else:
        unattended = None if left is None else next_look(left, SETTINGS.resync_seconds)
        if left is not None and unattended is None:
            # Finished just now, most likely: the deletion of its cluster that follows is not news,
            # and its own watch event, which would say so too, may come after that.
            _experiments.untrack(key)
        elif unattended is not None and _experiments.tracked(key):
            # How long it may now go unattended: its deadline has come nearer since its own last
            # event, and a look at it comes from the resync loop or a child's event.
            _experiments.track(key, unattended)
    _experiments.succeeded(key)


def _reconcile_sweep(namespace: str, name: str) -> None:
    assert _sweep_reconciler is not None, "startup handler has not run"
    _guarded(_sweeps, "sweep", namespace, name, _sweep_reconciler.reconcile)


def _reconcile_schedule(namespace: str, name: str) -> None:
    assert _schedule_reconciler is not None, "startup handler has not run"
    _guarded(_schedules, "schedule", namespace, name, _schedule_reconciler.reconcile)


def _guarded(looks: Agenda, kind: str, namespace: str, name: str, reconcile: Callable[[str, str], None]) -> None:
    """One reconcile of a sweep or a schedule; a failure is tried again by the backoff of LOOKS."""
    key = (namespace, name)
    try:
        reconcile(namespace, name)
    except Gone:
        logger.info("%s %s/%s was deleted while it was reconciled", kind, namespace, name)
    except StoreUnavailable as error:  # said on the object; tried again, backing off
        if looks.failed(key, f"recording {kind} {namespace}/{name}", error):
            logger.warning("%s %s/%s: not recorded yet: %s", kind, namespace, name, error)
        return
    except Exception as error:
        if looks.failed(key, f"{kind} {namespace}/{name}", error):
            raise  # logged with its traceback by kopf or by the resync loop
        return
    looks.succeeded(key)


async def _resync_forever() -> None:
    while True:
        await asyncio.sleep(SETTINGS.resync_seconds)
        work = ([(_reconcile, key) for key in _experiments.due()]
                + [(_reconcile_sweep, key) for key in _sweeps.due()]
                + [(_reconcile_schedule, key) for key in _schedules.due()])
        for reconcile, (namespace, name) in work:
            try:
                await asyncio.to_thread(reconcile, namespace, name)
            except Exception:  # one object's trouble must not stop the others' resync
                logger.exception("resync of %s/%s failed", namespace, name)


@kopf.on.event(models.GROUP, models.VERSION, models.PLURAL)
def experiment_event(type: str | None, body: kopf.Body, namespace: str, name: str, **_: Any) -> None:
    key = (namespace, name)
    if type == "DELETED":
        _experiments.forget(key)
        return
    unattended = next_look(body, SETTINGS.resync_seconds)
    if unattended is None:
        _experiments.untrack(key)
        return
    _experiments.track(key, unattended)
    # None: listed at operator start (resume); ADDED: created. MODIFIED events are mostly our
    # own status patches: the resync loop and the children's events cover the rest.
    if type in (None, "ADDED"):
        _reconcile(namespace, name)


def _its_experiment_is_tracked(namespace: str, labels: dict[str, str]) -> bool:
    """Whether the child's Experiment still needs attention (unfinished, or a TTL to keep)."""
    return _experiments.tracked((namespace, labels[EXPERIMENT_LABEL]))


def _may_need_its_experiment(type: str | None, namespace: str, labels: dict[str, str], **_: Any) -> bool:
    """Every change of a cluster may, but not its creation: only the operator creates clusters with
    that label, in the reconcile that then says what it saw (a listing at start is type None).
    And its deletion only while the Experiment is unfinished (or has a TTL to keep): a finished one
    has nothing left to release."""
    if type == "DELETED":
        return _its_experiment_is_tracked(namespace, labels)
    return type != "ADDED"


@kopf.on.event(ECK_GROUP, ECK_VERSION, ECK_PLURAL, labels={EXPERIMENT_LABEL: kopf.PRESENT},
               when=_may_need_its_experiment)
def cluster_changed(type: str | None, event: kopf.RawEvent, namespace: str, labels: dict[str, str], **_: Any) -> None:
    _reconcile(namespace, labels[EXPERIMENT_LABEL], cluster=None if type == "DELETED" else event["object"])


def _race_ended_or_gone(type: str | None, body: kopf.Body, namespace: str, labels: dict[str, str], **_: Any) -> bool:
    """Only a Job's end or deletion moves its Experiment on, and only while that is unfinished: its
    other changes (created, pod started, the Job controller's later bookkeeping) would cost two
    reads each for nothing. The resync still checks every running race."""
    return _its_experiment_is_tracked(namespace, labels) and (type == "DELETED" or race_ended(body))


@kopf.on.event("batch", "v1", "jobs", labels={EXPERIMENT_LABEL: kopf.PRESENT}, when=_race_ended_or_gone)
def job_changed(type: str | None, event: kopf.RawEvent, namespace: str, labels: dict[str, str], **_: Any) -> None:
    _reconcile(namespace, labels[EXPERIMENT_LABEL], None if type == "DELETED" else event["object"])


@kopf.on.event(models.GROUP, models.VERSION, models.SWEEP_PLURAL)
def sweep_event(type: str | None, body: kopf.Body, namespace: str, name: str, **_: Any) -> None:
    key = (namespace, name)
    if type == "DELETED":
        _sweeps.forget(key)
        if _sweep_reconciler is not None:
            _sweep_reconciler.forget(namespace, name, body["metadata"]["uid"])
        return
    if body.get("status", {}).get("phase") in [p.value for p in models.SWEEP_TERMINAL_PHASES] and (
            _reconciler is None or _reconciler.store is None or recorded(body)):
        _sweeps.untrack(key)
        return
    _sweeps.track(key, 0)
    if type in (None, "ADDED"):
        _reconcile_sweep(namespace, name)


@kopf.on.event(models.GROUP, models.VERSION, models.PLURAL, labels={SWEEP_LABEL: kopf.PRESENT})
def sweep_run_changed(namespace: str, labels: dict[str, str], **_: Any) -> None:
    # A run's progress is the sweep's: the next run starts as soon as one finishes, or is deleted.
    _reconcile_sweep(namespace, labels[SWEEP_LABEL])


@kopf.on.event(models.GROUP, models.VERSION, models.SCHEDULE_PLURAL)
def schedule_event(type: str | None, namespace: str, name: str, **_: Any) -> None:
    key = (namespace, name)
    if type == "DELETED":  # its runs go with it (owner references)
        _schedules.forget(key)
        metrics.show(namespace, name, None)
        return
    _schedules.track(key, 0)
    # Created or listed at start. A change of its spec (suspend, the schedule) waits for the
    # resync, as its own status patches do.
    if type in (None, "ADDED"):
        _reconcile_schedule(namespace, name)


def _a_run_ended(type: str | None, body: kopf.Body, **_: Any) -> bool:
    """A schedule hears of its runs when one ends or goes: Forbid may start a waiting tick then,
    and the history limits may delete one."""
    return type == "DELETED" or (body.get("status") or {}).get("phase") in models.TERMINAL_PHASES


@kopf.on.event(models.GROUP, models.VERSION, models.PLURAL, labels={SCHEDULE_LABEL: kopf.PRESENT}, when=_a_run_ended)
def scheduled_experiment_changed(namespace: str, labels: dict[str, str], **_: Any) -> None:
    _reconcile_schedule(namespace, labels[SCHEDULE_LABEL])


@kopf.on.event(models.GROUP, models.VERSION, models.SWEEP_PLURAL, labels={SCHEDULE_LABEL: kopf.PRESENT},
               when=_a_run_ended)
def scheduled_sweep_changed(namespace: str, labels: dict[str, str], **_: Any) -> None:
    _reconcile_schedule(namespace, labels[SCHEDULE_LABEL])
