"""kopf handlers: thin entry points that hand every event to the lifecycle's reconcile.

Run with `kopf run -m esbench.handlers --all-namespaces` (or `esbench operator`).
"""

from __future__ import annotations

import logging
from typing import Any

import kopf
import kubernetes

from esbench import api
from esbench.builders import EXPERIMENT_LABEL
from esbench.config import Settings
from esbench.kube import ECK_GROUP, ECK_PLURAL, ECK_VERSION, Kube
from esbench.lifecycle import Reconciler, RetryLater

SETTINGS = Settings.from_env()
_reconciler: Reconciler | None = None


def _emit(body: dict[str, Any], type_: str, reason: str, message: str) -> None:
    kopf.event(body, type=type_, reason=reason, message=message)


def _api_client() -> kubernetes.client.ApiClient:
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()
    configuration = kubernetes.client.Configuration.get_default_copy()
    # One connection per worker thread, so that concurrent Experiments do not queue.
    configuration.connection_pool_maxsize = SETTINGS.max_workers
    return kubernetes.client.ApiClient(configuration)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    global _reconciler
    # Our status schema is structural: keep kopf's bookkeeping in annotations, not status.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="esbench.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="esbench.io", key="last-handled-configuration"
    )
    # Handler failures become Warning Events on the Experiment; routine progress does not.
    settings.posting.level = logging.WARNING
    settings.execution.max_workers = SETTINGS.max_workers
    settings.watching.server_timeout = 300
    # The kubelet probes liveness every few seconds; those requests are not news.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    _reconciler = Reconciler(Kube(_api_client()), SETTINGS, _emit)


def _reconcile(namespace: str, name: str) -> None:
    assert _reconciler is not None, "startup handler has not run"
    try:
        _reconciler.reconcile(namespace, name)
    except RetryLater as error:
        raise kopf.TemporaryError(str(error), delay=SETTINGS.resync_seconds) from error


@kopf.on.create(api.GROUP, api.VERSION, api.PLURAL)
@kopf.on.resume(api.GROUP, api.VERSION, api.PLURAL)
def experiment_seen(namespace: str, name: str, **_: Any) -> None:
    _reconcile(namespace, name)


def _needs_resync(status: dict[str, Any], spec: dict[str, Any], **_: Any) -> bool:
    unfinished = status.get("phase") not in [p.value for p in api.TERMINAL_PHASES]
    return unfinished or spec.get("rally", {}).get("ttlSecondsAfterFinished") is not None


@kopf.timer(api.GROUP, api.VERSION, api.PLURAL, interval=SETTINGS.resync_seconds, when=_needs_resync)
def experiment_resync(namespace: str, name: str, **_: Any) -> None:
    _reconcile(namespace, name)


@kopf.on.event(ECK_GROUP, ECK_VERSION, ECK_PLURAL, labels={EXPERIMENT_LABEL: kopf.PRESENT})
def cluster_changed(namespace: str, labels: dict[str, str], **_: Any) -> None:
    _reconcile(namespace, labels[EXPERIMENT_LABEL])


@kopf.on.event("batch", "v1", "jobs", labels={EXPERIMENT_LABEL: kopf.PRESENT})
def job_changed(namespace: str, labels: dict[str, str], **_: Any) -> None:
    _reconcile(namespace, labels[EXPERIMENT_LABEL])
