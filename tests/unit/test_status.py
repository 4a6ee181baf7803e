"""Conditions, headline and log excerpts for the Experiment status."""

import pytest
from pydantic import ValidationError

from esbench.api import models
from esbench.api.models import Results, TaskResult, Throughput
from esbench.api.race_report import RaceReport, encode_report
from esbench.api.reasons import ConditionType, Reason
from esbench.planning import status
from esbench.planning.status import condition, headline, log_excerpt, redact, with_condition


def test_condition_transition_time_moves_only_when_status_changes():
    first = with_condition(None, ConditionType.CLUSTER_READY, False, Reason.PROVISIONING, "creating", "T1", 1)
    same = with_condition(first, ConditionType.CLUSTER_READY, False, Reason.PROVISIONING, "still creating", "T2", 1)
    assert same[0]["lastTransitionTime"] == "T1" and same[0]["message"] == "still creating"
    flipped = with_condition(same, ConditionType.CLUSTER_READY, True, Reason.CLUSTER_READY, "ready", "T3", 1)
    assert flipped == [{"type": "ClusterReady", "status": "True", "reason": "ClusterReady", "message": "ready",
                        "lastTransitionTime": "T3", "observedGeneration": 1}]


def test_conditions_of_other_types_are_kept():
    conditions = with_condition(None, ConditionType.CLUSTER_READY, True, Reason.CLUSTER_READY, "ok", "T1", 1)
    conditions = with_condition(conditions, ConditionType.BENCHMARK_COMPLETE, False, Reason.RUNNING, "racing", "T2", 1)
    assert [c["type"] for c in conditions] == ["BenchmarkComplete", "ClusterReady"]


def test_headline_prefers_indexing_throughput():
    results = Results(tasks=[
        TaskResult(task="query-match-all", throughput=Throughput(median=95.5, unit="ops/s")),
        TaskResult(task="index-append", throughput=Throughput(median=12345.6, unit="docs/s")),
    ])
    assert headline(results) == "12,346 docs/s index-append"
    assert headline(Results(tasks=[TaskResult(task="refresh")])) is None


def test_redact_removes_credentials_in_common_shapes():
    text = ("password: hunter2\nAuthorization: Basic ZWxhc3RpYzpodW50ZXIy\n"
            "GET https://elastic:hunter2@es:9200/\nbasic_auth_password='hunter2'")
    assert "hunter2" not in redact(text)
    assert "ZWxhc3RpYzpodW50ZXIy" not in redact(text)


def test_log_excerpt_is_the_redacted_tail_without_report_lines():
    report_lines = encode_report(RaceReport(succeeded=False))
    log = "\n".join([f"line {i}" for i in range(40)] + ["password=hunter2"] + report_lines)
    excerpt = log_excerpt(log, max_lines=5)
    assert excerpt.splitlines() == ["line 36", "line 37", "line 38", "line 39", "password=[redacted]"]


def test_a_condition_is_found_by_type():
    conditions = with_condition(None, ConditionType.CLUSTER_READY, False, Reason.PROVISIONING, "waiting", "T1", 1)
    assert condition({"conditions": conditions}, ConditionType.CLUSTER_READY)["message"] == "waiting"
    assert condition({"conditions": conditions}, ConditionType.BENCHMARK_COMPLETE) is None
    assert condition({}, ConditionType.CLUSTER_READY) is None


def test_a_status_field_the_crd_does_not_have_is_refused_before_the_api_server_prunes_it():
    patch = {"phase": "Succeeded", "reason": "RaceSucceeded", "headline": "1,449 docs/s index-append",
             "completionTime": None}
    assert status.checked(models.ExperimentStatus, patch) is patch
    with pytest.raises(ValidationError, match="headLine"):
        status.checked(models.ExperimentStatus, {**patch, "headLine": "typo"})
    with pytest.raises(ValidationError, match="progress"):
        status.checked(models.SweepStatus, {"progress": {"cells": "two"}})
