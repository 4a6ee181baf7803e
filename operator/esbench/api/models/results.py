"""The Experiment's status: its phase, and the race's results as the runner reports them (Rally's
figures, the nodes' resources per task, the environment, profiles and index layouts)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import Field

from esbench.api.models.common import Conditions, Int64, Model, Records, StatusReason, Timestamp
from esbench.api.models.experiment import ProfileEvent, TrackSource


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
    # Where a probe reads the nodes (local mode; a cluster esbench made on Kubernetes, through each
    # pod's sidecar), from the kernel's figures per thread: the part of process_cpu_ms spent by the
    # JVM's JIT compiler threads, and by its garbage collector's threads.
    jit_cpu_ms: float | None = None
    gc_cpu_ms: float | None = None
    # Elasticsearch reports neither: pages its processes had to read from disk on access (with mmap,
    # how the store is read): the node's memory cgroup's count (local mode as root), else its server
    # JVM's own (local mode, the sidecar); and the page cache charged to that cgroup (local mode
    # only), averaged over the samples.
    major_page_faults: float | None = None
    page_cache_bytes: float | None = None
    # Where a probe reads the nodes, from fincore over their index files: by Lucene file extension (fdt
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
    cgroup_cpu_limit: float | None = None  # CPUs of each CFS period its cgroup's quota allows (a pod's CPU limit)
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


class CapacityProbe(Model):
    """One probe of a capacity search: the task alone at a target throughput, its warm-up left out."""

    target_throughput: float | None = None  # ops/s offered (Rally's target-throughput); None: a warm-up, flat out
    throughput: float | None = None  # ops/s achieved: Rally's median
    # How fast the requests fell behind their schedule: lag gained a second of the probe, in percent
    # (the share of the rate not sent); above analysis.capacitysearch.SHORTFALL the rate was not held.
    # None in warm-up.
    lag_growth_percent: float | None = None
    latency: Percentiles | None = None
    service_time: Percentiles | None = None
    error_rate: float | None = None
    node_cpu_percent: float | None = None  # the nodes' process CPU over the probe, mean over nodes
    # Where a probe reads the nodes (local mode; a cluster esbench made on Kubernetes): the share of the
    # nodes' CPU time the JVM's JIT compiler threads took, in percent
    # (TaskResources.jit_cpu_ms): it falls towards none as the node warms.
    jit_share_percent: float | None = None
    # What the nodes' data disks read over the probe (TaskResources.io_read_bytes over its window), a
    # second: on a store the page cache does not hold, what each rate costs the disk.
    disk_read_bytes_per_second: float | None = None
    verdict: str | None = None  # analysis.capacitysearch.Verdict: Passed, Failed or DriverLimited; None in warm-up
    driver: str | None = None  # why the load driver, not the cluster, set the rate
    seconds: float  # the probe's time, esrally's start included


class CapacityResult(Model):
    """workload.capacity's answer: the highest rate that held, the lowest above it that failed (the
    bracket the capacity lies in), every probe, and why the search stopped."""

    task: str
    objective: str  # e.g. "latency.p99 <= 200 ms, errors <= 0.00%"
    metric: str  # the objective's percentile, e.g. "latency.p99" (CAPACITY_METRICS)
    max_milliseconds: float  # the objective's bound on it
    capacity: float | None = None  # ops/s; None when no rate held
    upper: float | None = None  # ops/s; None when no rate above it failed
    confirmations: int = 0  # probes that held at the capacity beyond the first
    stop: str  # analysis.capacitysearch.Stop
    message: str
    seconds: float  # the search's time
    probes: list[CapacityProbe] = []
    warmup: list[CapacityProbe] = []  # before the probes, as fast as the clients can, not judged
    steady: bool = True  # False when the warm-up probes were spent with the node still getting faster


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
    capacity: CapacityResult | None = None



class ExperimentStatus(Model):
    phase: Phase | None = None
    reason: StatusReason | None = None
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
