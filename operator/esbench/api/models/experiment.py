"""The API of esbench.io/v1alpha1: the Experiment, ExperimentSweep and ExperimentSchedule resources, and the race report.

These models are the one source of the API. The CRDs (api/crds.py, written to crds/ by
scripts/generate-api.py), local admission (api/validation.py) and the API reference
(docs/api.md) are made from them; the rest of the code gets typed objects instead of nested
dicts. A field's bounds, pattern, default and description are pydantic's; what only
Kubernetes checks (CEL rules, list-map keys, int-or-string) is its `json_schema_extra`
(api/openapi.py). Rules that CEL cannot express are model validators, which the operator
reports as InvalidSpec and local mode applies up front.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator
from pydantic.alias_generators import to_camel

from esbench.api.openapi import INT_OR_STRING, SchemaOf, rules

GROUP = "esbench.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Experiment"
PLURAL = "experiments"

BUNDLED_TRACKS = ("smoke", "indexing", "source-filtering", "range-queries", "codec-search", "period-search",
                  "esql-stored-fields")

# What `esbench compare` measures per task, and (for sweep gates) per cluster and node;
# tests/unit/test_contrasts.py holds analysis/compare.py to these names.
TASK_METRIC_NAMES = (
    "throughput.median", "latency.p50", "latency.p90", "latency.p99", "latency.p100", "service_time.p50",
    "service_time.p90", "service_time.p99", "service_time.p100", "error_rate", "process_cpu.percent",
    "process_cpu.max_node_percent", "process_cpu.time", "process_cpu.net_time", "jit_cpu.time", "gc_cpu.time",
    "cgroup_cpu.time", "os_cpu.percent",
    "heap_used.mean",
    "gc.time", "io.read_bytes", "io.read_operations", "io.write_bytes", "write_rejections", "page_faults.major",
    "page_cache.mean", "indexed_rate", "steady.service_time.p50", "steady.service_time.p90", "steady.service_time.p99",
    "steady.throughput.mean",
)
METRIC_NAMES = (*TASK_METRIC_NAMES, "store_size", "segment_count", "indexing_time", "merge_time", "refresh_time",
                "flush_time", "young_gc_time", "old_gc_time", "process_cpu.mean", "process_cpu.p90")


def _cel_list(names: tuple[str, ...] | list[str]) -> str:
    return repr(list(names))


def _and(names: tuple[str, ...]) -> str:
    return f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]


# Scalars only, as the CRD allows (x-kubernetes-int-or-string) for elasticsearch.yml and index settings:
# CEL can then check the keys.
Scalar = Annotated[StrictInt | StrictStr, Field(json_schema_extra=INT_OR_STRING)]
Quantity = Annotated[int | str, Field(pattern=(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"))]
SecretName = Annotated[str, Field(max_length=253)]
TaskName = Annotated[str, Field(max_length=256)]


class Model(BaseModel):
    """camelCase on the wire (Kubernetes convention), snake_case in Python; unknown fields are errors."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# --- spec.elasticsearch ---------------------------------------------------------------


class ResourceRequirements(Model):
    requests: dict[str, Quantity] | None = Field(None, max_length=8)
    limits: dict[str, Quantity] | None = Field(None, max_length=8)


RESOURCES = "Kubernetes resource requests and limits (cpu, memory)."
# The labels esbench puts on what it makes. Each owner kind labels its children with its own name
# (an Experiment its cluster and Job, a sweep or a schedule its runs), so handlers can route their
# events; a sweep's runs also say which cell, round and attempt they are.
EXPERIMENT_LABEL = "esbench.io/experiment"
SWEEP_LABEL = "esbench.io/sweep"
SCHEDULE_LABEL = "esbench.io/schedule"
CELL_LABEL = "esbench.io/cell"
REPETITION_LABEL = "esbench.io/repetition"  # the run's round
ATTEMPT_LABEL = "esbench.io/attempt"
WARMUP_CELL_PREFIX = "w"  # warm-up runs' cells are w0, w1, ...; the measured ones c0, c1, ...
# On a sweep's run: the configuration it measures (esbench history's id of its cell's spec). A run
# on the sweep's shared cluster has a spec that names that cluster, one per sweep, in place of the
# cell's elasticsearch: its own spec would make each sweep a series of its own.
CONFIGURATION_ANNOTATION = "esbench.io/configuration"
# On a schedule's run: the tick it was created for (a confirming run: when it was created).
SCHEDULED_AT = "esbench.io/scheduled-at"


class StorageType(str, Enum):
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    EMPTY_DIR = "EmptyDir"


class Storage(Model):
    model_config = ConfigDict(json_schema_extra=rules((
        "self.type == 'PersistentVolumeClaim' || !has(self.storageClassName)",
        "elasticsearch.storage.storageClassName applies only to type PersistentVolumeClaim")))

    type: StorageType = StorageType.PERSISTENT_VOLUME_CLAIM
    size: str = Field("10Gi", max_length=32, json_schema_extra=rules((
        r"self.matches('^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$')",
        "elasticsearch.storage.size must be a Kubernetes quantity such as 10Gi")))
    storage_class_name: SecretName | None = None


NODE_ROLES = ("master", "data", "data_content", "data_hot", "data_warm", "data_cold", "data_frozen", "ingest", "ml",
              "remote_cluster_client", "transform", "voting_only")


class NodeSet(Model):
    name: str = Field(max_length=23, pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    count: int = Field(ge=1, le=100)
    roles: list[Literal[NODE_ROLES]] | None = Field(None, max_length=12)


# elasticsearch.yml settings esbench gives every node of a cluster it creates, unless
# spec.elasticsearch.config says otherwise. mmap needs vm.max_map_count >= 262144 on the
# host, which a restricted pod cannot set; nodes prepared for it opt back in with
# node.store.allow_mmap: "true". Local mode applies the same, so that both measure alike.
DEFAULT_NODE_CONFIG: dict[str, Any] = {"node.store.allow_mmap": False}
# The index.store.type values a node without mmap refuses.
MMAP_STORE_TYPES = ("mmapfs", "hybridfs")
MMAP_REFUSED = ('which Elasticsearch refuses on a node without mmap: set elasticsearch.config node.store.allow_mmap: '
                '"true" (esbench sets it false unless told), or use niofs')

# ECK overrides these (UnsupportedSettings in ECK's api/elasticsearch/v1/fields.go) and only
# warns: the cluster would silently not be what the Experiment says.
ECK_SETTINGS = ("cluster.name", "cluster.initial_master_nodes", "discovery.seed_hosts", "discovery.seed_providers",
                "network.host", "network.publish_host", "node.name", "path.data", "path.logs")
_VERSION = r"self.matches('^[0-9]+\\.[0-9]+\\.[0-9]+$')"


class Elasticsearch(Model):
    model_config = ConfigDict(json_schema_extra=rules(
        ("!(has(self.nodeCount) && has(self.nodeSets))",
         "set either elasticsearch.nodeCount or elasticsearch.nodeSets, not both"),
        ("!has(self.nodeSets) || self.nodeSets.exists(s, !has(s.roles) || 'master' in s.roles)",
         "elasticsearch.nodeSets needs a node set with the master role (or without roles, which means all "
         "roles): ECK refuses a cluster without master nodes"),
    ))

    version: str = Field(max_length=32, description="Elasticsearch version, e.g. 8.15.3.", json_schema_extra=rules(
        (_VERSION, "elasticsearch.version must look like MAJOR.MINOR.PATCH, e.g. 8.15.3"),
        (f"!{_VERSION} || int(self.split('.')[0]) > 7 || (int(self.split('.')[0]) == 7 && "
         "int(self.split('.')[1]) >= 17)",
         "elasticsearch.version must be 7.17.0 or newer (older versions are not supported by ECK)"),
    ))
    node_count: int | None = Field(None, ge=1, le=100,
                                   description="Number of nodes in a single node set with all roles. Default 1.")
    node_sets: list[NodeSet] | None = Field(
        None, min_length=1, max_length=10,
        description="Named node sets (name, count, roles) instead of nodeCount; no roles means all roles.",
        json_schema_extra={
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    resources: ResourceRequirements | None = Field(None, description=RESOURCES)
    heap: str | None = Field(
        None, max_length=16,
        description="JVM heap size (-Xms and -Xmx), e.g. 2g. Defaults to ECK's automatic heap sizing.",
        json_schema_extra=rules(("self.matches('^[0-9]+[mMgG]$')",
                                 "elasticsearch.heap must be a JVM size such as 512m or 2g")))
    storage: Storage = Field(
        Storage(), description="The data path: a PersistentVolumeClaim (size, storageClassName) or an EmptyDir.")
    config: dict[str, Scalar] | None = Field(
        None, max_length=64,
        description="Extra elasticsearch.yml settings for every node. esbench sets node.store.allow_mmap: false "
                    "unless this sets it (local mode too; status.results.environment.nodes[].mmap records it): mmap "
                    "needs vm.max_map_count >= 262144 on the hosts, which a restricted pod cannot set. Set "
                    'node.store.allow_mmap: "true" on prepared nodes: it changes performance.',
        json_schema_extra=rules(
            ("!self.exists(k, k.startsWith('xpack.security.') || k.startsWith('node.roles'))",
             "elasticsearch.config must not set xpack.security.* (ECK manages security) or node.roles "
             "(use nodeSets[].roles)"),
            (f"!self.exists(k, k in {_cel_list(ECK_SETTINGS)})",
             f"elasticsearch.config must not set {', '.join(ECK_SETTINGS[:-1])} or {ECK_SETTINGS[-1]}: "
             "ECK sets them and ignores yours"),
        ))
    image: str | None = Field(
        None, max_length=512,
        description="Elasticsearch container image override; defaults to the official image for version.")
    tls: bool = Field(True, description="ECK's self-signed HTTPS on the HTTP layer. false serves plain HTTP "
                                        "(still with authentication).")

    def nodes(self) -> int:
        return sum(ns.count for ns in self.node_sets) if self.node_sets else self.node_count or 1

    def node_config(self) -> dict[str, Any]:
        """elasticsearch.yml settings of every node: esbench's defaults, then the spec's config."""
        return {**DEFAULT_NODE_CONFIG, **(self.config or {})}


# --- spec.target: a cluster the Experiment uses but does not own ------------------------


class SecretKeyRef(Model):
    name: SecretName
    key: SecretName


class ElasticsearchRef(Model):
    name: str = Field(max_length=36)


class ExternalCluster(Model):
    model_config = ConfigDict(json_schema_extra=rules((
        "has(self.username) == has(self.passwordSecret)",
        "spec.target.external needs username and passwordSecret together (or neither, for a cluster without "
        "authentication)")))

    url: str = Field(max_length=512, json_schema_extra=rules((
        "self.matches('^https?://[^/@ ]+(:[0-9]+)?/?$')",
        "spec.target.external.url must be http(s)://HOST[:PORT] without credentials or a path")))
    username: str | None = Field(None, max_length=256)
    password_secret: SecretKeyRef | None = None  # only by reference: never in the spec itself
    ca_secret: SecretKeyRef | None = None  # PEM CA for https; else the system's trust store


class Target(Model):
    model_config = ConfigDict(json_schema_extra=rules((
        "has(self.elasticsearchRef) != has(self.external)",
        "spec.target needs exactly one of elasticsearchRef or external")))

    elasticsearch_ref: ElasticsearchRef | None = Field(
        None, description="An ECK Elasticsearch in the Experiment's namespace, reached through ECK's Service and "
                          "Secrets; the race starts once it is ready (reason ClusterNotFound if it never appears "
                          "within lifecycle.clusterReadyTimeoutSeconds).")
    external: ExternalCluster | None = Field(
        None, description="Any Elasticsearch reachable from the Rally pod. Credentials only through Secrets in the "
                          "Experiment's namespace.")


# --- spec.index -----------------------------------------------------------------------


class Codec(str, Enum):
    DEFAULT = "default"
    BEST_COMPRESSION = "best_compression"
    LEGACY_DEFAULT = "legacy_default"
    LEGACY_BEST_COMPRESSION = "legacy_best_compression"


# Settings with a field of their own in spec.index.
_INDEX_FIELD_SETTINGS = ("index.codec", "codec", "index.number_of_shards", "number_of_shards",
                         "index.number_of_replicas", "number_of_replicas", "index.refresh_interval",
                         "refresh_interval")


class Index(Model):
    codec: Codec | None = Field(
        None, description="index.codec. legacy_default and legacy_best_compression (the LZ4 and DEFLATE stored fields "
                          "of releases before zstd) exist only in releases with zstd stored fields: an older one "
                          "refuses the index.")
    shards: int | None = Field(None, ge=1, le=1024,
                               description="index.number_of_shards (Rally's track parameter number_of_shards).")
    replicas: int | None = Field(None, ge=0, le=32,
                                 description="index.number_of_replicas (Rally's track parameter number_of_replicas).")
    refresh_interval: str | None = Field(
        None, max_length=16,
        description="index.refresh_interval, an Elasticsearch time value such as 1s or 30s, or -1 to disable "
                    "refresh.",
        json_schema_extra=rules((
            "self.matches('^(-1|[0-9]+(nanos|micros|ms|s|m|h|d))$')",
            "index.refreshInterval must be an Elasticsearch time value such as 1s, 500ms or 30s, or -1")))
    settings: dict[str, Scalar] | None = Field(
        None, max_length=64,
        description='Further index settings by their full name, e.g. index.translog.durability. Scalars only; '
                    'quote booleans ("true").',
        json_schema_extra=rules(
            (f"!self.exists(k, k in {_cel_list(_INDEX_FIELD_SETTINGS)})",
             "index.settings must not set codec, number_of_shards, number_of_replicas or refresh_interval: use "
             "index.codec, index.shards, index.replicas and index.refreshInterval"),
            ("self.all(k, k.startsWith('index.'))",
             "index.settings keys must be full index setting names starting with 'index.'"),
        ))


# --- spec.workload --------------------------------------------------------------------


class TrackSource(str, Enum):
    BUNDLED = "Bundled"  # a track shipped inside esbench (offline, generated corpus)
    RALLY_TRACKS = "RallyTracks"  # a track of the default rally-tracks repository
    GIT = "Git"  # a track from another git repository at a pinned revision


class TrackRepository(Model):
    url: str = Field(max_length=512, json_schema_extra=rules((
        "self.matches('^(https://|ssh://|git@)[^ ]+$')",
        "workload.repository.url must be a git URL (https://, ssh:// or git@)")))
    revision: str | None = Field(None, max_length=128, description="Commit or branch to pin the track to.")


class OnError(str, Enum):
    ABORT = "abort"
    CONTINUE = "continue"


# Bundled tracks whose search tasks take workload.load (tracks/search-load.j2).
LOAD_TRACKS = ("source-filtering", "range-queries", "codec-search", "period-search", "esql-stored-fields")

# Bundled tracks that can build their index once and restore it from a snapshot (workload.reuseIndex).
INDEX_REUSE_TRACKS = ("codec-search", "source-filtering")
# The track param through which the runner tells those tracks which snapshot to take or restore.
INDEX_SNAPSHOT_PARAM = "index_snapshot"

Rate = Annotated[float, Field(gt=0)]


class Load(Model):
    """How a bundled track's search tasks are driven, as Rally drives any task: clients, a target
    throughput (Rally's deterministic schedule: a fixed rate, not back to back) and a time
    period. For other tracks, set the track's own parameters in workload.trackParams."""

    model_config = ConfigDict(json_schema_extra=rules((
        "!has(self.warmupTimePeriodSeconds) || has(self.timePeriodSeconds)",
        "workload.load.warmupTimePeriodSeconds needs timePeriodSeconds (without it the track's iterations apply)")))

    target_throughput: float | None = Field(None, gt=0, description="Operations per second for every search task.")
    task_target_throughputs: dict[str, Rate] | None = Field(
        None, max_length=64, description="Operations per second by task name; wins over targetThroughput.")
    clients: int | None = Field(None, ge=1, le=1024, description="Clients per search task.")
    time_period_seconds: int | None = Field(
        None, ge=1, le=86400,
        description="Measured time per search task, after the warm-up; unset: the track's iterations.")
    warmup_time_period_seconds: int | None = Field(
        None, ge=0, le=86400, description="Warm-up time per search task (default 10).")

    def track_params(self) -> dict[str, Any]:
        """The bundled tracks' parameters for these settings (tracks/search-load.j2)."""
        params = {
            "target_throughput": self.target_throughput,
            "target_throughputs": self.task_target_throughputs,
            "search_clients": self.clients,
            "search_time_period": self.time_period_seconds,
            "search_warmup_time_period": self.warmup_time_period_seconds,
        }
        return {name: value for name, value in params.items() if value is not None}


# analysis.contrasts.DEFAULT_METRICS, named here for the reference (analysis sits above the API).
_DEFAULT_CONTRAST_METRICS = "service_time.p50, service_time.p99, latency.p50, throughput.median, process_cpu.percent"


class Contrast(Model):
    """Tasks of one race that are variants of one question (e.g. the same search with and without
    _source), each compared with the baseline task: change and, over repetitions, significance."""

    model_config = ConfigDict(json_schema_extra=rules((
        "!(self.baseline in self.variants)", "a contrast's baseline task must not also be one of its variants")))

    name: str = Field(max_length=63, json_schema_extra=rules((
        "self.matches('^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$')",
        "workload.contrasts[].name must be lower case letters, digits, '-', '_' or '.'")))
    baseline: TaskName = Field(description="The task the variants are compared with.")
    variants: list[TaskName] = Field(min_length=1, max_length=16)
    metrics: list[Literal[TASK_METRIC_NAMES]] | None = Field(
        None, max_length=20, description=f"As in esbench compare; default {_DEFAULT_CONTRAST_METRICS}.")


class Workload(Model):
    model_config = ConfigDict(json_schema_extra=rules(
        (f"self.source != 'Bundled' || self.track in {_cel_list(BUNDLED_TRACKS)}",
         f"workload.track must name a bundled track ({', '.join(BUNDLED_TRACKS)}) when workload.source is Bundled"),
        ("(self.source == 'Git') == has(self.repository)",
         "workload.repository is required when workload.source is Git, and only then"),
        ("!(has(self.includeTasks) && has(self.excludeTasks))",
         "set either workload.includeTasks or workload.excludeTasks, not both"),
        (f"!has(self.load) || (self.source == 'Bundled' && self.track in {_cel_list(LOAD_TRACKS)})",
         f"workload.load drives the search tasks of the bundled tracks {_and(LOAD_TRACKS)}; for other tracks set "
         "the track's own parameters in workload.trackParams"),
        ("!has(self.maxErrorRate) || self.onError == 'continue'",
         "workload.maxErrorRate needs workload.onError continue (abort stops the race at the first failed request)"),
        (f"!has(self.reuseIndex) || !self.reuseIndex || (self.source == 'Bundled' && self.track in "
         f"{_cel_list(INDEX_REUSE_TRACKS)})",
         f"workload.reuseIndex is for the bundled track(s) {_and(INDEX_REUSE_TRACKS)}"),
    ))

    track: str = Field(max_length=63, description=(
        "A bundled track (esql-stored-fields needs ES|QL, which the offline distribution lacks), a track of "
        "rally-tracks, or of workload.repository, as workload.source says."), json_schema_extra=rules((
        "self.matches('^[a-z0-9][a-z0-9_.-]*$')",
        "workload.track must be a Rally track name (lower case letters, digits, '-', '_', '.')")))
    source: TrackSource = Field(
        TrackSource.BUNDLED,
        description="Bundled (shipped with esbench, works offline), RallyTracks (the default rally-tracks "
                    "repository) or Git (repository below).")
    repository: TrackRepository | None = None
    challenge: str | None = Field(None, max_length=128, description="Rally's --challenge.")
    track_params: dict[str, Any] | None = Field(
        None, max_length=64,
        description="Rally track parameters (any JSON). The operator rejects number_of_shards, number_of_replicas "
                    "and index_settings here when spec.index sets them.")
    include_tasks: list[TaskName] | None = Field(None, max_length=64, description="Rally's --include-tasks.")
    exclude_tasks: list[TaskName] | None = Field(None, max_length=64, description="Rally's --exclude-tasks.")
    test_mode: bool = Field(False, description="Rally's --test-mode: a smoke run, never for numbers.")
    on_error: OnError = Field(
        OnError.ABORT, description="Rally's --on-error. abort fails the Experiment at the first request error.")
    max_error_rate: float | None = Field(
        None, ge=0, le=1,
        description="With onError continue: the highest error rate (failed requests / requests) of any task that "
                    "still counts as a successful race, e.g. for bulk rejections that are part of the measurement. "
                    "Above it the Experiment fails with RaceErrors. Default 0.")
    load: Load | None = Field(
        None, description="How the search tasks are driven: Rally's clients, target-throughput (a fixed rate by "
                          "Rally's deterministic schedule, instead of back to back) and time-period.")
    reuse_index: bool = Field(
        False,
        description="Build the index once and restore it from a snapshot in later races with the same Elasticsearch "
                    "version, track files and track params (workload.load and the track's search params aside): every race searches a restored "
                    "copy of the same segments, and only the first indexes and force-merges. index.store.type and "
                    "index.store.preload are applied as the copy is restored, not built into it. Needs a filesystem "
                    "snapshot repository the nodes can write: local mode makes one (ESBENCH_SNAPSHOTS), a sweep's "
                    "single-node shared cluster has one (clusterReuse: its runs restore what the first built), "
                    "other clusters a folder of the path.repo their nodes share; without, the race builds its index "
                    "and says so.")
    contrasts: list[Contrast] | None = Field(
        None, max_length=16,
        description="Tasks of this race that are variants of one question, each compared with a baseline task of "
                    "the same race (status.contrasts; with significance over a sweep's repetitions, each variant "
                    "paired race by race with the baseline under the WelchT test).",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})


# --- spec.rally -----------------------------------------------------------------------


class CleanupPolicy(str, Enum):
    DELETE = "Delete"  # delete the cluster once the benchmark has finished
    KEEP = "Keep"
    KEEP_ON_FAILURE = "KeepOnFailure"


# esrally (argparse) accepts unambiguous prefixes of long options, so a denylist of what
# esbench controls could always be spelled around: an allowlist, spelled in full.
RALLY_OPTIONS = ("--telemetry", "--telemetry-params", "--user-tags", "--enable-assertions",
                 "--enable-driver-profiling")


class Rally(Model):
    """The Rally pod."""

    model_config = ConfigDict(json_schema_extra=rules(*(
        (f"!has(self.{field})", f"rally.{field} is now lifecycle.{field}: move it to spec.lifecycle")
        for field in ("cleanup", "clusterReadyTimeoutSeconds", "raceTimeoutSeconds", "ttlSecondsAfterFinished"))))

    image: str | None = Field(None, max_length=512,
                              description="Runner image; defaults to the operator's configured image.")
    resources: ResourceRequirements | None = Field(
        None, description="The Rally container's requests and limits (cpu, memory). Default: the operator's "
                          "setting, the chart's operator.rallyResources (half a CPU and 2Gi, requests equal to limits: "
                          "a Guaranteed pod).")
    extra_args: list[Annotated[str, Field(max_length=256)]] | None = Field(
        None, max_length=32, description="Extra esrally arguments, from an allowlist.", json_schema_extra=rules((
            f"self.all(a, !a.startsWith('-') || a.split('=')[0] in {_cel_list(RALLY_OPTIONS)})",
            f"rally.extraArgs may only use these esrally options, spelled in full: {', '.join(RALLY_OPTIONS)} "
            "(esbench sets every other option from the spec)")))
    # Until 2026-11-26 these were here; now in spec.lifecycle. Declared only so that admission
    # refuses them with a message saying where they went (an undeclared field would be an
    # "unknown field" error, or pruned without a word under kubectl's --validate=warn). Documents
    # written before (stored objects, result files) are read with them moved (ExperimentSpec).
    cleanup: CleanupPolicy | None = Field(None, description="Moved to lifecycle.cleanup.")
    cluster_ready_timeout_seconds: int | None = Field(None, description="Moved to lifecycle.clusterReadyTimeoutSeconds.")
    race_timeout_seconds: int | None = Field(None, description="Moved to lifecycle.raceTimeoutSeconds.")
    ttl_seconds_after_finished: int | None = Field(None, description="Moved to lifecycle.ttlSecondsAfterFinished.")


# The fields spec.rally had until they moved to spec.lifecycle, by their wire names.
MOVED_TO_LIFECYCLE = ("cleanup", "clusterReadyTimeoutSeconds", "raceTimeoutSeconds", "ttlSecondsAfterFinished")


def lifecycle_setting(spec: dict[str, Any], name: str, default: Any = None) -> Any:
    """A spec.lifecycle setting (wire name) of a spec as stored, without parsing all of it: as
    ExperimentSpec reads it, from spec.rally in a document written before spec.lifecycle."""
    for section in (spec.get("rally") or {}, spec.get("lifecycle") or {}):
        if section.get(name) is not None:
            return section[name]
    return default


class Lifecycle(Model):
    """How long an Experiment waits, and what it leaves behind."""

    cleanup: CleanupPolicy = Field(
        CleanupPolicy.DELETE,
        description="What happens to the Elasticsearch cluster the Experiment made once the race is over.")
    cluster_ready_timeout_seconds: int = Field(
        1800, ge=30, le=86400,
        description="Bounds everything before the race (ECK missing, the cluster not ready or not found), counted "
                    "from the Experiment's creation: time the operator was down counts too.")
    race_timeout_seconds: int = Field(7200, ge=30, le=604800, description="Bounds the race, from the Rally pod's start. esrally is stopped a little before "
                                          "(45 s, at most a quarter of it) so that what it measured is still reported.")
    ttl_seconds_after_finished: int | None = Field(
        None, ge=0, description="Delete the whole Experiment this long after it finished. Unset keeps it.")


class ProfileEvent(str, Enum):
    """What async-profiler samples (its event names)."""

    CPU = "cpu"  # on-CPU time: its `ctimer` (a CPU-time timer per thread), which needs no perf_events access
    WALL = "wall"  # every thread, running or waiting
    ALLOC = "alloc"  # heap allocations, by bytes allocated
    LOCK = "lock"  # contended Java locks, by time waited


class Profile(Model):
    """A profile of Elasticsearch's JVM over the race (async-profiler), cut into one flame graph per task
    by the tasks' windows. Local mode attaches it to the node that esbench starts; on Kubernetes the
    nodes of the cluster that esbench makes record from their start (not an external cluster)."""

    model_config = ConfigDict(json_schema_extra=rules((
        "!has(self.intervalMillis) || self.event in ['cpu', 'wall']",
        "profile.intervalMillis applies to the cpu and wall events only")))

    event: ProfileEvent = Field(ProfileEvent.CPU, description="What to sample: cpu, wall, alloc or lock.")
    interval_millis: int | None = Field(
        None, ge=1, le=1000, description="Sampling interval of the cpu and wall events (default 10 ms for cpu, "
                                         "50 ms for wall): shorter is finer and costs more.")


class ExperimentSpec(Model):
    model_config = ConfigDict(json_schema_extra=rules(
        ("has(self.elasticsearch) != has(self.target)",
         "set either spec.elasticsearch (a cluster of the Experiment's own) or spec.target (an existing cluster it "
         "only uses), not both"),
        # Elasticsearch refuses these store types when the node disallows mmap (IndexModule), and
        # esbench's nodes disallow it unless the spec opts in: said here, not by a failed race.
        ("!has(self.elasticsearch) || !has(self.index) || !has(self.index.settings) || "
         "!('index.store.type' in self.index.settings) || "
         f"!(string(self.index.settings['index.store.type']) in {_cel_list(MMAP_STORE_TYPES)}) || "
         "(has(self.elasticsearch.config) && 'node.store.allow_mmap' in self.elasticsearch.config && "
         "string(self.elasticsearch.config['node.store.allow_mmap']) == 'true')",
         f"index.settings sets index.store.type to mmapfs or hybridfs, {MMAP_REFUSED}"),
    ))

    elasticsearch: Elasticsearch | None = None
    target: Target | None = Field(
        None, description="An existing cluster to benchmark instead of creating one. It is never modified or deleted "
                          "by esbench (besides the benchmark's own indices), and must not run other benchmarks at the "
                          "same time.")
    index: Index = Field(
        Index(), description="Index settings of the benchmark's indices, passed to Rally as track parameters.")
    workload: Workload
    rally: Rally = Field(Rally(), description="The Rally pod.")
    lifecycle: Lifecycle = Field(Lifecycle(), description="How long the Experiment waits, and what it leaves behind.")
    profile: Profile | None = Field(None, description="Profile Elasticsearch during the race (off unless set).")

    @model_validator(mode="before")
    @classmethod
    def _lifecycle_moved_out_of_rally(cls, data: Any) -> Any:
        """A document written before spec.lifecycle existed (a stored object, a result file) read as
        it would be written now. Admission refuses the old fields in anything new."""
        rally = data.get("rally") if isinstance(data, dict) else None
        if not isinstance(rally, dict) or not set(rally) & set(MOVED_TO_LIFECYCLE):
            return data
        moved = {key: value for key, value in rally.items() if key in MOVED_TO_LIFECYCLE and value is not None}
        return {**data, "rally": {key: value for key, value in rally.items() if key not in MOVED_TO_LIFECYCLE},
                "lifecycle": {**(data.get("lifecycle") or {}), **moved}}

    @model_validator(mode="after")
    def _one_cluster(self) -> ExperimentSpec:
        if (self.elasticsearch is None) == (self.target is None):
            raise ValueError("set either spec.elasticsearch (a cluster of its own) or spec.target (an existing cluster)")
        return self

    @model_validator(mode="after")
    def _track_params_do_not_repeat_the_spec(self) -> ExperimentSpec:
        # The CRD cannot check this (track params are free-form JSON, out of CEL's reach),
        # so the operator reports it as InvalidSpec and local mode rejects it up front.
        params = self.workload.track_params or {}
        index = self.index
        conflicts = [
            (index.shards is not None and "number_of_shards" in params, "number_of_shards", "index.shards"),
            (index.replicas is not None and "number_of_replicas" in params, "number_of_replicas", "index.replicas"),
            (
                "index_settings" in params
                and (index.codec is not None or index.refresh_interval is not None or index.settings is not None),
                "index_settings",
                "index.codec/refreshInterval/settings (Rally's index_settings replaces a track's default index settings)",
            ),
        ]
        load = self.workload.load.track_params() if self.workload.load else {}
        conflicts += [(param in params, param, "workload.load") for param in load]
        conflicts.append((INDEX_SNAPSHOT_PARAM in params, INDEX_SNAPSHOT_PARAM, "workload.reuseIndex (esbench sets it)"))
        for conflict, param, field in conflicts:
            if conflict:
                raise ValueError(f"workload.trackParams.{param} conflicts with {field}: set it in one place only")
        return self

    @model_validator(mode="after")
    def _track_params_store_type_needs_mmap(self) -> ExperimentSpec:
        # The CRD rule on index.settings, for the same setting given through track params.
        settings = (self.workload.track_params or {}).get("index_settings")
        store_type = settings.get("index.store.type") if isinstance(settings, dict) else None
        if self.elasticsearch is None or str(store_type) not in MMAP_STORE_TYPES:
            return self
        if str((self.elasticsearch.config or {}).get("node.store.allow_mmap")).lower() != "true":
            raise ValueError(f"workload.trackParams.index_settings sets index.store.type to {store_type}, {MMAP_REFUSED}")
        return self


# The Experiment's name becomes ECK's cluster name, and through it the names of Services and pods.
EXPERIMENT_NAME_RULES = rules(
    # ECK limits cluster names to 36 characters.
    ("self.metadata.name.size() <= 36",
     "metadata.name must be at most 36 characters (it names the ECK Elasticsearch cluster)"),
    # ECK names Services after the cluster (NAME-es-http): a DNS-1035 label, so no dots and a
    # letter first, stricter than the DNS subdomain the API server asks of any name.
    ("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
     "metadata.name must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending "
     "with a letter or digit (it names the cluster's Services)"),
    # ECK's StatefulSet NAME-es-NODESET names pods NAME-es-NODESET-ORDINAL, and each pod's
    # controller-revision-hash label (that name, '-' and 10 characters) must fit 63 characters.
    ("!has(self.spec.elasticsearch) || !has(self.spec.elasticsearch.nodeSets) || "
     "self.spec.elasticsearch.nodeSets.all(s, size(self.metadata.name) + size(s.name) + size(string(s.count)) <= 48)",
     "metadata.name and elasticsearch.nodeSets[].name are too long together: ECK's pod names "
     "NAME-es-NODESET-ORDINAL plus a 10-character revision hash must fit 63 characters"),
)


# --- status ---------------------------------------------------------------------------


class Phase(str, Enum):
    PENDING = "Pending"
    PROVISIONING = "Provisioning"
    BENCHMARKING = "Benchmarking"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


TERMINAL_PHASES = (Phase.SUCCEEDED, Phase.FAILED)


class Percentiles(Model):
    """Rally's latency / service-time percentiles, exactly as reported (keys 50_0, 90_0, ...)."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p100: float | None = None
    unit: str | None = None


class Throughput(Model):
    median: float | None = None
    unit: str | None = None


class TaskResources(Model):
    """What the cluster's nodes spent while one task ran (its window in Rally's log).

    CPU and I/O come from counters read at the window's ends (interpolated between samples),
    so they hold for short tasks too; os CPU and heap are gauges, averaged over the samples
    inside the window. Sums and means are over the cluster's nodes.
    """

    seconds: float  # the window's length
    nodes: int
    process_cpu_percent: float | None = None  # mean over nodes: 100 * CPU time / (window * processors)
    process_cpu_percent_max: float | None = None  # the busiest node
    process_cpu_ms: float | None = None  # sum over nodes
    cgroup_cpu_ms: float | None = None  # the containers' CPU (cgroup cpuacct), where Elasticsearch sees one
    os_cpu_percent: float | None = None  # mean over nodes and samples: the whole host, not only Elasticsearch
    heap_used_bytes: float | None = None  # mean over nodes and samples
    gc_time_ms: float | None = None  # young + old collections, sum over nodes
    io_read_bytes: float | None = None  # the data paths' block devices (fs.io_stats; Linux only), sum over nodes
    io_read_operations: float | None = None
    io_write_bytes: float | None = None
    write_rejections: float | None = None  # bulk work refused (write queue full, indexing pressure), sum over nodes
    # Documents the nodes indexed (primaries and replicas): unlike Rally's bulk throughput, which
    # counts every document sent, rejected ones included.
    index_operations: float | None = None
    # What else of the nodes' own work writes to their disks: the segments merges wrote (force
    # merges included), and flushes (each commits the shards' segments and trims their translogs).
    merged_bytes: float | None = None
    flushes: float | None = None
    # process_cpu_ms less the idle window's rate over the task's seconds: the task's own CPU, not the
    # JVM's background (GC, scheduled tasks) nor esbench's own _nodes/stats sampling.
    process_cpu_ms_net: float | None = None
    # Local mode only, from the kernel's figures per thread: the part of process_cpu_ms spent by the
    # JVM's JIT compiler threads, and by its garbage collector's threads.
    jit_cpu_ms: float | None = None
    gc_cpu_ms: float | None = None
    # Local mode only, from the node's memory cgroup (Elasticsearch reports neither): pages its
    # processes had to read from disk on access (with mmap, how the store is read), and the page
    # cache charged to it, averaged over the samples.
    major_page_faults: float | None = None
    page_cache_bytes: float | None = None
    # Local mode only, from fincore over the node's own index files: by Lucene file extension (fdt
    # stored fields, doc postings, tim terms, dvd doc values, cfs a compound segment, ...), their
    # bytes and the bytes of them in the page cache, means over the samples.
    index_files: dict[str, IndexFiles] | None = None


class IndexFiles(Model):
    size_bytes: float
    cached_bytes: float


# A track task of this name (a Rally `sleep`) is the race's idle window: the node's background
# measured between its tasks, as warm as for them, rather than as esrally starts.
IDLE_TASK = "idle"


class IdleWindow(Model):
    """What the nodes spent while nothing ran: over the track's `idle` task if it has one, else from
    the first _nodes/stats sample (esrally starting) to the first task's start. Its CPU includes
    esbench's own sampling, which goes on during the tasks."""

    seconds: float
    process_cpu_ms_per_second: float | None = None  # sum over nodes
    task: str | None = None  # the track's idle task it was measured over; absent: before the first task


class Frame(Model):
    frame: str  # a method (class.method) or a native function, as the profiler names it
    percent: float  # of the task's samples


class TaskProfile(Model):
    """The profile of one task's window: its samples and the frames that were on top of them most.
    The stacks themselves are files beside the result (Results.profile.folder)."""

    samples: int
    top: list[Frame] = []  # self: the frames the samples were taken in, most first
    stacks: str | None = None  # the collapsed stacks (one line per stack, its sample count last), gzipped
    samples_left_out: int | None = None  # of the stacks the file leaves out (it keeps the most sampled)
    flame_graph: str | None = None  # async-profiler's HTML flame graph


class ProfileRecording(Model):
    """How the race was profiled, and where its per-task files are."""

    profiler: str  # e.g. async-profiler 4.6
    event: ProfileEvent
    interval: str | None = None  # as the profiler was given it (10ms; 512k bytes for alloc)
    folder: str | None = None  # the per-task files, relative to the result document's folder
    config_map: str | None = None  # on Kubernetes: the ConfigMap beside the Experiment that holds them
    problem: str | None = None  # why some or all tasks have no profile


class SteadyThroughput(Model):
    mean: float | None = None  # of Rally's throughput samples from the steady state's start on
    unit: str | None = None


class SteadyState(Model):
    """Where a task's service times stopped settling (MSER-5 over its measured requests: analysis/
    steadystate.py), and its figures from there on. Rally's own figures are left as they are."""

    reached: bool
    samples: int  # the task's measured requests (Rally's warm-up left out, as in its figures)
    start_sample: int | None = None  # the first kept, in time order
    start_seconds: float | None = None  # since the task's start (Rally's warm-up included), as Rally counts
    kept: int | None = None
    service_time: Percentiles | None = None  # of the kept requests, interpolated as Rally does
    throughput: SteadyThroughput | None = None
    problem: str | None = None  # why none was found


class TaskResult(Model):
    task: str
    operation: str | None = None
    throughput: Throughput | None = None
    latency: Percentiles | None = None
    service_time: Percentiles | None = None
    error_rate: float | None = None
    duration: float | None = None  # ms, as Rally reports it
    start: str | None = None  # RFC 3339, from Rally's log: the first worker starting the task
    end: str | None = None  # the last worker finishing it (warm-up included in between)
    resources: TaskResources | None = None
    profile: TaskProfile | None = None
    steady_state: SteadyState | None = None


class ClusterResult(Model):
    """Node-level figures from race.json; times in ms, sizes in bytes, as Rally reports them."""

    indexing_time_ms: float | None = None
    merge_time_ms: float | None = None
    refresh_time_ms: float | None = None
    flush_time_ms: float | None = None
    young_gc_time_ms: float | None = None
    old_gc_time_ms: float | None = None
    store_size_bytes: float | None = None
    translog_size_bytes: float | None = None
    segment_count: float | None = None


class Distribution(Model):
    mean: float | None = None
    p90: float | None = None


class NodeSample(Model):
    """Per-node figures sampled from _nodes/stats during the race (Rally reports no CPU)."""

    node: str
    samples: int
    process_cpu_percent: Distribution | None = None
    os_cpu_percent: Distribution | None = None
    heap_used_bytes: Distribution | None = None
    gc_young_count: int | None = None
    gc_young_time_ms: int | None = None
    gc_old_count: int | None = None
    gc_old_time_ms: int | None = None
    indexing_total: int | None = None
    # Documents the node held at the last sample (Lucene's count, nested documents included):
    # unlike the counters, it tells a fresh index from one that kept an earlier race's documents.
    docs_count: int | None = None
    search_query_total: int | None = None
    process_cpu_ms: int | None = None
    io_read_bytes: int | None = None
    io_write_bytes: int | None = None


class TrackIdentity(Model):
    """Which track exactly: a digest of a bundled track's files, or the revision Rally checked out."""

    source: TrackSource
    name: str
    sha256: str | None = None  # Bundled: over its files (the corpus follows from them and the track params)
    revision: str | None = None  # RallyTracks / Git: the commit of Rally's checkout


class NodeEnvironment(Model):
    """What one Elasticsearch node ran on, as the node reports it."""

    node: str
    jvm: str | None = None  # vm name and version
    os: str | None = None  # pretty name
    kernel: str | None = None
    arch: str | None = None
    available_processors: int | None = None  # as the JVM sees them (container limits included)
    allocated_processors: int | None = None  # node.processors
    memory_bytes: int | None = None  # what the OS reports as total (the host's, unless the container limits it)
    cgroup_memory_limit_bytes: int | None = None  # the container's limit: what bounds the page cache
    heap_max_bytes: int | None = None
    mmap: bool | None = None  # node.store.allow_mmap (true unless the node sets it false)


class LoadDriverEnvironment(Model):
    """Where Rally ran."""

    kernel: str | None = None
    cpu_model: str | None = None
    processors: int | None = None  # usable by this process
    cpus: list[int] | None = Field(
        None, description="The CPUs the load driver may run on (esbench run puts a local node on the others).")
    python: str | None = None
    cpu_limit: float | None = Field(None, description="CPUs the load driver's cgroup quota allows; empty without one.")
    cpu_periods: int | None = Field(None, description="CFS periods of the load driver's cgroup during the race.")
    cpu_throttled_periods: int | None = Field(
        None, description="Of cpuPeriods, those in which the CPU limit stopped the load driver: a throttled "
                          "driver sends requests late and adds its own wait to the latencies it measures.")
    cpu_throttled_seconds: float | None = None


class PodEnvironment(Model):
    """A pod of the race as Kubernetes ran it: the image digest, the node and the resources it got."""

    pod: str
    image: str | None = None
    image_id: str | None = None  # what the kubelet ran: the image's digest
    node: str | None = None
    instance_type: str | None = None  # the node's node.kubernetes.io/instance-type label
    node_kernel: str | None = None
    node_cpu: str | None = None  # the node's capacity
    node_memory: str | None = None
    requests: dict[str, str] | None = None
    limits: dict[str, str] | None = None
    qos_class: str | None = Field(
        None, description="Guaranteed, Burstable or BestEffort: the first pods a busy node starves or evicts are "
                          "BestEffort, then Burstable.")


class KubernetesEnvironment(Model):
    """Added by the operator (the runner cannot see Kubernetes)."""

    server_version: str | None = None
    rally: PodEnvironment | None = None
    elasticsearch: list[PodEnvironment] | None = None


class Environment(Model):
    """The reproducibility record of a race: what produced these numbers."""

    esbench_version: str | None = None
    rally_version: str | None = None
    track: TrackIdentity | None = None
    elasticsearch_version: str | None = None
    elasticsearch_build_hash: str | None = None
    elasticsearch_build_flavor: str | None = None
    lucene_version: str | None = None
    nodes: list[NodeEnvironment] | None = None
    load_driver: LoadDriverEnvironment | None = None
    kubernetes: KubernetesEnvironment | None = None


class IndexLayout(Model):
    """An index as the race left it (`GET _segments`, every shard copy): what its searches read."""

    index: str
    shard_copies: int
    segments: int
    compound_segments: int = Field(description=(
        "Segments in one compound file (.cfs): Elasticsearch's hybridfs memory-maps those whole, stored fields "
        "included, where it reads a separate stored-fields file (.fdt) with reads. Elasticsearch makes a segment "
        "compound up to index.compound_format (default 1gb)."))
    documents: int
    size_bytes: int = Field(json_schema_extra={"format": "int64"})
    attributes: dict[str, list[str]] | None = Field(None, description=(
        "The distinct values of each attribute Lucene records per segment, e.g. the stored fields' compression "
        "mode (Lucene90StoredFieldsFormat.mode: BEST_SPEED is LZ4)."))


class Results(Model):
    race_id: str | None = None
    track: str | None = None
    challenge: str | None = None
    rally_version: str | None = None
    distribution_version: str | None = None
    track_params: dict[str, Any] | None = None
    tasks: list[TaskResult] = []
    cluster: ClusterResult | None = None
    nodes: list[NodeSample] | None = None
    idle: IdleWindow | None = None
    environment: Environment | None = None
    profile: ProfileRecording | None = None
    indices: list[IndexLayout] | None = None


Int64 = Annotated[int, Field(json_schema_extra={"format": "int64"})]
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
Records = list[dict[str, Any]]  # each a free-form object (typed where it is written)


class Condition(Model):
    """A Kubernetes condition (metav1.Condition's fields)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    observed_generation: Int64 | None = None
    last_transition_time: Timestamp
    reason: str
    message: str


Conditions = Annotated[list[Condition], Field(json_schema_extra={
    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})]


class ExperimentStatus(Model):
    phase: Phase | None = None
    reason: str | None = None
    message: str | None = None
    observed_generation: Int64 | None = None
    cluster_name: str | None = None
    cluster_version: str | None = None
    cluster_uid: str | None = Field(
        None, alias="clusterUID",
        description="The UID of the Elasticsearch resource the race ran on, when the Experiment owns it (what its "
                    "cleanup deletes).")
    job_name: str | None = None
    race_id: str | None = None
    start_time: Timestamp | None = None
    cluster_ready_time: Timestamp | None = None
    completion_time: Timestamp | None = None
    headline: str | None = None
    race_json_config_map: str | None = None
    contrasts: Records | None = Field(
        None, description="workload.contrasts over this race: per contrast and metric, the baseline task's and each "
                          "variant's figure and its change.")
    results: dict[str, Any] | None = Field(
        None, description="Rally's figures exactly as reported (see esbench.api.models.Results).")
    conditions: Conditions | None = None


# --- ExperimentSweep ------------------------------------------------------------------

SWEEP_KIND = "ExperimentSweep"
SWEEP_PLURAL = "experimentsweeps"


# The sections of the spec a cell may vary, and what it may not: what the chart's admission policy
# checks against the creator of a sweep in its template (the Secrets and clusters a run would be
# handed, and code of the user's choice), since the runs are created by the operator, not by
# that user. The matrix field's rules below and the operator's planner read both. An include
# cell's fields are the keys of a map of free JSON values, which CEL cannot see (the API server
# cannot type such a map for CEL): the chart's admission policy refuses them (on dyn values), and
# the planner again, before any run, as InvalidSpec.
SPEC_SECTIONS = ("elasticsearch", "index", "workload", "rally", "lifecycle", "profile")
TEMPLATE_ONLY_FIELDS = ("target", "rally.image", "elasticsearch.image", "workload.source", "workload.repository")
_SPEC_FIELD = rf"'^({'|'.join(SPEC_SECTIONS)})\\.[A-Za-z0-9_.-]+$'"
_TEMPLATE_ONLY_MESSAGE = (f"{', '.join(TEMPLATE_ONLY_FIELDS[:-1])} and {TEMPLATE_ONLY_FIELDS[-1]} cannot vary between "
                          "cells: set them in the template, where admission checks them against the sweep's creator")
_SECTIONS_MESSAGE = f"a field of the Experiment spec under {', '.join(SPEC_SECTIONS[:-1])} or {SPEC_SECTIONS[-1]}"
# Maps whose keys are free (and may contain dots): the rest of a field's name is one key.
_MAP_FIELDS = ("index.settings", "elasticsearch.config", "workload.trackParams")


def field_path(field: str) -> list[str]:
    """The keys of a sweep's field name: index.settings.index.translog.durability is 3 keys, not 5."""
    for map_field in _MAP_FIELDS:
        if field.startswith(map_field + "."):
            return [*map_field.split("."), field[len(map_field) + 1:]]
    return field.split(".")


def field_value(spec: dict[str, Any], field: str) -> Any:
    """The value of a sweep's field in an Experiment spec (its wire form), or None."""
    node: Any = spec
    for key in field_path(field):
        node = node.get(key) if isinstance(node, dict) else None
    return node


_MATRIX_FIELD = f"!{_cel_list(TEMPLATE_ONLY_FIELDS)}.exists(g, self == g || self.startsWith(g + '.'))"
_MATRIX_SECTION = f"self.matches({_SPEC_FIELD})"


class Axis(Model):
    """One dimension of the grid: a field of the Experiment spec and the values it takes."""

    field: str = Field(
        max_length=256,
        description="A field of the Experiment spec, e.g. index.codec, elasticsearch.version, "
                    "workload.trackParams.bulk_size, index.settings.index.translog.durability (after "
                    "index.settings., elasticsearch.config. and workload.trackParams. the rest is one key).",
        json_schema_extra=rules((_MATRIX_SECTION, f"matrix field must be {_SECTIONS_MESSAGE}, e.g. index.codec"),
                                (_MATRIX_FIELD, _TEMPLATE_ONLY_MESSAGE)))
    values: list[Any] = Field(min_length=1, max_length=50)


class RoundAxis(Model):
    """A track parameter that takes another value each round, the same in every cell of the round."""

    field: str = Field(
        max_length=256,
        description="workload.trackParams.NAME, e.g. workload.trackParams.queries (the rest is one key).",
        json_schema_extra=rules((r"self.matches('^workload\\.trackParams\\.[A-Za-z0-9_.-]+$')",
                                 "perRound field must be a track parameter, workload.trackParams.NAME: a round may "
                                 "change what the track asks, never the cluster, the index or the track, which the "
                                 "cells compare"),))
    values: list[Any] = Field(
        min_length=1, max_length=50,
        description="Round r (from 1) takes value number r modulo their count: the first round the first value; "
                    "warm-up runs count their own rounds from 1.")


class RunOrder(str, Enum):
    # Every cell once per round, rounds one after another: slow drift (warm caches, a
    # fragmenting disk, a noisy neighbour) spreads over all cells instead of biasing one. Within
    # a round, a node that still warms up favours whichever cell races last: Counterbalanced
    # turns the order round by round so that no cell holds one position.
    COUNTERBALANCED = "Counterbalanced"
    INTERLEAVED = "Interleaved"  # the cells' own order in every round: the baseline always first
    SHUFFLED = "Shuffled"  # as Interleaved, with each round in a seeded random order
    SEQUENTIAL = "Sequential"  # all repetitions of a cell, then the next: open to drift


class SignificanceTest(str, Enum):
    WELCH_T = "WelchT"  # ratio of geometric means, Welch's t interval
    MANN_WHITNEY_U = "MannWhitneyU"  # Hodges-Lehmann ratio, the interval inverting the rank test


class Question(Model):
    """A task and metric a sweep asks about."""

    task: TaskName = Field(description="A Rally task, or cluster / nodes for node-level figures.")
    metric: Literal[METRIC_NAMES] = Field(description="As in esbench compare.")


class Statistics(Model):
    test: SignificanceTest = Field(
        SignificanceTest.WELCH_T,
        description="How each contender's change against the baseline gets its interval and p-value, on the "
                    "logarithms of the figures (a ratio): WelchT gives the ratio of geometric means with Welch's t "
                    "interval; MannWhitneyU the Hodges-Lehmann ratio with the interval of the rank test, robust to "
                    "an outlying run (needs 4+ repetitions per cell to ever exclude no change at 95 %).")
    confidence: float = Field(0.95, gt=0.5, lt=1)
    noise_threshold_percent: float = Field(
        5.0, gt=0,
        description="The change that does not matter: a comparison whose interval lies within +-this is "
                    "Equivalent; a cell whose coefficient of variation exceeds it is flagged noisy.")
    paired: bool = Field(
        False,
        description="Compare each contender's run with the baseline's run of the same round (the ratio of the two), "
                    "a paired t interval: drift between rounds (a node warming up over the sweep) cancels out. Needs "
                    "order Counterbalanced, Interleaved or Shuffled and test WelchT.")
    target_width_percent: float | None = Field(
        None, gt=0, le=200,
        description="With maxRepetitions: a contender whose primary questions are unsettled stops once each of their "
                    "intervals is at most this wide, in % on the log scale (100 times the log ratio's width; default "
                    "twice noiseThresholdPercent, the width an Equivalent interval can have).")
    primary: list[Question] | None = Field(
        None, max_length=20,
        description="The sweep's primary questions (with its gates'): their comparisons are corrected together by "
                    "Holm; every other comparison is exploratory, corrected by Benjamini-Hochberg.")


class Gate(Question):
    """A regression gate: no contender may be significantly worse than the baseline by more than this."""

    max_regression_percent: float = Field(ge=0)
    cells: list[Annotated[str, Field(pattern="^c[0-9]+$")]] | None = Field(
        None, max_length=200, description="Cell ids (c1, c2, ...) to gate; default every contender.")


class WarmupUntilStable(Model):
    """Warm-up runs beyond warmupRuns until the node has settled, within a cap."""

    change_percent: float = Field(
        5.0, gt=0, le=100,
        description="Settled when every primary figure of a warm-up run (the primary questions', or each task's "
                    "throughput and service-time medians) is within this of the warm-up run before it.")
    max_runs: int = Field(5, ge=2, le=20, description="Warm-up runs at most, per shared cluster.")


class SweepSpec(Model):
    # A gate compares repetitions: with one run per cell there is a difference, never a verdict,
    # so the gate could never fail. (repetitions defaults to 3.)
    model_config = ConfigDict(json_schema_extra=rules(
        ("!has(self.gates) || !has(self.repetitions) || self.repetitions >= 2",
         "gates need repetitions of 2 or more: one run per cell gives a difference, not a verdict, and a gate "
         "could never fail"),
        ("!has(self.maxRepetitions) || self.maxRepetitions > (has(self.repetitions) ? self.repetitions : 3)",
         "maxRepetitions must be more than repetitions (the rounds every cell runs)"),
        ("!has(self.statistics) || !has(self.statistics.paired) || !self.statistics.paired || "
         "((!has(self.order) || self.order != 'Sequential') && "
         "(!has(self.statistics.test) || self.statistics.test == 'WelchT'))",
         "statistics.paired compares the runs of one round: it needs order Counterbalanced, Interleaved or Shuffled "
         "and test WelchT"),
        ("!has(self.perRound) || !has(self.matrix) || !self.perRound.exists(r, self.matrix.exists(a, a.field == r.field))",
         "a field is either a matrix axis (compared) or perRound (varied, not compared), not both"),
        ("!has(self.compareWithin) || self.compareWithin.all(f, has(self.matrix) && "
         "self.matrix.exists(a, a.field == f))",
         "compareWithin names matrix fields: the levels each of which gets a baseline of its own"),
        ("!has(self.compareWithin) || !has(self.matrix) || "
         "self.matrix.exists(a, !self.compareWithin.exists(f, f == a.field))",
         "compareWithin must leave a matrix field to compare: within every level of all the matrix's fields, "
         "a cell has nothing to be compared with"),
        ("!has(self.maxRepetitions) || has(self.gates) || (has(self.statistics) && has(self.statistics.primary))",
         "maxRepetitions needs a primary question (statistics.primary or gates): further rounds go on until its "
         "intervals are narrow enough"),
    ))

    template: Annotated[dict[str, Any], SchemaOf(
        ExperimentSpec, "An Experiment spec, checked as the Experiment CRD checks one. Every cell is this spec with "
                        "the matrix's values set.")]
    matrix: list[Axis] = Field(
        [], max_length=8, description="The axes of the grid; the cells are every combination of their values.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["field"]})
    per_round: list[RoundAxis] | None = Field(
        None, max_length=4,
        description="Track parameters that change from round to round and are not compared: every cell of a round "
                    "gets the same value, so paired statistics still compare like with like. For what must vary "
                    "across repetitions to average out, such as the order of a track's tasks (a task always run "
                    "first, after indexing, would meet other caches and merges than one always run last).",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["field"]})
    include: list[dict[str, Any]] | None = Field(
        None, max_length=50,
        description="Extra cells, each as {field: value} (with no matrix: one knob at a time against the "
                    "template).")
    exclude: list[dict[str, Any]] | None = Field(
        None, max_length=50,
        description="Cells to leave out, each selected by {field: value} (every given field must match).")
    baseline: dict[str, Any] | None = Field(
        None, description="The baseline cell as {field: value}; defaults to the first cell.")
    compare_within: list[Annotated[str, Field(max_length=256)]] | None = Field(
        None, max_length=7, json_schema_extra={"x-kubernetes-list-type": "set"},
        description="Matrix fields each of whose values has a baseline of its own: a cell is compared with the cell "
                    "that has the baseline's values and the cell's own values of these fields (index.codec within "
                    "each elasticsearch.resources, say, not across them). The comparisons of every level are "
                    "corrected together.")
    repetitions: int = Field(
        3, ge=1, le=50,
        description="Runs per cell. One run per configuration is noise; 5 or more make the tests meaningful.")
    max_repetitions: int | None = Field(
        None, ge=2, le=50,
        description="Repetitions until the answer is clear: after `repetitions` rounds and after each further one, "
                    "a contender stops once its primary questions are settled (Better, Worse or Equivalent) or their "
                    "intervals are no wider than statistics.targetWidthPercent, else it runs another round with its "
                    "baseline, up to this many runs per cell. Each look tests at a level from a group-sequential "
                    "design (Lan-DeMets spending, Pocock type), so stopping early keeps the chance of a false "
                    "verdict at 1 - confidence.")
    parallelism: int = Field(
        1, ge=1, le=50,
        description="Clusters at work at once (runs at once without clusterReuse). Parallel runs share the nodes' "
                    "CPU, disks and network, and measure each other.")
    order: RunOrder = Field(
        RunOrder.COUNTERBALANCED,
        description="Counterbalanced runs every cell once per round, each round in the next row of a Williams "
                    "design (seeded): over the rounds every cell races in every position equally often, so a node "
                    "that warms up within a round cannot pose as an effect. Interleaved keeps the cells' order in "
                    "every round (the baseline always first: within-round drift becomes a bias that pairing makes "
                    "look precise); Shuffled shuffles each round (seeded); Sequential runs a cell's repetitions back "
                    "to back.")
    seed: int = Field(0, description="Seed of the Counterbalanced and Shuffled orders.")
    cluster_reuse: bool = Field(
        True, description="Cells with the same elasticsearch spec and track share one cluster owned by the sweep "
                          "(NAME-g<n>) and run one after another on it, each race with a fresh index (the track "
                          "deletes and creates it).")
    # Right after a node starts, the JIT and the caches make the first races slower, which would
    # bias the first cells.
    warmup_runs: int = Field(
        1, ge=0, le=10,
        description="Runs at the start of each shared cluster that are not counted (cells w0, w1, ...), so that JIT "
                    "warm-up and cold caches do not bias the first cells. Only with clusterReuse (or spec.target).")
    warmup_until_stable: WarmupUntilStable | None = Field(
        None, description="Further warm-up runs, after warmupRuns, until two in a row agree within changePercent "
                          "(status.warmups says how many ran and whether the node settled).")
    max_retries: int = Field(1, ge=0, le=5, description="Attempts after a failed run (not after InvalidSpec).")
    statistics: Statistics = Statistics()
    gates: list[Gate] | None = Field(
        None, max_length=20,
        description="Regression gates for CI; condition GatesPassed turns False when a contender is significantly "
                    "worse than the baseline by more than the allowed change. A gate's task and metric are a primary "
                    "question of the sweep.")

    @property
    def most_repetitions(self) -> int:
        return max(self.repetitions, self.max_repetitions or 0)

    @property
    def most_warmup_runs(self) -> int:
        until = self.warmup_until_stable
        return max(self.warmup_runs, until.max_runs if until and self.warmup_runs else 0)

    @property
    def target_width_percent(self) -> float:
        return self.statistics.target_width_percent or 2 * self.statistics.noise_threshold_percent

    def primary_questions(self) -> list[tuple[str, str]]:
        """(task, metric) of statistics.primary and of the gates: the comparisons corrected together."""
        questions = [*(self.statistics.primary or []), *(self.gates or [])]
        return list(dict.fromkeys((q.task, q.metric) for q in questions))


SWEEP_NAME_RULES = rules(
    # Runs are named SWEEP-cN-rN[-aN] and must fit the Experiment's 36 characters.
    ("self.metadata.name.size() <= 24",
     "metadata.name must be at most 24 characters (its runs are named NAME-c<cell>-r<repetition>[-a<attempt>])"),
    ("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
     "metadata.name must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending "
     "with a letter or digit (its runs and clusters are named after it)"),
)


class SweepPhase(str, Enum):
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"  # every run succeeded (gates are a separate condition)
    FAILED = "Failed"  # invalid, or some runs failed after their retries (partial results stay)


SWEEP_TERMINAL_PHASES = (SweepPhase.SUCCEEDED, SweepPhase.FAILED)


class SweepProgress(Model):
    cells: int | None = None
    runs: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    running: int | None = None
    pending: int | None = None
    retries: int | None = None
    summary: str | None = None


class RunTiming(Model):
    runs: int | None = Field(None, description="Succeeded runs with task windows, that the medians are over.")
    run_seconds: float | None = Field(None, description="A run from its creation to its completion.")
    task_seconds: float | None = Field(None, description="Rally's task windows in a run, summed.")
    overhead_seconds: float | None = Field(
        None, description="The rest: cluster, Rally's start, index creation, corpus, cleanup.")


class Correction(Model):
    correction: str | None = Field(None, description="Holm (primary) or Benjamini-Hochberg (exploratory).")
    comparisons: int | None = Field(None, description="Comparisons with a p-value in the family.")


class Corrections(Model):
    primary: Correction | None = None
    exploratory: Correction | None = None


class OrderEffect(Model):
    """A linear model of the figure's logarithm: a level per cell and per round, one slope for the
    run's position in its round."""

    task: str | None = None
    metric: str | None = None
    state: Literal["Detected", "NotDetected", "Confounded", "InsufficientData"] | None = Field(
        None, description="Detected: the position explains the figure (Holm-adjusted p below 1 - confidence); "
                          "Confounded: every cell raced in one position, so the two cannot be told apart.")
    runs: int | None = None
    per_position_percent: float | None = Field(None, description="The change from one position to the next.")
    low_percent: float | None = None
    high_percent: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None


class SweepStatus(Model):
    phase: SweepPhase | None = None
    reason: str | None = None
    message: str | None = None
    observed_generation: Int64 | None = None
    start_time: Timestamp | None = None
    completion_time: Timestamp | None = None
    baseline: str | None = Field(
        None, description="The baseline cell (with compareWithin, the first level's: cells marks every level's, and "
                          "each comparison names its own in against).")
    clusters: list[str] | None = None
    progress: SweepProgress | None = None
    cells: Records | None = Field(None, description="Each cell, its values, its shared cluster and its runs by state.")
    failures: Records | None = Field(None, description="The latest failed runs (including those retried).")
    runs: Records | None = Field(
        None, description="Every run seen, with its outcome and, once it succeeded, Rally's figures (kept when the "
                          "run is deleted).")
    comparison: Records | None = Field(
        None, description="Per task and metric (primary or exploratory), each cell's n, median, mean, stdDev, "
                          "cvPercent and confidence interval of the mean; for a contender its change vs its baseline "
                          "(named in against where there are several) with its interval (adjusted and raw), raw and adjusted p-values, verdict (Better, Worse, "
                          "Equivalent, Inconclusive with runsNeeded, InsufficientData), the smallest effect it could "
                          "detect (detectablePercent) and the noisy flag.")
    timing: RunTiming | None = Field(None, description="Where a run's time goes, as medians over the runs.")
    corrections: Corrections | None = Field(
        None, description="How each family of comparisons was corrected for their number.")
    contrasts: Records | None = Field(
        None, description="Per cell, the template's workload.contrasts over the cell's repetitions, with the same "
                          "statistics as the comparison.")
    gates: Records | None = Field(
        None, description="Each gate's result: Passed (every contender's interval within the allowed regression), "
                          "Failed (significantly worse beyond it), Undecided (the sweep ended with an interval "
                          "reaching beyond it) or Pending, with a message.")
    warmups: Records | None = Field(
        None, description="With warmupUntilStable: per warm-up cell, the warm-up runs made, the last change between "
                          "two of them (changePercent) and whether the node settled (stable).")
    order_effects: list[OrderEffect] | None = Field(
        None, description="Per primary question (or each task's throughput and service time medians), whether a run's "
                          "position in its round explains its figure beyond its cell (condition OrderEffect).")
    conditions: Conditions | None = None


# --- ExperimentSchedule ---------------------------------------------------------------

SCHEDULE_KIND = "ExperimentSchedule"
SCHEDULE_PLURAL = "experimentschedules"
# The five fields of cron or one of its macros; croniter checks the values when the operator reads it.
CRON = r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+(\s+\S+){4})$"


class ConcurrencyPolicy(str, Enum):
    """What a tick does while an earlier run of the schedule is unfinished (CronJob's policies)."""

    FORBID = "Forbid"
    ALLOW = "Allow"
    REPLACE = "Replace"


class ScheduleSpec(Model):
    model_config = ConfigDict(json_schema_extra=rules(
        ("has(self.experiment) != has(self.sweep)", "set exactly one of experiment and sweep: what each tick creates")))

    schedule: str = Field(pattern=CRON, description="When, in cron syntax (five fields, in UTC), as a CronJob's.")
    suspend: bool = Field(False, description="No new run while true; runs under way go on.")
    concurrency_policy: ConcurrencyPolicy = Field(
        ConcurrencyPolicy.FORBID,
        description="While an earlier run is unfinished, a tick waits for it (Forbid: two benchmarks at once would "
                    "measure each other), starts beside it (Allow), or deletes it first (Replace).")
    starting_deadline_seconds: int | None = Field(
        None, ge=10, description="A tick not started within this many seconds (the operator down, Forbid waiting) "
                                 "is missed rather than started late. Unset: started however late.")
    successful_runs_history_limit: int = Field(
        3, ge=0, le=100, description="Succeeded runs kept as objects, the newest; older ones are deleted once the "
                                     "results store holds them (the store keeps every result).")
    failed_runs_history_limit: int = Field(1, ge=0, le=100, description="Failed runs kept as objects, the newest.")
    experiment: ExperimentSpec | None = Field(None, description="The Experiment each tick creates.")
    sweep: SweepSpec | None = Field(None, description="The ExperimentSweep each tick creates.")


SCHEDULE_NAME_RULES = rules(
    # Each tick's run is NAME-<minutes since the epoch> (8 digits, as a CronJob names its Jobs), a
    # run confirming it the same with a "c", and must fit an Experiment's 36 characters or a sweep's 24.
    ("self.metadata.name.size() <= (has(self.spec.sweep) ? 14 : 26)",
     "metadata.name must be at most 26 characters, 14 for a sweep (each run is named NAME-<minutes since the epoch>, "
     "a run that confirms a regression NAME-<minutes>c)"),
    ("self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
     "metadata.name must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending "
     "with a letter or digit (its runs are named after it)"),
)


class RegressionState(str, Enum):
    SUSPECTED = "Suspected"  # one run after the change: a confirming run is made
    CONFIRMED = "Confirmed"


class SeriesRegression(Model):
    """A series of the schedule's runs whose newest change point is a regression."""

    configuration: str = Field(description="The series' configuration (esbench history's id of the spec).")
    cell: str | None = Field(None, description="For a schedule of sweeps: the cell whose runs make the series.")
    task: str
    metric: str
    state: RegressionState
    change_percent: float | None = None
    pvalue: float
    first_run: str = Field(description="The first of the schedule's runs after the change point.")
    first_race_id: str


class RegressionCheck(Model):
    """The change points of the series of the schedule's runs, found by Apache Otava in the results store after
    the newest run was recorded. A sweep's run is one point of each cell's series: the median of its
    repetitions, which share a cluster and a night."""

    run: str = Field(description="The newest run the check covers.")
    scheduled_at: Timestamp = Field(description="That run's tick (or, for a confirming run, its creation).")
    configurations: list[str] = Field(
        description="The configurations watched (esbench history's ids of their specs): the Experiment's, or each "
                    "cell's of the sweep.")
    races: int = Field(description="Races of these configurations in the store.")
    series: int = Field(description="Series checked: each configuration's tasks' watched metrics.")
    regressions: list[SeriesRegression] | None = None
    confirming_run: str | None = Field(None, description="The run made to confirm a suspected regression.")


class ScheduleStatus(Model):
    reason: str | None = None
    message: str | None = None
    observed_generation: Int64 | None = None
    last_schedule_time: Timestamp | None = Field(None, description="The latest tick a run was created for.")
    last_successful_time: Timestamp | None = Field(None, description="When the latest run that succeeded ended.")
    last_missed_time: Timestamp | None = Field(None, description="The latest tick missed (startingDeadlineSeconds).")
    active: list[str] | None = Field(None, description="The runs under way.")
    active_count: int | None = None
    missed: int | None = Field(None, description="Ticks missed in all (startingDeadlineSeconds).")
    regression_check: RegressionCheck | None = Field(
        None, description="With a results store: the latest check of the schedule's series for a regression (the "
                          "Regression condition says the outcome).")
    conditions: Conditions | None = None
