"""The sweep CRD's template is the Experiment CRD's spec schema, kept in sync by a script."""

import subprocess
import sys

import yaml


def test_the_sweep_template_schema_is_the_experiment_spec_schema(repo_root):
    check = subprocess.run([sys.executable, str(repo_root / "scripts/sync-sweep-template.py"), "--check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr

    def schema(name):
        crd = yaml.safe_load((repo_root / "crds" / name).read_text())
        return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]

    experiment, template = schema("esbench.io_experiments.yaml"), schema("esbench.io_experimentsweeps.yaml")["properties"]["template"]
    assert template["properties"] == experiment["properties"]
    assert {r["rule"] for r in template["x-kubernetes-validations"]} == (
        {r["rule"] for r in experiment["x-kubernetes-validations"]} - {"self == oldSelf"})
