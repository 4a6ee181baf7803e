"""Helpers for tests that drive Experiments (and sweeps) through a real API server."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from kubernetes import client

from esbench.api import models
from esbench.api.race_report import RaceReport, encode_report
from tests.support.standin_eck import StandinEck
from tests.support.waiting import wait_for

RACE_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "race"


class Apis:
    def __init__(self, api_client: client.ApiClient):
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)


def successful_race_json() -> dict[str, Any]:
    """A real race.json from a real Rally run (see tests/fixtures/race/README.md)."""
    return json.loads(next(iter(sorted(RACE_FIXTURES.glob("*success*.json")))).read_text())


def as_the_runner_reported(results: dict[str, Any]) -> dict[str, Any]:
    """Status results without what the operator adds (environment.kubernetes): what the runner sent."""
    environment = {k: v for k, v in (results.get("environment") or {}).items() if k != "kubernetes"}
    trimmed = {k: v for k, v in results.items() if k != "environment"}
    return {**trimmed, "environment": environment} if environment else trimmed


def runner_log(report: RaceReport) -> str:
    """What the runner prints: Rally's own output, then the report lines."""
    rally_output = ["[INFO] Race id is [r]", "Running index-append [100% done]", "[INFO] SUCCESS (took 61 seconds)"]
    return "\n".join(rally_output + encode_report(report)) + "\n"


def create_experiment(apis: Apis, namespace: str, name: str, **spec_sections) -> dict:
    spec = {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}
    spec.update(spec_sections)
    spec = {key: value for key, value in spec.items() if value is not None}
    body = {"apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": name}, "spec": spec}
    return apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, body)


def run_to_benchmarking(apis: Apis, eck: StandinEck, namespace: str, name: str, **spec_sections) -> dict:
    create_experiment(apis, namespace, name, **spec_sections)
    wait_for(lambda: es_exists(eck, namespace, name), what="the ECK Elasticsearch resource")
    eck.make_ready(namespace, name)
    return wait_phase(apis, namespace, name, "Benchmarking")


def get_experiment(apis: Apis, namespace: str, name: str) -> dict:
    return apis.custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, name)


def wait_phase(apis: Apis, namespace: str, name: str, phase: str, timeout: float = 30) -> dict:
    def reached():
        experiment = get_experiment(apis, namespace, name)
        return experiment if (experiment.get("status") or {}).get("phase") == phase else None
    return wait_for(reached, timeout, f"{name} to reach phase {phase}",
                    diagnose=lambda: f"status: {get_experiment(apis, namespace, name).get('status')}")


def condition(resource: dict, type_: str) -> dict:
    return next(c for c in resource["status"]["conditions"] if c["type"] == type_)


def event_messages(apis: Apis, namespace: str, name: str) -> str:
    """Every Event message about an object, one a line: what a leak check must read."""
    items = apis.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    return "\n".join(event.message or "" for event in items)


def elastic_password(apis: Apis, namespace: str, cluster: str) -> str:
    """The password ECK generated for the cluster's elastic user."""
    secret = apis.core.read_namespaced_secret(f"{cluster}-es-elastic-user", namespace)
    return base64.b64decode(secret.data["elastic"]).decode()


def events(apis: Apis, namespace: str, name: str) -> list[tuple[str, str]]:
    items = apis.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    return [(event.type, event.reason) for event in sorted(items, key=lambda e: e.metadata.creation_timestamp)]


def es_exists(eck: StandinEck, namespace: str, name: str) -> bool:
    return any(es["metadata"]["name"] == name for es in eck.list(namespace))


def job(apis: Apis, namespace: str, name: str):
    jobs = apis.batch.list_namespaced_job(namespace, label_selector=f"esbench.io/experiment={name}").items
    return jobs[0] if jobs else None
