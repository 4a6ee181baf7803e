"""Pure functions that turn an Experiment into the Kubernetes objects it owns.

Nothing here talks to the API server: given a spec, they return manifests, so every detail
is unit-tested without a cluster.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Self

from pydantic import BaseModel

from esbench.analysis import asyncprofiler
from esbench.api.models import (
    API_VERSION,
    ATTEMPT_LABEL,
    CELL_LABEL,
    CONFIGURATION_ANNOTATION,
    EXPERIMENT_LABEL,
    KIND,
    REPETITION_LABEL,
    SCHEDULE_KIND,
    SCHEDULE_LABEL,
    SCHEDULED_AT,
    SWEEP_KIND,
    SWEEP_LABEL,
    Elasticsearch,
    ExperimentSpec,
    Profile,
    ScheduleSpec,
    SecretKeyRef,
    StorageType,
    SweepSpec,
)
from esbench.history import records
from esbench.planning import grid, names, readiness, status

ECK_API_VERSION = "elasticsearch.k8s.elastic.co/v1"
# Each owner kind labels its children with its own name, so handlers can route their events.
_OWNER_LABELS = {KIND: EXPERIMENT_LABEL, SWEEP_KIND: SWEEP_LABEL, SCHEDULE_KIND: SCHEDULE_LABEL}
RALLY_CONTAINER = "rally"
ES_CONTAINER = "elasticsearch"  # ECK's name for the Elasticsearch container of its pods
# Under cgroup v1 a container sees its own cgroup at the root of /sys/fs/cgroup while
# /proc/self/cgroup names it by its path on the host, so Elasticsearch finds no cgroup there and
# reports neither its memory limit nor its container's CPU. Told that its cgroup is the root, as
# Elastic's own images tell it, it reads the container's under v1; under v2 a pod has a cgroup
# namespace of its own, whose root is already its cgroup.
CGROUP_HIERARCHY_OVERRIDE = "-Des.cgroups.hierarchy.override=/"
# Pod Security "restricted" on every version the CRD admits. ECK 3.5.0 sets seccomp, fsGroup and
# dropped capabilities only from 8.0 and runAsNonRoot only from 8.8; it keeps a security context
# the podTemplate sets, and merges init containers of its own names with ours. uid 1000 is the
# official images' elasticsearch user (the kubelet cannot check runAsNonRoot against a user name).
ES_POD_SECURITY_CONTEXT = {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000,
                           "seccompProfile": {"type": "RuntimeDefault"}}
ES_CONTAINER_SECURITY_CONTEXT = {"allowPrivilegeEscalation": False, "privileged": False, "readOnlyRootFilesystem": True,
                                 "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True}
ECK_INIT_CONTAINERS = ("elastic-internal-init-filesystem", "elastic-internal-suspend")
# A sidecar of the esbench image in each pod of a cluster esbench makes serves the Rally Job what the
# node does not report itself (esbench.sidecar.nodeserver), from the Elasticsearch container's
# processes (the pod shares one process namespace) and its data volume, read-only.
SIDECAR_CONTAINER = "esbench-sidecar"
SIDECAR_PORT = 9443
SIDECAR_DATA_DIR = "/esbench/data"
ES_DATA_VOLUME = "elasticsearch-data"  # ECK's name for a node's path.data volume
SIDECAR_RESOURCES = {"cpu": "50m", "memory": "128Mi"}
# spec.profile: an init container of the esbench image puts async-profiler's library and a JVM
# options file that starts it beside Elasticsearch; the sidecar serves the recordings (docs/profiles.md).
PROFILER_INIT_CONTAINER = "esbench-profiler"
IMAGE_PROFILER_DIR = "/opt/async-profiler"  # in the esbench image (ESBENCH_ASYNC_PROFILER)
PROFILER_DIR = "/esbench/profiler"
RECORDINGS_DIR = "/esbench/recordings"
# workload.reuseIndex on a sweep's shared cluster: its path.repo, a volume that lives as long as the pod.
SNAPSHOTS_DIR = "/esbench/snapshots"
ES_JVM_OPTIONS_DIR = "/usr/share/elasticsearch/config/jvm.options.d"  # read by the server JVM only, not by the CLI tools
ES_HTTP_CERTS_VOLUME = "elastic-internal-http-certificates"  # ECK's, in every pod of a cluster with TLS
# The esbench image's user and group (operator/Dockerfile, scripts/images/esbench.sh; the chart
# runs the operator as them too): 10000 or more, above the nodes' own users.
RUNNER_UID = 10001
CA_MOUNT = "/etc/esbench/ca"
# The password reaches the runner as a file (ES_PASSWORD_FILE), not as an environment variable.
PASSWORD_MOUNT = "/etc/esbench/es-password"
WORK_DIR = "/work"
# ConfigMaps hold at most 1 MiB; larger race.json files are stored gzip'd as binaryData.
CONFIGMAP_TEXT_LIMIT = 900_000


@dataclass(frozen=True)
class Owner:
    """The identity and spec of an esbench resource that owns children: all a builder needs."""

    name: str
    namespace: str
    uid: str
    kind: ClassVar[str]
    spec_model: ClassVar[type[BaseModel]]

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Self:
        meta = body["metadata"]
        return cls(meta["name"], meta["namespace"], meta["uid"], cls.spec_model.model_validate(body["spec"]))


@dataclass(frozen=True)
class Experiment(Owner):
    spec: ExperimentSpec
    kind = KIND
    spec_model = ExperimentSpec

    @property
    def owns_cluster(self) -> bool:
        return self.spec.elasticsearch is not None

    @property
    def cluster(self) -> str | None:
        """The ECK Elasticsearch it runs against (its own or a referenced one); None for an external URL."""
        if self.spec.elasticsearch is not None:
            return names.cluster_name(self.name)
        reference = self.spec.target.elasticsearch_ref
        return reference.name if reference else None

    @property
    def race_id(self) -> str:
        # The Experiment's UID: unique, and stable across operator restarts.
        return self.uid


def not_on_kubernetes(spec: ExperimentSpec) -> str | None:
    """What of an admitted spec the operator cannot do yet, or None."""
    if spec.profile and spec.target is not None and spec.target.external is not None:
        return ("spec.profile: on Kubernetes the profiler starts with the nodes of an ECK cluster that esbench makes "
                "(spec.elasticsearch, or a sweep's shared cluster); it cannot reach into an external one")
    return None


@dataclass(frozen=True)
class Sweep(Owner):
    spec: SweepSpec
    kind = SWEEP_KIND
    spec_model = SweepSpec




@dataclass(frozen=True)
class Schedule(Owner):
    spec: ScheduleSpec
    kind = SCHEDULE_KIND
    spec_model = ScheduleSpec


def labels(owner: Owner, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "esbench",
        "app.kubernetes.io/instance": owner.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "esbench",
        "app.kubernetes.io/managed-by": "esbench-operator",
        _OWNER_LABELS[owner.kind]: owner.name,
    }


def owner_references(owner: Owner) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": API_VERSION,
            "kind": owner.kind,
            "name": owner.name,
            "uid": owner.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _metadata(owner: Owner, name: str, component: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": owner.namespace,
        "labels": labels(owner, component),
        "ownerReferences": owner_references(owner),
    }


@dataclass(frozen=True)
class SidecarImage:
    """The esbench image, which the sidecar of a cluster's pods runs (and a profiled cluster's profiler comes from)."""

    image: str
    image_pull_policy: str = "IfNotPresent"


def elasticsearch_manifest(experiment: Experiment, sidecar: SidecarImage | None = None) -> dict[str, Any]:
    """The ECK Elasticsearch resource for the Experiment's own cluster, its pods with esbench's
    sidecar (SIDECAR: the operator's image); with spec.profile, they record one from their start."""
    assert experiment.spec.elasticsearch is not None, "only an Experiment with spec.elasticsearch owns a cluster"
    return cluster_manifest(experiment, experiment.cluster, experiment.spec.elasticsearch, sidecar, experiment.spec.profile)


def cluster_manifest(owner: Owner, name: str, es: Elasticsearch, sidecar: SidecarImage | None = None,
                     profile: Profile | None = None, snapshots: bool = False) -> dict[str, Any]:
    """An ECK Elasticsearch resource as spec.elasticsearch describes it, owned by owner; its pods
    with esbench's sidecar when given its image (the operator always does), recording PROFILE
    if any; with SNAPSHOTS, a place for the snapshots of workload.reuseIndex (see _add_snapshots)."""
    assert sidecar or not profile, "a profiled cluster needs the esbench image"
    node_sets = es.node_sets or []
    if not node_sets:
        node_sets_spec = [("default", es.node_count or 1, None)]
    else:
        node_sets_spec = [(ns.name, ns.count, ns.roles) for ns in node_sets]

    manifest: dict[str, Any] = {
        "apiVersion": ECK_API_VERSION,
        "kind": "Elasticsearch",
        "metadata": _metadata(owner, name, "elasticsearch"),
        "spec": {
            "version": es.version,
            "nodeSets": [_node_set(owner, es, *ns) for ns in node_sets_spec],
        },
    }
    if es.image:
        manifest["spec"]["image"] = es.image
    if not es.tls:
        manifest["spec"]["http"] = {"tls": {"selfSignedCertificate": {"disabled": True}}}
    if sidecar:
        for node_set in manifest["spec"]["nodeSets"]:
            _add_sidecar(node_set["podTemplate"]["spec"], sidecar, name, es.tls, profile)
    if snapshots and es.nodes() == 1 and "path.repo" not in es.node_config():
        _add_snapshots(manifest["spec"]["nodeSets"][0])
    return manifest


def _add_snapshots(node_set: dict[str, Any]) -> None:
    """A volume as path.repo, where the runner keeps the indices it builds for workload.reuseIndex
    (runner/indexreuse.py finds it there) and later races of the cluster restore them. One node
    only: a filesystem repository must be one filesystem that every node mounts, which a volume
    of one pod is not."""
    node_set["config"]["path.repo"] = [SNAPSHOTS_DIR]
    pod_spec = node_set["podTemplate"]["spec"]
    pod_spec.setdefault("volumes", []).append({"name": "esbench-snapshots", "emptyDir": {}})
    pod_spec["containers"][0].setdefault("volumeMounts", []).append(
        {"name": "esbench-snapshots", "mountPath": SNAPSHOTS_DIR})


def _node_set(owner: Owner, es: Elasticsearch, name: str, count: int, roles: list[str] | None) -> dict[str, Any]:
    config: dict[str, Any] = {"node.roles": roles} if roles is not None else {}
    config.update(es.node_config())

    # ECK's pre-stop hook waits so that clients stop sending requests to a
    # terminating pod; nothing sends any to an esbench cluster once its race is over, the only
    # time it is stopped, so a cleanup waits for nothing.
    java_options = [CGROUP_HIERARCHY_OVERRIDE, *([f"-Xms{es.heap} -Xmx{es.heap}"] if es.heap else [])]
    env = [{"name": "PRE_STOP_ADDITIONAL_WAIT_SECONDS", "value": "0"},
           {"name": "ES_JAVA_OPTS", "value": " ".join(java_options)}]
    container: dict[str, Any] = {"name": ES_CONTAINER, "securityContext": copy.deepcopy(ES_CONTAINER_SECURITY_CONTEXT),
                                 "env": env}
    if es.resources:
        container["resources"] = es.resources.to_wire()

    pod_spec: dict[str, Any] = {
        "securityContext": copy.deepcopy(ES_POD_SECURITY_CONTEXT),
        "containers": [container],
        "initContainers": [{"name": name, "securityContext": copy.deepcopy(ES_CONTAINER_SECURITY_CONTEXT)}
                           for name in ECK_INIT_CONTAINERS],
    }
    node_set: dict[str, Any] = {
        "name": name,
        "count": count,
        "config": config,
        "podTemplate": {"metadata": {"labels": labels(owner, "elasticsearch")}, "spec": pod_spec},
    }
    if es.storage.type == StorageType.EMPTY_DIR:
        # ECK replaces its default PVC with a volume of this name.
        pod_spec["volumes"] = [{"name": "elasticsearch-data", "emptyDir": {}}]
    else:
        claim_spec: dict[str, Any] = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": es.storage.size}},
        }
        if es.storage.storage_class_name:
            claim_spec["storageClassName"] = es.storage.storage_class_name
        node_set["volumeClaimTemplates"] = [{"metadata": {"name": "elasticsearch-data"}, "spec": claim_spec}]
    return node_set


def _mount(volume: str, path: str, read_only: bool = True) -> dict[str, Any]:
    return {"name": volume, "mountPath": path, "readOnly": read_only}


def _add_sidecar(pod_spec: dict[str, Any], sidecar: SidecarImage, cluster: str, tls: bool, profile: Profile | None) -> None:
    """The sidecar that serves the node's probe (and with PROFILE, its recordings) to the Rally Job."""
    # The sidecar reads the Elasticsearch JVM's threads in /proc; the pod's first process is then the
    # kubelet's pause container, which reaps what the JVM's launcher leaves.
    pod_spec["shareProcessNamespace"] = True
    pod_spec.setdefault("volumes", []).append(
        # Readable by its owner (root) alone; the kubelet gives the pod's fsGroup read on it.
        {"name": "esbench-elastic-password", "secret": {"secretName": names.es_elastic_user_secret(cluster),
                                                        "items": [{"key": "elastic", "path": "password"}],
                                                        "defaultMode": 0o400}})
    args = [f"--data={SIDECAR_DATA_DIR}", f"--port={SIDECAR_PORT}", "--password-file=/esbench/elastic/password"]
    mounts = [_mount(ES_DATA_VOLUME, SIDECAR_DATA_DIR), _mount("esbench-elastic-password", "/esbench/elastic")]
    if profile:
        _add_profiler(pod_spec, profile, sidecar)
        args.append(f"--recordings={RECORDINGS_DIR}")
        mounts.append(_mount("esbench-recordings", RECORDINGS_DIR))
    if tls:  # ECK's certificate of the cluster, which names each pod of a node set
        args += ["--certificate=/esbench/http-certs/tls.crt", "--key=/esbench/http-certs/tls.key"]
        mounts.append(_mount(ES_HTTP_CERTS_VOLUME, "/esbench/http-certs"))
    pod_spec["containers"].append({
        "name": SIDECAR_CONTAINER, "image": sidecar.image, "imagePullPolicy": sidecar.image_pull_policy,
        "command": ["python", "-m", "esbench.sidecar"], "args": args,
        "ports": [{"name": "esbench", "containerPort": SIDECAR_PORT, "protocol": "TCP"}],
        "volumeMounts": mounts, "securityContext": copy.deepcopy(ES_CONTAINER_SECURITY_CONTEXT),
        # Limits equal to requests: a pod whose Elasticsearch container is Guaranteed stays so.
        "resources": {"requests": dict(SIDECAR_RESOURCES), "limits": dict(SIDECAR_RESOURCES)},
    })


def _add_profiler(pod_spec: dict[str, Any], profile: Profile, sidecar: SidecarImage) -> None:
    """async-profiler in the Elasticsearch JVM from its start, a new JFR file at every turn of its
    loop, in a folder the sidecar serves (docs/profiles.md)."""
    # %p: Elasticsearch's launcher starts a short JVM with the same options to read its final flags;
    # named by time alone, its file and the server's first one could be the same file.
    options = asyncprofiler.start_options(profile, f"{RECORDINGS_DIR}/recording-%p-%t.jfr", asyncprofiler.RECORDING_LOOP)
    jvm_option = f"-agentpath:{PROFILER_DIR}/{asyncprofiler.LIBRARY}={options}"
    pod_spec["volumes"].extend([
        {"name": "esbench-profiler", "emptyDir": {}},
        {"name": "esbench-jvm-options", "emptyDir": {}},
        {"name": "esbench-recordings", "emptyDir": {}},
    ])
    pod_spec["initContainers"].append({
        "name": PROFILER_INIT_CONTAINER, "image": sidecar.image, "imagePullPolicy": sidecar.image_pull_policy,
        "command": ["sh", "-ec", 'cp "$1" "$2/" && printf "%s\\n" "$3" > "$4"', "sh",
                    f"{IMAGE_PROFILER_DIR}/{asyncprofiler.LIBRARY}", PROFILER_DIR, jvm_option,
                    "/jvm-options/esbench-profiler.options"],
        "volumeMounts": [_mount("esbench-profiler", PROFILER_DIR, False), _mount("esbench-jvm-options", "/jvm-options", False)],
        "securityContext": copy.deepcopy(ES_CONTAINER_SECURITY_CONTEXT),
    })
    pod_spec["containers"][0].setdefault("volumeMounts", []).extend([
        _mount("esbench-profiler", PROFILER_DIR), _mount("esbench-jvm-options", ES_JVM_OPTIONS_DIR),
        _mount("esbench-recordings", RECORDINGS_DIR, False)])


def _every_pod_has(elasticsearch: dict[str, Any], kind: str, name: str) -> bool:
    """Whether the pods of every node set of an ECK cluster have a container (KIND: containers,
    initContainers) of this name."""
    node_sets = (elasticsearch.get("spec") or {}).get("nodeSets") or []
    return bool(node_sets) and all(
        any(c.get("name") == name for c in ((ns.get("podTemplate") or {}).get("spec") or {}).get(kind) or [])
        for ns in node_sets)


def records_profile(elasticsearch: dict[str, Any]) -> bool:
    """Whether the pods of an ECK cluster record a profile (esbench started their profiler)."""
    return _every_pod_has(elasticsearch, "initContainers", PROFILER_INIT_CONTAINER)


def node_sidecars(cluster: str, namespace: str, elasticsearch: dict[str, Any]) -> list[str] | None:
    """The esbench sidecar of every pod of an ECK cluster whose pods carry one, else None."""
    if not _every_pod_has(elasticsearch, "containers", SIDECAR_CONTAINER):
        return None
    scheme = "https" if readiness.serves_tls(elasticsearch) else "http"
    sources = []
    for node_set in elasticsearch["spec"]["nodeSets"]:
        service = names.es_node_set_service(cluster, node_set["name"])
        sources += [f"{scheme}://{service}-{i}.{service}.{namespace}.svc:{SIDECAR_PORT}"
                    for i in range(node_set.get("count", 1))]
    return sources


@dataclass(frozen=True)
class Connection:
    """How the Rally pod reaches the cluster under test; secrets only by reference."""

    url: str
    username: str | None = None
    password: SecretKeyRef | None = None
    ca: SecretKeyRef | None = None


def eck_connection(cluster: str, namespace: str, elasticsearch: dict[str, Any]) -> Connection:
    """An ECK cluster through ECK's own Service and Secrets, with TLS as its spec says."""
    tls = readiness.serves_tls(elasticsearch)
    # ECK's certificate names NAME-es-http.NAMESPACE.svc, not the cluster.local form.
    url = f"{'https' if tls else 'http'}://{names.es_http_service(cluster)}.{namespace}.svc:9200"
    return Connection(
        url=url,
        username="elastic",
        password=SecretKeyRef(name=names.es_elastic_user_secret(cluster), key="elastic"),
        ca=SecretKeyRef(name=names.es_http_public_certs_secret(cluster), key="ca.crt") if tls else None,
    )


def connection(experiment: Experiment, elasticsearch: dict[str, Any] | None) -> Connection:
    """The Experiment's cluster: an external URL as given, else the ECK cluster (its resource)."""
    external = experiment.spec.target.external if experiment.spec.target else None
    if external:
        return Connection(external.url, external.username, external.password_secret, external.ca_secret)
    assert elasticsearch is not None and experiment.cluster is not None
    return eck_connection(experiment.cluster, experiment.namespace, elasticsearch)


def rally_job_manifest(experiment: Experiment, connection: Connection, image: str, image_pull_policy: str,
                       deadline_grace_seconds: int = 120, default_resources: dict[str, Any] | None = None,
                       node_sidecars: list[str] | None = None) -> dict[str, Any]:
    """The Job that runs `esbench race` (Rally) against the cluster under test.

    Credentials come from Secrets by reference only, mounted as files; the pod gets no API token.
    The container gets spec.rally.resources, else default_resources (the operator's setting).
    NODE_SIDECARS: the nodes' esbench sidecars, in a cluster esbench made (node_sidecars).
    """
    spec = experiment.spec
    rally = spec.rally
    args = [
        "race",
        f"--target-url={connection.url}",
        f"--race-id={experiment.race_id}",
        f"--work-dir={WORK_DIR}",
        *(f"--node-sidecar={source}" for source in node_sidecars or []),
    ]
    env: list[dict[str, Any]] = [
        {"name": "ESBENCH_SPEC", "value": json.dumps(spec.to_wire(), sort_keys=True)},
        {"name": "HOME", "value": WORK_DIR},
    ]
    mounts = [{"name": "work", "mountPath": WORK_DIR}, {"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[dict[str, Any]] = [{"name": "work", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]

    def mount_secret_key(volume: str, ref: SecretKeyRef, directory: str, file: str, mode: int | None = None) -> str:
        """One key of a Secret as a read-only file; returns its path."""
        secret: dict[str, Any] = {"secretName": ref.name, "items": [{"key": ref.key, "path": file}]}
        if mode is not None:
            secret["defaultMode"] = mode
        volumes.append({"name": volume, "secret": secret})
        mounts.append({"name": volume, "mountPath": directory, "readOnly": True})
        return f"{directory}/{file}"

    if connection.ca:
        args.append(f"--ca-file={mount_secret_key('es-ca', connection.ca, CA_MOUNT, 'ca.crt')}")
    if connection.username:
        env.append({"name": "ES_USERNAME", "value": connection.username})
    if connection.password:
        # Readable by its owner (root) alone; the kubelet hands it to the pod's fsGroup with group
        # read, so that the runner can read it and no other user can.
        path = mount_secret_key("es-password", connection.password, PASSWORD_MOUNT, "password", mode=0o400)
        env.append({"name": "ES_PASSWORD_FILE", "value": path})
    container: dict[str, Any] = {
        "name": RALLY_CONTAINER,
        "image": rally.image or image,
        "imagePullPolicy": image_pull_policy,
        "args": args,
        "env": env,
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    resources = rally.resources.to_wire() if rally.resources else default_resources
    if resources:
        container["resources"] = resources

    pod_labels = labels(experiment, "rally")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(experiment, names.job_name(experiment.name), "rally"),
        "spec": {
            # A benchmark that failed is a result; a silent retry would hide it.
            "backoffLimit": 0,
            # The runner stops the race itself just before raceTimeoutSeconds (counted from its
            # own start) and still reports partial results; the grace covers scheduling and the
            # image pull, so the deadline only strikes a runner that hangs.
            "activeDeadlineSeconds": experiment.spec.lifecycle.race_timeout_seconds + deadline_grace_seconds,
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": RUNNER_UID,
                        "runAsGroup": RUNNER_UID,
                        "fsGroup": RUNNER_UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def race_json_configmap(experiment: Experiment, race_json: dict[str, Any]) -> dict[str, Any]:
    """The full race.json, kept beside the Experiment (the status holds the summary)."""
    text = json.dumps(race_json, sort_keys=True)
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(experiment, names.race_json_configmap_name(experiment.name), "results"),
        "immutable": True,
    }
    if len(text) <= CONFIGMAP_TEXT_LIMIT:
        manifest["data"] = {"race.json": text}
    else:
        manifest["binaryData"] = {"race.json.gz": base64.b64encode(gzip.compress(text.encode())).decode()}
    return manifest


def profiles_configmap(experiment: Experiment, files: dict[str, str]) -> dict[str, Any]:
    """The race's per-task profile files (FILES: name to base64 content, as the report brings them)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(experiment, names.profiles_configmap_name(experiment.name), "results"),
        "immutable": True,
        "binaryData": files,
    }


# What the history keeps of an object's metadata (not kopf's annotations or managedFields).
RECORDED_METADATA = ("name", "namespace", "uid", "labels", "creationTimestamp", "generation")
ESBENCH_ANNOTATIONS = "esbench.io/"  # esbench's own, kept too: a sweep's run's cell and configuration


def as_recorded(body: dict[str, Any]) -> dict[str, Any]:
    """An Experiment or sweep as the results store keeps it: kind, identity, spec and status."""
    metadata = {key: body["metadata"][key] for key in RECORDED_METADATA if key in body["metadata"]}
    annotations = {key: value for key, value in (body["metadata"].get("annotations") or {}).items()
                   if key.startswith(ESBENCH_ANNOTATIONS)}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"), "metadata": metadata,
            "spec": body.get("spec"), "status": body.get("status") or {}}


def race_json_of(configmap: dict[str, Any]) -> dict[str, Any] | None:
    """The race.json a ConfigMap of race_json_configmap holds."""
    if "race.json" in (configmap.get("data") or {}):
        return json.loads(configmap["data"]["race.json"])
    packed = (configmap.get("binaryData") or {}).get("race.json.gz")
    return json.loads(gzip.decompress(base64.b64decode(packed))) if packed else None


def sweep_run_manifest(sweep: Sweep, cell_id: str, cell_label: str, cell_spec: dict[str, Any], repetition: int,
                       attempt: int, shared_cluster: str | None) -> dict[str, Any]:
    """One run of a sweep's cell: an Experiment owned by the sweep.

    With a shared cluster the run uses the sweep's cluster (spec.target) instead of creating
    its own; the spec keeps everything else of the cell, and the round's perRound values, so the
    run is reproducible alone. Its configuration is the cell's, whatever the round.
    """
    spec = copy.deepcopy(grid.round_spec(cell_spec, sweep.spec.per_round, repetition))
    if shared_cluster:
        spec.pop("elasticsearch", None)
        spec["target"] = {"elasticsearchRef": {"name": shared_cluster}}
    metadata = _metadata(sweep, names.sweep_run_name(sweep.name, cell_id, repetition, attempt), "run")
    metadata["labels"].update({CELL_LABEL: cell_id, REPETITION_LABEL: str(repetition), ATTEMPT_LABEL: str(attempt)})
    metadata["annotations"] = {CELL_LABEL: cell_label, CONFIGURATION_ANNOTATION: records.configuration_id(cell_spec)}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}


def schedule_run_manifest(schedule: Schedule, stored_spec: dict[str, Any], tick: datetime,
                          confirms: str | None = None) -> dict[str, Any]:
    """The Experiment or ExperimentSweep a schedule's tick creates, with the spec as the schedule
    holds it now (STORED_SPEC, its spec as the API server stored it). CONFIRMS: the run whose
    suspected regression this one is made to confirm (at TICK, now)."""
    kind, section = (SWEEP_KIND, "sweep") if schedule.spec.sweep else (KIND, "experiment")
    name = names.confirming_run_name(confirms) if confirms else names.scheduled_run_name(schedule.name, tick.timestamp())
    metadata = _metadata(schedule, name, "run")
    metadata["annotations"] = {SCHEDULED_AT: status.timestamp(tick)}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": copy.deepcopy(stored_spec[section])}
