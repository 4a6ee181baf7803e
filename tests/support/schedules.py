"""ExperimentSchedules through the API, as a user makes them."""

from __future__ import annotations

import json

from esbench.api import models


def create_schedule(apis, namespace: str, name: str, **spec) -> dict:
    body = {"apiVersion": models.API_VERSION, "kind": models.SCHEDULE_KIND, "metadata": {"name": name}, "spec": spec}
    return apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace,
                                                       models.SCHEDULE_PLURAL, body)


def get_schedule(apis, namespace: str, name: str) -> dict:
    return apis.custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SCHEDULE_PLURAL, name)


def printed(apis, namespace: str, name: str, plural: str = models.SCHEDULE_PLURAL) -> dict:
    """The resource's row as `kubectl get` prints it (esxcron by default): the API server's Table of
    its printer columns."""
    api = apis.custom.api_client
    path = f"/apis/{models.GROUP}/{models.VERSION}/namespaces/{namespace}/{plural}/{name}"
    request = api.param_serialize("GET", path, header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
                                  auth_settings=["BearerToken"])
    table = json.loads(api.call_api(*request).read())
    return {column["name"]: cell for column, cell in zip(table["columnDefinitions"], table["rows"][0]["cells"],
                                                         strict=True)}
