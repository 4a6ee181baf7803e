"""One race, run inside the Rally Job pod (or locally): the I/O edge around rally.py and results.py.

Steps: check the spec against the CRD, wait for the target, derive track params, prepare the track (bundled
tracks are copied to the work dir and their corpus generated), run esrally while sampling
`_nodes/stats`, read race.json, classify the outcome and print the report lines that the
operator reads back from the pod log.

Work dir layout (everything the runner writes):
  rally/                      RALLY_HOME: Rally's config, logs and races/<id>/race.json
  tracks/<name>/              the prepared copy of a bundled track and its generated corpus
  track-params.json
  client-options.json         0600: holds the password, read by Rally, never on a command line
  report.md                   Rally's summary table (it prints it to terminals only)
  node-stats.json             the _nodes/stats samples, each stamped with the local time it was read
  samples.json.gz             each task's measured requests, as esrally_launcher.py kept them from Rally
  profiles/                   with spec.profile: per task, its collapsed stacks and flame graph
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import os
import re
import shutil
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from esbench.analysis import capacitysearch, profiles, steadystate
from esbench.api import models, validation
from esbench.api.race_report import Failure, RaceReport, encode_report
from esbench.api.reasons import Reason
from esbench.runner import (
    allocation,
    capacityprobes,
    corpus,
    environment,
    esrallyprocess,
    indexreuse,
    layout,
    nodestats,
    rally,
    requestsamples,
    results,
    taskwindows,
)
from esbench.runner.target import Target, Unreachable

TRACKS_DIR = Path(__file__).parent / "tracks"
OTHER_RACES_TIMEOUT_SECONDS = 900
RALLY_START_ATTEMPTS = 5
# Time kept, out of lifecycle.raceTimeoutSeconds, to stop Rally and print the report; at most
# a quarter of it, so that a short timeout still leaves Rally most of its time.
REPORT_MARGIN_SECONDS = 45


def rally_budget(race_timeout_seconds: int) -> float:
    """Seconds esrally may run, out of the race's timeout."""
    return race_timeout_seconds - min(REPORT_MARGIN_SECONDS, race_timeout_seconds / 4)
# The idle window runs from the first _nodes/stats sample to the first task, which esrally
# reaches soon after it starts: the nodes are watched this much longer, with no Rally running,
# so that a background task of the node weighs less in the idle rate. Test mode measures nothing.
IDLE_LEAD_SECONDS = 5.0

EXIT_CODES = {
    None: 0,
    Reason.INVALID_SPEC: 10,
    Reason.TARGET_UNREACHABLE: 11,
    Reason.TRACK_ERROR: 12,
    Reason.RACE_FAILED: 13,
    Reason.RACE_ERRORS: 14,
    Reason.RACE_TIMEOUT: 16,
    Reason.SHARDS_UNASSIGNED: 17,
}


PROFILES = "profiles"
# Distinct stacks kept per task's file, the most sampled: a bound on its size, whatever the task's length.
PROFILE_STACKS = 20000
# What a report through the pod's log carries of them, gzipped: they become one ConfigMap, whose
# size Kubernetes bounds with the files base64-encoded in it.
PROFILE_REPORT_BYTES = 700_000


class Profiler(Protocol):
    """Profiles the target's nodes during the race (local mode: esbench.localnode.profiler)."""

    recording: models.ProfileRecording

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def cut(self, start: float, end: float, stacks: Path, flame_graph: Path, title: str) -> None:
        """The samples between start and end (seconds since the epoch) as collapsed stacks and a flame graph."""


@dataclass
class RaceSettings:
    spec: models.ExperimentSpec
    target_url: str
    race_id: str
    work_dir: Path
    ca_file: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    esrally: str = "esrally"
    target_timeout: float = 300.0
    sample_interval: float = 2.0
    corpus_cache: Path | None = None  # generated corpora kept across races (local mode)
    # Counters of the nodes that Elasticsearch does not report, by node name (nodestats.with_probe):
    # a local node's (localnode), or what each pod's sidecar reads (Kubernetes: runner.sidecars).
    node_probe: Callable[[], dict[str, dict[str, Any]]] | None = None
    profiler: Profiler | None = None  # what spec.profile needs: a node esbench can attach a profiler to
    # What workload.reuseIndex needs: the location of a filesystem snapshot repository, in the
    # path.repo of the target's nodes (local mode: esbench.localnode.localcluster.snapshot_root);
    # without one, the runner asks the nodes for their path.repo.
    snapshot_repository: str | None = None
    # Seconds a shard that Elasticsearch refuses to allocate may stay unassigned before the race is stopped.
    unassigned_timeout: float = allocation.STUCK_SECONDS
    idle_lead: float = IDLE_LEAD_SECONDS  # none for a capacity probe: its figures are not net of the idle rate


def exit_code(report: RaceReport) -> int:
    return EXIT_CODES[report.failure.kind if report.failure else None]


def failed(kind: Reason, message: str, **kwargs: Any) -> RaceReport:
    return RaceReport(succeeded=False, failure=Failure(kind=kind, message=message), **kwargs)


class Redactor:
    """Replaces secrets in text meant for logs or the report."""

    def __init__(self, *secrets: str | None):
        self._secrets = [s for s in secrets if s]

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "*****")
        return text


def prepare_bundled_track(name: str, work_dir: Path, params: dict[str, Any],
                          corpus_cache: Path | None = None) -> tuple[Path, corpus.Corpus]:
    """A writable copy of the bundled track (Rally writes offset files next to the corpus) with
    its corpus generated for these params (or copied from corpus_cache)."""
    target = work_dir / "tracks" / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(TRACKS_DIR / name, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for part in TRACKS_DIR.glob("*.j2"):  # parts shared by the tracks, joined in by rally.collect("../...")
        shutil.copy(part, target.parent)
    generated = corpus.generate(target, name, params, corpus_cache)
    # Rally imports every Python file of a track that has a track.py; the generator is esbench's.
    (target / corpus.GENERATOR).unlink()
    shutil.rmtree(target / "__pycache__", ignore_errors=True)
    return target, generated


def spec_rejection(spec: models.ExperimentSpec) -> str | None:
    """What the CRD's schema and CEL rules (esbench.api.validation) refuse in spec, or None.

    A spec from the operator or `esbench run` was admitted already (defaulting it again changes
    nothing); one handed to `esbench race` directly meets here the rules `kubectl apply` applies.
    """
    experiment = {"apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": "race"}, "spec": spec.to_wire()}
    try:
        validation.admit(experiment)
    except validation.Rejected as rejected:
        return "; ".join(rejected.errors)
    return None


def _node_stats(target: Target, probe: Callable[[], dict[str, dict[str, Any]]] | None, race_id: str) -> dict[str, Any]:
    answer = {**target.get(nodestats.STATS_PATH, timeout=5),
              nodestats.LOAD_DRIVER: environment.load_driver_counters(race_id)}
    if probe is None:
        return answer
    try:
        probed = probe()
    except Exception:  # a probe that fails must not cost Elasticsearch's own figures
        return answer
    return nodestats.with_probe(answer, probed)


def run(settings: RaceSettings, out: IO[str] = sys.stdout) -> RaceReport:
    """Run the race; whatever happens, return a report (the operator waits for one)."""
    try:
        return _race(settings, out)
    except Exception as e:
        redact = Redactor(settings.password)
        print(redact(traceback.format_exc()), file=out, flush=True)
        return failed(Reason.RACE_FAILED, redact(f"esbench runner error: {type(e).__name__}: {e}"))


def _race(settings: RaceSettings, out: IO[str]) -> RaceReport:
    """The race's phases in their order; one that cannot go on ends the race with its failure."""
    race = Race(settings, out)
    try:
        check_spec(settings)
        root, data_nodes = reach_target(race)
        race.make_work_dir()
        params = rally.track_params(settings.spec, data_nodes)
        track_path = prepare_track(race, params)
        reuse_or_build_index(race, params, root)
        esrally = write_esrally_inputs(race, params, track_path)
        cluster_nodes, processors = environment.read_nodes(lambda path: race.target.get(path, timeout=10))
        cgroup_before = environment.read_cpu_cgroup()  # to tell how much the CPU limit throttled Rally
        run = run_esrally_with_retries(race, esrally, params)
    except CannotRace as cannot:
        return failed(cannot.kind, cannot.message)
    load_driver = measure_load_driver(race, cgroup_before)
    if esrally.report_file.exists():
        print(race.redact(esrally.report_file.read_text()), file=out, flush=True)
    summary, race_json = summarize_race(race, run)
    windows = read_task_windows(race)
    attribute_to_tasks(summary, windows, run.samples, processors)
    if race_json and "results" in race_json:
        attach_request_samples(race, summary, esrally.samples_file)
    if settings.profiler:
        profile_by_task(race, settings.profiler, run, summary, windows)
    read_index_layout(race, summary)
    summary.environment = describe_environment(race, root, summary, cluster_nodes, load_driver)
    report = classify_outcome(race, run, summary, race_json)
    capacity = settings.spec.workload.capacity
    if report.succeeded and capacity:
        ran = [task.task for task in summary.tasks]
        if capacity.task not in ran:
            return failed(Reason.INVALID_SPEC, f"workload.capacity.task {capacity.task} is not a task of track "
                                               f"{settings.spec.workload.track} (its race ran {', '.join(ran)})",
                          results=summary, race_json=race_json)
        summary.capacity = search_capacity(race, params, track_path, processors)
    return report


class CannotRace(Exception):
    """A phase before esrally's results that the race cannot get past: the failure to report."""

    def __init__(self, kind: Reason, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class Race:
    """What the phases of one race share: its settings, its log, its time budget and its target."""

    settings: RaceSettings
    out: IO[str]

    def __post_init__(self) -> None:
        # raceTimeoutSeconds bounds the whole run (the Job's deadline is a little later, for
        # scheduling and the image pull): stop early enough to print the report.
        self.deadline = time.monotonic() + rally_budget(self.spec.lifecycle.race_timeout_seconds)
        self.redact = Redactor(self.settings.password)
        self.target = Target(self.settings.target_url, self.settings.username, self.settings.password,
                             self.settings.ca_file)

    @property
    def spec(self) -> models.ExperimentSpec:
        return self.settings.spec

    @property
    def work_dir(self) -> Path:
        return self.settings.work_dir

    @property
    def rally_home(self) -> Path:
        return self.settings.work_dir / "rally"

    @property
    def race_file(self) -> Path:
        return self.rally_home / ".rally" / "benchmarks" / "races" / self.settings.race_id / "race.json"

    def remaining(self) -> float:
        """Seconds left of the race's budget, at least one."""
        return max(1.0, self.deadline - time.monotonic())

    @property
    def rally_log(self) -> Path:
        return self.rally_home / ".rally" / "logs" / "rally.log"

    def probe(self, spec: models.ExperimentSpec) -> Race:
        """Another race on the same target, work dir and time budget: a capacity probe, unprofiled."""
        probe = Race(dataclasses.replace(self.settings, spec=spec, race_id=str(uuid.uuid4()), profiler=None,
                                         idle_lead=0.0), self.out)
        probe.deadline = self.deadline
        return probe

    def make_work_dir(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.rally_home.mkdir(exist_ok=True)


def check_spec(settings: RaceSettings) -> None:
    """The spec as the CRD admits it, and a profiler wherever it asks for a profile."""
    rejection = spec_rejection(settings.spec)
    if rejection:
        raise CannotRace(Reason.INVALID_SPEC, rejection)
    if settings.spec.profile and settings.profiler is None:
        raise CannotRace(Reason.INVALID_SPEC, "spec.profile needs a node that esbench starts on this machine (esbench "
                                              "run without --es-url): it cannot attach a profiler to this target")


def reach_target(race: Race) -> tuple[dict[str, Any], int]:
    """The target's answer to `GET /` once it answers, and its number of data nodes."""
    try:
        root = race.target.wait_until_available(min(race.settings.target_timeout, race.remaining()))
    except Unreachable as e:
        raise CannotRace(Reason.TARGET_UNREACHABLE, race.redact(str(e))) from e
    try:
        data_nodes = race.target.data_node_count(rally.NEW_INDEX_ROLES)
    except (OSError, ValueError, KeyError):  # e.g. a user without the monitor privilege
        data_nodes = rally.data_node_count(race.spec.elasticsearch) if race.spec.elasticsearch else 1
    print(f"esbench: target answers, Elasticsearch {root.get('version', {}).get('number')}, {data_nodes} data node(s)",
          file=race.out, flush=True)
    return root, data_nodes


def prepare_track(race: Race, params: dict[str, Any]) -> Path | None:
    """The track's path for Rally (None for a track of a repository), once Rally can find it."""
    workload = race.spec.workload
    if workload.source == models.TrackSource.BUNDLED:
        return generate_bundled_track(race, params)
    if workload.source == models.TrackSource.GIT:
        assert workload.repository is not None  # spec_rejection checked it
        (race.rally_home / ".rally").mkdir(exist_ok=True)
        (race.rally_home / ".rally" / "rally.ini").write_text(rally.rally_ini(workload.repository.url))
    return None


def generate_bundled_track(race: Race, params: dict[str, Any]) -> Path:
    """The bundled track with its corpus, and the bulk_bytes param turned into Rally's bulk_size."""
    workload = race.spec.workload
    try:
        track_path, generated = prepare_bundled_track(workload.track, race.work_dir, params, race.settings.corpus_cache)
    except (ValueError, TypeError) as e:
        raise CannotRace(Reason.TRACK_ERROR, f"cannot generate the corpus of {workload.track}: {e}") from e
    print(
        f"esbench: generated {generated.document_count} documents ({generated.uncompressed_bytes} bytes) "
        f"for track {workload.track} with {generated.options}",
        file=race.out,
        flush=True,
    )
    if "bulk_bytes" in params:  # a bulk size in bytes, as people state it: Rally counts documents
        if "bulk_size" in params:
            raise CannotRace(Reason.TRACK_ERROR, "set the track param bulk_size (documents) or bulk_bytes, not both")
        params["bulk_size"] = generated.documents_in(int(params.pop("bulk_bytes")))
        print(f"esbench: bulk_bytes {workload.track_params['bulk_bytes']} is bulk_size {params['bulk_size']} "
              f"(documents of {generated.uncompressed_bytes / generated.document_count:.0f} bytes on average)",
              file=race.out, flush=True)
    return track_path


def reuse_or_build_index(race: Race, params: dict[str, Any], root: dict[str, Any]) -> None:
    """With workload.reuseIndex, the track param that has the track restore the index's snapshot, or build
    the index and take one; none where the nodes share no snapshot repository."""
    if not race.spec.workload.reuse_index:
        return
    try:
        location = race.settings.snapshot_repository or indexreuse.repository_location(race.target)
    except (OSError, ValueError) as e:
        raise CannotRace(Reason.RACE_FAILED, race.redact(f"workload.reuseIndex: cannot read the nodes' path.repo: {e}")) from e
    if location is None:
        print("esbench: workload.reuseIndex: the target's nodes have no path.repo in common (local mode and "
              "a sweep's single-node cluster have one), so this race builds its index", file=race.out, flush=True)
        return
    snapshot, read_path = indexreuse.name_snapshot(race.spec.workload, params, root["version"]["number"], TRACKS_DIR)
    try:
        restore = indexreuse.holds(race.target, location, snapshot)
    except (OSError, ValueError) as e:
        raise CannotRace(Reason.RACE_FAILED, race.redact(
            f"workload.reuseIndex: cannot use the snapshot repository at {location}: {e}")) from e
    params[models.INDEX_SNAPSHOT_PARAM] = {
        "repository": indexreuse.REPOSITORY, "snapshot": snapshot, "restore": restore, "index_settings": read_path}
    print(f"esbench: workload.reuseIndex: {'restoring' if restore else 'building the index, then taking'} "
          f"snapshot {snapshot} (repository {location})"
          + (f", restored with {json.dumps(read_path)}" if read_path else ""), file=race.out, flush=True)


@dataclass
class EsrallyInputs:
    """How esrally runs the race, and where it writes besides RALLY_HOME."""

    command: list[str]
    env: dict[str, str]
    report_file: Path
    samples_file: Path


def write_esrally_inputs(race: Race, params: dict[str, Any], track_path: Path | None) -> EsrallyInputs:
    """The files esrally reads (track params, client options) and its command line, told in the log."""
    params_file = race.work_dir / "track-params.json"
    params_file.write_text(json.dumps(params, indent=2))
    host, use_ssl = rally.target_host(race.settings.target_url)
    options_file = race.work_dir / "client-options.json"
    write_client_options(options_file, race.settings, use_ssl)
    report_file = race.work_dir / "report.md"
    command = rally.race_command(
        race.spec,
        esrally=esrallyprocess.esrally_argv(race.settings.esrally),
        race_id=race.settings.race_id,
        target_hosts=host,
        params_file=str(params_file),
        client_options_file=str(options_file),
        track_path=str(track_path) if track_path else None,
        report_file=str(report_file),
    )
    print(f"esbench: track params {json.dumps(params)}", file=race.out, flush=True)
    print(f"esbench: {' '.join(command)}", file=race.out, flush=True)

    samples_file = race.work_dir / requestsamples.FILE
    samples_file.unlink(missing_ok=True)  # a work dir reused: no earlier race's samples
    env = {**os.environ, "RALLY_HOME": str(race.rally_home), requestsamples.ENVIRONMENT: str(samples_file)}
    # Rally needs none of them (it reads client-options.json): they stay out of its environment
    # and its children's.
    for name in ("ES_PASSWORD", "ES_PASSWORD_FILE", "ES_USERNAME"):
        env.pop(name, None)
    return EsrallyInputs(command, env, report_file, samples_file)


def write_client_options(options_file: Path, settings: RaceSettings, use_ssl: bool) -> None:
    options = rally.client_options(
        use_ssl=use_ssl, ca_file=settings.ca_file, username=settings.username, password=settings.password
    )
    # Created 0600 before the secret is written, so it is never readable by others.
    options_file.unlink(missing_ok=True)
    fd = os.open(options_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(options, f)


@dataclass
class EsrallyRun:
    """What one run of esrally left, and what was watched of the nodes meanwhile."""

    status: int | None  # None: stopped, at the race's timeout or by the allocation watch
    output: str  # its tail, for failure classification
    started: float  # time.monotonic() as the idle lead began
    samples: list[dict[str, Any]]  # the _nodes/stats samples
    watch: allocation.Watch
    profile_problem: str | None  # why the profiler could not be stopped


def run_esrally_with_retries(race: Race, esrally: EsrallyInputs, params: dict[str, Any]) -> EsrallyRun:
    """esrally's run, started again while another Rally race takes the machine first."""
    try:
        for _ in range(RALLY_START_ATTEMPTS):
            esrallyprocess.wait_for_other_races(timeout=min(OTHER_RACES_TIMEOUT_SECONDS, race.remaining()), out=race.out)
            run = run_esrally_watched(race, esrally, params)
            # Another race may start between our check and Rally's own: nothing ran yet, retry.
            if run.status == 0 or esrallyprocess.OTHER_RALLY_RUNNING not in run.output:
                break
            print("esbench: another Rally race started meanwhile; trying again", file=race.out, flush=True)
    except FileNotFoundError as e:
        raise CannotRace(Reason.RACE_FAILED, f"cannot start esrally: {e}") from e
    print(f"esbench: esrally exited with {run.status} after {time.monotonic() - run.started:.0f}s",
          file=race.out, flush=True)
    if run.watch.problem:
        print(f"esbench: {run.watch.problem}", file=race.out, flush=True)
    return run


def run_esrally_watched(race: Race, esrally: EsrallyInputs, params: dict[str, Any]) -> EsrallyRun:
    """One run of esrally while the nodes are sampled, profiled and their shards' allocation watched."""
    settings = race.settings
    # Sampled from the idle lead until esrally exits, so that waiting does not dilute the figures.
    sampler = nodestats.Sampler(lambda: _node_stats(race.target, settings.node_probe, settings.race_id),
                                settings.sample_interval)
    watch = allocation.Watch(lambda path: race.target.get(path, timeout=10),
                             lambda path, body: race.target.request("POST", path, body, timeout=10),
                             waits_for_green=params.get("cluster_health", "green") == "green",
                             stuck_seconds=settings.unassigned_timeout)
    started = time.monotonic()
    if settings.profiler:  # first, so that the idle window's rate holds the profiler's own cost
        settings.profiler.start()
    sampler.start()
    watch.start()
    profile_problem = None
    try:
        if not race.spec.workload.test_mode:
            time.sleep(settings.idle_lead)
        status, output = esrallyprocess.run_esrally(esrally.command, esrally.env, race.remaining(), race.out, race.redact,
                                     race.rally_home, stop=watch.stop)
    finally:
        watch.finish()
        samples = sampler.stop()
        if settings.profiler:
            profile_problem = stop_profiler(settings.profiler, race.out)
    return EsrallyRun(status, output, started, samples, watch, profile_problem)


def measure_load_driver(race: Race, cgroup_before: dict[str, float] | None) -> models.LoadDriverEnvironment:
    """Where Rally ran, and how much its CPU limit throttled it during the race (told in the log)."""
    load_driver = environment.load_driver(cgroup_before, environment.read_cpu_cgroup())
    if load_driver.cpu_throttled_periods:
        print(f"esbench: the load driver's CPU limit ({load_driver.cpu_limit} CPUs) throttled it in "
              f"{load_driver.cpu_throttled_periods} of {load_driver.cpu_periods} periods "
              f"({load_driver.cpu_throttled_seconds:.1f}s)", file=race.out, flush=True)
    return load_driver


def summarize_race(race: Race, run: EsrallyRun) -> tuple[models.Results, dict[str, Any] | None]:
    """race.json's results (empty without one) with the nodes' figures over the race, and race.json;
    the samples are kept in node-stats.json."""
    race_json = json.loads(race.race_file.read_text()) if race.race_file.exists() else None
    summary = results.summarize(race_json) if race_json else models.Results(race_id=race.settings.race_id)
    summary.nodes = nodestats.summarize(run.samples) or None
    (race.work_dir / "node-stats.json").write_text(json.dumps(run.samples))
    return summary, race_json


def read_task_windows(race: Race, since: int = 0) -> dict[str, taskwindows.TaskWindow]:
    """The tasks' windows in Rally's log, from byte `since` on (the log is the work dir's, for every race)."""
    if not race.rally_log.exists():
        return {}
    with race.rally_log.open("rb") as log:
        log.seek(since)
        return taskwindows.parse(log.read().decode(errors="replace"))


def attach_request_samples(race: Race, summary: models.Results, samples_file: Path) -> None:
    """Each task's steady state, out of the requests esrally_launcher.py kept; why a task has none, told in the log."""
    missing = requestsamples.attach_steady_states(summary, samples_file)
    if missing:
        print(f"esbench: {missing}", file=race.out, flush=True)


def profile_by_task(race: Race, profiler: Profiler, run: EsrallyRun, summary: models.Results,
                    windows: dict[str, taskwindows.TaskWindow]) -> None:
    """summary.profile, with what went wrong in its problem, and each task's profile."""
    if run.status is None:  # what is left of raceTimeoutSeconds is for the report
        summary.profile = profiler.recording.model_copy(update={"problem": "the race timed out: not profiled"})
        return
    problem = run.profile_problem
    try:
        missing = profile_tasks(summary, windows, profiler, race.work_dir / PROFILES)
        problem = problem or missing
    except (RuntimeError, OSError) as e:  # the race's figures stand without their profiles
        problem = problem or f"the profile could not be cut by task: {e}"
        print(f"esbench: {problem}", file=race.out, flush=True)
    summary.profile = summary.profile or profiler.recording.model_copy()
    summary.profile.problem = race.redact(problem) if problem else None


def read_index_layout(race: Race, summary: models.Results) -> None:
    try:
        summary.indices = layout.read(lambda path: race.target.get(path, timeout=30)) or None
    except (OSError, ValueError, KeyError) as e:  # e.g. a user without the monitor privilege
        print(f"esbench: the indices' segments could not be read: {race.redact(str(e))}", file=race.out, flush=True)


def describe_environment(race: Race, root: dict[str, Any], summary: models.Results,
                         cluster_nodes: list[models.NodeEnvironment],
                         load_driver: models.LoadDriverEnvironment) -> models.Environment:
    return models.Environment(
        esbench_version=environment.esbench_version(),
        rally_version=summary.rally_version,
        track=environment.track_identity(race.spec.workload, TRACKS_DIR, race.rally_home),
        nodes=cluster_nodes or None,
        load_driver=load_driver,
        **environment.cluster(root),
    )


def classify_outcome(race: Race, run: EsrallyRun, summary: models.Results,
                     race_json: dict[str, Any] | None) -> RaceReport:
    """The report: the race's first failure, in the order they are checked, else its success."""
    spec, redact, watch = race.spec, race.redact, run.watch
    common = {"results": summary, "race_json": race_json}
    if watch.stuck:
        message = (f"Elasticsearch refused for {race.settings.unassigned_timeout:.0f}s to allocate {watch.stuck}; "
                   f"the race could not go on: esrally was stopped")
        return failed(Reason.SHARDS_UNASSIGNED, redact(message), **common)
    # A refusal shorter than the grace may still be why the race failed first (searches of a restored
    # index whose primary was refused fail at once).
    refused = f"; meanwhile Elasticsearch refused to allocate {watch.last}" if watch.last else ""
    if run.status is None:
        timeout = spec.lifecycle.race_timeout_seconds
        message = (f"the race did not finish within lifecycle.raceTimeoutSeconds ({timeout}s): esrally was stopped "
                   f"after {rally_budget(timeout):.0f}s, to leave time for the report")
        return failed(Reason.RACE_TIMEOUT, redact(message + refused), **common)
    if run.status != 0:
        return failed(rally.failure_kind(run.output), redact(rally.why_failed(run.output, run.status) + refused),
                      **common)
    if race_json is None or "results" not in race_json:
        return failed(Reason.RACE_FAILED, f"esrally succeeded but left no results in {race.race_file}", **common)
    failing = [f"{t.task} ({t.error_rate:.2%})" for t in summary.tasks if t.error_rate]
    if results.max_error_rate(summary) > (spec.workload.max_error_rate or 0):
        message = f"requests failed in {', '.join(failing)}; see the Rally log above for the errors"
        return failed(Reason.RACE_ERRORS, redact(message + refused), **common)
    if failing:
        print(f"esbench: requests failed in {', '.join(failing)}, within workload.maxErrorRate "
              f"{spec.workload.max_error_rate}: measured, not fatal", file=race.out, flush=True)
    return RaceReport(succeeded=True, **common)


def search_capacity(race: Race, params: dict[str, Any], track_path: Path | None,
                    processors: dict[str, int]) -> models.CapacityResult:
    """workload.capacity, after the race: each probe runs the task alone, at the rate the search asks
    for, on the index the race left; a probe that cannot end within the race's time is not started."""
    capacity = race.spec.workload.capacity
    assert capacity is not None
    spec = capacityprobes.probe_spec(race.spec)
    objective = capacityprobes.objective(capacity)
    clients = int(params.get("search_clients", 1))
    per_probe = capacity.probe_seconds + capacity.warmup_seconds + models.PROBE_OVERHEAD_SECONDS
    records: list[models.CapacityProbe] = []
    warmup: list[models.CapacityProbe] = []
    problem = None
    started = time.monotonic()

    def measure(rate: float | None) -> capacitysearch.Probe:
        nonlocal problem
        began = time.monotonic()
        if rate is None:
            print(f"esbench: capacity warm-up probe {len(warmup) + 1}: {capacity.task} as fast as {clients} client(s) "
                  "can", file=race.out, flush=True)
        else:
            print(f"esbench: capacity probe {len(records) + 1}: {capacity.task} at {rate:.4g} ops/s", file=race.out,
                  flush=True)
        try:
            task, driver, lag = race_probe(race, spec, capacityprobes.probe_params(params, capacity, rate),
                                           track_path, processors)
        except CannotRace as cannot:
            problem = cannot.message
            raise capacitysearch.ProbeFailed from cannot
        try:
            probe = capacityprobes.measured(rate, task, lag)
        except capacitysearch.ProbeFailed as unmeasured:
            problem = str(unmeasured)
            raise
        if rate is None:
            warmup.append(capacityprobes.probe_record(probe, task, None, None, time.monotonic() - began))
            print(f"esbench: capacity warm-up: {probe.achieved:.4g} ops/s", file=race.out, flush=True)
            return probe
        if objective.metric not in probe.percentiles:  # too few requests (admission bounds the lowest rate's)
            problem = f"Rally reported no {objective.metric} for the probe at {rate:.4g} ops/s"
            raise capacitysearch.ProbeFailed
        probe, why = capacityprobes.judged(objective, probe, task, driver, clients, records)
        verdict = capacitysearch.judge(objective, probe)
        records.append(capacityprobes.probe_record(probe, task, verdict, why, time.monotonic() - began))
        print(f"esbench: capacity probe at {rate:.4g} ops/s: {verdict.value}, achieved {probe.achieved:.4g} ops/s, "
              f"{objective.metric} {probe.percentiles.get(objective.metric, float('nan')):.1f} ms"
              + (f"; {why}" if why else ""), file=race.out, flush=True)
        return probe

    settings = capacityprobes.settings(capacity, race.settings.race_id)
    print(f"esbench: capacity search of {capacity.task} from {settings.start:.4g} ops/s (the range's low end "
          f"{settings.low:.4g} times {settings.growth:g} ** {settings.dither:.3f}: each race's rates its own, so that "
          "repeated searches do not round the capacity alike)", file=race.out, flush=True)
    found = capacitysearch.search(settings, objective, measure, lambda: race.remaining() > per_probe)
    answer = capacityprobes.result(capacity, found, records, warmup, time.monotonic() - started, problem)
    print(f"esbench: capacity of {capacity.task} under {answer.objective}: {answer.message}", file=race.out, flush=True)
    return answer


def race_probe(race: Race, spec: models.ExperimentSpec, params: dict[str, Any], track_path: Path | None,
               processors: dict[str, int],
               ) -> tuple[models.TaskResult, nodestats.DriverWindow | None, steadystate.Series | None]:
    """One capacity probe's race (spec: the task alone; params: its rate): the task's figures, what
    the load driver spent while it sent, and its requests' lag behind their schedule (None: not kept)."""
    probe_race = race.probe(spec)
    task_name = spec.workload.include_tasks[0]  # the task alone (capacityprobes.probe_spec)
    inputs = write_esrally_inputs(probe_race, params, track_path)
    log_start = race.rally_log.stat().st_size if race.rally_log.exists() else 0
    run = run_esrally_with_retries(probe_race, inputs, params)
    if run.status != 0:
        raise CannotRace(Reason.RACE_FAILED, race.redact(rally.why_failed(run.output, run.status)))
    summary, _ = summarize_race(probe_race, run)
    task = next((t for t in summary.tasks if t.task == task_name), None)
    if task is None:
        raise CannotRace(Reason.RACE_FAILED, f"the probe's race has no task {task_name}")
    windows = read_task_windows(probe_race, since=log_start)
    attribute_to_tasks(summary, windows, run.samples, processors)
    # While it sent, not while esrally started (a pod's CPU limit throttles that most).
    driver = nodestats.load_driver_in(run.samples, windows[task_name]) if task_name in windows else None
    return task, driver, requestsamples.lag(inputs.samples_file, task_name)


def attribute_to_tasks(
    summary: models.Results, windows: dict[str, taskwindows.TaskWindow], samples: list[dict[str, Any]],
    processors: dict[str, int],
) -> None:
    """Each task's window (from Rally's log) and what the nodes spent in it, and its CPU net of the
    idle window's rate (the track's idle task, else before the first task)."""
    if windows:
        summary.idle = nodestats.idle_window(samples, min(w.start for w in windows.values()),
                                             windows.get(models.IDLE_TASK))
    rate = summary.idle.process_cpu_ms_per_second if summary.idle else None
    for task in summary.tasks:
        window = windows.get(task.task)
        if window:
            task.start, task.end = window.rfc3339(window.start), window.rfc3339(window.end)
            task.resources = nodestats.task_resources(samples, window, processors)
            if task.resources and task.resources.process_cpu_ms is not None and rate is not None:
                task.resources.process_cpu_ms_net = max(0.0, task.resources.process_cpu_ms - rate * window.seconds)


def stop_profiler(profiler: Profiler, out: IO[str]) -> str | None:
    """Stops the recording; a failure (the node gone, say) leaves the race's figures standing, and
    is returned to be told with them."""
    try:
        profiler.stop()
    except (RuntimeError, OSError) as e:
        problem = f"the profiler could not be stopped: {e}"
        print(f"esbench: {problem}", file=out, flush=True)
        return problem
    return None


def profile_tasks(summary: models.Results, windows: dict[str, taskwindows.TaskWindow], profiler: Profiler,
                  folder: Path) -> str | None:
    """Each task's window cut out of the race's recording: its files in folder, its top frames in its
    result. Returns what is missing, if anything."""
    folder.mkdir(exist_ok=True)
    summary.profile = profiler.recording.model_copy(update={"folder": folder.name})
    unknown = [task.task for task in summary.tasks if task.task not in windows]
    for task in summary.tasks:
        window = windows.get(task.task)
        if window is None:
            continue
        name = re.sub(r"[^A-Za-z0-9._-]", "_", task.task)
        stacks, flame_graph = folder / f"{name}.collapsed", folder / f"{name}.html"
        profiler.cut(window.start, window.end, stacks, flame_graph, title=f"{task.task} ({profiler.recording.event.value})")
        parsed = profiles.parse(stacks.read_text())
        kept = profiles.most_sampled(parsed, PROFILE_STACKS)
        stored = stacks.with_name(stacks.name + ".gz")
        stored.write_bytes(gzip.compress(profiles.to_text(kept).encode()))
        stacks.unlink()
        task.profile = models.TaskProfile(samples=parsed.samples, top=profiles.top_frames(parsed), stacks=stored.name,
                                          samples_left_out=(parsed.samples - kept.samples) or None,
                                          flame_graph=flame_graph.name if flame_graph.exists() else None)
    return f"no window in Rally's log for {', '.join(unknown)}: not profiled" if unknown else None


def attach_profiles(report: RaceReport, folder: Path, budget: int = PROFILE_REPORT_BYTES) -> None:
    """The per-task stacks files into the report, each task's cut to its most sampled stacks until
    all of them fit the budget; the report then holds them instead of the folder."""
    recording = report.results.profile if report.results else None
    profiled = [t.profile for t in report.results.tasks if t.profile and t.profile.stacks] if report.results else []
    if recording is None or not profiled:
        return
    files = {}
    for profile in profiled:
        packed = (folder / profile.stacks).read_bytes()
        stacks = profiles.parse(gzip.decompress(packed).decode())
        kept = stacks
        while len(packed) > budget // len(profiled) and len(kept.counts) > 1:
            kept = profiles.most_sampled(stacks, len(kept.counts) // 2)
            packed = gzip.compress(profiles.to_text(kept).encode())
        profile.samples_left_out = (profile.samples - kept.samples) or None
        files[profile.stacks] = base64.b64encode(packed).decode()
    report.profiles = files
    recording.folder = None


def print_report(report: RaceReport, out: IO[str] = sys.stdout) -> None:
    if report.failure:
        print(f"esbench: race failed ({report.failure.kind.value}): {report.failure.message}", file=out, flush=True)
    else:
        print("esbench: race succeeded", file=out, flush=True)
    for line in encode_report(report):
        print(line, file=out, flush=True)
