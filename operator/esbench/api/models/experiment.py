"""The Experiment's spec: one race of one Rally track against one Elasticsearch cluster, the
cluster's and the index's settings, the workload, the Rally pod and its lifecycle."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictInt, StrictStr, model_validator

from esbench.api.models.common import Model, ResourceRequirements, cel_list
from esbench.api.openapi import INT_OR_STRING, rules

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
METRIC_NAMES = (*TASK_METRIC_NAMES, "capacity", "store_size", "segment_count", "indexing_time", "merge_time", "refresh_time",
                "flush_time", "young_gc_time", "old_gc_time", "process_cpu.mean", "process_cpu.p90")


def _and(names: tuple[str, ...]) -> str:
    return f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]


# Scalars only, as the CRD allows (x-kubernetes-int-or-string) for elasticsearch.yml and index settings:
# CEL can then check the keys.
Scalar = Annotated[StrictInt | StrictStr, Field(json_schema_extra=INT_OR_STRING)]
SecretName = Annotated[str, Field(max_length=253)]
TaskName = Annotated[str, Field(max_length=256)]


# --- spec.elasticsearch ---------------------------------------------------------------

RESOURCES = "Kubernetes resource requests and limits (cpu, memory)."


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
            (f"!self.exists(k, k in {cel_list(ECK_SETTINGS)})",
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
            (f"!self.exists(k, k in {cel_list(_INDEX_FIELD_SETTINGS)})",
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
    throughput (a fixed rate, not back to back, on Rally's schedule) and a time period. For other
    tracks, set the track's own parameters in workload.trackParams."""

    model_config = ConfigDict(json_schema_extra=rules(
        ("!has(self.warmupTimePeriodSeconds) || has(self.timePeriodSeconds)",
         "workload.load.warmupTimePeriodSeconds needs timePeriodSeconds (without it the track's iterations apply)"),
        ("!has(self.schedule) || has(self.targetThroughput) || has(self.taskTargetThroughputs)",
         "workload.load.schedule needs targetThroughput or taskTargetThroughputs (without a rate requests go back "
         "to back)")))

    target_throughput: float | None = Field(None, gt=0, description="Operations per second for every search task.")
    task_target_throughputs: dict[str, Rate] | None = Field(
        None, max_length=64, description="Operations per second by task name; wins over targetThroughput.")
    clients: int | None = Field(None, ge=1, le=1024, description="Clients per search task.")
    time_period_seconds: int | None = Field(
        None, ge=1, le=86400,
        description="Measured time per search task, after the warm-up; unset: the track's iterations.")
    warmup_time_period_seconds: int | None = Field(
        None, ge=0, le=86400, description="Warm-up time per search task (default 10).")
    schedule: Literal["deterministic", "poisson"] | None = Field(
        None, description="Rally's schedule of a fixed rate's requests. deterministic (Rally's default): each "
        "client sends at even intervals, so that clients that start together send together, in bursts of up to "
        "`clients` requests; poisson: at random intervals of the same mean, as independent users arrive. "
        "workload.capacity's probes are always poisson.")

    def track_params(self) -> dict[str, Any]:
        """The bundled tracks' parameters for these settings (tracks/search-load.j2)."""
        params = {
            "target_throughput": self.target_throughput,
            "target_throughputs": self.task_target_throughputs,
            "search_clients": self.clients,
            "search_time_period": self.time_period_seconds,
            "search_warmup_time_period": self.warmup_time_period_seconds,
            "search_schedule": self.schedule,
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


# The percentiles Rally reports for a task, which a capacity objective may bound.
CAPACITY_METRICS = tuple(f"{kind}.{p}" for kind in ("latency", "service_time") for p in ("p50", "p90", "p99", "p100"))
# The fewest requests from which Rally reports a percentile (metrics.percentiles_for_sample_size).
RALLY_PERCENTILE_REQUESTS = {"p50": 2, "p90": 10, "p99": 100}
# A probe's measured requests fall short of rate x time by each client's last ones, and by the
# rate the cluster did not keep: a probe at the lowest rate must offer this many times what Rally needs.
PROBE_REQUESTS_MARGIN = 2
# What a capacity probe costs beyond its warm-up and measured time: esrally's start and the track's
# load, with room; admission counts it against raceTimeoutSeconds.
PROBE_OVERHEAD_SECONDS = 30


class CapacityObjective(Model):
    """What the task must keep at a rate for the rate to count as held."""

    metric: Literal[CAPACITY_METRICS] = Field(description=(
        "A percentile Rally reports: latency (from the request's scheduled start, so the wait for a late send "
        "counts) or service_time (from its send)."))
    max_milliseconds: float = Field(gt=0, description="The percentile's bound.")
    max_error_rate: float = Field(0, ge=0, le=1, description="The highest share of requests in error.")


class Capacity(Model):
    """The highest rate the task holds under the objective, searched after the race on its index:
    each probe runs the task alone at a target throughput (Rally's schedule), its warm-up left out."""

    model_config = ConfigDict(json_schema_extra=rules(
        ("double(self.minTargetThroughput) < double(self.maxTargetThroughput)",
         "workload.capacity.minTargetThroughput must be below maxTargetThroughput: an empty range has no rate to "
         "search"),
        (" && ".join(f"(!self.objective.metric.endsWith('.{percentile}') || double(self.minTargetThroughput) * "
                     f"double(self.probeSeconds) >= {PROBE_REQUESTS_MARGIN * requests}.0)"
                     for percentile, requests in RALLY_PERCENTILE_REQUESTS.items()),
         "workload.capacity: a probe at minTargetThroughput sends it x probeSeconds requests; Rally reports "
         f"{', '.join(f'{p} from {n}' for p, n in RALLY_PERCENTILE_REQUESTS.items())} requests on, and a probe "
         f"needs {PROBE_REQUESTS_MARGIN} times that: raise minTargetThroughput or probeSeconds"),
    ))

    task: TaskName = Field(description="The task searched: a search task of the track (workload.load applies to it).")
    objective: CapacityObjective
    min_target_throughput: float = Field(gt=0, description=(
        "The lowest rate probed (operations per second). The first probe is at a point of [min, 2 x min) drawn from "
        "the race's id, the search's rates a lattice from it: each race rounds the capacity down by its own share of a "
        "step, so that repeated searches do not all round alike and a sweep can see a change smaller than a step."))
    max_target_throughput: float = Field(gt=0, description="The highest rate probed: above it, capacity is AboveRange.")
    precision_percent: float = Field(
        5, ge=1, le=100, description="The search ends when the lowest failing rate is within this much above the "
                                     "highest holding one.")
    max_probes: int = Field(12, ge=2, le=40, description="Probes at most, confirmations included.")
    confirmations: int = Field(
        1, ge=0, le=3, description="Probes again at each end of the final bracket: a rate holds or fails by the "
                                   "majority of its probes.")
    probe_seconds: int = Field(30, ge=1, le=3600, description="Measured time per probe (Rally's time-period).")
    warmup_seconds: int = Field(10, ge=0, le=3600, description="Warm-up per probe, left out of its figures.")
    warmup_probes: int = Field(
        6, ge=0, le=20, description="Probes before the search, as fast as the task's clients can, not judged, until "
                                    "its throughput stops rising (by 20 % or less from one to the next): a node "
                                    "gets faster for minutes after its start, the more requests it serves. 0 "
                                    "searches the node as the race left it.")


class Workload(Model):
    model_config = ConfigDict(json_schema_extra=rules(
        (f"self.source != 'Bundled' || self.track in {cel_list(BUNDLED_TRACKS)}",
         f"workload.track must name a bundled track ({', '.join(BUNDLED_TRACKS)}) when workload.source is Bundled"),
        ("(self.source == 'Git') == has(self.repository)",
         "workload.repository is required when workload.source is Git, and only then"),
        ("!(has(self.includeTasks) && has(self.excludeTasks))",
         "set either workload.includeTasks or workload.excludeTasks, not both"),
        ("!has(self.includeTasks) || self.source != 'Bundled' || !('index-append' in self.includeTasks) || "
         "'create-index' in self.includeTasks",
         "workload.includeTasks runs index-append without create-index: the first bulk request would make the index "
         "with Elasticsearch's defaults (dynamic mappings, one replica) and spec.index would not apply; add "
         "create-index (and delete-index), or leave out what is not wanted with excludeTasks"),
        (f"!has(self.load) || (self.source == 'Bundled' && self.track in {cel_list(LOAD_TRACKS)})",
         f"workload.load drives the search tasks of the bundled tracks {_and(LOAD_TRACKS)}; for other tracks set "
         "the track's own parameters in workload.trackParams"),
        ("!has(self.maxErrorRate) || self.onError == 'continue'",
         "workload.maxErrorRate needs workload.onError continue (abort stops the race at the first failed request)"),
        (f"!has(self.reuseIndex) || !self.reuseIndex || (self.source == 'Bundled' && self.track in "
         f"{cel_list(INDEX_REUSE_TRACKS)})",
         f"workload.reuseIndex is for the bundled track(s) {_and(INDEX_REUSE_TRACKS)}"),
        (f"!has(self.capacity) || (self.source == 'Bundled' && self.track in {cel_list(LOAD_TRACKS)})",
         f"workload.capacity drives a search task of the bundled tracks {_and(LOAD_TRACKS)} at the rates it probes"),
        ("!has(self.capacity) || ((!has(self.includeTasks) || self.capacity.task in self.includeTasks) && "
         "(!has(self.excludeTasks) || !(self.capacity.task in self.excludeTasks)))",
         "workload.capacity.task must be a task the race runs (in includeTasks, not in excludeTasks): the race "
         "shows it exists and warms it before the probes"),
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
    include_tasks: list[TaskName] | None = Field(
        None, max_length=64,
        description="Rally's --include-tasks. Where the race builds its index, name the track's create-index too: "
                    "without it the first bulk request makes the index with Elasticsearch's defaults and spec.index "
                    "does not apply (admission refuses a bundled track's index-append without create-index).")
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
                          "Rally's schedule, instead of back to back) and time-period.")
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
    capacity: Capacity | None = Field(
        None, description="After the race, search the highest rate one task holds under a latency objective "
                          "(results.capacity).")
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
            f"self.all(a, !a.startsWith('-') || a.split('=')[0] in {cel_list(RALLY_OPTIONS)})",
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
         f"!(string(self.index.settings['index.store.type']) in {cel_list(MMAP_STORE_TYPES)}) || "
         "(has(self.elasticsearch.config) && 'node.store.allow_mmap' in self.elasticsearch.config && "
         "string(self.elasticsearch.config['node.store.allow_mmap']) == 'true')",
         f"index.settings sets index.store.type to mmapfs or hybridfs, {MMAP_REFUSED}"),
        ("!has(self.workload.capacity) || (self.workload.capacity.maxProbes + self.workload.capacity.warmupProbes) * "
         "(self.workload.capacity.probeSeconds + "
         f"self.workload.capacity.warmupSeconds + {PROBE_OVERHEAD_SECONDS}) <= (has(self.lifecycle) && "
         "has(self.lifecycle.raceTimeoutSeconds) ? self.lifecycle.raceTimeoutSeconds : "
         f"{Lifecycle.model_fields['race_timeout_seconds'].default})",
         f"workload.capacity's probes may take (maxProbes + warmupProbes) x (probeSeconds + warmupSeconds + "
         f"{PROBE_OVERHEAD_SECONDS} s) "
         "beyond the race, more than lifecycle.raceTimeoutSeconds: raise it, or probe less or shorter"),
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
