"""The one place that names the objects an Experiment owns or uses.

ECK's names for the objects it creates follow its own namer (NAME-es-http, ...); keeping
them here means no other module formats a name.
"""

MAX_EXPERIMENT_NAME = 36  # ECK's limit for an Elasticsearch cluster name; enforced in the CRD


def cluster_name(experiment: str) -> str:
    return experiment


def job_name(experiment: str) -> str:
    return f"{experiment}-rally"


def race_json_configmap_name(experiment: str) -> str:
    return f"{experiment}-race"


def es_http_service(cluster: str) -> str:
    return f"{cluster}-es-http"


def es_elastic_user_secret(cluster: str) -> str:
    return f"{cluster}-es-elastic-user"


def es_http_public_certs_secret(cluster: str) -> str:
    return f"{cluster}-es-http-certs-public"
