"""What an Experiment does next (pure): given the Experiment, what was read of its cluster, its
Rally Job and pod, and the time, the status to write, the end it comes to, or nothing yet.

lifecycle.py reads, calls these and applies what they return (the status write, its Event, the
cleanup); these touch nothing, so each step's decision is tested without a cluster. "Nothing yet"
(None) means: look again at the next watch event or resync (wakeups.next_look says when).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from esbench.analysis import contrasts
from esbench.api.models import KIND, TERMINAL_PHASES, CleanupPolicy, ExperimentStatus, Phase, Results, lifecycle_setting
from esbench.api.race_report import RaceReport, UnreadableReport, decode_report
from esbench.api.reasons import ConditionType, Reason
from esbench.planning import manifests, readiness, status
from esbench.planning.readiness import ECK_NOT_INSTALLED
from esbench.planning.status import ConditionUpdate

RACE_WAITS_FOR_CLUSTER: ConditionUpdate = (ConditionType.BENCHMARK_COMPLETE, False, Reason.WAITING_FOR_CLUSTER,
                                           "The race starts once the cluster is ready")


@dataclass(frozen=True)
class Event:
    type: str  # "Normal" or "Warning"
    reason: Reason
    message: str


@dataclass(frozen=True)
class Write:
    """A status write, after the EVENT (if any) that announces it."""

    phase: Phase
    reason: Reason
    message: str
    fields: dict[str, Any] = field(default_factory=dict)
    conditions: tuple[ConditionUpdate, ...] = ()
    event: Event | None = None


@dataclass(frozen=True)
class End:
    """The Experiment ends: Succeeded, or Failed as REASON, MESSAGE."""

    reason: Reason
    message: str
    succeeded: bool = False


@dataclass(frozen=True)
class LookAgain:
    """Not decidable yet from what can be read now: the next resync looks again."""

    why: str


@dataclass(frozen=True)
class ReadReport:
    """The Rally Job ended by itself: its pod's log says how the race went."""


@dataclass(frozen=True)
class StartRace:
    """The cluster under test is ready: create the Rally Job."""

    verdict: readiness.Readiness
    node_sidecars: list[str] | None  # the esbench sidecars of the cluster's pods, where esbench made it


@dataclass(frozen=True)
class RaceFailure:
    """How the runner saw its race fail, before the pods are asked for a cause (disruption.py)."""

    reason: Reason
    message: str


def invalid_spec(message: str, now: datetime) -> Write:
    """A spec that cannot run fails at once (no cleanup: it never made anything)."""
    return Write(Phase.FAILED, Reason.INVALID_SPEC, message, {"completionTime": status.timestamp(now)},
                 ((ConditionType.BENCHMARK_COMPLETE, False, Reason.INVALID_SPEC, message),))


# --- Pending: the cluster under test --------------------------------------------------------


def use_cluster(body: dict[str, Any], experiment: manifests.Experiment, now: datetime) -> Write:
    """An Experiment that makes no cluster (one it only uses, or an external one) waits for it."""
    message = (f"Using Elasticsearch cluster {experiment.cluster}, which this Experiment does not own"
               if experiment.cluster else f"Using the external cluster at {experiment.spec.target.external.url}")
    fields = {"startTime": _started(body, now), "raceId": experiment.race_id}
    if experiment.cluster:
        fields["clusterName"] = experiment.cluster
    return Write(Phase.PROVISIONING, Reason.WAITING_FOR_CLUSTER, message, fields,
                 ((ConditionType.CLUSTER_READY, False, Reason.WAITING_FOR_CLUSTER, message), RACE_WAITS_FOR_CLUSTER),
                 Event("Normal", Reason.PROVISIONING, message))


def eck_missing(body: dict[str, Any], experiment: manifests.Experiment, now: datetime) -> Write | End:
    """The Elasticsearch kind is not served: wait for ECK (said once), until the wait is over."""
    if cluster_wait_over(body, experiment, now):
        return End(Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED)
    first = (body.get("status") or {}).get("phase") != Phase.PENDING
    return Write(Phase.PENDING, Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED, {"startTime": _started(body, now)},
                 ((ConditionType.CLUSTER_READY, False, Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED),),
                 Event("Warning", Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED) if first else None)


def provision(body: dict[str, Any], experiment: manifests.Experiment, es: dict[str, Any] | None,
              now: datetime) -> Write | End:
    """The Experiment's own cluster asked for: ES as created, or the one of its name found in the
    way (None: gone since). A deleted namesake's is waited for; any other stranger's is a conflict."""
    started = _started(body, now)
    if es is not None and not owned(es, experiment):
        if left_by_namesake(es, experiment) and not cluster_wait_over(body, experiment, now):
            message = (f"Waiting for Elasticsearch {experiment.cluster}, left by a deleted Experiment of the "
                       "same name, to be garbage-collected")
            return Write(Phase.PENDING, Reason.PREVIOUS_CLUSTER_DELETING, message, {"startTime": started},
                         ((ConditionType.CLUSTER_READY, False, Reason.PREVIOUS_CLUSTER_DELETING, message),))
        return End(Reason.CLUSTER_NAME_CONFLICT, conflict("Elasticsearch", es))
    message = f"Creating Elasticsearch cluster {experiment.cluster} ({experiment.spec.elasticsearch.version})"
    # What the first readiness check will say, said now: one status write fewer per Experiment.
    waiting = readiness.readiness(es).message if es else message
    return Write(Phase.PROVISIONING, Reason.PROVISIONING, message,
                 {"startTime": started, "clusterName": experiment.cluster, "raceId": experiment.race_id},
                 ((ConditionType.CLUSTER_READY, False, Reason.PROVISIONING, waiting), RACE_WAITS_FOR_CLUSTER),
                 Event("Normal", Reason.PROVISIONING, message))


# --- Provisioning: waiting for the cluster, then the Rally Job ------------------------------


def cluster_not_found(body: dict[str, Any], experiment: manifests.Experiment, now: datetime) -> End | None:
    """The Elasticsearch it only uses does not exist (yet): it may still come, until the wait is over."""
    if not cluster_wait_over(body, experiment, now):
        return None
    return End(Reason.CLUSTER_NOT_FOUND, f"Elasticsearch {experiment.cluster} (spec.target.elasticsearchRef) "
                                         f"does not exist in namespace {experiment.namespace}")


def needs_eck_reason(experiment: manifests.Experiment, es: dict[str, Any]) -> bool:
    """Whether ECK marked the cluster under test Invalid: it says why only in a Warning Event,
    worth reading then. (A stranger's cluster is a conflict, whatever ECK says of it.)"""
    return readiness.invalid(es) and not _foreign(experiment, es)


def await_cluster(body: dict[str, Any], experiment: manifests.Experiment, es: dict[str, Any] | None,
                  eck_refusals: list[str], now: datetime) -> StartRace | Write | End | LookAgain | None:
    """ES: the cluster under test (None: an external one); ECK_REFUSALS: the messages of its
    Validation Warnings, read when `needs_eck_reason`. Ready: the race starts; not ready within
    clusterReadyTimeoutSeconds: the Experiment fails."""
    if es is None:
        # An external cluster: the runner waits for it to answer (within raceTimeoutSeconds).
        verdict = readiness.Readiness(True, f"External cluster {experiment.spec.target.external.url}")
    else:
        if _foreign(experiment, es):
            return End(Reason.CLUSTER_NAME_CONFLICT, conflict("Elasticsearch", es))
        # ECK says why only in an Event, which no watch of ours brings: until it is there, look
        # again at each resync, and the cluster is just not ready.
        if readiness.invalid(es):
            if eck_refusals:
                return End(Reason.CLUSTER_INVALID, f"ECK refuses Elasticsearch {experiment.cluster}: {eck_refusals[-1]}")
            if not cluster_wait_over(body, experiment, now):
                return LookAgain(f"ECK marked Elasticsearch {experiment.cluster} Invalid; its reason is to come")
        # A cluster used before (e.g. by the previous run of a sweep) may hold an index with
        # replicas it cannot assign: yellow. The race's own health check decides for its index.
        verdict = readiness.readiness(es, accept_yellow=not experiment.owns_cluster)
    if not verdict.ready:
        return _not_ready(body, experiment, verdict, now)
    sidecars = manifests.node_sidecars(experiment.cluster, experiment.namespace, es) if es else None
    if experiment.spec.profile and not (es and manifests.records_profile(es)):
        return End(Reason.INVALID_SPEC, f"spec.profile: the nodes of Elasticsearch {experiment.cluster} record no "
                   "profile (esbench starts the profiler with the clusters it makes for a profiled Experiment or sweep)")
    return StartRace(verdict, sidecars)


def _not_ready(body: dict[str, Any], experiment: manifests.Experiment, verdict: readiness.Readiness,
               now: datetime) -> Write | End | None:
    if cluster_wait_over(body, experiment, now):
        timeout = experiment.spec.lifecycle.cluster_ready_timeout_seconds
        return End(Reason.CLUSTER_NOT_READY, f"Cluster not ready after {timeout}s. {verdict.message}")
    state = body.get("status") or {}
    current = status.condition(state, ConditionType.CLUSTER_READY) or {}
    if current.get("message") == verdict.message:  # say what it waits for, once per change
        return None
    ready = ConditionType.CLUSTER_READY, False, kept_reason(current.get("reason"), Reason.PROVISIONING), verdict.message
    return Write(Phase.PROVISIONING, kept_reason(state.get("reason"), Reason.PROVISIONING),
                 state.get("message") or verdict.message, conditions=(ready,))


def kept_reason(reason: str | None, default: Reason) -> Reason:
    """A reason read back from the status, to write again as it is: an operator of ours wrote it,
    so it is a Reason; DEFAULT if there is none, or if someone else wrote one of their own."""
    return Reason(reason) if reason in list(Reason) else default


def race_started(body: dict[str, Any], experiment: manifests.Experiment, es: dict[str, Any] | None,
                 start: StartRace, job_name: str, created: bool, stale: dict[str, Any] | None,
                 now: datetime) -> Write | End | None:
    """The Rally Job asked for: CREATED now, or STALE, the one of its name found in the way (ours,
    made before a crash, or a stranger's; None: gone since, the next pass creates ours)."""
    if not created and stale is None:
        return None
    if stale is not None and not owned(stale, experiment):
        if left_by_namesake(stale, experiment) and not cluster_wait_over(body, experiment, now):
            return None  # the garbage collector is removing it; a resync creates ours after
        return End(Reason.JOB_NAME_CONFLICT, conflict("Job", stale))
    message = f"{start.verdict.message}; Rally Job {job_name} started"
    fields = {"clusterReadyTime": status.timestamp(now), "jobName": job_name}
    if start.verdict.version:
        fields["clusterVersion"] = start.verdict.version
    if es is not None and experiment.owns_cluster:  # what the cleanup deletes, without reading it again
        fields["clusterUID"] = es["metadata"]["uid"]
    return Write(Phase.BENCHMARKING, Reason.BENCHMARKING, message, fields,
                 ((ConditionType.CLUSTER_READY, True, Reason.CLUSTER_READY, start.verdict.message),
                  (ConditionType.BENCHMARK_COMPLETE, False, Reason.RUNNING,
                   f"Rally race {experiment.race_id} is running")),
                 Event("Normal", Reason.BENCHMARKING, message))


# --- Benchmarking: the race's end -----------------------------------------------------------


def race_ended(job: dict[str, Any]) -> bool:
    """Whether the Rally Job has ended, well or not. FailureTarget is the Job controller's decision
    to fail: Failed follows only once the pod is gone."""
    return bool({"Complete", "Failed", "FailureTarget"} & _true_conditions(job).keys())


def job_end(experiment: manifests.Experiment, job_name: str, job: dict[str, Any] | None) -> End | ReadReport | None:
    """What the Rally Job says of the race, before its pod is read: the end it came to alone
    (deleted, a stranger's of its name, stopped at raceTimeoutSeconds), still running (None), or
    ended by itself."""
    if job is None:
        return End(Reason.JOB_DELETED, f"Rally Job {job_name} was deleted before it finished")
    if not owned(job, experiment):
        return End(Reason.JOB_NAME_CONFLICT, conflict("Job", job))
    if not race_ended(job):
        return None
    finished = _true_conditions(job)
    failed = finished.get("Failed") or finished.get("FailureTarget")
    if failed and failed.get("reason") == "DeadlineExceeded":
        timeout = experiment.spec.lifecycle.race_timeout_seconds
        return End(Reason.RACE_TIMEOUT, f"The race did not finish within {timeout}s")
    return ReadReport()


def race_report(job_name: str, pod: dict[str, Any] | None, log: str) -> RaceReport | RaceFailure:
    """The runner's report in the log of the ended Job's POD, or why there is none to collect."""
    if pod is None:
        return RaceFailure(Reason.RESULTS_UNAVAILABLE, f"The pod of Job {job_name} is gone")
    try:
        report = decode_report(log)
    except UnreadableReport as error:
        return RaceFailure(Reason.RESULTS_UNREADABLE, f"Rally Job {job_name}: {error}")
    if report is None:
        message = f"Rally Job {job_name} ended (exit code {_exit_code(pod)}) without a report. Log tail:\n"
        return RaceFailure(Reason.JOB_FAILED, message + status.log_excerpt(log))
    return report


def report_verdict(report: RaceReport) -> End | RaceFailure:
    """A report that says the race succeeded ends the Experiment; any other is the runner's failure."""
    if report.succeeded:
        return End(Reason.RACE_SUCCEEDED, "Race finished; results collected", succeeded=True)
    failure = report.failure
    if failure is None:
        return RaceFailure(Reason.RACE_FAILED, "Race failed")
    return RaceFailure(failure.kind, status.redact(failure.message))


def results_fields(experiment: manifests.Experiment, results: Results) -> dict[str, Any]:
    """The status fields that hold a race's results."""
    fields = {"results": results.to_wire(), "headline": status.headline(results)}
    if experiment.spec.workload.contrasts:
        fields["contrasts"] = contrasts.to_wire([results], experiment.spec.workload)
    return fields


# --- Succeeded | Failed ---------------------------------------------------------------------


def ending(body: dict[str, Any], end: End, now: datetime, extra: dict[str, Any] | None = None) -> Write:
    """The status write that ends the Experiment, with EXTRA fields (the results) in it. A cluster
    that never became ready is not ready for the same reason."""
    conditions: list[ConditionUpdate] = [(ConditionType.BENCHMARK_COMPLETE, end.succeeded, end.reason, end.message)]
    if not (body.get("status") or {}).get("clusterVersion"):
        conditions.append((ConditionType.CLUSTER_READY, False, end.reason, end.message))
    return Write(Phase.SUCCEEDED if end.succeeded else Phase.FAILED, end.reason, end.message,
                 {"completionTime": status.timestamp(now), **(extra or {})}, tuple(conditions))


def deletes_cluster(experiment: manifests.Experiment, succeeded: bool) -> bool:
    """Whether the cleanup policy deletes the cluster: never one the Experiment only uses."""
    policy = experiment.spec.lifecycle.cleanup
    return experiment.owns_cluster and (policy == CleanupPolicy.DELETE or (policy == CleanupPolicy.KEEP_ON_FAILURE and succeeded))


def expired(body: dict[str, Any], now: datetime) -> bool:
    """Whether ttlSecondsAfterFinished has gone by since the Experiment finished."""
    ttl = lifecycle_setting(body["spec"], "ttlSecondsAfterFinished")
    completed = (body.get("status") or {}).get("completionTime")
    return ttl is not None and bool(completed) and now >= status.parse(completed) + timedelta(seconds=ttl)


def recorded_by_sweep(body: dict[str, Any], sweep: dict[str, Any] | None) -> bool:
    """Whether the SWEEP the Experiment ran for (None: none, or gone) has recorded how it ended
    (status.runs); until then its results would go with it."""
    if sweep is None:
        return True
    runs = (sweep.get("status") or {}).get("runs") or []
    return any(r.get("name") == body["metadata"]["name"] and r.get("phase") in TERMINAL_PHASES for r in runs)


# --- the status patch -----------------------------------------------------------------------


def patch(body: dict[str, Any], write: Write, now: datetime) -> dict[str, Any]:
    """The status patch for WRITE, checked against the status model."""
    generation = body["metadata"].get("generation")
    merged = (body.get("status") or {}).get("conditions")
    for type_, ok, reason, message in write.conditions:
        merged = status.with_condition(merged, type_, ok, reason, message, status.timestamp(now), generation)
    return status.checked(ExperimentStatus, {"phase": write.phase.value, "reason": write.reason, "message": write.message,
                                             "observedGeneration": generation, "conditions": merged, **write.fields})


# --- children -------------------------------------------------------------------------------


def cluster_wait_over(body: dict[str, Any], experiment: manifests.Experiment, now: datetime) -> bool:
    """Whether every wait before the race (ECK, the cluster, a namesake's children) is over:
    clusterReadyTimeoutSeconds since the Experiment's creation, so that time the operator was
    down counts too."""
    created = status.parse(body["metadata"]["creationTimestamp"])
    return now >= created + timedelta(seconds=experiment.spec.lifecycle.cluster_ready_timeout_seconds)


def owned(child: dict[str, Any], experiment: manifests.Experiment) -> bool:
    """Whether a child found under our deterministic name is really ours, not a stranger's."""
    return any(ref.get("uid") == experiment.uid for ref in child["metadata"].get("ownerReferences") or [])


def left_by_namesake(child: dict[str, Any], experiment: manifests.Experiment) -> bool:
    """Whether a child belongs to a deleted Experiment of the same name (two cannot coexist):
    the garbage collector is removing it, so it is worth waiting for rather than a conflict."""
    return any(ref.get("kind") == KIND and ref.get("name") == experiment.name and ref.get("uid") != experiment.uid
               for ref in child["metadata"].get("ownerReferences") or [])


def conflict(kind: str, child: dict[str, Any]) -> str:
    name = child["metadata"]["name"]
    return f"A {kind} named {name} already exists and does not belong to this Experiment; it was left untouched"


def _foreign(experiment: manifests.Experiment, es: dict[str, Any]) -> bool:
    """A cluster of the name of the Experiment's own that is not its own."""
    return experiment.owns_cluster and not owned(es, experiment)


def _started(body: dict[str, Any], now: datetime) -> str:
    return (body.get("status") or {}).get("startTime") or status.timestamp(now)


def _true_conditions(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (job.get("status") or {}).get("conditions") or [] if c["status"] == "True"}


def _exit_code(pod: dict[str, Any]) -> int | None:
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            return terminated.get("exitCode")
    return None
