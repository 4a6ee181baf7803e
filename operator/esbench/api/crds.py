"""The CustomResourceDefinitions of esbench.io, made from the models.

crds/ and the chart's crds/ hold what this module renders, written by scripts/generate-api.py
(tests/unit/test_generated_api.py fails when a file is stale); local admission
(api/validation.py) evaluates the same schema that the API server does.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml
from pydantic import BaseModel

from esbench.api import models, openapi
from esbench.api.reasons import ConditionType

LABELS = {"app.kubernetes.io/name": "esbench", "app.kubernetes.io/part-of": "esbench"}

# A spec is the record of one benchmark or comparison: changing it would make its results lie.
_IMMUTABLE = "spec is immutable: {what} is the record of one {record}; create a new {kind} instead"


def _column(name: str, type_: str, path: str, priority: int = 0, description: str = "") -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": type_, "jsonPath": path}
    if description:
        column["description"] = description
    if priority:
        column["priority"] = priority
    return column


def _crd(kind: str, plural: str, short_name: str, spec: type[BaseModel], status: type[BaseModel],
         columns: list[dict[str, Any]], name_rules: dict[str, Any], immutable: str | None) -> dict[str, Any]:
    spec_schema = openapi.schema(spec)
    if immutable:
        spec_schema["x-kubernetes-validations"] = [
            {"rule": "self == oldSelf", "message": immutable}, *spec_schema.get("x-kubernetes-validations", [])]
    root = {
        "type": "object",
        "required": ["spec"],
        **name_rules,
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema,
            "status": openapi.schema(status),
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{models.GROUP}", "labels": dict(LABELS)},
        "spec": {
            "group": models.GROUP,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower(),
                      "shortNames": [short_name], "categories": ["esbench"]},
            "scope": "Namespaced",
            "versions": [{
                "name": models.VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": root},
            }],
        },
    }


@functools.cache
def experiment() -> dict[str, Any]:
    return _crd(
        models.KIND, models.PLURAL, "esx", models.ExperimentSpec, models.ExperimentStatus,
        [
            _column("Phase", "string", ".status.phase"),
            _column("Version", "string", ".status.clusterVersion",
                    description="The Elasticsearch version the cluster runs (also a referenced one, as a sweep's)"),
            _column("Track", "string", ".spec.workload.track"),
            _column("Codec", "string", ".spec.index.codec"),
            _column("Shards", "integer", ".spec.index.shards"),
            _column("Replicas", "integer", ".spec.index.replicas"),
            _column("Refresh", "string", ".spec.index.refreshInterval"),
            _column("Result", "string", ".status.headline"),
            _column("Cluster", "string", ".status.clusterName", priority=1),
            _column("Age", "date", ".metadata.creationTimestamp"),
            _column("Reason", "string", ".status.reason", priority=1),
        ],
        models.EXPERIMENT_NAME_RULES,
        _IMMUTABLE.format(what="an Experiment", record="benchmark", kind="Experiment"),
    )


@functools.cache
def sweep() -> dict[str, Any]:
    return _crd(
        models.SWEEP_KIND, models.SWEEP_PLURAL, "esxs", models.SweepSpec, models.SweepStatus,
        [
            _column("Phase", "string", ".status.phase"),
            _column("Cells", "integer", ".status.progress.cells"),
            _column("Runs", "string", ".status.progress.summary", description="finished/planned runs"),
            _column("Failed", "integer", ".status.progress.failed"),
            _column("Gates", "string", f'.status.conditions[?(@.type=="{ConditionType.GATES_PASSED}")].status'),
            _column("Age", "date", ".metadata.creationTimestamp"),
            _column("Baseline", "string", ".status.baseline", priority=1),
            _column("Reason", "string", ".status.reason", priority=1),
        ],
        models.SWEEP_NAME_RULES,
        _IMMUTABLE.format(what="a sweep", record="comparison", kind="ExperimentSweep"),
    )


@functools.cache
def schedule() -> dict[str, Any]:
    # Its spec may change (suspend it, move its time), as a CronJob's: each run keeps the spec it got.
    return _crd(
        models.SCHEDULE_KIND, models.SCHEDULE_PLURAL, "esxcron", models.ScheduleSpec, models.ScheduleStatus,
        [
            _column("Schedule", "string", ".spec.schedule"),
            _column("Suspend", "boolean", ".spec.suspend"),
            _column("Active", "integer", ".status.activeCount"),
            _column("Last Schedule", "date", ".status.lastScheduleTime"),
            _column("Regression", "string", f'.status.conditions[?(@.type=="{ConditionType.REGRESSION}")].status',
                    description="True: a regression confirmed by a re-run (the Regression condition)"),
            _column("Age", "date", ".metadata.creationTimestamp"),
            _column("Reason", "string", ".status.reason", priority=1),
        ],
        models.SCHEDULE_NAME_RULES,
        None,
    )


def experiment_schema() -> dict[str, Any]:
    """The openAPIV3Schema an Experiment is admitted with."""
    return experiment()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def sweep_schema() -> dict[str, Any]:
    """The openAPIV3Schema an ExperimentSweep is admitted with."""
    return sweep()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


# File names in crds/ and the chart's crds/: GROUP_PLURAL.yaml, as controller-gen names them.
FILES = {f"{models.GROUP}_{models.PLURAL}.yaml": experiment, f"{models.GROUP}_{models.SWEEP_PLURAL}.yaml": sweep,
         f"{models.GROUP}_{models.SCHEDULE_PLURAL}.yaml": schedule}


def render(crd: dict[str, Any]) -> str:
    """A CRD as its file in crds/ holds it."""
    header = "# Generated from esbench.api.models by scripts/generate-api.py: edit the models, not this file.\n"
    return header + yaml.safe_dump(crd, sort_keys=False, width=120, allow_unicode=True)
