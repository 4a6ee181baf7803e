"""The Experiment's lifecycle: Pending -> Provisioning -> Benchmarking -> Succeeded | Failed.

`reconcile` is level-triggered: it reads the Experiment and its children afresh (a Job's own
watch event hands in the Job as just seen) and takes the next step, so it is safe to call for
any event, on a timer, and after an operator restart. Children are created get-or-create by
deterministic name, and results are written to the status in the same patch that ends the
Experiment, so a retried or repeated call never makes a second cluster, a second Job or a
second copy of the results.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pydantic import ValidationError

from esbench.analysis import contrasts, foreignwrites
from esbench.api.models import (
    KIND,
    SWEEP_LABEL,
    TERMINAL_PHASES,
    CleanupPolicy,
    Environment,
    ExperimentStatus,
    KubernetesEnvironment,
    Phase,
    lifecycle_setting,
)
from esbench.api.race_report import RaceReport, UnreadableReport, decode_report
from esbench.api.reasons import Reason
from esbench.controller import disruption, platform
from esbench.controller.config import Settings
from esbench.controller.kube import KindNotServed, Kube, Rejected
from esbench.controller.reconciling import ECK_NOT_INSTALLED, EventSink, KeyedLocks, delete_cluster
from esbench.controller.storewriter import record_in_store
from esbench.history import records
from esbench.history.esstore import ElasticsearchStore
from esbench.planning import manifests, names, readiness, status
from esbench.planning.status import BENCHMARK_COMPLETE, CLUSTER_READY, recorded


class RetryLater(Exception):
    """The step cannot finish now (e.g. a log not readable yet); the next resync tries again."""


class Reconciler:
    def __init__(self, kube: Kube, settings: Settings, emit: EventSink):
        self.kube = kube
        self.settings = settings
        self.emit = emit
        self.locks = KeyedLocks()
        # Reads that a step needs but need not wait for one by one (the environment of a race).
        self.side_reads = ThreadPoolExecutor(settings.max_workers, thread_name_prefix="side-read")
        self.store = ElasticsearchStore(settings.results_store) if settings.results_store else None

    def reconcile(self, namespace: str, name: str, job: dict[str, Any] | None = None,
                  cluster: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """JOB, CLUSTER: the Experiment's Rally Job or ECK cluster as a watch event just showed it
        (saves reading it again). Returns the Experiment as this reconcile left it, or None when it
        is gone or going."""
        # Only an unfinished Experiment hears of its Job's end (see the handlers): it is about to
        # collect the results. Its race's pod and log are read while it is.
        race_output = (self.side_reads.submit(self._race_output, namespace, names.job_name(name))
                       if job is not None and race_ended(job) else None)
        with self.locks((namespace, name)):
            body = self.kube.get_experiment(namespace, name)
            if body is None or body["metadata"].get("deletionTimestamp"):
                return None
            phase = (body.get("status") or {}).get("phase")
            try:
                experiment = manifests.Experiment.from_body(body)
                message = manifests.not_on_kubernetes(experiment.spec)
            except ValidationError as error:
                message = "; ".join(e["msg"].removeprefix("Value error, ") for e in error.errors())
            if message:
                if phase in TERMINAL_PHASES:  # failed as InvalidSpec: it never made anything
                    self._expire(body)
                    return body
                body = self._update(body, Phase.FAILED, Reason.INVALID_SPEC, message, {"completionTime": status.now()},
                                    (BENCHMARK_COMPLETE, False, Reason.INVALID_SPEC, message))
                self.emit(body, "Warning", Reason.INVALID_SPEC, message)
                return body
            if phase in TERMINAL_PHASES:
                # Again after every restart: a crash between the final status and the cleanup
                # must not leave a cluster behind. Idempotent.
                self._release_cluster(body, experiment, phase == Phase.SUCCEEDED)
                body = self._record(body)
                self._expire(body)
                return body
            if phase in (None, Phase.PENDING):
                body = self._provision(body, experiment)
                if experiment.owns_cluster:  # just asked for: its watch event brings us back
                    return body
                phase = body["status"]["phase"]
            if phase == Phase.PROVISIONING:
                return self._await_cluster(body, experiment, cluster)
            if phase == Phase.BENCHMARKING:
                return self._await_race(body, experiment, job, race_output)
            return body

    # --- steps ---

    def _elasticsearch_manifest(self, experiment: manifests.Experiment) -> dict[str, Any]:
        return manifests.elasticsearch_manifest(experiment, profiler_image=self.settings.rally_image,
                                                image_pull_policy=self.settings.rally_image_pull_policy)

    def _provision(self, body: dict[str, Any], experiment: manifests.Experiment) -> dict[str, Any]:
        current = body.get("status") or {}
        started = current.get("startTime") or status.now()
        if not experiment.owns_cluster:
            message = (f"Using Elasticsearch cluster {experiment.cluster}, which this Experiment does not own"
                       if experiment.cluster else f"Using the external cluster at {experiment.spec.target.external.url}")
            fields = {"startTime": started, "raceId": experiment.race_id}
            if experiment.cluster:
                fields["clusterName"] = experiment.cluster
            self.emit(body, "Normal", Reason.PROVISIONING, message)
            return self._update(body, Phase.PROVISIONING, Reason.WAITING_FOR_CLUSTER, message, fields,
                                (CLUSTER_READY, False, Reason.WAITING_FOR_CLUSTER, message),
                                (BENCHMARK_COMPLETE, False, Reason.WAITING_FOR_CLUSTER, "The race starts once the cluster is ready"))
        try:
            created = self.kube.create_elasticsearch(self._elasticsearch_manifest(experiment))
        except KindNotServed:
            if _waited_for_cluster(body, experiment):
                return self._finish(body, experiment, False, Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED)
            if current.get("phase") != Phase.PENDING:
                self.emit(body, "Warning", Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED)
            return self._update(body, Phase.PENDING, Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED, {"startTime": started},
                                (CLUSTER_READY, False, Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED))
        except Rejected as rejected:
            return self._finish(body, experiment, False, Reason.CLUSTER_REJECTED, str(rejected))
        es = created or self.kube.get_elasticsearch(experiment.namespace, experiment.cluster)
        if es is not None and not _owned(es, experiment):
            if _left_by_namesake(es, experiment) and not _waited_for_cluster(body, experiment):
                message = (f"Waiting for Elasticsearch {experiment.cluster}, left by a deleted Experiment of the "
                           "same name, to be garbage-collected")
                return self._update(body, Phase.PENDING, Reason.PREVIOUS_CLUSTER_DELETING, message, {"startTime": started},
                                    (CLUSTER_READY, False, Reason.PREVIOUS_CLUSTER_DELETING, message))
            return self._finish(body, experiment, False, Reason.CLUSTER_NAME_CONFLICT, _conflict("Elasticsearch", es))
        message = f"Creating Elasticsearch cluster {experiment.cluster} ({experiment.spec.elasticsearch.version})"
        # What the first readiness check will say, said now: one status write fewer per Experiment.
        waiting = readiness.readiness(es).message if es else message
        self.emit(body, "Normal", Reason.PROVISIONING, message)
        return self._update(
            body, Phase.PROVISIONING, Reason.PROVISIONING, message,
            {"startTime": started, "clusterName": experiment.cluster, "raceId": experiment.race_id},
            (CLUSTER_READY, False, Reason.PROVISIONING, waiting),
            (BENCHMARK_COMPLETE, False, Reason.WAITING_FOR_CLUSTER, "The race starts once the cluster is ready"),
        )

    def _await_cluster(self, body: dict[str, Any], experiment: manifests.Experiment,
                       seen: dict[str, Any] | None) -> dict[str, Any]:
        es = None
        if experiment.cluster is None:
            # An external cluster: the runner waits for it to answer (within raceTimeoutSeconds).
            verdict = readiness.Readiness(True, f"External cluster {experiment.spec.target.external.url}")
        else:
            if seen is not None and seen["metadata"]["name"] == experiment.cluster:  # not any labelled one
                es = seen
            else:
                es = self.kube.get_elasticsearch(experiment.namespace, experiment.cluster)
            if es is None:
                return self._cluster_missing(body, experiment)
            if experiment.owns_cluster and not _owned(es, experiment):
                return self._finish(body, experiment, False, Reason.CLUSTER_NAME_CONFLICT, _conflict("Elasticsearch", es))
            # ECK says why only in an Event, which no watch of ours brings: until it is there, look
            # again at each resync, and the cluster is just not ready.
            if readiness.invalid(es):
                if reasons := self.kube.warning_messages(es, "Validation"):
                    return self._finish(body, experiment, False, Reason.CLUSTER_INVALID,
                                        f"ECK refuses Elasticsearch {experiment.cluster}: {reasons[-1]}")
                if not _waited_for_cluster(body, experiment):
                    raise RetryLater(f"ECK marked Elasticsearch {experiment.cluster} Invalid; its reason is to come")
            # A cluster used before (e.g. by the previous run of a sweep) may hold an index with
            # replicas it cannot assign: yellow. The race's own health check decides for its index.
            verdict = readiness.readiness(es, accept_yellow=not experiment.owns_cluster)
        if not verdict.ready:
            if _waited_for_cluster(body, experiment):
                timeout = experiment.spec.lifecycle.cluster_ready_timeout_seconds
                message = f"Cluster not ready after {timeout}s. {verdict.message}"
                return self._finish(body, experiment, False, Reason.CLUSTER_NOT_READY, message)
            current = status.condition(body.get("status") or {}, CLUSTER_READY) or {}
            if current.get("message") != verdict.message:  # say what it waits for, once per change
                return self._update(body, Phase.PROVISIONING, body["status"].get("reason") or Reason.PROVISIONING,
                                    body["status"].get("message") or verdict.message, {},
                                    (CLUSTER_READY, False, current.get("reason") or Reason.PROVISIONING, verdict.message))
            return body
        recordings_from = None
        if experiment.spec.profile:
            recordings_from = manifests.recordings_sources(experiment.cluster, experiment.namespace, es)
            if recordings_from is None:
                message = (f"spec.profile: the nodes of Elasticsearch {experiment.cluster} record no profile (esbench "
                           "starts the profiler with the clusters it makes for a profiled Experiment or sweep)")
                return self._finish(body, experiment, False, Reason.INVALID_SPEC, message)
        job = manifests.rally_job_manifest(experiment, manifests.connection(experiment, es),
                                          self.settings.rally_image, self.settings.rally_image_pull_policy,
                                          self.settings.job_deadline_grace_seconds, self.settings.rally_resources,
                                          recordings_from)
        try:
            created = self.kube.create_job(job)
        except Rejected as rejected:
            return self._finish(body, experiment, False, Reason.JOB_REJECTED, str(rejected))
        # One of that name exists: ours (made before a crash) or a stranger's.
        stale = None if created else self.kube.get_job(experiment.namespace, job["metadata"]["name"])
        if not created and stale is None:
            return body  # gone since it was in the way: the next pass creates ours
        if stale is not None and not _owned(stale, experiment):
            if _left_by_namesake(stale, experiment) and not _waited_for_cluster(body, experiment):
                return body  # the garbage collector is removing it; a resync creates ours after
            return self._finish(body, experiment, False, Reason.JOB_NAME_CONFLICT, _conflict("Job", stale))
        message = f"{verdict.message}; Rally Job {job['metadata']['name']} started"
        self.emit(body, "Normal", Reason.BENCHMARKING, message)
        fields = {"clusterReadyTime": status.now(), "jobName": job["metadata"]["name"]}
        if verdict.version:
            fields["clusterVersion"] = verdict.version
        if es is not None and experiment.owns_cluster:  # what the cleanup deletes, without reading it again
            fields["clusterUID"] = es["metadata"]["uid"]
        body = self._update(
            body, Phase.BENCHMARKING, Reason.BENCHMARKING, message, fields,
            (CLUSTER_READY, True, Reason.CLUSTER_READY, verdict.message),
            (BENCHMARK_COMPLETE, False, Reason.RUNNING, f"Rally race {experiment.race_id} is running"),
        )
        # A Job made before a crash may have ended meanwhile; one made now has not: its end comes
        # as its watch event.
        return self._await_race(body, experiment, stale) if stale is not None else body

    def _cluster_missing(self, body: dict[str, Any], experiment: manifests.Experiment) -> dict[str, Any]:
        """There is no cluster under test (yet): a missing own cluster is asked for again."""
        if experiment.owns_cluster:  # deleted under us: ask for it again under the same name
            try:
                self.kube.create_elasticsearch(self._elasticsearch_manifest(experiment))
            except Rejected as rejected:
                return self._finish(body, experiment, False, Reason.CLUSTER_REJECTED, str(rejected))
        elif _waited_for_cluster(body, experiment):
            return self._finish(body, experiment, False, Reason.CLUSTER_NOT_FOUND,
                                f"Elasticsearch {experiment.cluster} (spec.target.elasticsearchRef) does not exist "
                                f"in namespace {experiment.namespace}")
        return body

    def _await_race(self, body: dict[str, Any], experiment: manifests.Experiment, job: dict[str, Any] | None,
                    race_output: Future[tuple[dict[str, Any] | None, str | None]] | None = None) -> dict[str, Any]:
        job_name = names.job_name(experiment.name)
        job = job or self.kube.get_job(experiment.namespace, job_name)
        if job is None:
            return self._finish(body, experiment, False, Reason.JOB_DELETED,
                                f"Rally Job {job_name} was deleted before it finished")
        if not _owned(job, experiment):
            return self._finish(body, experiment, False, Reason.JOB_NAME_CONFLICT, _conflict("Job", job))
        if not race_ended(job):
            return body
        finished = _true_conditions(job)
        failed = finished.get("Failed") or finished.get("FailureTarget")
        if failed and failed.get("reason") == "DeadlineExceeded":
            timeout = experiment.spec.lifecycle.race_timeout_seconds
            return self._finish(body, experiment, False, Reason.RACE_TIMEOUT, f"The race did not finish within {timeout}s")
        pod, log = race_output.result() if race_output else self._race_output(experiment.namespace, job_name)
        if pod is None:
            return self._race_failed(body, experiment, None, Reason.RESULTS_UNAVAILABLE,
                                     f"The pod of Job {job_name} is gone")
        # Read while the report is decoded and stored. (Wasted on a race that ends without results,
        # which is rare.)
        environment = self.side_reads.submit(self._kubernetes_environment, experiment, pod)
        try:
            report = decode_report(log)
        except UnreadableReport as error:
            return self._race_failed(body, experiment, pod, Reason.RESULTS_UNREADABLE, f"Rally Job {job_name}: {error}")
        if report is None:
            exit_code = _exit_code(pod)
            message = f"Rally Job {job_name} ended (exit code {exit_code}) without a report. Log tail:\n"
            return self._race_failed(body, experiment, pod, Reason.JOB_FAILED, message + status.log_excerpt(log))
        return self._collect(body, experiment, report, environment, pod)

    def _race_output(self, namespace: str, job_name: str) -> tuple[dict[str, Any] | None, str | None]:
        """The pod of an ended Job (None when it is gone) and its log."""
        pod = self.kube.job_pod(namespace, job_name)
        if pod is None:
            return None, None
        try:
            return pod, self.kube.pod_log(namespace, pod["metadata"]["name"])
        except Exception as error:  # the kubelet may be briefly unreachable: try again on resync
            raise RetryLater(f"Cannot read the log of {pod['metadata']['name']} yet: {error}") from error

    def _race_failed(self, body: dict[str, Any], experiment: manifests.Experiment, pod: dict[str, Any] | None,
                     reason: str, message: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Ends a race that failed as REASON, MESSAGE (the runner's view), or with the cause its
        pods show instead (disruption.py), read now: the Rally POD, the cluster and its pods. A
        cluster that cannot be read now is left out: the runner's failure is still worth saying."""
        cluster, es, es_pods = experiment.cluster, None, []
        if cluster:
            try:
                es = self.kube.get_elasticsearch(experiment.namespace, cluster)
                es_pods = self.kube.cluster_pods(experiment.namespace, cluster)
            except Exception:  # whatever the API layer raised: the runner's view stands
                cluster = None
        facts = disruption.RaceFacts((body.get("status") or {}).get("clusterReadyTime"), pod, cluster, es, es_pods)
        reason, message = disruption.cause(facts, reason, message)
        return self._finish(body, experiment, False, reason, message, extra)

    def _collect(self, body: dict[str, Any], experiment: manifests.Experiment, report: RaceReport,
                 kubernetes: Future[tuple[KubernetesEnvironment, Exception | None]],
                 pod: dict[str, Any]) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        # The results in the status matter more than the full race.json and the profiles beside them.
        if report.race_json is not None:
            kept = self._keep(body, manifests.race_json_configmap(experiment, report.race_json),
                              Reason.RACE_JSON_NOT_STORED)
            if kept:
                extra["raceJsonConfigMap"] = kept
        if report.profiles and report.results is not None and report.results.profile is not None:
            report.results.profile.config_map = self._keep(
                body, manifests.profiles_configmap(experiment, report.profiles), Reason.PROFILES_NOT_STORED)
        if report.results is not None:
            environment = report.results.environment or Environment()
            environment.kubernetes, error = kubernetes.result()
            if error is not None:
                self.emit(body, "Warning", Reason.ENVIRONMENT_INCOMPLETE,
                          f"Part of the Kubernetes environment is not recorded: {error}")
            report.results.environment = environment
            for warning in foreignwrites.warnings(report.results):
                self.emit(body, "Warning", Reason.MEASUREMENT_SUSPECT, warning)
            extra["results"] = report.results.to_wire()
            extra["headline"] = status.headline(report.results)
            if experiment.spec.workload.contrasts:
                extra["contrasts"] = contrasts.to_wire([report.results], experiment.spec.workload)
        if report.succeeded:
            return self._finish(body, experiment, True, Reason.RACE_SUCCEEDED, "Race finished; results collected", extra)
        failure = report.failure
        reason, message = (failure.kind.value, failure.message) if failure else (Reason.RACE_FAILED, "Race failed")
        return self._race_failed(body, experiment, pod, reason, status.redact(message), extra)

    def _keep(self, body: dict[str, Any], configmap: dict[str, Any], not_stored: Reason) -> str | None:
        """CONFIGMAP created, its name; else None, said in a Warning Event (NOT_STORED). One of that
        name may be a deleted namesake's: never point at another race's. (The operator may not read
        ConfigMaps; after a crash right here the reference is lost, not the results.)"""
        name = configmap["metadata"]["name"]
        try:
            if self.kube.create_configmap(configmap):
                return name
            self.emit(body, "Warning", not_stored, f"ConfigMap {name} exists already")
        except Rejected as rejected:
            self.emit(body, "Warning", not_stored, str(rejected))
        return None

    def _kubernetes_environment(self, experiment: manifests.Experiment,
                                rally_pod: dict[str, Any]) -> tuple[KubernetesEnvironment, Exception | None]:
        """The Kubernetes half of the reproducibility record: server version, image digests, nodes
        and the resources the pods got, and why part of it is missing, if it is. Worth having,
        never worth failing the results for: said by whoever records it."""
        record = KubernetesEnvironment()

        def node(pod: dict[str, Any]) -> dict[str, Any] | None:
            name = (pod.get("spec") or {}).get("nodeName")
            return self.kube.get_node(name) if name else None

        try:
            record.server_version = self.kube.server_version()
            record.rally = platform.pod_environment(rally_pod, manifests.RALLY_CONTAINER, node(rally_pod))
            if experiment.cluster:
                pods = sorted(self.kube.cluster_pods(experiment.namespace, experiment.cluster),
                              key=lambda pod: pod["metadata"]["name"])
                record.elasticsearch = [platform.pod_environment(pod, manifests.ES_CONTAINER, node(pod))
                                        for pod in pods] or None
        except Exception as error:
            return record, error
        return record, None

    def _finish(self, body, experiment, succeeded: bool, reason: str, message: str,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
        phase = Phase.SUCCEEDED if succeeded else Phase.FAILED
        conditions = [(BENCHMARK_COMPLETE, succeeded, reason, message)]
        if not ((body.get("status") or {}).get("clusterVersion")):  # never became ready
            conditions.append((CLUSTER_READY, False, reason, message))
        updated = self._update(
            body, phase, reason, message, {"completionTime": status.now(), **(extra or {})}, *conditions
        )
        try:
            self._release_cluster(body, experiment, succeeded, just_finished=True)
        finally:
            # Last: an Event that cannot be posted must not skip the cleanup, and whoever sees it
            # knows the cleanup has been decided (one that failed now is tried again by the resync).
            self.emit(body, "Normal" if succeeded else "Warning", reason, message)
        return self._record(updated)

    def _release_cluster(self, body: dict[str, Any], experiment: manifests.Experiment, succeeded: bool,
                         just_finished: bool = False) -> None:
        policy = experiment.spec.lifecycle.cleanup
        delete = policy == CleanupPolicy.DELETE or (policy == CleanupPolicy.KEEP_ON_FAILURE and succeeded)
        if not (delete and experiment.owns_cluster):  # a cluster it only uses is never deleted
            return
        # Just finished: the cluster the race ran on (recorded when it was ready) is deleted by its
        # UID. Any other time (a restart, the cluster's own events), it may be gone or going already:
        # read it first, so that a cleanup done before is neither done nor announced again.
        uid = (body.get("status") or {}).get("clusterUID") if just_finished else None
        if uid is None:
            es = self.kube.get_elasticsearch(experiment.namespace, experiment.cluster)
            if es is None or not _owned(es, experiment) or es["metadata"].get("deletionTimestamp"):
                return
            uid = es["metadata"]["uid"]
        if delete_cluster(self.kube, self.emit, body, experiment.cluster, uid):
            self.emit(body, "Normal", Reason.CLUSTER_DELETED, f"Deleted Elasticsearch cluster {experiment.cluster}")

    def _record(self, body: dict[str, Any]) -> dict[str, Any]:
        """Writes a finished Experiment to the results store, if there is one and it has not been
        written yet. Also at every restart: a crash between the final status and the write, or a
        store added later, loses nothing. Returns the Experiment as left; raises StoreUnavailable."""
        state = body.get("status") or {}
        if self.store is None or recorded(body):
            return body
        configmap = state.get("raceJsonConfigMap")
        try:
            record = records.record(manifests.as_recorded(body),
                                    race_json=self._race_json(body, configmap) if configmap else None)
        except records.NotRecordable:  # failed, or a sweep's warm-up run: no point of any series
            return body
        store = self.store
        return record_in_store(
            body, lambda: store.add(record), f"as race {record.race_id} (series {record.configuration})", self.emit,
            lambda condition: self._update(body, Phase(state["phase"]), state["reason"], state["message"], {}, condition))

    def _race_json(self, body: dict[str, Any], configmap: str) -> dict[str, Any] | None:
        found = self.kube.get_configmap(body["metadata"]["namespace"], configmap)
        return manifests.race_json_of(found) if found else None

    def _expire(self, body: dict[str, Any]) -> None:
        ttl = lifecycle_setting(body["spec"], "ttlSecondsAfterFinished")
        completed = (body.get("status") or {}).get("completionTime")
        if ttl is not None and completed and status.past(completed, ttl) and self._recorded_by_its_sweep(body):
            self.kube.delete_experiment(body["metadata"]["namespace"], body["metadata"]["name"])

    def _recorded_by_its_sweep(self, body: dict[str, Any]) -> bool:
        """A sweep's run goes only once the sweep has recorded how it ended (status.runs), or its
        results would go with it."""
        sweep_name = (body["metadata"].get("labels") or {}).get(SWEEP_LABEL)
        if not sweep_name:
            return True
        sweep = self.kube.get_sweep(body["metadata"]["namespace"], sweep_name)
        if sweep is None:
            return True
        records = (sweep.get("status") or {}).get("runs") or []
        return any(r.get("name") == body["metadata"]["name"] and r.get("phase") in TERMINAL_PHASES for r in records)

    # --- helpers ---

    def _update(self, body, phase: Phase, reason: str, message: str, fields: dict[str, Any],
                *conditions: tuple[str, bool, str, str]) -> dict[str, Any]:
        current = dict(body.get("status") or {})
        now = status.now()
        generation = body["metadata"].get("generation")
        merged = current.get("conditions")
        for type_, ok, cond_reason, cond_message in conditions:
            merged = status.with_condition(merged, type_, ok, cond_reason, cond_message, now, generation)
        patch = status.checked(ExperimentStatus, {"phase": phase.value, "reason": reason, "message": message,
                                                  "observedGeneration": generation, "conditions": merged, **fields})
        self.kube.patch_experiment_status(body["metadata"]["namespace"], body["metadata"]["name"], patch)
        return {**body, "status": {**current, **patch}}



def race_ended(job: dict[str, Any]) -> bool:
    """Whether the Rally Job has ended, well or not. FailureTarget is the Job controller's decision
    to fail: Failed follows only once the pod is gone."""
    return bool({"Complete", "Failed", "FailureTarget"} & _true_conditions(job).keys())


def _true_conditions(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (job.get("status") or {}).get("conditions") or [] if c["status"] == "True"}


def _waited_for_cluster(body: dict[str, Any], experiment: manifests.Experiment) -> bool:
    """Whether every wait before the race (ECK, the cluster, a namesake's children) is over."""
    return status.waited(body, experiment.spec.lifecycle.cluster_ready_timeout_seconds)


def _owned(child: dict[str, Any], experiment: manifests.Experiment) -> bool:
    """Whether a child found under our deterministic name is really ours, not a stranger's."""
    return any(ref.get("uid") == experiment.uid for ref in child["metadata"].get("ownerReferences") or [])


def _left_by_namesake(child: dict[str, Any], experiment: manifests.Experiment) -> bool:
    """Whether a child belongs to a deleted Experiment of the same name (two cannot coexist):
    the garbage collector is removing it, so it is worth waiting for rather than a conflict."""
    return any(ref.get("kind") == KIND and ref.get("name") == experiment.name and ref.get("uid") != experiment.uid
               for ref in child["metadata"].get("ownerReferences") or [])


def _conflict(kind: str, child: dict[str, Any]) -> str:
    name = child["metadata"]["name"]
    return f"A {kind} named {name} already exists and does not belong to this Experiment; it was left untouched"


def _exit_code(pod: dict[str, Any]) -> int | None:
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            return terminated.get("exitCode")
    return None
