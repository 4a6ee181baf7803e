"""`esbench run`: one Experiment on this machine, without Kubernetes.

The same Experiment file and the same runner (esbench.runner, what the Rally Job runs); only
the cluster differs. Elasticsearch comes from one of:
  --es-url    an existing cluster (credentials from ES_USERNAME and ES_PASSWORD or
              ES_PASSWORD_FILE, --ca-file);
  --es-home   an unpacked distribution on this machine, started here;
  (default)   Maven Central's integ-test-zip for spec.elasticsearch.version, downloaded once
              (sha1-verified, cached), started here.
A cluster started here is one node on loopback with the spec's heap (default 1g), HTTPS and a
generated superuser when spec.elasticsearch.tls is true (as ECK sets it up), and is stopped
afterwards. The outcome is an Experiment document with the status the operator would write,
so result files and `kubectl get esx NAME -o json` are interchangeable.

Steps are reported to a Progress (commands.py draws it); everything here but the pure
`experiment_document` and `local_notes` is I/O.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tempfile
import urllib.error
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

from kubernetes.utils import parse_quantity

from esbench.analysis import contrasts
from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.api.reasons import Reason
from esbench.history.localstore import LocalStore
from esbench.localnode import cpus, localcluster, profiler
from esbench.planning import status
from esbench.runner import race
from esbench.runner.target import Target

DEFAULT_HEAP = "1g"
# race.EXIT_CODES covers the race's outcomes (0, 10-14, 16, 17); 15 and 130 are local mode's own.
EXIT_INVALID_SPEC = race.EXIT_CODES[Reason.INVALID_SPEC]
EXIT_CLUSTER_NOT_READY = 15
EXIT_INTERRUPTED = 130
RACE_SUCCEEDED = (Reason.RACE_SUCCEEDED, "Race finished; results collected")  # as the operator words it

INTEG_TEST_ZIP = (
    "Maven Central's integ-test-zip: a minimal distribution with only the transport-netty4, x-pack-core "
    "and x-pack-security modules (and apm on 8.x), basic license. It has no painless scripting, no ingest "
    "processors, no analysis-common (most tokenizers and token filters), no ES|QL and no data streams: "
    "tracks that need them fail. For a full distribution use --es-home or --es-url."
)


class Progress(Protocol):
    """What local mode tells the person running it (commands.py draws it with rich)."""

    def step(self, title: str) -> contextlib.AbstractContextManager[Callable[[str], None]]:
        """A step with elapsed time; the yielded callable updates its one-line detail."""

    def note(self, text: str) -> None: ...

    def warn(self, text: str) -> None: ...

    def output(self, line: str) -> None:
        """A line of the runner's (and Rally's) own output."""


@dataclass
class Options:
    es_url: str | None = None
    ca_file: str | None = None
    es_home: Path | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    esrally: str = "esrally"
    work_dir: Path | None = None  # default: a temporary folder, removed after a success
    target_timeout: float = 60.0
    cpu_split: cpus.CpuSplit | None = None  # local nodes on its elasticsearch CPUs (this process is on the others)
    history: LocalStore | None = None  # where each measured run is recorded as it ends


@dataclass
class Outcome:
    document: dict[str, Any]  # the Experiment with its status
    exit_code: int
    work_dir: Path
    work_dir_kept: bool
    report: RaceReport | None = None


def find_esrally() -> str:
    """$ESBENCH_ESRALLY, else esrally on PATH, else the repository's .venv-rally (scripts/rally-env.sh)."""
    if os.environ.get("ESBENCH_ESRALLY"):
        return os.environ["ESBENCH_ESRALLY"]
    on_path = shutil.which("esrally")
    if on_path:
        return on_path
    repo_venv = Path(__file__).resolve().parents[3] / ".venv-rally" / "bin" / "esrally"
    return str(repo_venv) if repo_venv.exists() else "esrally"


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# --- pure parts ----------------------------------------------------------------------------


def local_notes(spec: models.ExperimentSpec, options: Options) -> list[str]:
    """What of the spec does not apply on this machine, said up front."""
    es = spec.elasticsearch
    if options.es_url:
        notes = []
        if es is not None:
            notes.append(f"Elasticsearch at {options.es_url} is used as it is: spec.elasticsearch (version "
                         f"{es.version}, nodes, heap, config, TLS) is not applied to it")
        if spec.workload.reuse_index:
            notes.append("workload.reuseIndex needs a snapshot repository of the node esbench starts: each race on "
                         f"{options.es_url} builds its index")
        return notes
    notes = []
    if spec.workload.reuse_index:
        notes.append(f"workload.reuseIndex: the index is built once and restored from a snapshot kept under "
                     f"{localcluster.snapshot_root()}, a folder per version (delete it to build again)")
    nodes = es.nodes()
    if nodes > 1:
        notes.append(f"local mode runs one node; the spec asks for {nodes}")
    resources = es.resources or models.ResourceRequirements()
    others = bool(resources.requests) or bool(set(resources.limits or {}) - {"memory", "cpu"})
    ignored = [name for name, value in (("resources (but limits.memory and limits.cpu)", others), ("image", es.image))
               if value]
    if memory_limit(es) is not None:
        notes.append("resources.limits.memory bounds the local node's own memory cgroup (heap, native memory and "
                     "page cache), as a pod's limit does")
    if cpu_limit(es) is not None:
        notes.append("resources.limits.cpu bounds the local node's own CPU cgroup (a CFS quota), as a pod's limit "
                     "does")
    if es.storage.type != models.StorageType.EMPTY_DIR or es.storage.storage_class_name:
        ignored.append("storage (data lives in a temporary folder)")
    if ignored:
        notes.append(f"not applied locally: spec.elasticsearch.{', '.join(ignored)}")
    if spec.workload.source != models.TrackSource.BUNDLED:
        notes.append(f"workload.source {spec.workload.source.value} fetches the track with git: this needs internet")
    return notes


def experiment_document(
    stored: dict[str, Any],
    *,
    succeeded: bool,
    reason: Reason,
    message: str,
    race_id: str,
    start_time: datetime,
    completion_time: datetime,
    results: models.Results | None = None,
    cluster_version: str | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The Experiment as the operator leaves it when it ends (same fields, same wording)."""
    metadata: dict[str, Any] = {"name": stored["metadata"]["name"]}
    if stored["metadata"].get("labels"):  # a sweep's run: its cell, repetition and attempt
        metadata["labels"] = dict(stored["metadata"]["labels"])
    # The file's own, and a sweep's run's (its cell and configuration, which perRound values do not change).
    kept = {**(stored["metadata"].get("annotations") or {}), **(annotations or {})}
    if kept:
        metadata["annotations"] = kept
    state: dict[str, Any] = {
        "phase": (models.Phase.SUCCEEDED if succeeded else models.Phase.FAILED).value,
        "reason": reason,
        "message": message,
        "raceId": race_id,
        "startTime": _timestamp(start_time),
        "completionTime": _timestamp(completion_time),
    }
    if cluster_version:
        state["clusterVersion"] = cluster_version
    if results is not None:
        state["results"] = results.to_wire()
        line = status.headline(results)
        if line:
            state["headline"] = line
        spec = models.ExperimentSpec.model_validate(stored["spec"])
        if spec.workload.contrasts:
            state["contrasts"] = contrasts.to_wire([results], spec.workload)
    return {"apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": metadata, "spec": stored["spec"],
            "status": state}


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_RALLY_PROGRESS = re.compile(r"Running (\S+)\s*\[\s*(\d+)% done\]")


def progress_detail(line: str) -> str | None:
    """The part of a runner/Rally output line worth showing as the race step's detail."""
    line = _ANSI.sub("", line).strip()
    match = _RALLY_PROGRESS.search(line)  # Rally prints these only to a terminal
    if match:
        return f"{match[1]} {match[2]}%"
    if line.startswith("esbench: "):
        text = line.removeprefix("esbench: ")
        return "esrally race started" if " race --pipeline" in text else text[:100]
    if line.startswith(("[INFO]", "[WARNING]", "[ERROR]")):
        return line[:100]
    return None


def start_failure(version: str, error: str, limit: int = 1000) -> str:
    """Why Elasticsearch did not start, short enough for a status message: the first line of the
    error and the line of its log tail that names the cause."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if not lines:
        return f"Elasticsearch {version} did not start"
    # The first error the node or the JVM logged is usually the cause; else an exception's message.
    telling = ([line for line in lines[1:] if re.search(r"\[(ERROR|error)\]", line)]
               or [line for line in lines[1:] if "Exception: " in line])
    message = f"Elasticsearch {version} did not start: {lines[0]}"
    if telling:
        message += f" {telling[0]}"
    return status.redact(message)[:limit]


class _LineSink(io.TextIOBase):
    """A text stream (what the runner prints to) that hands on complete lines."""

    def __init__(self, on_line: Callable[[str], None]):
        self._on_line = on_line
        self._buffer = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buffer += text
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            self._on_line(line)
        return len(text)


# --- I/O ------------------------------------------------------------------------------------


class ClusterNotReady(Exception):
    pass


def describe_url(url: str) -> str:
    return re.sub(r"//[^/@]*@", "//", url)  # never a password from a URL into a result file


def _es_home_version(home: Path) -> str | None:
    jars = sorted((home / "lib").glob("elasticsearch-[0-9]*.jar"))
    match = re.match(r"elasticsearch-(\d+\.\d+\.\d+)", jars[0].name) if jars else None
    return match[1] if match else None


def cpu_limit(es: models.Elasticsearch) -> float | None:
    """spec.elasticsearch.resources.limits.cpu in CPUs, if set."""
    limit = _limit(es, "cpu")
    return None if limit is None else float(limit)


def memory_limit(es: models.Elasticsearch) -> int | None:
    """spec.elasticsearch.resources.limits.memory in bytes, if set."""
    limit = _limit(es, "memory")
    return None if limit is None else int(limit)


def _limit(es: models.Elasticsearch, resource: str) -> Decimal | None:
    quantity = ((es.resources.limits or {}) if es.resources else {}).get(resource)
    return None if quantity is None else parse_quantity(quantity)


@dataclass
class SharedNode:
    """A local node that a sweep's runs use one after another, and what to say of it."""

    cluster: localcluster.LocalCluster
    annotations: dict[str, str]


@contextlib.contextmanager
def shared_node(spec: models.ExperimentSpec, options: Options, progress: Progress) -> Iterator[SharedNode]:
    annotations: dict[str, str] = {}
    with _local_cluster(spec, options, progress, annotations) as cluster:
        annotations["esbench.io/cluster"] = "shared by the sweep's runs of this cluster spec and track"
        yield SharedNode(cluster, annotations)


@contextlib.contextmanager
def _local_cluster(spec: models.ExperimentSpec, options: Options, progress: Progress,
                   annotations: dict[str, str]) -> Iterator[localcluster.LocalCluster]:
    es = spec.elasticsearch
    heap = es.heap or DEFAULT_HEAP
    kwargs: dict[str, Any] = {}
    kwargs["extra_settings"] = {name: str(value).lower() if isinstance(value, bool) else value
                                for name, value in es.node_config().items()}
    if str(kwargs["extra_settings"].get(localcluster.DISK_THRESHOLD, "false")) == "false":
        annotations["esbench.io/disk-watermarks"] = (
            f"off ({localcluster.DISK_THRESHOLD}: false): a nearly full disk, which stops shards being "
            f"allocated on a production node, does not here")
    if options.cpu_split:
        kwargs["cpus"] = options.cpu_split.elasticsearch
        annotations["esbench.io/cpus"] = options.cpu_split.describe()
    limit = memory_limit(es)
    if limit is not None:
        kwargs["memory_limit"] = limit
        annotations["esbench.io/memory-limit"] = f"{limit} bytes, the local node's memory cgroup"
    cpus = cpu_limit(es)
    if cpus is not None:
        kwargs["cpu_limit"] = cpus
        annotations["esbench.io/cpu-limit"] = f"{cpus:g} CPUs of each CFS period, the local node's CPU cgroup"
    if options.es_home:
        home_version = _es_home_version(options.es_home)
        if home_version and home_version != es.version:
            progress.warn(f"--es-home holds Elasticsearch {home_version}, the spec asks for {es.version}: "
                          f"running {home_version}")
        version = home_version or es.version
        annotations["esbench.io/elasticsearch"] = f"{version} from --es-home {options.es_home}, one local node"
        kwargs["home"] = options.es_home
        progress.note(f"Elasticsearch {version} from {options.es_home}")
    else:
        version = es.version
        with progress.step(f"Elasticsearch {version} distribution from Maven Central") as detail:
            try:
                archive = localcluster.distribution_zip(version)
            except urllib.error.HTTPError as error:
                raise ClusterNotReady(
                    f"cannot download Elasticsearch {version} from Maven Central: HTTP {error.code}"
                    + (" (no integ-test-zip for this version)" if error.code == 404 else "")) from error
            except (urllib.error.URLError, OSError, RuntimeError) as error:
                raise ClusterNotReady(f"cannot download Elasticsearch {version} from Maven Central: {error}") from error
            detail(f"sha1-verified, cached at {archive}")
        progress.note(f"Elasticsearch {version} is {INTEG_TEST_ZIP}")
        annotations["esbench.io/elasticsearch"] = (
            f"{version} integ-test-zip from Maven Central (minimal distribution), one local node")
    if spec.workload.reuse_index:  # by the version that runs: --es-home may hold another than the spec's
        kwargs["snapshot_repository"] = localcluster.snapshot_root() / version
    with progress.step(f"Starting Elasticsearch {version} on 127.0.0.1 (heap {heap}, "
                       f"{'HTTPS' if es.tls else 'HTTP'})") as detail:
        try:
            cluster = localcluster.start(version, heap=heap, secure=es.tls,
                                         timeout=float(spec.lifecycle.cluster_ready_timeout_seconds), **kwargs)
        except (RuntimeError, TimeoutError, OSError, ValueError) as error:
            raise ClusterNotReady(start_failure(version, str(error))) from error
        detail(cluster.url)
    try:
        yield cluster
    finally:
        with progress.step("Stopping Elasticsearch"):
            cluster.stop()


def run(stored: dict[str, Any], spec: models.ExperimentSpec, options: Options, progress: Progress,
        shared: SharedNode | None = None, profiles_to: Path | None = None) -> Outcome:
    """Race the admitted Experiment `stored` (its typed spec: `spec`) on this machine: on the
    node a sweep shares between its runs, on --es-url, or on a node of its own. With spec.profile,
    the per-task profiles go to the folder profiles_to, beside where the result will be written
    (else they stay in the work dir, which is then kept)."""
    name = stored["metadata"]["name"]
    race_id = str(uuid.uuid4())
    started = _now()
    work_dir = options.work_dir or Path(tempfile.mkdtemp(prefix=f"esbench-run-{name}-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    log_path = work_dir / "esbench-run.log"
    annotations = {"esbench.io/run": "local"}
    for note in local_notes(spec, options):
        progress.warn(note)

    report: RaceReport | None = None
    cluster_version = None
    try:
        with open(log_path, "a") as log, contextlib.ExitStack() as stack:
            node = None  # the node esbench started here
            if shared is not None:
                annotations.update(shared.annotations)
                node = shared.cluster
            elif options.es_url:
                annotations["esbench.io/elasticsearch"] = f"existing cluster at {describe_url(options.es_url)}"
                target = Target(options.es_url, options.username, options.password, options.ca_file)
                timeout = options.target_timeout
            else:
                node = stack.enter_context(_local_cluster(spec, options, progress, annotations))
            if node is not None:
                target, timeout = node.client, 30.0
            with progress.step(f"Race: track {spec.workload.track} ({spec.workload.source.value}), "
                               f"race id {race_id}") as detail:
                def on_line(line: str) -> None:
                    log.write(line + "\n")
                    log.flush()
                    progress.output(line)
                    shown = progress_detail(line)
                    if shown:
                        detail(shown)

                settings = race.RaceSettings(
                    spec=spec, target_url=target.url, ca_file=target.ca_file, username=target.username,
                    password=target.password, race_id=race_id, work_dir=work_dir, esrally=options.esrally,
                    target_timeout=timeout, corpus_cache=localcluster.cache_root() / "corpora",
                    node_probe=node.probe() if node else None,
                    profiler=profiler.NodeProfiler(node, spec.profile) if node and spec.profile else None,
                    snapshot_repository=str(node.snapshot_repository) if node and node.snapshot_repository else None,
                )
                report = race.run(settings, out=_LineSink(on_line))
            if report.results is not None:
                cluster_version = report.results.distribution_version
            if cluster_version is None:
                with contextlib.suppress(Exception):
                    cluster_version = target.get("/", timeout=5)["version"]["number"]
    except ClusterNotReady as error:
        document = experiment_document(
            stored, succeeded=False, reason=Reason.CLUSTER_NOT_READY, message=str(error), race_id=race_id,
            start_time=started, completion_time=_now(), annotations=annotations)
        if options.work_dir is None:  # the race never started: nothing in it worth keeping
            shutil.rmtree(work_dir, ignore_errors=True)
        return Outcome(document, EXIT_CLUSTER_NOT_READY, work_dir, options.work_dir is not None)

    profiles_kept = report.results is not None and report.results.profile is not None
    if profiles_kept:
        _place_profiles(report.results, work_dir, profiles_to)
    if report.succeeded:
        reason, message = RACE_SUCCEEDED
    else:
        assert report.failure is not None
        reason, message = report.failure.kind, status.redact(report.failure.message)
    document = experiment_document(
        stored, succeeded=report.succeeded, reason=reason, message=message, race_id=race_id, start_time=started,
        completion_time=_now(), results=report.results, cluster_version=cluster_version, annotations=annotations)
    exit_code = race.exit_code(report)
    kept = options.work_dir is not None or exit_code != 0 or (profiles_kept and profiles_to is None)
    if not kept:
        shutil.rmtree(work_dir, ignore_errors=True)
    return Outcome(document, exit_code, work_dir, kept, report)


def _place_profiles(results: models.Results, work_dir: Path, profiles_to: Path | None) -> None:
    """The race's profile files moved to profiles_to (named relative to its parent, the result's folder),
    or left in the work dir (named by their absolute path)."""
    assert results.profile is not None and results.profile.folder is not None
    made = work_dir / results.profile.folder
    if profiles_to is None:
        results.profile.folder = str(made.resolve())
        return
    shutil.rmtree(profiles_to, ignore_errors=True)  # an earlier attempt's
    profiles_to.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(made, profiles_to)
    results.profile.folder = profiles_to.name
