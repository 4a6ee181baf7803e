"""Kubernetes I/O: the only module that talks to the API server (besides kopf itself)."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from typing import Any

from cachetools import TTLCache, cachedmethod
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from esbench.api import models
from esbench.planning.manifests import ECK_API_VERSION, RALLY_CONTAINER

logger = logging.getLogger(__name__)

ECK_GROUP, ECK_VERSION = ECK_API_VERSION.split("/")
ECK_PLURAL = "elasticsearches"
ECK_CLUSTER_LABEL = "elasticsearch.k8s.elastic.co/cluster-name"  # on every pod of an ECK cluster
# How long the server's version and a node's description are taken as read: they change with an
# upgrade, not between two races, and reading them for every race costs two calls of about ten.
PLATFORM_FACTS_TTL_SECONDS = 60


class KindNotServed(Exception):
    """The API server does not serve a kind we need (e.g. ECK's CRDs are not installed)."""


class Rejected(Exception):
    """The API server, an admission webhook or policy refused a request (invalid, forbidden, over
    a quota): asking again at once would get the same answer. The message is the server's.
    DOING: what was refused, e.g. "rejected Job x"."""

    def __init__(self, doing: str, error: ApiException):
        try:
            reason = json.loads(error.body or "{}").get("message") or error.reason
        except ValueError:
            reason = error.body or error.reason
        super().__init__(f"The API server {doing} ({error.status}): {reason}")


class Gone(Exception):
    """The object was deleted while it was being reconciled: there is nothing left to update."""


class BoundedApiClient(client.ApiClient):
    """An ApiClient whose every request has a timeout (seconds to connect, seconds between bytes
    read) unless the call sets its own: a hung call ends in an error that the next resync
    retries, instead of holding an object's lock, and the resync of every other one, forever."""

    def __init__(self, configuration: client.Configuration, timeout: tuple[float, float] = (10, 60)):
        super().__init__(configuration)
        self.timeout = timeout

    def call_api(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        return super().call_api(method, url, header_params, body, post_params, _request_timeout or self.timeout)


class Kube:
    def __init__(self, api_client: client.ApiClient):
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self._platform_facts: TTLCache = TTLCache(maxsize=1024, ttl=PLATFORM_FACTS_TTL_SECONDS)
        self._platform_facts_lock = threading.Lock()

    # --- Experiments ---

    def get_experiment(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _absent_as_none(
            lambda: self.custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, name)
        )

    def patch_experiment_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        _absent_as_gone(lambda: _unparsed(self.custom.patch_namespaced_custom_object_status,
                                          models.GROUP, models.VERSION, namespace, models.PLURAL, name, {"status": status}))

    def delete_experiment(self, namespace: str, name: str) -> None:
        _absent_as_none(
            lambda: _unparsed(self.custom.delete_namespaced_custom_object, models.GROUP, models.VERSION, namespace,
                              models.PLURAL, name, propagation_policy="Background")
        )

    def create_experiment(self, manifest: dict[str, Any]) -> None:
        _create(models.KIND, manifest, lambda: _unparsed(self.custom.create_namespaced_custom_object, models.GROUP,
                                                         models.VERSION, manifest["metadata"]["namespace"],
                                                         models.PLURAL, manifest))

    def list_experiments(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(
            models.GROUP, models.VERSION, namespace, models.PLURAL, label_selector=label_selector)["items"]

    # --- ExperimentSweeps ---

    def get_sweep(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _absent_as_none(
            lambda: self.custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, name)
        )

    def patch_sweep_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        _absent_as_gone(lambda: _unparsed(self.custom.patch_namespaced_custom_object_status, models.GROUP,
                                          models.VERSION, namespace, models.SWEEP_PLURAL, name, {"status": status}))

    def create_sweep(self, manifest: dict[str, Any]) -> None:
        _create(models.SWEEP_KIND, manifest, lambda: _unparsed(
            self.custom.create_namespaced_custom_object, models.GROUP, models.VERSION,
            manifest["metadata"]["namespace"], models.SWEEP_PLURAL, manifest))

    def list_sweeps(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(
            models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, label_selector=label_selector)["items"]

    def delete_sweep(self, namespace: str, name: str) -> None:
        _absent_as_none(
            lambda: _unparsed(self.custom.delete_namespaced_custom_object, models.GROUP, models.VERSION, namespace,
                              models.SWEEP_PLURAL, name, propagation_policy="Background")
        )

    # --- ExperimentSchedules ---

    def get_schedule(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _absent_as_none(lambda: self.custom.get_namespaced_custom_object(
            models.GROUP, models.VERSION, namespace, models.SCHEDULE_PLURAL, name))

    def patch_schedule_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        _absent_as_gone(lambda: _unparsed(self.custom.patch_namespaced_custom_object_status, models.GROUP,
                                          models.VERSION, namespace, models.SCHEDULE_PLURAL, name, {"status": status}))

    # --- Events ---

    def post_event(self, involved: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """A core/v1 Event about an esbench resource, like `kubectl describe` shows.

        Posted directly rather than with kopf.event, which works only inside kopf's own tasks,
        not from the operator-wide resync loop. Best effort, like client-go's event recorder: an
        Event the server refuses (a namespace being deleted, a quota on Events) is logged and
        dropped, and whatever the reconcile does after it (e.g. a cleanup) still happens.
        """
        meta = involved["metadata"]
        now = datetime.now(UTC).isoformat()
        event = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": involved.get("apiVersion"), "kind": involved.get("kind"),
                               "name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid")},
            "type": type_, "reason": reason, "message": message[:1024],
            "source": {"component": "esbench-operator"}, "reportingComponent": "esbench-operator",
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }
        try:
            _unparsed(self.core.create_namespaced_event, meta["namespace"], event)
        except ApiException as error:  # a timeout propagates: the resync tries the whole step again
            logger.warning("Event %s on %s/%s not posted: %s %s", reason, meta["namespace"], meta["name"],
                           error.status, error.reason)

    def warning_messages(self, involved: dict[str, Any], reason: str) -> list[str]:
        """The messages of the Warning Events with that reason about that very object, oldest first."""
        meta = involved["metadata"]
        events = self.core.list_namespaced_event(
            meta["namespace"], field_selector=f"involvedObject.uid={meta['uid']},reason={reason},type=Warning").items
        events.sort(key=lambda event: event.last_timestamp or event.event_time or event.metadata.creation_timestamp)
        return [event.message for event in events]

    # --- ECK Elasticsearch ---

    def create_elasticsearch(self, manifest: dict[str, Any]) -> dict[str, Any] | None:
        """The resource as created, or None when one of that name existed already."""
        namespace = manifest["metadata"]["namespace"]
        try:
            return _create("Elasticsearch", manifest, lambda: self.custom.create_namespaced_custom_object(
                ECK_GROUP, ECK_VERSION, namespace, ECK_PLURAL, manifest))
        except Rejected as rejected:
            if (error := rejected.__cause__) is not None and error.status == 404:
                raise KindNotServed(f"{ECK_API_VERSION} Elasticsearch") from error
            raise

    def get_elasticsearch(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _absent_as_none(
            lambda: self.custom.get_namespaced_custom_object(ECK_GROUP, ECK_VERSION, namespace, ECK_PLURAL, name)
        )

    def delete_elasticsearch(self, namespace: str, name: str, uid: str) -> bool:
        """Delete exactly that object: the UID precondition spares a same-named successor. Whether
        it was there to delete (False: gone already, or the name is another object's now)."""
        try:
            _unparsed(self.custom.delete_namespaced_custom_object, ECK_GROUP, ECK_VERSION, namespace, ECK_PLURAL, name,
                      body={"preconditions": {"uid": uid}})
        except ApiException as error:
            if error.status in (404, 409):  # 409: the precondition failed
                return False
            if _refused(error):
                raise Rejected(f"refused to delete Elasticsearch {name}", error) from error
            raise
        return True

    # --- the Rally Job and its results ---

    def create_job(self, manifest: dict[str, Any]) -> bool:
        """Whether it was created now (False: one of that name existed already)."""
        return _create("Job", manifest, lambda: _unparsed(self.batch.create_namespaced_job,
                                                          manifest["metadata"]["namespace"], manifest)) is not None

    def get_job(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _absent_as_none(lambda: _json(self.batch.read_namespaced_job, name, namespace))

    def job_pod(self, namespace: str, job_name: str) -> dict[str, Any] | None:
        selector = f"batch.kubernetes.io/job-name={job_name}"
        # Only a consistent read may say that the pod is gone (its results would be).
        pods = self._pods(namespace, selector, cached=True) or self._pods(namespace, selector)
        # RFC 3339 timestamps in UTC, all of one form: their order as text is their order in time.
        return max(pods, key=lambda pod: pod["metadata"]["creationTimestamp"], default=None)

    def pod_log(self, namespace: str, pod_name: str) -> str:
        return self.core.read_namespaced_pod_log(pod_name, namespace, container=RALLY_CONTAINER)

    # --- what the race ran on (the reproducibility record) ---

    @cachedmethod(lambda self: self._platform_facts, key=lambda self: "version",
                  lock=lambda self: self._platform_facts_lock)
    def server_version(self) -> str | None:
        return client.VersionApi(self.core.api_client).get_code().git_version

    def cluster_pods(self, namespace: str, cluster: str) -> list[dict[str, Any]]:
        return self._pods(namespace, f"{ECK_CLUSTER_LABEL}={cluster}", cached=True)

    def _pods(self, namespace: str, label_selector: str, cached: bool = False) -> list[dict[str, Any]]:
        """CACHED: as the API server's watch cache has them now (resourceVersion 0), a few
        milliseconds old at most on a healthy server. A consistent list (the default) is served
        from that cache too, but first waits until etcd confirms the cache is current: on
        kube-apiserver 1.32, with other objects being written, 2.5 ms at p50 but 100 ms at p95.
        The pods read here started long before, and what is read from them (name, node, images,
        resources) was set when they did; only a just-ended pod's exit code (said in a message)
        may be missing on a server whose cache lags."""
        extra = {"resource_version": "0"} if cached else {}
        return _json(self.core.list_namespaced_pod, namespace, label_selector=label_selector, **extra)["items"]

    @cachedmethod(lambda self: self._platform_facts, key=lambda self, name: ("node", name),
                  lock=lambda self: self._platform_facts_lock)
    def get_node(self, name: str) -> dict[str, Any] | None:
        """None when gone, or when this operator may not read nodes (a chart's RBAC can leave it out)."""
        try:
            return _json(self.core.read_node, name)
        except ApiException as error:
            if error.status in (403, 404):
                return None
            raise

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        return _absent_as_none(lambda: _json(self.core.read_namespaced_config_map, name, namespace))

    def create_configmap(self, manifest: dict[str, Any]) -> bool:
        """Whether it was created now (False: one of that name existed already)."""
        return _create("ConfigMap", manifest, lambda: _unparsed(self.core.create_namespaced_config_map,
                                                                manifest["metadata"]["namespace"], manifest)) is not None


def _json(method, *args, **kwargs) -> Any:
    """What METHOD, a call of the client's API classes, answers: the server's JSON as dicts. Pods
    and Jobs are read this way because the client's model classes cost far more CPU to build (and
    to turn back into dicts) than the call itself."""
    return json.loads(method(*args, _preload_content=False, **kwargs).data)


def _unparsed(method, *args, **kwargs) -> Any:
    """Calls METHOD, a call of the client's API classes whose answer is not needed, and returns
    its raw response: read, so that its connection goes back to the pool, but not parsed. A status
    patch answers with the whole Experiment (its results too), a create with the whole Job or
    ConfigMap (race.json), which the client would turn into dicts or its model classes, for
    nothing."""
    response = method(*args, _preload_content=False, **kwargs)
    response.read()
    return response


def _absent_as_none(call):
    try:
        return call()
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _absent_as_gone(call) -> None:
    try:
        call()
    except ApiException as error:
        if error.status == 404:
            raise Gone from error
        raise


def _create(kind: str, manifest: dict[str, Any], call) -> Any:
    """Create, and return what the server made; None when one exists already (a retry, a
    restart): it is kept. A client error other than throttling is final: Rejected. Server errors
    and timeouts propagate, to be tried again."""
    try:
        return call()
    except ApiException as error:
        if error.status == 409:
            return None
        if _refused(error):
            raise Rejected(f"rejected {kind} {manifest['metadata']['name']}", error) from error
        raise


def _refused(error: ApiException) -> bool:
    """A client error other than throttling: the server's answer, not a passing trouble."""
    return error.status is not None and 400 <= error.status < 500 and error.status != 429
