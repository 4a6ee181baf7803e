"""Without ECK's CRDs an Experiment waits in Pending with a clear reason, goes on once ECK is
installed, and fails after clusterReadyTimeoutSeconds if it never is; so does a sweep. A control
plane of its own, started without the ECK CRD; all real."""

import pytest

from esbench.api import models
from tests.support.controlplane import ControlPlane, eck_crd_path
from tests.support.experiments import Apis, condition, create_experiment, wait_phase
from tests.support.helm import operator_access
from tests.support.operator_process import OperatorProcess
from tests.support.waiting import wait_for


@pytest.fixture
def bare_control_plane(repo_root):
    with ControlPlane(crd_paths=sorted((repo_root / "crds").glob("*.yaml"))) as control_plane:
        yield control_plane


@pytest.fixture
def bare_operator(bare_control_plane, helm, tmp_path):
    """The operator on that control plane, as the chart's ServiceAccount."""
    namespace = bare_control_plane.create_namespace("esbench-system-")
    with operator_access(helm, bare_control_plane, namespace) as kubeconfig:
        operator = OperatorProcess(kubeconfig, tmp_path / "operator.log").start()
        yield operator
        operator.stop()


def test_experiment_waits_for_eck_then_proceeds(bare_control_plane, bare_operator):
    apis = Apis(bare_control_plane.api_client())
    namespace = bare_control_plane.create_namespace()
    # Created first: they give up after 30 s, while "early" goes on once ECK is installed.
    create_experiment(apis, namespace, "never", lifecycle={"clusterReadyTimeoutSeconds": 30})
    apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, {
        "apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": "never"},
        "spec": {"template": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"},
                              "lifecycle": {"clusterReadyTimeoutSeconds": 30}}}})
    failed = wait_phase(apis, namespace, "never", "Failed", timeout=90)
    assert failed["status"]["reason"] == "EckNotInstalled" and "install ECK" in failed["status"]["message"]
    sweep = wait_for(lambda: (s := apis.custom.get_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, "never"))
        and s.get("status", {}).get("phase") == "Failed" and s, 90, "the sweep to give up")
    assert sweep["status"]["reason"] == "EckNotInstalled"
    assert condition(sweep, "Complete")["status"] == "True"

    create_experiment(apis, namespace, "early")
    pending = wait_phase(apis, namespace, "early", "Pending")
    ready = condition(pending, "ClusterReady")
    assert (ready["status"], ready["reason"]) == ("False", "EckNotInstalled")
    assert "install ECK" in ready["message"]

    bare_control_plane.apply_crd(eck_crd_path())
    provisioning = wait_phase(apis, namespace, "early", "Provisioning", timeout=60)
    assert provisioning["status"]["startTime"] == pending["status"]["startTime"]
    wait_for(lambda: apis.custom.list_namespaced_custom_object(
        "elasticsearch.k8s.elastic.co", "v1", namespace, "elasticsearches")["items"], what="the cluster")
