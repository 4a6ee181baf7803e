"""The one place that names the objects an Experiment owns or uses.

ECK's names for the objects it creates follow its own namer (NAME-es-http, ...); keeping
them here means no other module formats a name.
"""

MAX_EXPERIMENT_NAME = 36  # ECK's limit for an Elasticsearch cluster name; enforced in the CRD
# Leaves room for a run's suffix (-c199-r50-a6) within MAX_EXPERIMENT_NAME; enforced in the CRD.
MAX_SWEEP_NAME = 24


def cluster_name(experiment: str) -> str:
    return experiment


def job_name(experiment: str) -> str:
    return f"{experiment}-rally"


def race_json_configmap_name(experiment: str) -> str:
    return f"{experiment}-race"


def profiles_configmap_name(experiment: str) -> str:
    return f"{experiment}-profiles"


def es_http_service(cluster: str) -> str:
    return f"{cluster}-es-http"


def es_node_set_service(cluster: str, node_set: str) -> str:
    """ECK's headless Service of a node set, which names its pods NAME-es-NODESET-i."""
    return f"{cluster}-es-{node_set}"


def es_pod_name(cluster: str, node_set: str, ordinal: int) -> str:
    """ECK's pod ORDINAL of a node set (its StatefulSet's)."""
    return f"{es_node_set_service(cluster, node_set)}-{ordinal}"


def es_elastic_user_secret(cluster: str) -> str:
    return f"{cluster}-es-elastic-user"


def es_http_public_certs_secret(cluster: str) -> str:
    return f"{cluster}-es-http-certs-public"


def sweep_cluster_name(sweep: str, group: int) -> str:
    return f"{sweep}-g{group}"


def sweep_run_name(sweep: str, cell_id: str, repetition: int, attempt: int) -> str:
    retry = f"-a{attempt}" if attempt > 1 else ""
    return f"{sweep}-{cell_id}-r{repetition}{retry}"


def scheduled_run_name(schedule: str, tick_epoch_seconds: float) -> str:
    # Minutes since the epoch, as a CronJob names its Jobs: one name per tick, so a tick's run is
    # never created twice.
    return f"{schedule}-{int(tick_epoch_seconds) // 60}"


def confirming_run_name(run: str) -> str:
    # One per run it confirms, so never made twice.
    return f"{run}c"


def is_confirming_run(name: str) -> bool:
    return name.endswith("c")
