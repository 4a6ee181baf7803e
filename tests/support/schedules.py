"""ExperimentSchedules through the API, as a user makes them."""

from __future__ import annotations

from esbench.api import models


def create_schedule(apis, namespace: str, name: str, **spec) -> dict:
    body = {"apiVersion": models.API_VERSION, "kind": models.SCHEDULE_KIND, "metadata": {"name": name}, "spec": spec}
    return apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace,
                                                       models.SCHEDULE_PLURAL, body)


def get_schedule(apis, namespace: str, name: str) -> dict:
    return apis.custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SCHEDULE_PLURAL, name)
