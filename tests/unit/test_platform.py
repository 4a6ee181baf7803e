"""The Kubernetes half of the reproducibility record (controller.platform), from objects shaped
as the API server returns them."""

from esbench.api import models
from esbench.controller import platform

POD = {
    "metadata": {"name": "bench-es-default-0"},
    "spec": {"nodeName": "node-a", "containers": [
        {"name": "sidecar", "image": "busybox"},
        {"name": "elasticsearch", "image": "docker.elastic.co/elasticsearch/elasticsearch:8.15.3",
         "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}},
    ]},
    "status": {"qosClass": "Burstable", "containerStatuses": [
        {"name": "elasticsearch", "image": "docker.elastic.co/elasticsearch/elasticsearch:8.15.3",
         "imageID": "docker.elastic.co/elasticsearch/elasticsearch@sha256:0123abcd"},
    ]},
}
NODE = {
    "metadata": {"name": "node-a", "labels": {"node.kubernetes.io/instance-type": "m6i.xlarge"}},
    "status": {"capacity": {"cpu": "4", "memory": "16069260Ki"}, "nodeInfo": {"kernelVersion": "6.1.0-28-amd64"}},
}


def test_a_pod_is_recorded_with_the_digest_it_ran_its_node_and_its_resources():
    assert platform.pod_environment(POD, "elasticsearch", NODE) == models.PodEnvironment(
        pod="bench-es-default-0", image="docker.elastic.co/elasticsearch/elasticsearch:8.15.3",
        image_id="docker.elastic.co/elasticsearch/elasticsearch@sha256:0123abcd", node="node-a",
        instance_type="m6i.xlarge", node_kernel="6.1.0-28-amd64", node_cpu="4", node_memory="16069260Ki",
        requests={"cpu": "2", "memory": "4Gi"}, limits={"memory": "4Gi"}, qos_class="Burstable")


def test_an_unreadable_node_and_a_pod_not_started_leave_their_figures_empty():
    pending = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "rally", "image": "esbench:dev"}]}}
    recorded = platform.pod_environment(pending, "rally", None)
    assert recorded == models.PodEnvironment(pod="p", image="esbench:dev")
