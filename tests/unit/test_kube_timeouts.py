"""Every API call the operator makes has a timeout, so a hung API server cannot stall it; an Event
the server refuses does not stop the step that posts it; facts that change only with an upgrade
are not read for every race; pods are read from the watch cache, but never called gone from it."""

import json
import socket

import pytest
import urllib3
from cachetools import TTLCache
from kubernetes import client

from esbench.controller.kube import BoundedApiClient, Kube


@pytest.fixture
def silent_server():
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_call_to_an_api_server_that_never_answers_ends_in_an_error(silent_server):
    configuration = client.Configuration()
    configuration.host = silent_server
    configuration.retries = False
    kube = Kube(BoundedApiClient(configuration, timeout=(1, 1)))
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        kube.get_experiment("default", "anything")


def test_a_call_that_sets_its_own_timeout_keeps_it():
    api_client = BoundedApiClient(client.Configuration(), timeout=(1, 2))
    seen = []
    api_client.rest_client.request = lambda *args, _request_timeout=None, **kwargs: seen.append(_request_timeout)
    api_client.call_api("GET", "http://127.0.0.1:1/x")
    api_client.call_api("GET", "http://127.0.0.1:1/x", _request_timeout=30)
    assert seen == [(1, 2), 30]


def test_an_event_the_server_refuses_is_dropped_so_that_the_step_goes_on(caplog):
    """Events are best effort: one refused (here: its namespace is being deleted) must not end the
    reconcile step that posts it before, say, a cleanup. The refusal is the server's answer."""
    kube = Kube(BoundedApiClient(client.Configuration()))

    def refuse(namespace, body, **_):
        raise client.exceptions.ApiException(status=403, reason="Forbidden")

    kube.core.create_namespaced_event = refuse
    experiment = {"apiVersion": "esbench.io/v1alpha1", "kind": "Experiment",
                  "metadata": {"name": "e", "namespace": "gone", "uid": "u"}}
    kube.post_event(experiment, "Normal", "ClusterDeleted", "deleted")
    assert "Event ClusterDeleted on gone/e not posted: 403 Forbidden" in caplog.text


def test_a_nodes_description_is_read_once_a_minute_not_once_per_race():
    kube = Kube(BoundedApiClient(client.Configuration()))
    reads = []

    class Response:
        def __init__(self, name):
            self.data = json.dumps({"metadata": {"name": name}}).encode()

    def read_node(name, _preload_content=True):
        reads.append(name)
        return Response(name)

    kube.core.read_node = read_node
    # The Kube's own cache, its time-to-live kept, on a clock the test moves.
    now = [0.0]
    kube._platform_facts = TTLCache(maxsize=16, ttl=kube._platform_facts.ttl, timer=lambda: now[0])
    assert kube.get_node("n1") == kube.get_node("n1") == {"metadata": {"name": "n1"}}
    assert kube.get_node("n2") == {"metadata": {"name": "n2"}}
    now[0] = 59
    kube.get_node("n1")
    assert reads == ["n1", "n2"]
    now[0] = 61
    kube.get_node("n1")
    assert reads == ["n1", "n2", "n1"]  # read again once its minute is over


@pytest.mark.parametrize(("cached", "consistent", "found", "reads"), [
    (["r-rally-x"], [], "r-rally-x", ["0"]),  # in the cache: no consistent read
    ([], ["r-rally-x"], "r-rally-x", ["0", None]),  # a cache that lags: asked again, consistently
    ([], [], None, ["0", None]),  # gone: said by a consistent read only
])
def test_a_race_pod_missing_from_the_watch_cache_is_looked_for_again_with_a_consistent_read(
        cached, consistent, found, reads):
    kube = Kube(BoundedApiClient(client.Configuration()))
    asked = []

    class Response:
        def __init__(self, items):
            self.data = json.dumps({"items": [{"metadata": {"name": name, "creationTimestamp": "2026-11-24T00:00:00Z"}}
                                              for name in items]}).encode()

    def list_namespaced_pod(namespace, label_selector, _preload_content=True, resource_version=None):
        asked.append(resource_version)
        assert label_selector == "batch.kubernetes.io/job-name=r-rally"
        return Response(cached if resource_version == "0" else consistent)

    kube.core.list_namespaced_pod = list_namespaced_pod
    pod = kube.job_pod("ns", "r-rally")
    assert (pod["metadata"]["name"] if pod else None) == found
    assert asked == reads
