"""Local admission (esbench.api.validation): the CRD's own schema and CEL rules, no API server.

Parity bar: every case of the admission table in tests/integration/test_admission.py is
rejected locally with the message substring the real API server gives. (test_admission_parity.py
compares whole messages with a real kube-apiserver.)
"""

from __future__ import annotations

import copy

import pytest
import yaml

from esbench.api import models, validation
from tests.integration.test_admission import INVALID, VALID, with_spec
from tests.support.expected import EXPECTED_DEFAULTS, defaulted_fields


@pytest.mark.parametrize("case, body, expected", INVALID, ids=[case for case, _, _ in INVALID])
def test_every_admission_table_case_is_rejected_locally_with_the_api_servers_message(case, body, expected):
    # Local admission decodes strictly, as kubectl does by default: a map under a scalar field is
    # then reported as an unknown field (400) rather than a wrong type (422); both name the field.
    with pytest.raises(validation.Rejected) as rejected:
        validation.admit(copy.deepcopy(body))
    assert expected in rejected.value.message, rejected.value.message


def test_name_longer_than_eck_allows_is_rejected():
    body = copy.deepcopy(VALID)
    body["metadata"]["name"] = "x" * 37
    with pytest.raises(validation.Rejected) as rejected:
        validation.admit(body)
    assert "metadata.name must be at most 36 characters" in rejected.value.message


def test_unknown_fields_are_rejected_as_strict_field_validation_does():
    with pytest.raises(validation.Rejected) as rejected:
        validation.admit(with_spec("index.codecs", "best_compression"))
    assert rejected.value.status == 400
    assert 'unknown field "spec.index.codecs"' in rejected.value.message


def test_unknown_fields_inside_free_form_track_params_are_accepted():
    stored = validation.admit(with_spec("workload.trackParams", {"anything": {"nested": [1, None]}}))
    assert stored["spec"]["workload"]["trackParams"] == {"anything": {"nested": [1, None]}}


def test_defaults_are_the_ones_the_api_server_applies():
    # The same expectations as test_admission.test_defaults_are_applied_by_the_api_server.
    spec = validation.admit(copy.deepcopy(VALID))["spec"]
    assert defaulted_fields(spec) == EXPECTED_DEFAULTS
    models.ExperimentSpec.model_validate(spec)


def test_null_values_are_dropped_before_defaulting():
    spec = validation.admit(with_spec("index.codec", None))["spec"]
    assert spec["index"] == {}


def test_cel_rules_are_skipped_after_a_blocking_error_as_the_api_server_does():
    with pytest.raises(validation.Rejected) as rejected:
        validation.admit(with_spec(**{"index.codec": "zstd", "elasticsearch.version": "8.1"}))
    assert "some validation rules were not checked" in rejected.value.message
    assert "MAJOR.MINOR.PATCH" not in rejected.value.message


def test_track_params_repeating_index_settings_are_invalid_spec_as_the_operator_reports_it():
    stored = validation.admit(with_spec(**{"index.shards": 2, "workload.trackParams": {"number_of_shards": 3}}))
    with pytest.raises(validation.Rejected, match="workload.trackParams.number_of_shards conflicts with index.shards"):
        validation.parse_spec(stored)


def test_every_example_is_accepted(repo_root):
    examples = sorted((repo_root / "examples").glob("**/*.yaml"))
    assert examples
    for path in examples:
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") == models.KIND:
                validation.parse_spec(validation.admit(document))


def test_something_else_than_an_experiment_is_refused():
    with pytest.raises(validation.Rejected, match="not an Experiment"):
        validation.admit({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
