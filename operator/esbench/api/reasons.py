"""Every reason esbench writes: in status.reason, in its conditions, in its Events, and in the
runner's report; and every type of condition it sets. One word per cause, CamelCase as Kubernetes
reasons are; docs/api.md lists both with their meaning (api/reference.py reads MEANINGS and
CONDITION_MEANINGS).
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    # An Experiment on its way
    WAITING_FOR_CLUSTER = "WaitingForCluster"
    PROVISIONING = "Provisioning"
    PREVIOUS_CLUSTER_DELETING = "PreviousClusterDeleting"
    BENCHMARKING = "Benchmarking"
    RUNNING = "Running"
    CLUSTER_READY = "ClusterReady"
    # An Experiment's end
    RACE_SUCCEEDED = "RaceSucceeded"
    INVALID_SPEC = "InvalidSpec"
    ECK_NOT_INSTALLED = "EckNotInstalled"
    CLUSTER_NOT_READY = "ClusterNotReady"
    CLUSTER_NOT_FOUND = "ClusterNotFound"
    CLUSTER_INVALID = "ClusterInvalid"
    CLUSTER_REJECTED = "ClusterRejected"
    JOB_REJECTED = "JobRejected"
    CLUSTER_NAME_CONFLICT = "ClusterNameConflict"
    JOB_NAME_CONFLICT = "JobNameConflict"
    JOB_FAILED = "JobFailed"
    JOB_DELETED = "JobDeleted"
    RESULTS_UNAVAILABLE = "ResultsUnavailable"
    RESULTS_UNREADABLE = "ResultsUnreadable"
    CLUSTER_DISRUPTED = "ClusterDisrupted"
    RALLY_POD_DELETED = "RallyPodDeleted"
    RALLY_POD_EVICTED = "RallyPodEvicted"
    # The runner's classification of a failed race (its report, and the exit status of esbench run)
    TARGET_UNREACHABLE = "TargetUnreachable"
    TRACK_ERROR = "TrackError"
    RACE_FAILED = "RaceFailed"
    RACE_ERRORS = "RaceErrors"
    RACE_TIMEOUT = "RaceTimeout"
    SHARDS_UNASSIGNED = "ShardsUnassigned"
    # Events of an Experiment
    CLUSTER_DELETED = "ClusterDeleted"
    CLEANUP_FAILED = "CleanupFailed"
    RACE_JSON_NOT_STORED = "RaceJsonNotStored"
    PROFILES_NOT_STORED = "ProfilesNotStored"
    ENVIRONMENT_INCOMPLETE = "EnvironmentIncomplete"
    MEASUREMENT_SUSPECT = "MeasurementSuspect"
    # The Recorded condition (a results store is configured)
    RECORD_PENDING = "RecordPending"
    RECORDED = "Recorded"
    STORE_UNAVAILABLE = "StoreUnavailable"
    # A sweep
    RUN_STARTED = "RunStarted"
    RUN_DELETED = "RunDeleted"
    CLUSTER_RENEWED = "ClusterRenewed"
    REJECTED = "Rejected"
    COMPLETED = "Completed"
    RUNS_FAILED = "RunsFailed"
    GATES_PASSED = "GatesPassed"
    GATE_FAILED = "GateFailed"
    GATE_UNDECIDED = "GateUndecided"
    NO_ORDER_EFFECT = "NoOrderEffect"
    ORDER_EFFECT_DETECTED = "OrderEffectDetected"
    ORDER_CONFOUNDED = "OrderConfounded"
    # A schedule
    SCHEDULED = "Scheduled"
    SUSPENDED = "Suspended"
    WAITING = "Waiting"
    MISSED = "Missed"
    # A schedule's Regression condition
    NO_REGRESSION = "NoRegression"
    REGRESSION_SUSPECTED = "RegressionSuspected"
    REGRESSION_CONFIRMED = "RegressionConfirmed"
    CHECK_FAILED = "CheckFailed"


class ConditionType(StrEnum):
    # An Experiment's
    CLUSTER_READY = "ClusterReady"
    BENCHMARK_COMPLETE = "BenchmarkComplete"
    RECORDED = "Recorded"  # a sweep's too
    # A sweep's
    COMPLETE = "Complete"
    GATES_PASSED = "GatesPassed"
    ORDER_EFFECT = "OrderEffect"
    # A schedule's
    SCHEDULING = "Scheduling"
    REGRESSION = "Regression"


# What a runner may report as the kind of a failed race (api/race_report.py).
RACE_FAILURES = (Reason.INVALID_SPEC, Reason.TARGET_UNREACHABLE, Reason.TRACK_ERROR, Reason.RACE_FAILED,
                 Reason.RACE_ERRORS, Reason.RACE_TIMEOUT, Reason.SHARDS_UNASSIGNED)

MEANINGS: dict[Reason, str] = {
    Reason.WAITING_FOR_CLUSTER: "the Experiment waits for its cluster (ClusterReady and BenchmarkComplete while "
                                "Provisioning)",
    Reason.PROVISIONING: "the ECK cluster is created or not ready yet; the ClusterReady condition says what it lacks: "
                         "ECK phase, health, nodes, version, and ECK's own conditions",
    Reason.PREVIOUS_CLUSTER_DELETING: "a cluster left by a deleted Experiment of the same name is being removed by the "
                                      "garbage collector: the Experiment waits in Pending, within "
                                      "clusterReadyTimeoutSeconds",
    Reason.BENCHMARKING: "the Rally Job runs",
    Reason.RUNNING: "the race runs (the BenchmarkComplete condition), or the sweep's runs go on",
    Reason.CLUSTER_READY: "the ClusterReady condition's, once the cluster is ready: its message gives nodes and health",
    Reason.RACE_SUCCEEDED: "the race finished and its results are in status.results",
    Reason.INVALID_SPEC: "track params repeat spec.index or workload.load settings (the one rule CEL cannot check), "
                         "or a sweep cell is not a valid Experiment: final at once, never retried; a schedule whose cron "
                         "expression croniter refuses starts nothing until it is changed",
    Reason.ECK_NOT_INSTALLED: "the ECK CRDs are missing: the Experiment waits in Pending and fails after "
                              "clusterReadyTimeoutSeconds (a sweep too, from its start)",
    Reason.CLUSTER_NOT_READY: "ECK did not report the cluster Ready, green, with every node, at the current generation "
                              "and version, within clusterReadyTimeoutSeconds",
    Reason.CLUSTER_NOT_FOUND: "target.elasticsearchRef names a cluster that did not appear within "
                              "clusterReadyTimeoutSeconds",
    Reason.CLUSTER_INVALID: "ECK marked the cluster Invalid (its phase) for the current spec: final at once, with ECK's "
                            "own reason from its Validation Warning Event. esbench's admission refuses what it knows "
                            "ECK refuses for its own clusters, so this comes from a target.elasticsearchRef cluster "
                            "or an ECK rule esbench does not repeat",
    Reason.CLUSTER_REJECTED: "the API server or an admission webhook refused to create the ECK cluster (invalid for "
                             "ECK, forbidden, over a ResourceQuota): final at once, with the server's message",
    Reason.JOB_REJECTED: "the API server or an admission webhook refused to create the Rally Job: final at once, with "
                         "the server's message; the cluster is released per lifecycle.cleanup",
    Reason.CLUSTER_NAME_CONFLICT: "an Elasticsearch of that name exists and belongs to someone else: it is left "
                                  "untouched (a sweep does not retry the run)",
    Reason.JOB_NAME_CONFLICT: "a Job of that name exists and belongs to someone else: it is left untouched (a sweep "
                              "does not retry the run)",
    Reason.JOB_FAILED: "the Rally pod ended without a report (the message holds a redacted log excerpt)",
    Reason.JOB_DELETED: "the Rally Job was deleted before its pod's log was read",
    Reason.RESULTS_UNAVAILABLE: "the Rally pod vanished before its log was read",
    Reason.RESULTS_UNREADABLE: "the Rally pod's log holds report lines but no complete report this operator can read "
                               "(cut short, garbled, or from a runner of another version)",
    Reason.CLUSTER_DISRUPTED: "an Elasticsearch pod was replaced, restarted, deleted or missing during a race that "
                              "failed: the message names the pod and when, then the runner's own failure (a sweep "
                              "retries the run)",
    Reason.RALLY_POD_DELETED: "the Rally pod was deleted while the race ran: the message says when, then what the "
                              "runner's log showed (a sweep retries the run)",
    Reason.RALLY_POD_EVICTED: "the Rally pod was evicted (the eviction API, node pressure, preemption, a taint) while "
                              "the race ran: the message gives Kubernetes' reason (a sweep retries the run)",
    Reason.TARGET_UNREACHABLE: "the runner could not reach Elasticsearch",
    Reason.TRACK_ERROR: "unknown track, challenge or track parameter",
    Reason.RACE_FAILED: "esrally failed",
    Reason.RACE_ERRORS: "the race ran but requests failed, more than workload.maxErrorRate allows",
    Reason.RACE_TIMEOUT: "the race hit raceTimeoutSeconds: the runner stops esrally shortly before it and reports "
                         "what survives (the node figures esbench sampled, Rally's race.json as stored at the start; "
                         "Rally computes per-task figures only when a race completes); or the Job's own, later "
                         "deadline passed",
    Reason.SHARDS_UNASSIGNED: "Elasticsearch refused to allocate a shard the race needs (a primary; a replica while "
                              "the track waits for green) for 60 s: the runner stopped esrally; the message holds "
                              "Elasticsearch's reasons, node by node (a disk watermark, an allocation filter)",
    Reason.CLUSTER_DELETED: "Event: the Experiment's cluster was deleted after the race (lifecycle.cleanup)",
    Reason.CLEANUP_FAILED: "Event: deleting the cluster was refused; tried again later",
    Reason.RACE_JSON_NOT_STORED: "Event: Rally's race.json could not be stored in its ConfigMap",
    Reason.PROFILES_NOT_STORED: "Event: the race's per-task profiles could not be stored in their ConfigMap",
    Reason.ENVIRONMENT_INCOMPLETE: "Event: part of status.results.environment.kubernetes could not be read",
    Reason.MEASUREMENT_SUSPECT: "Warning Event: a task's figures include work the nodes did not do during it (its "
                                "data path's disk took writes while the nodes neither indexed, merged nor flushed); "
                                "the message names the task",
    Reason.RECORD_PENDING: "the Experiment succeeded and is about to be written to the results store "
                           "(resultsStore in the chart); ttlSecondsAfterFinished waits for it",
    Reason.RECORDED: "the results store holds the race (Rally's results documents and esbench's record); "
                     "also an Event",
    Reason.STORE_UNAVAILABLE: "the results store could not be reached or refused the write: tried again, backing "
                              "off, while the Experiment keeps its results and its TTL waits; also a Warning Event",
    Reason.RUN_STARTED: "Event: a sweep or a schedule started a run",
    Reason.RUN_DELETED: "a sweep's run was deleted before it finished: it counts as failed",
    Reason.CLUSTER_RENEWED: ("Event: a sweep deleted its shared cluster, whose data a disruption took (emptyDir), "
                             "to make it anew before its next run"),
    Reason.REJECTED: "a sweep's run or shared cluster was refused by the API server: tried again at each resync, and "
                     "the sweep fails once the template's clusterReadyTimeoutSeconds have passed since it started; a "
                     "schedule's run refused so is tried again at its next look",
    Reason.COMPLETED: "every run of the sweep succeeded",
    Reason.RUNS_FAILED: "some runs of the sweep failed after their retries; the results of the others stay",
    Reason.GATES_PASSED: "every gate passed: each contender's interval lies within the regression a gate allows",
    Reason.GATE_FAILED: "a gate failed: a contender is significantly worse than the baseline beyond it",
    Reason.GATE_UNDECIDED: "the sweep ended and a gate cannot tell: a contender's interval reaches beyond the "
                           "regression it allows without being significantly beyond it (more runs would settle it)",
    Reason.NO_ORDER_EFFECT: "a run's position in its round did not explain its primary figures beyond its cell "
                            "(the OrderEffect condition is False)",
    Reason.ORDER_EFFECT_DETECTED: "a run's position in its round explains a primary figure beyond its cell: the node "
                                  "drifted within rounds (status.orderEffects; also a Warning Event)",
    Reason.ORDER_CONFOUNDED: "every cell raced in one position of every round (order Interleaved or Sequential): "
                             "drift within a round cannot be told from an effect (also a Warning Event)",
    Reason.SCHEDULED: "a schedule's ticks start runs (its Scheduling condition)",
    Reason.SUSPENDED: "a schedule is suspended: no tick starts a run",
    Reason.WAITING: "a schedule's tick waits: a run is under way and concurrencyPolicy is Forbid, or it is suspended",
    Reason.MISSED: "a schedule's tick was not started within startingDeadlineSeconds (also a Warning Event)",
    Reason.NO_REGRESSION: "no series of a schedule's configuration ends in a regression (Apache Otava's change "
                          "points over the results store)",
    Reason.REGRESSION_SUSPECTED: "a series of a schedule's configuration ends in a regression after its newest run "
                                 "only: one more run is made at once to confirm it (also an Event)",
    Reason.REGRESSION_CONFIRMED: "a regression stood after a run more: reported once per change, as a Warning Event "
                                 "and on the operator's metrics endpoint (esbench_regression_state 2)",
    Reason.CHECK_FAILED: "a schedule's runs could not be checked for regressions (Apache Otava is missing)",
}

CONDITION_MEANINGS: dict[ConditionType, str] = {
    ConditionType.CLUSTER_READY: "an Experiment's cluster under test is ready: ECK reports it Ready, green (yellow for "
                                 "one it only uses), with every node, at the current generation and version; False "
                                 "says what it lacks",
    ConditionType.BENCHMARK_COMPLETE: "an Experiment's race finished and its results are in status.results; False "
                                      "while it waits or runs, and once it failed (with the failure's reason)",
    ConditionType.RECORDED: "the results store holds the Experiment or the sweep (resultsStore in the chart); False "
                            "while its write waits or fails",
    ConditionType.COMPLETE: "every run of a sweep ended, or the sweep failed as a whole; False while its runs go on",
    ConditionType.GATES_PASSED: "every gate of a sweep passed; False once one failed, or cannot tell at the end",
    ConditionType.ORDER_EFFECT: "a run's position in its round explains a primary figure beyond its cell, or the "
                                "order cannot be told from the cells",
    ConditionType.SCHEDULING: "a schedule's ticks start runs; False while it is suspended, its spec is invalid, or "
                              "its runs are refused",
    ConditionType.REGRESSION: "a series of a schedule's configuration ends in a confirmed regression; False with "
                              "none, one suspected, or no check possible",
}
