"""Without ECK's CRDs an Experiment waits in Pending with a clear reason, and goes on once
ECK is installed. A control plane of its own, started without the ECK CRD; all real."""

from pathlib import Path

import pytest

from tests.support.controlplane import ControlPlane, eck_crd_path
from tests.support.experiments import Apis, condition, create_experiment, wait_phase
from tests.support.operator_process import OperatorProcess
from tests.support.waiting import wait_for


@pytest.fixture
def bare_control_plane(repo_root):
    with ControlPlane(crd_paths=sorted((repo_root / "crds").glob("*.yaml"))) as control_plane:
        yield control_plane


def test_experiment_waits_for_eck_then_proceeds(bare_control_plane, tmp_path):
    apis = Apis(bare_control_plane.api_client())
    namespace = bare_control_plane.create_namespace()
    operator = OperatorProcess(Path(bare_control_plane.kubeconfig_path), tmp_path / "operator.log").start()
    try:
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
    finally:
        operator.stop()
