"""Test infrastructure shared by the integration tests: a real Kubernetes control plane
(controlplane.ControlPlane) and a stand-in for the kubelet (standin_kubelet.StandinKubelet)."""
