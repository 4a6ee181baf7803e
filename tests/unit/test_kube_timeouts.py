"""Every API call the operator makes has a timeout, so a hung API server cannot stall it."""

import socket

import pytest
import urllib3
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
