"""The real kube-apiserver rejects invalid Experiments at admission, naming the field.

Everything here is real: kube-apiserver + etcd with the CRD from crds/ installed. No
operator runs; these are the API server's own answers.
"""

import copy
import json

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from esbench.api import models
from tests.support.expected import EXPECTED_DEFAULTS, defaulted_fields

VALID = {
    "apiVersion": models.API_VERSION,
    "kind": models.KIND,
    "metadata": {"name": "valid"},
    "spec": {
        "elasticsearch": {"version": "8.15.3"},
        "workload": {"track": "smoke"},
    },
}


def with_spec(path: str | None = None, value=None, **fields):
    """VALID with spec fields set by dotted path (a value of ... removes the field)."""
    if path is not None:
        fields[path] = value
    body = copy.deepcopy(VALID)
    body["metadata"]["name"] = "bad"
    for dotted, field_value in fields.items():
        node = body["spec"]
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        if field_value is ...:
            node.pop(leaf)
        else:
            node[leaf] = field_value
    return body


def both(first: str, first_value, second: str, second_value):
    return with_spec(**{first: first_value, second: second_value})


INVALID = [
    ("elasticsearch and target", with_spec("target", {"elasticsearchRef": {"name": "shared"}}),
     "set either spec.elasticsearch (a cluster of the Experiment's own) or spec.target"),
    ("neither elasticsearch nor target", with_spec("elasticsearch", ...), "set either spec.elasticsearch"),
    ("target of two kinds", both("elasticsearch", ..., "target", {"elasticsearchRef": {"name": "shared"},
                                                              "external": {"url": "https://es:9200"}}),
     "spec.target needs exactly one of elasticsearchRef or external"),
    ("credentials in an external url", both("elasticsearch", ..., "target", {"external": {"url": "https://u:pw@es:9200"}}),
     "must be http(s)://HOST[:PORT] without credentials or a path"),
    ("external username without a password secret",
     both("elasticsearch", ..., "target", {"external": {"url": "https://es:9200", "username": "bench"}}),
     "needs username and passwordSecret together"),
    ("missing version", with_spec("elasticsearch.version", ...), "spec.elasticsearch.version: Required value"),
    ("malformed version", with_spec("elasticsearch.version", "8.15"),
     "elasticsearch.version must look like MAJOR.MINOR.PATCH"),
    ("version too old", with_spec("elasticsearch.version", "6.8.23"), "must be 7.17.0 or newer"),
    ("nodeCount and nodeSets", both("elasticsearch.nodeCount", 2, "elasticsearch.nodeSets", [{"name": "a", "count": 1}]),
     "set either elasticsearch.nodeCount or elasticsearch.nodeSets, not both"),
    ("zero nodes", with_spec("elasticsearch.nodeCount", 0), "spec.elasticsearch.nodeCount: Invalid value"),
    ("duplicate node set", with_spec("elasticsearch.nodeSets", [{"name": "a", "count": 1}, {"name": "a", "count": 2}]),
     "Duplicate value"),
    ("unknown role", with_spec("elasticsearch.nodeSets", [{"name": "a", "count": 1, "roles": ["coordinator"]}]),
     "Unsupported value: \"coordinator\""),
    ("bad heap", with_spec("elasticsearch.heap", "2 GB"), "elasticsearch.heap must be a JVM size"),
    ("storage class on emptyDir", with_spec("elasticsearch.storage", {"type": "EmptyDir", "storageClassName": "ssd"}),
     "storageClassName applies only to type PersistentVolumeClaim"),
    ("bad storage size", with_spec("elasticsearch.storage", {"size": "lots"}), "must be a Kubernetes quantity"),
    ("security in config", with_spec("elasticsearch.config", {"xpack.security.enabled": "false"}),
     "elasticsearch.config must not set xpack.security.*"),
    ("setting ECK overrides in config", with_spec("elasticsearch.config", {"network.host": "0.0.0.0"}),
     "elasticsearch.config must not set cluster.name, cluster.initial_master_nodes"),
    ("no master node set", with_spec("elasticsearch.nodeSets", [{"name": "data", "count": 1, "roles": ["data"]}]),
     "elasticsearch.nodeSets needs a node set with the master role"),
    ("structured config value", with_spec("elasticsearch.config", {"thread_pool.write.size": {"nested": 1}}),
     "spec.elasticsearch.config.thread_pool.write.size"),
    ("bad memory quantity", with_spec("elasticsearch.resources", {"limits": {"memory": "4 gigs"}}),
     "spec.elasticsearch.resources.limits.memory"),
    ("unknown codec", with_spec("index.codec", "zstd"), "Unsupported value: \"zstd\""),
    ("zero shards", with_spec("index.shards", 0), "spec.index.shards: Invalid value"),
    ("negative replicas", with_spec("index.replicas", -1), "spec.index.replicas: Invalid value"),
    ("bad refresh interval", with_spec("index.refreshInterval", "30 seconds"),
     "index.refreshInterval must be an Elasticsearch time value"),
    ("typed setting in free map", with_spec("index.settings", {"index.codec": "best_compression"}),
     "index.settings must not set codec"),
    ("short setting name", with_spec("index.settings", {"translog.durability": "async"}),
     "must be full index setting names starting with 'index.'"),
    ("mmapfs on a node without mmap", with_spec("index.settings", {"index.store.type": "mmapfs"}),
     "index.store.type to mmapfs or hybridfs, which Elasticsearch refuses on a node without mmap"),
    ("hybridfs with mmap turned off", both("index.settings", {"index.store.type": "hybridfs"},
                                           "elasticsearch.config", {"node.store.allow_mmap": "false"}),
     "which Elasticsearch refuses on a node without mmap"),
    ("unknown bundled track", with_spec("workload.track", "geonames"), "must name a bundled track"),
    ("git without repository", with_spec("workload.source", "Git"), "workload.repository is required"),
    ("repository without git", with_spec("workload.repository", {"url": "https://github.com/elastic/rally-tracks"}),
     "workload.repository is required when workload.source is Git, and only then"),
    ("include and exclude tasks", both("workload.includeTasks", ["a"], "workload.excludeTasks", ["b"]),
     "set either workload.includeTasks or workload.excludeTasks"),
    ("index-append without create-index", with_spec("workload", {"track": "smoke", "includeTasks": ["index-append"]}),
     "workload.includeTasks runs index-append without create-index"),
    ("unknown on-error", with_spec("workload.onError", "ignore"), "Unsupported value: \"ignore\""),
    ("unknown profile event", with_spec("profile", {"event": "itimer"}), "Unsupported value: \"itimer\""),
    ("interval of an alloc profile", with_spec("profile", {"event": "alloc", "intervalMillis": 5}),
     "profile.intervalMillis applies to the cpu and wall events only"),
    ("profile interval out of bounds", with_spec("profile", {"intervalMillis": 0}), "should be greater than or equal to 1"),
    ("load on a track without search tasks", with_spec("workload.load", {"targetThroughput": 10}),
     "workload.load drives the search tasks of the bundled tracks"),
    ("load on a rally-tracks track",
     with_spec("workload", {"track": "geonames", "source": "RallyTracks", "load": {"clients": 2}}),
     "for other tracks set the track's own parameters in workload.trackParams"),
    ("a target throughput of zero", both("workload.track", "range-queries", "workload.load", {"targetThroughput": 0}),
     "spec.workload.load.targetThroughput in body should be greater than 0"),
    ("a task target throughput of zero",
     both("workload.track", "range-queries", "workload.load", {"taskTargetThroughputs": {"range-1950s": 0}}),
     "should be greater than 0"),
    ("a contrast whose baseline is a variant",
     with_spec("workload.contrasts", [{"name": "source", "baseline": "a", "variants": ["b", "a"]}]),
     "a contrast's baseline task must not also be one of its variants"),
    ("a contrast on an unknown metric",
     with_spec("workload.contrasts", [{"name": "source", "baseline": "a", "variants": ["b"], "metrics": ["cpu"]}]),
     "Unsupported value: \"cpu\""),
    ("two contrasts of one name",
     with_spec("workload.contrasts", [{"name": "x", "baseline": "a", "variants": ["b"]},
                                      {"name": "x", "baseline": "c", "variants": ["d"]}]),
     "Duplicate value"),
    ("index reuse on a track that cannot restore its index", with_spec("workload.reuseIndex", True),
     "workload.reuseIndex is for the bundled track(s) codec-search"),
    ("a warm-up period without a period",
     both("workload.track", "range-queries", "workload.load", {"warmupTimePeriodSeconds": 5}),
     "workload.load.warmupTimePeriodSeconds needs timePeriodSeconds"),
    ("a schedule without a rate", both("workload.track", "range-queries", "workload.load", {"schedule": "poisson"}),
     "workload.load.schedule needs targetThroughput or taskTargetThroughputs"),
    ("controlled rally option", with_spec("rally.extraArgs", ["--target-hosts=evil:9200"]),
     "rally.extraArgs may only use these esrally options"),
    # esrally accepts unambiguous prefixes: --target-h is --target-hosts, --track-pa --track-params.
    ("abbreviated controlled option", with_spec("rally.extraArgs", ["--target-h=evil:9200"]),
     "rally.extraArgs may only use these esrally options"),
    ("abbreviated option as two tokens", with_spec("rally.extraArgs", ["--track-pa", "/etc/passwd"]),
     "rally.extraArgs may only use these esrally options"),
    ("short option", with_spec("rally.extraArgs", ["-h"]), "rally.extraArgs may only use these esrally options"),
    ("tiny timeout", with_spec("lifecycle.clusterReadyTimeoutSeconds", 5), "spec.lifecycle.clusterReadyTimeoutSeconds"),
    ("unknown cleanup", with_spec("lifecycle.cleanup", "Sometimes"), "Unsupported value: \"Sometimes\""),
    ("cleanup where it was", with_spec("rally.cleanup", "Keep"), "rally.cleanup is now lifecycle.cleanup"),
    ("bad git url", with_spec("workload", {"track": "nyc_taxis", "source": "Git", "repository": {"url": "file:///etc"}}),
     "workload.repository.url must be a git URL"),
    # workload.capacity: its range, a task the race runs, probes within the race's time (int and double mixed).
    ("capacity empty range", with_spec("workload", {"track": "range-queries", "capacity": {
        "task": "range-1950s", "objective": {"metric": "latency.p99", "maxMilliseconds": 100},
        "minTargetThroughput": 50, "maxTargetThroughput": 12.5}}), "an empty range has no rate to search"),
    ("capacity task left out", with_spec("workload", {"track": "range-queries", "includeTasks": ["index-append"],
                                                      "capacity": {"task": "range-1950s", "objective": {
                                                          "metric": "latency.p99", "maxMilliseconds": 100},
                                                          "minTargetThroughput": 5, "maxTargetThroughput": 50}}),
     "workload.capacity.task must be a task the race runs"),
    ("capacity probes beyond the race's time", with_spec("workload", {"track": "range-queries", "capacity": {
        "task": "range-1950s", "objective": {"metric": "latency.p99", "maxMilliseconds": 100},
        "minTargetThroughput": 5, "maxTargetThroughput": 50.5, "maxProbes": 40, "probeSeconds": 300}}),
     "beyond the race, more than lifecycle.raceTimeoutSeconds"),
]


@pytest.fixture
def custom(control_plane):
    return client.CustomObjectsApi(control_plane.api_client())


def create(custom, namespace, body, dry_run=None):
    return custom.create_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.PLURAL, body, dry_run=dry_run)


@pytest.mark.parametrize("case, body, expected", INVALID, ids=[case for case, _, _ in INVALID])
def test_invalid_experiment_is_rejected_with_a_message_naming_the_field(custom, namespace, case, body, expected):
    with pytest.raises(ApiException) as rejected:
        create(custom, namespace, body)
    assert rejected.value.status == 422, rejected.value.body
    message = json.loads(rejected.value.body)["message"]
    assert expected in message, message


def named(name: str, **spec_fields) -> dict:
    body = with_spec(**spec_fields)
    body["metadata"]["name"] = name
    return body


# Names from which a child name would be invalid: ECK's Services are DNS-1035 labels, and its
# pods (NAME-es-NODESET-ORDINAL plus a 10-character revision hash) must fit 63 characters.
INVALID_NAMES = [
    ("name starting with a digit", named("8-7-1-codecs"), "metadata.name must be a DNS-1035 label"),
    ("name with a dot", named("codec.search"), "metadata.name must be a DNS-1035 label"),
    ("name and node set too long together",
     named("x" * 36, **{"elasticsearch.nodeSets": [{"name": "n" * 12, "count": 3}]}),
     "metadata.name and elasticsearch.nodeSets[].name are too long together"),
]


@pytest.mark.parametrize("case, body, expected", INVALID_NAMES, ids=[case for case, _, _ in INVALID_NAMES])
def test_a_name_from_which_eck_could_not_name_its_objects_is_rejected(custom, namespace, case, body, expected):
    with pytest.raises(ApiException) as rejected:
        create(custom, namespace, body)
    assert rejected.value.status == 422 and expected in json.loads(rejected.value.body)["message"]


def test_the_longest_name_and_node_set_that_fit_are_accepted(custom, namespace):
    create(custom, namespace, named("x" * 36, **{"elasticsearch.nodeSets": [{"name": "n" * 11, "count": 9}]}))


def test_name_longer_than_eck_allows_is_rejected(custom, namespace):
    body = copy.deepcopy(VALID)
    body["metadata"]["name"] = "x" * 37
    with pytest.raises(ApiException) as rejected:
        create(custom, namespace, body)
    assert "metadata.name must be at most 36 characters" in json.loads(rejected.value.body)["message"]


def test_unknown_fields_are_rejected(custom, namespace):
    body = with_spec("index.codecs", "best_compression")
    with pytest.raises(ApiException) as rejected:
        custom.create_namespaced_custom_object(
            models.GROUP, models.VERSION, namespace, models.PLURAL, body, field_validation="Strict")
    assert 'unknown field "spec.index.codecs"' in json.loads(rejected.value.body)["message"]


def test_spec_is_immutable(custom, namespace):
    created = create(custom, namespace, VALID)
    with pytest.raises(ApiException) as rejected:
        custom.patch_namespaced_custom_object(
            models.GROUP, models.VERSION, namespace, models.PLURAL, created["metadata"]["name"],
            {"spec": {"index": {"codec": "best_compression"}}})
    assert "spec is immutable" in json.loads(rejected.value.body)["message"]


def test_defaults_are_applied_by_the_api_server(custom, namespace):
    created = create(custom, namespace, VALID)
    spec = created["spec"]
    assert defaulted_fields(spec) == EXPECTED_DEFAULTS
    # What the API server stores parses into the same typed model the operator uses.
    models.ExperimentSpec.model_validate(spec)


def test_every_example_is_accepted(custom, namespace, repo_root):
    examples = sorted((repo_root / "examples").glob("**/*.yaml"))
    assert examples, "examples/ holds no Experiment"
    for path in examples:
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") == models.KIND:
                create(custom, namespace, document, dry_run="All")
            elif document and document.get("kind") == models.SCHEDULE_KIND:
                custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SCHEDULE_PLURAL,
                                                       document, dry_run="All")
