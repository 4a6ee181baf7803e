"""The models are the one source of the API: the CRDs, the chart's copy of them, local admission
and the API reference are all made from them, and agree."""

import subprocess
import sys

import pytest
from pydantic import ValidationError

from esbench.api import crds, models, reference, validation
from esbench.api.reasons import Reason
from esbench.planning import grid

EXPERIMENT = {
    "apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": "bounds"},
    "spec": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}},
}


def test_every_generated_file_is_what_the_models_make(repo_root):
    check = subprocess.run([sys.executable, str(repo_root / "scripts" / "generate-api.py"), "--check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("field", ["clusterReadyTimeoutSeconds", "raceTimeoutSeconds"])
def test_local_admission_and_the_models_refuse_the_bounds_the_crd_sets(field):
    # These two once had minimum 30 in the CRD and 1 in the models.
    body = {**EXPERIMENT, "spec": {**EXPERIMENT["spec"], "lifecycle": {field: 29}}}
    with pytest.raises(validation.Rejected, match=f"spec.lifecycle.{field} in body should be greater than or equal to 30"):
        validation.admit(body)
    with pytest.raises(ValidationError, match="greater than or equal to 30"):
        models.ExperimentSpec.model_validate(body["spec"])
    body["spec"]["lifecycle"][field] = 30
    assert validation.admit(body)["spec"]["lifecycle"][field] == 30


@pytest.mark.parametrize("field, value", [("cleanup", "Keep"), ("clusterReadyTimeoutSeconds", 60),
                                          ("raceTimeoutSeconds", 60), ("ttlSecondsAfterFinished", 0)])
def test_a_lifecycle_setting_still_under_rally_is_refused_with_where_it_went_and_read_from_there_in_old_records(
        field, value):
    body = {**EXPERIMENT, "spec": {**EXPERIMENT["spec"], "rally": {field: value}}}
    with pytest.raises(validation.Rejected, match=f"rally.{field} is now lifecycle.{field}: move it to spec.lifecycle"):
        validation.admit(body)
    # A stored object or result file written before spec.lifecycle reads as it would be written now.
    stored = {**body["spec"], "lifecycle": {"cleanup": "Delete", "clusterReadyTimeoutSeconds": 1800}}
    spec = models.ExperimentSpec.model_validate(stored)
    assert spec.lifecycle.to_wire()[field] == value
    assert spec.rally.to_wire() == {}
    assert models.lifecycle_setting(stored, field) == value


def _matrix_rules_refuse(field: str) -> bool:
    matrix = crds.sweep()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "matrix"]
    return bool(validation.cel_errors([{"field": field, "values": ["x"]}], matrix, "spec.matrix"))


def _planner_refuses(field: str) -> bool:
    try:
        grid._check_field(field)
    except grid.InvalidSweep:
        return True
    return False


@pytest.mark.parametrize("field", [
    *models.TEMPLATE_ONLY_FIELDS, "target.external.passwordSecret.name", "workload.repository.url",
    "spec.index.codec", "index", "index.codec", "index.settings.index.translog.durability", "rally.imagePullPolicy",
    "workload.sourceFiltering", "elasticsearch.version",
])
def test_admission_refuses_a_matrix_field_exactly_when_the_planner_would(field):
    # The planner checks include cells' fields too, which admission cannot (models/sweep.py says why).
    assert _matrix_rules_refuse(field) == _planner_refuses(field)


def test_the_reference_lists_each_field_with_its_bounds_and_each_rule_with_its_message():
    page = reference.markdown()
    assert "| `spec.lifecycle.clusterReadyTimeoutSeconds` | integer | `1800` | >= 30; <= 86400 |" in page
    assert "| `spec.elasticsearch.nodeSets[].roles` | list of string |" in page
    spec = crds.experiment_schema()["properties"]["spec"]
    for rule in spec["properties"]["workload"]["x-kubernetes-validations"]:
        assert f"- `spec.workload`: {rule['message']}" in page


@pytest.mark.parametrize("make", [crds.experiment, crds.sweep, crds.schedule])
def test_status_reason_is_any_string_in_the_crd_so_that_one_an_operator_of_another_version_wrote_stays_valid(make):
    status = make()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert status["properties"]["reason"] == {"type": "string"}


@pytest.mark.parametrize("model", [models.ExperimentStatus, models.SweepStatus, models.ScheduleStatus])
def test_the_status_models_take_only_a_reason_of_the_enum(model):
    assert model.model_validate({"reason": "InvalidSpec"}).reason is Reason.INVALID_SPEC
    with pytest.raises(ValidationError, match="reason"):
        model.model_validate({"reason": "InvalidSpecc"})
