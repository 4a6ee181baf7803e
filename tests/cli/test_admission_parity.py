"""Local admission says exactly what the real kube-apiserver says.

Every case of the admission table plus cases for each kind of schema check (type, bounds,
lengths, counts, patterns, required fields, list-map keys, metadata.name, unknown fields,
several errors at once, CEL rules skipped after a blocking error) goes to the real API server
(dry run, strict field validation, the CRD from crds/) and to esbench.api.validation; the HTTP status
and the message must match. Where several errors are reported, the API server's order depends on
Go map iteration, so those are compared as sets of errors.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from esbench.api import models, validation
from tests.integration.test_admission import INVALID, INVALID_NAMES, VALID, with_spec


def _named(name: str, **fields) -> dict:
    body = copy.deepcopy(VALID)
    body["metadata"]["name"] = name
    body.update(fields)
    return body


EXTRA = [
    ("version too long", with_spec("elasticsearch.version", "1" * 40)),
    ("too many node sets", with_spec("elasticsearch.nodeSets", [{"name": f"n{i}", "count": 1} for i in range(11)])),
    ("no node sets", with_spec("elasticsearch.nodeSets", [])),
    ("node count as string", with_spec("elasticsearch.nodeCount", "3")),
    ("node count as float", with_spec("elasticsearch.nodeCount", 2.5)),
    ("too many nodes", with_spec("elasticsearch.nodeCount", 101)),
    ("node set name pattern", with_spec("elasticsearch.nodeSets", [{"name": "A_b", "count": 1}])),
    ("node set without count", with_spec("elasticsearch.nodeSets", [{"name": "a"}])),
    ("tls as string", with_spec("elasticsearch.tls", "yes")),
    ("spec not an object", _named("spec-string", spec="x")),
    ("index not an object", with_spec("index", [1])),
    ("two schema errors", with_spec(**{"index.shards": 0, "index.codec": "zstd"})),
    ("schema error blocks cel", with_spec(**{"index.codec": "zstd", "elasticsearch.version": "8.1"})),
    ("minimum and cel", with_spec(**{"index.shards": 0, "elasticsearch.version": "8.1"})),
    ("two cel rules", with_spec(**{"elasticsearch.heap": "x", "elasticsearch.version": "8.1"})),
    ("boolean config value", with_spec("elasticsearch.config", {"a.b": True})),
    ("float config value", with_spec("elasticsearch.config", {"a.b": 1.5})),
    ("too many config keys", with_spec("elasticsearch.config", {f"k{i}": "v" for i in range(65)})),
    ("missing workload", with_spec("workload", ...)),
    ("missing spec", {k: v for k, v in _named("no-spec").items() if k != "spec"}),
    ("name not a subdomain", _named("Bad_Name")),
    ("name too long for eck", _named("x" * 37)),
    ("extra arg too long", with_spec("rally.extraArgs", ["x" * 300])),
    ("timeout as string", with_spec("lifecycle.raceTimeoutSeconds", "10")),
    ("a lifecycle setting where it was", with_spec("rally.raceTimeoutSeconds", 600)),
    ("storage size too long", with_spec("elasticsearch.storage", {"size": "1" * 40})),
    ("unknown spec field", with_spec("index.codecs", "best_compression")),
    ("two unknown fields", with_spec(**{"index.codecs": "x", "foo": 1})),
    ("unknown top-level field", _named("unknown-top", foo=1)),
    ("unknown field wins over invalid value", with_spec(**{"index.codecs": "x", "index.shards": 0})),
    ("unknown field in a list item", with_spec("elasticsearch.nodeSets", [{"name": "a", "count": 1, "x": 1}])),
    ("unknown field in status", _named("unknown-status", status={"foo": 1})),
    # Accepted ones: the stored object must match too (defaults, pruned nulls, free-form params).
    ("null is pruned", with_spec("index.codec", None)),
    ("free-form track params", with_spec("workload.trackParams", {"a": {"b": [1, None]}})),
    ("fractional target throughput", with_spec("workload", {"track": "range-queries", "load": {"targetThroughput": 2.5}})),
    ("duplicate roles are allowed", with_spec("elasticsearch.nodeSets", [{"name": "a", "count": 1, "roles": ["data", "data"]}])),
    ("mmapfs on a node with mmap", with_spec(**{"index.settings": {"index.store.type": "mmapfs"},
                                                "elasticsearch.config": {"node.store.allow_mmap": "true"}})),
    ("niofs on a node without mmap", with_spec("index.settings", {"index.store.type": "niofs"})),
    ("valid", copy.deepcopy(VALID)),
]
CASES = [(case, body) for case, body, _ in INVALID + INVALID_NAMES] + EXTRA


def _errors(message: str) -> set[str] | str:
    """A multi-error message ('... is invalid: [a, b]') as a set of its errors."""
    match = re.match(r'^(.* is invalid: )\[(.*)\]$', message, re.S)
    if not match:
        return message
    # Errors are joined with ", " and each starts with a field path or <nil>.
    return {match[1]} | set(re.split(r", (?=(?:spec|metadata|status)[.\[:]|<nil>:)", match[2]))


@pytest.fixture(scope="module")
def custom(control_plane):
    return client.CustomObjectsApi(control_plane.api_client())


@pytest.fixture(scope="module")
def parity_namespace(control_plane):
    name = control_plane.create_namespace()
    yield name
    control_plane.delete_namespace(name)


@pytest.mark.parametrize("case, body", CASES, ids=[case for case, _ in CASES])
def test_local_admission_answers_exactly_as_the_api_server(custom, parity_namespace, case, body):
    try:
        created = custom.create_namespaced_custom_object(
            models.GROUP, models.VERSION, parity_namespace, models.PLURAL, copy.deepcopy(body),
            dry_run="All", field_validation="Strict")
        server = ("accepted", created["spec"])
    except ApiException as error:
        server = (error.status, _errors(json.loads(error.body)["message"]))
    try:
        local = ("accepted", validation.admit(copy.deepcopy(body))["spec"])
    except validation.Rejected as rejected:
        local = (rejected.status, _errors(rejected.message))
    assert local == server
