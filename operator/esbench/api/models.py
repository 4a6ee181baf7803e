"""Typed model of the Experiment custom resource (group esbench.io, version v1alpha1).

The CRD in crds/ is the admission-time source of truth; these models give the rest of the
code typed objects instead of nested dicts, and let local mode (no API server) apply the
same rules before anything starts.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator
from pydantic.alias_generators import to_camel

GROUP = "esbench.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "Experiment"
PLURAL = "experiments"

BUNDLED_TRACKS = ("smoke", "indexing", "source-filtering", "range-queries", "codec-search", "period-search",
                  "esql-stored-fields")


# Scalars only, as the CRD allows (x-kubernetes-int-or-string) for elasticsearch.yml and index settings.
Scalar = StrictInt | StrictStr


class Model(BaseModel):
    """camelCase on the wire (Kubernetes convention), snake_case in Python; unknown fields are errors."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


# --- spec.elasticsearch ---------------------------------------------------------------


class ResourceRequirements(Model):
    requests: dict[str, int | str] | None = None
    limits: dict[str, int | str] | None = None


class StorageType(str, Enum):
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    EMPTY_DIR = "EmptyDir"


class Storage(Model):
    type: StorageType = StorageType.PERSISTENT_VOLUME_CLAIM
    size: str = "10Gi"
    storage_class_name: str | None = None


class NodeSet(Model):
    name: str
    count: int = Field(ge=1)
    roles: list[str] | None = None


# elasticsearch.yml settings esbench gives every node of a cluster it creates, unless
# spec.elasticsearch.config says otherwise. mmap needs vm.max_map_count >= 262144 on the
# host, which a restricted pod cannot set; nodes prepared for it opt back in with
# node.store.allow_mmap: "true". Local mode applies the same, so that both measure alike.
DEFAULT_NODE_CONFIG: dict[str, Any] = {"node.store.allow_mmap": False}


class Elasticsearch(Model):
    version: str
    node_count: int | None = Field(default=None, ge=1)
    node_sets: list[NodeSet] | None = None
    resources: ResourceRequirements | None = None
    heap: str | None = None
    storage: Storage = Storage()
    config: dict[str, Scalar] | None = None
    image: str | None = None
    tls: bool = True

    def node_config(self) -> dict[str, Any]:
        """elasticsearch.yml settings of every node: esbench's defaults, then the spec's config."""
        return {**DEFAULT_NODE_CONFIG, **(self.config or {})}


# --- spec.target: a cluster the Experiment uses but does not own ------------------------


class SecretKeyRef(Model):
    name: str
    key: str


class ElasticsearchRef(Model):
    """An ECK Elasticsearch in the Experiment's namespace (ECK's Secrets give URL, user and CA)."""

    name: str


class ExternalCluster(Model):
    """Any Elasticsearch reachable from the cluster, with basic-auth credentials from Secrets."""

    url: str
    username: str | None = None
    password_secret: SecretKeyRef | None = None  # only by reference: never in the spec itself
    ca_secret: SecretKeyRef | None = None  # PEM CA for https; else the system's trust store


class Target(Model):
    elasticsearch_ref: ElasticsearchRef | None = None
    external: ExternalCluster | None = None


# --- spec.index -----------------------------------------------------------------------


class Codec(str, Enum):
    DEFAULT = "default"
    BEST_COMPRESSION = "best_compression"


class Index(Model):
    codec: Codec | None = None
    shards: int | None = Field(default=None, ge=1)
    replicas: int | None = Field(default=None, ge=0)
    refresh_interval: str | None = None
    settings: dict[str, Scalar] | None = None


# --- spec.workload --------------------------------------------------------------------


class TrackSource(str, Enum):
    BUNDLED = "Bundled"  # a track shipped inside esbench (offline, generated corpus)
    RALLY_TRACKS = "RallyTracks"  # a track of the default rally-tracks repository
    GIT = "Git"  # a track from another git repository at a pinned revision


class TrackRepository(Model):
    url: str
    revision: str | None = None


class OnError(str, Enum):
    ABORT = "abort"
    CONTINUE = "continue"


# Bundled tracks whose search tasks take workload.load (tracks/search-load.j2).
LOAD_TRACKS = ("source-filtering", "range-queries", "codec-search", "period-search", "esql-stored-fields")


class Load(Model):
    """How a bundled track's search tasks are driven, as Rally drives any task: clients, a target
    throughput (Rally's deterministic schedule: a fixed rate, not back to back) and a time
    period. For other tracks, set the track's own parameters in workload.trackParams."""

    target_throughput: float | None = Field(default=None, gt=0)  # ops/s, every search task
    task_target_throughputs: dict[str, float] | None = None  # ops/s by task name; wins over targetThroughput
    clients: int | None = Field(default=None, ge=1)
    time_period_seconds: int | None = Field(default=None, ge=1)  # else the track's iterations
    warmup_time_period_seconds: int | None = Field(default=None, ge=0)

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


class Contrast(Model):
    """Tasks of one race that are variants of one question (e.g. the same search with and without
    _source), each compared with the baseline task: change and, over repetitions, significance."""

    name: str
    baseline: str  # a task name
    variants: list[str] = Field(min_length=1)
    metrics: list[str] | None = None  # as in `esbench compare`; default analysis.contrasts.DEFAULT_METRICS


class Workload(Model):
    track: str
    source: TrackSource = TrackSource.BUNDLED
    repository: TrackRepository | None = None
    challenge: str | None = None
    track_params: dict[str, Any] | None = None
    include_tasks: list[str] | None = None
    exclude_tasks: list[str] | None = None
    test_mode: bool = False
    on_error: OnError = OnError.ABORT
    max_error_rate: float | None = Field(default=None, ge=0, le=1)  # with on_error continue: errors measured, not fatal
    load: Load | None = None
    contrasts: list[Contrast] | None = None


# --- spec.rally -----------------------------------------------------------------------


class CleanupPolicy(str, Enum):
    DELETE = "Delete"  # delete the cluster once the benchmark has finished
    KEEP = "Keep"
    KEEP_ON_FAILURE = "KeepOnFailure"


class Rally(Model):
    image: str | None = None
    resources: ResourceRequirements | None = None
    extra_args: list[str] | None = None
    cluster_ready_timeout_seconds: int = Field(default=1800, ge=1)
    race_timeout_seconds: int = Field(default=7200, ge=1)
    cleanup: CleanupPolicy = CleanupPolicy.DELETE
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)


class ExperimentSpec(Model):
    # Exactly one of the two (the CRD enforces it): a cluster of its own, or one it only uses.
    elasticsearch: Elasticsearch | None = None
    target: Target | None = None
    index: Index = Index()
    workload: Workload
    rally: Rally = Rally()

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
        for conflict, param, field in conflicts:
            if conflict:
                raise ValueError(f"workload.trackParams.{param} conflicts with {field}: set it in one place only")
        return self


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
    python: str | None = None


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
    environment: Environment | None = None


# --- ExperimentSweep ------------------------------------------------------------------

SWEEP_KIND = "ExperimentSweep"
SWEEP_PLURAL = "experimentsweeps"


class Axis(Model):
    """One dimension of the grid: a field of the Experiment spec and the values it takes."""

    field: str  # e.g. index.codec, elasticsearch.version, workload.trackParams.bulk_size
    values: list[Any] = Field(min_length=1)


class RunOrder(str, Enum):
    # Every cell once per round, rounds one after another: slow drift (warm caches, a
    # fragmenting disk, a noisy neighbour) spreads over all cells instead of biasing one.
    INTERLEAVED = "Interleaved"
    SHUFFLED = "Shuffled"  # as Interleaved, with each round in a seeded random order
    SEQUENTIAL = "Sequential"  # all repetitions of a cell, then the next: open to drift


class SignificanceTest(str, Enum):
    WELCH_T = "WelchT"  # compares means; the change is reported on means
    MANN_WHITNEY_U = "MannWhitneyU"  # rank-based, robust to outliers; the change is on medians


class Statistics(Model):
    test: SignificanceTest = SignificanceTest.WELCH_T
    confidence: float = Field(default=0.95, gt=0.5, lt=1)
    noise_threshold_percent: float = Field(default=5.0, gt=0)


class Gate(Model):
    """A regression gate: no contender may be significantly worse than the baseline by more than this."""

    task: str  # a Rally task, or "cluster" / "nodes" for the node-level figures
    metric: str  # as in `esbench compare`: throughput.median, latency.p99, store_size, ...
    max_regression_percent: float = Field(ge=0)
    cells: list[str] | None = None  # cell ids (c1, c2, ...); default every contender


class SweepSpec(Model):
    template: dict[str, Any]  # an Experiment spec; each cell overrides the matrix's fields
    matrix: list[Axis] = []
    include: list[dict[str, Any]] | None = None  # extra cells, as {field: value}
    exclude: list[dict[str, Any]] | None = None  # cells to leave out: every given field matches
    repetitions: int = Field(default=3, ge=1, le=50)
    baseline: dict[str, Any] | None = None  # {field: value} of the baseline cell; default the first cell
    parallelism: int = Field(default=1, ge=1, le=50)
    order: RunOrder = RunOrder.INTERLEAVED
    seed: int = 0
    cluster_reuse: bool = True
    # Runs at the start of each shared cluster that are not counted: right after a node starts,
    # the JIT and the caches make the first races slower, which would bias the first cells.
    warmup_runs: int = Field(default=0, ge=0, le=10)
    max_retries: int = Field(default=1, ge=0, le=5)
    statistics: Statistics = Statistics()
    gates: list[Gate] | None = None


class SweepPhase(str, Enum):
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"  # every run succeeded (gates are a separate condition)
    FAILED = "Failed"  # invalid, or some runs failed after their retries (partial results stay)


SWEEP_TERMINAL_PHASES = (SweepPhase.SUCCEEDED, SweepPhase.FAILED)
