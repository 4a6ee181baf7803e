"""The Experiment's lifecycle: Pending -> Provisioning -> Benchmarking -> Succeeded | Failed.

`reconcile` is level-triggered: it reads the Experiment and its children afresh (a Job's own
watch event hands in the Job as just seen) and takes the next step, so it is safe to call for
any event, on a timer, and after an operator restart. Children are created get-or-create by
deterministic name, and results are written to the status in the same patch that ends the
Experiment, so a retried or repeated call never makes a second cluster, a second Job or a
second copy of the results.

Each step reads, asks experimentstate.py (pure) what follows from what it read, and applies that:
the Event, the status write, the end with its cleanup.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from esbench.analysis import foreignwrites
from esbench.api.models import SWEEP_LABEL, TERMINAL_PHASES, Environment, KubernetesEnvironment, Phase
from esbench.api.race_report import RaceReport
from esbench.api.reasons import Reason
from esbench.controller import disruption, experimentstate, platform
from esbench.controller.config import Settings
from esbench.controller.experimentstate import End, LookAgain, RaceFailure, ReadReport, StartRace, Write, race_ended
from esbench.controller.kube import KindNotServed, Kube, Rejected
from esbench.controller.reconciling import EventSink, KeyedLocks, delete_cluster
from esbench.controller.storewriter import record_in_store
from esbench.history import records
from esbench.history.esstore import ElasticsearchStore
from esbench.planning import manifests, names
from esbench.planning.status import recorded


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
                body = self._write(body, experimentstate.invalid_spec(message, datetime.now(UTC)))
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
        return manifests.elasticsearch_manifest(experiment, self.settings.sidecar_image)

    def _provision(self, body: dict[str, Any], experiment: manifests.Experiment) -> dict[str, Any]:
        if not experiment.owns_cluster:
            return self._apply(body, experiment, experimentstate.use_cluster(body, experiment, datetime.now(UTC)))
        try:
            created = self.kube.create_elasticsearch(self._elasticsearch_manifest(experiment))
        except KindNotServed:
            return self._apply(body, experiment, experimentstate.eck_missing(body, experiment, datetime.now(UTC)))
        except Rejected as rejected:
            return self._finish(body, experiment, End(Reason.CLUSTER_REJECTED, str(rejected)))
        es = created or self.kube.get_elasticsearch(experiment.namespace, experiment.cluster)
        return self._apply(body, experiment, experimentstate.provision(body, experiment, es, datetime.now(UTC)))

    def _await_cluster(self, body: dict[str, Any], experiment: manifests.Experiment,
                       seen: dict[str, Any] | None) -> dict[str, Any]:
        es = None
        if experiment.cluster is not None:
            if seen is not None and seen["metadata"]["name"] == experiment.cluster:  # not any labelled one
                es = seen
            else:
                es = self.kube.get_elasticsearch(experiment.namespace, experiment.cluster)
            if es is None:
                return self._cluster_missing(body, experiment)
        refusals = (self.kube.warning_messages(es, "Validation")
                    if es is not None and experimentstate.needs_eck_reason(experiment, es) else [])
        step = experimentstate.await_cluster(body, experiment, es, refusals, datetime.now(UTC))
        if isinstance(step, StartRace):
            return self._start_race(body, experiment, es, step)
        return self._apply(body, experiment, step)

    def _cluster_missing(self, body: dict[str, Any], experiment: manifests.Experiment) -> dict[str, Any]:
        """There is no cluster under test (yet): a missing own cluster is asked for again."""
        if experiment.owns_cluster:  # deleted under us: ask for it again under the same name
            try:
                self.kube.create_elasticsearch(self._elasticsearch_manifest(experiment))
            except Rejected as rejected:
                return self._finish(body, experiment, End(Reason.CLUSTER_REJECTED, str(rejected)))
            return body
        return self._apply(body, experiment, experimentstate.cluster_not_found(body, experiment, datetime.now(UTC)))

    def _start_race(self, body: dict[str, Any], experiment: manifests.Experiment, es: dict[str, Any] | None,
                    start: StartRace) -> dict[str, Any]:
        job = manifests.rally_job_manifest(experiment, manifests.connection(experiment, es),
                                          self.settings.rally_image, self.settings.rally_image_pull_policy,
                                          self.settings.job_deadline_grace_seconds, self.settings.rally_resources,
                                          start.node_sidecars)
        job_name = job["metadata"]["name"]
        try:
            created = self.kube.create_job(job)
        except Rejected as rejected:
            return self._finish(body, experiment, End(Reason.JOB_REJECTED, str(rejected)))
        # One of that name exists: ours (made before a crash) or a stranger's.
        stale = None if created else self.kube.get_job(experiment.namespace, job_name)
        step = experimentstate.race_started(body, experiment, es, start, job_name, created, stale, datetime.now(UTC))
        body = self._apply(body, experiment, step)
        # A Job made before a crash may have ended meanwhile; one made now has not: its end comes
        # as its watch event.
        return self._await_race(body, experiment, stale) if isinstance(step, Write) and stale is not None else body

    def _await_race(self, body: dict[str, Any], experiment: manifests.Experiment, job: dict[str, Any] | None,
                    race_output: Future[tuple[dict[str, Any] | None, str]] | None = None) -> dict[str, Any]:
        job_name = names.job_name(experiment.name)
        job = job or self.kube.get_job(experiment.namespace, job_name)
        step = experimentstate.job_end(experiment, job_name, job)
        if not isinstance(step, ReadReport):
            return self._apply(body, experiment, step)
        pod, log = race_output.result() if race_output else self._race_output(experiment.namespace, job_name)
        # Read while the report is decoded and stored. (Wasted on a race that ends without results,
        # which is rare.)
        environment = self.side_reads.submit(self._kubernetes_environment, experiment, pod) if pod is not None else None
        report = experimentstate.race_report(job_name, pod, log)
        if isinstance(report, RaceFailure):
            return self._race_failed(body, experiment, pod, report)
        assert pod is not None and environment is not None  # a report is read only from a pod's log
        return self._collect(body, experiment, report, environment, pod)

    def _race_output(self, namespace: str, job_name: str) -> tuple[dict[str, Any] | None, str]:
        """The pod of an ended Job (None, with no log, when it is gone) and its log."""
        pod = self.kube.job_pod(namespace, job_name)
        if pod is None:
            return None, ""
        try:
            return pod, self.kube.pod_log(namespace, pod["metadata"]["name"])
        except Exception as error:  # the kubelet may be briefly unreachable: try again on resync
            raise RetryLater(f"Cannot read the log of {pod['metadata']['name']} yet: {error}") from error

    def _race_failed(self, body: dict[str, Any], experiment: manifests.Experiment, pod: dict[str, Any] | None,
                     failure: RaceFailure, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Ends a race that failed (the runner's view), or with the cause its pods show instead
        (disruption.py), read now: the Rally POD, the cluster and its pods. A cluster that cannot
        be read now is left out: the runner's failure is still worth saying."""
        cluster, es, es_pods = experiment.cluster, None, []
        if cluster:
            try:
                es = self.kube.get_elasticsearch(experiment.namespace, cluster)
                es_pods = self.kube.cluster_pods(experiment.namespace, cluster)
            except Exception:  # whatever the API layer raised: the runner's view stands
                cluster = None
        facts = disruption.RaceFacts((body.get("status") or {}).get("clusterReadyTime"), pod, cluster, es, es_pods)
        reason, message = disruption.cause(facts, failure.reason, failure.message)
        return self._finish(body, experiment, End(reason, message), extra)

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
            extra.update(experimentstate.results_fields(experiment, report.results))
        verdict = experimentstate.report_verdict(report)
        if isinstance(verdict, End):
            return self._finish(body, experiment, verdict, extra)
        return self._race_failed(body, experiment, pod, verdict, extra)

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

    def _finish(self, body: dict[str, Any], experiment: manifests.Experiment, end: End,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
        updated = self._write(body, experimentstate.ending(body, end, datetime.now(UTC), extra))
        try:
            self._release_cluster(body, experiment, end.succeeded, just_finished=True)
        finally:
            # Last: an Event that cannot be posted must not skip the cleanup, and whoever sees it
            # knows the cleanup has been decided (one that failed now is tried again by the resync).
            self.emit(body, "Normal" if end.succeeded else "Warning", end.reason, end.message)
        return self._record(updated)

    def _release_cluster(self, body: dict[str, Any], experiment: manifests.Experiment, succeeded: bool,
                         just_finished: bool = False) -> None:
        if not experimentstate.deletes_cluster(experiment, succeeded):
            return
        # Just finished: the cluster the race ran on (recorded when it was ready) is deleted by its
        # UID. Any other time (a restart, the cluster's own events), it may be gone or going already:
        # read it first, so that a cleanup done before is neither done nor announced again.
        uid = (body.get("status") or {}).get("clusterUID") if just_finished else None
        if uid is None:
            es = self.kube.get_elasticsearch(experiment.namespace, experiment.cluster)
            if es is None or not experimentstate.owned(es, experiment) or es["metadata"].get("deletionTimestamp"):
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
            lambda condition: self._write(body, Write(Phase(state["phase"]), experimentstate.kept_reason(
                state["reason"], Reason.RACE_SUCCEEDED), state["message"], conditions=(condition,))))

    def _race_json(self, body: dict[str, Any], configmap: str) -> dict[str, Any] | None:
        found = self.kube.get_configmap(body["metadata"]["namespace"], configmap)
        return manifests.race_json_of(found) if found else None

    def _expire(self, body: dict[str, Any]) -> None:
        if experimentstate.expired(body, datetime.now(UTC)) and self._recorded_by_its_sweep(body):
            self.kube.delete_experiment(body["metadata"]["namespace"], body["metadata"]["name"])

    def _recorded_by_its_sweep(self, body: dict[str, Any]) -> bool:
        sweep_name = (body["metadata"].get("labels") or {}).get(SWEEP_LABEL)
        if not sweep_name:
            return True
        return experimentstate.recorded_by_sweep(body, self.kube.get_sweep(body["metadata"]["namespace"], sweep_name))

    # --- applying a step ---

    def _apply(self, body: dict[str, Any], experiment: manifests.Experiment,
               step: Write | End | LookAgain | None) -> dict[str, Any]:
        if step is None:
            return body
        if isinstance(step, LookAgain):
            raise RetryLater(step.why)
        if isinstance(step, End):
            return self._finish(body, experiment, step)
        if step.event is not None:
            self.emit(body, step.event.type, step.event.reason, step.event.message)
        return self._write(body, step)

    def _write(self, body: dict[str, Any], write: Write) -> dict[str, Any]:
        patch = experimentstate.patch(body, write, datetime.now(UTC))
        self.kube.patch_experiment_status(body["metadata"]["namespace"], body["metadata"]["name"], patch)
        return {**body, "status": {**(body.get("status") or {}), **patch}}
