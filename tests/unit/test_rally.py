"""From an Experiment spec to Rally's track params, client options and command line."""

import pytest

from esbench.api import models, validation
from esbench.api.reasons import Reason
from esbench.runner import rally


def make_spec(index=None, rally_section=None, **workload) -> models.ExperimentSpec:
    return models.ExperimentSpec.model_validate({
        "elasticsearch": {"version": "8.15.3", "nodeCount": 3},
        "index": index or {},
        "workload": {"track": "smoke", **workload},
        "rally": rally_section or {},
    })


# --- track params ----------------------------------------------------------------------


def test_only_what_the_spec_sets_becomes_a_track_param():
    assert rally.track_params(make_spec(), data_nodes=3) == {}


def test_index_section_maps_to_rally_tracks_conventions():
    spec = make_spec(index={"shards": 3, "replicas": 1, "codec": "best_compression", "refreshInterval": "30s",
                            "settings": {"index.sort.field": "@timestamp", "max_result_window": 20000}})
    assert rally.track_params(spec, data_nodes=3) == {
        "number_of_shards": 3,
        "number_of_replicas": 1,
        "index_settings": {
            "index.codec": "best_compression",
            "index.refresh_interval": "30s",
            "index.sort.field": "@timestamp",
            "index.max_result_window": 20000,  # one spelling: the index. prefix is added
        },
    }


def test_user_track_params_pass_through_beside_the_index_section():
    spec = make_spec(index={"replicas": 2, "codec": "best_compression"}, trackParams={"bulk_size": 500})
    assert rally.track_params(spec, data_nodes=3) == {
        "bulk_size": 500,
        "number_of_replicas": 2,
        "index_settings": {"index.codec": "best_compression"},
    }


def test_load_settings_become_the_bundled_tracks_search_params():
    spec = make_spec(track="range-queries", trackParams={"doc_count": 500}, load={
        "targetThroughput": 20, "taskTargetThroughputs": {"range-1950s": 5.5}, "clients": 4,
        "timePeriodSeconds": 60, "warmupTimePeriodSeconds": 5, "schedule": "poisson"})
    assert rally.track_params(spec, data_nodes=3) == {
        "doc_count": 500, "target_throughput": 20, "target_throughputs": {"range-1950s": 5.5}, "search_clients": 4,
        "search_time_period": 60, "search_warmup_time_period": 5, "search_schedule": "poisson",
    }


def test_a_schedule_is_of_a_fixed_rate():
    spec = {"elasticsearch": {"version": "8.19.21"},
            "workload": {"track": "range-queries", "load": {"clients": 4, "schedule": "poisson"}}}
    experiment = {"apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": "poisson"}, "spec": spec}
    with pytest.raises(validation.Rejected) as rejected:
        validation.admit(experiment)
    assert any("workload.load.schedule needs targetThroughput" in error for error in rejected.value.errors)
    spec["workload"]["load"]["taskTargetThroughputs"] = {"range-1950s": 5}
    assert validation.admit(experiment)["spec"]["workload"]["load"]["schedule"] == "poisson"


def test_user_index_settings_alone_are_passed_unchanged():
    spec = make_spec(trackParams={"index_settings": {"index.translog.durability": "async"}})
    assert rally.track_params(spec, 3) == {"index_settings": {"index.translog.durability": "async"}}


def test_explicit_index_fields_win_over_the_same_keys_in_the_free_settings_map():
    spec = make_spec(index={"refreshInterval": "1s", "settings": {"refresh_interval": "-1"}})
    assert rally.track_params(spec, 3)["index_settings"] == {"index.refresh_interval": "1s"}


def test_user_track_params_are_not_modified():
    user = {"index_settings": {"index.codec": "default"}, "number_of_replicas": 1}
    spec = make_spec(trackParams=user)
    rally.track_params(spec, 1)
    assert spec.workload.track_params == {"index_settings": {"index.codec": "default"}, "number_of_replicas": 1}


@pytest.mark.parametrize("replicas, data_nodes, expected", [
    (1, 1, "yellow"),  # a single node can never hold a primary's replica
    (2, 2, "yellow"),
    (1, 2, None),
    (0, 1, None),
])
def test_tracks_wait_for_yellow_only_when_replicas_cannot_all_be_assigned(replicas, data_nodes, expected):
    params = rally.track_params(make_spec(index={"replicas": replicas}), data_nodes)
    assert params.get("cluster_health") == expected


def test_replicas_given_as_index_setting_or_track_param_count_too():
    assert rally.track_params(make_spec(index={"settings": {"number_of_replicas": 1}}), 1)["cluster_health"] == "yellow"
    assert rally.track_params(make_spec(trackParams={"number_of_replicas": 1}), 1)["cluster_health"] == "yellow"


def test_an_explicit_cluster_health_other_than_green_is_kept():
    spec = make_spec(index={"replicas": 1}, trackParams={"cluster_health": "red"})
    assert rally.track_params(spec, 1)["cluster_health"] == "red"


def test_data_nodes_from_the_spec_count_only_nodes_that_can_hold_a_new_index():
    es = models.Elasticsearch.model_validate({"version": "8.15.3", "nodeSets": [
        {"name": "masters", "count": 3, "roles": ["master"]},
        {"name": "hot", "count": 2, "roles": ["data_hot", "data_content"]},
        {"name": "hot-only", "count": 2, "roles": ["data_hot"]},  # new indices prefer data_content
        {"name": "warm", "count": 4, "roles": ["data_warm"]},
        {"name": "any", "count": 1}]})
    assert rally.data_node_count(es) == 3
    assert rally.data_node_count(models.Elasticsearch(version="8.15.3", node_count=4)) == 4
    assert rally.data_node_count(models.Elasticsearch(version="8.15.3")) == 1


# --- client options and target ----------------------------------------------------------


def test_tls_target_with_ca_and_credentials():
    assert rally.client_options(use_ssl=True, ca_file="/ca/ca.crt", username="elastic", password="s3cret") == {
        "default": {"timeout": 60, "use_ssl": True, "verify_certs": True, "ca_certs": "/ca/ca.crt",
                    "basic_auth_user": "elastic", "basic_auth_password": "s3cret"}}


def test_plain_http_target_without_credentials():
    assert rally.client_options(use_ssl=False) == {"default": {"timeout": 60}}


def test_tls_without_ca_file_verifies_against_system_trust():
    options = rally.client_options(use_ssl=True)["default"]
    assert options["verify_certs"] is True and "ca_certs" not in options


@pytest.mark.parametrize("url, expected", [
    ("https://bench-es-http.ns.svc:9200", ("bench-es-http.ns.svc:9200", True)),
    ("http://127.0.0.1:9201/", ("127.0.0.1:9201", False)),
    ("https://es.example.com", ("es.example.com:443", True)),
    ("localhost:9200", ("localhost:9200", False)),
    ("https://[fd00::12]:9200", ("[fd00::12]:9200", True)),
    ("http://[::1]", ("[::1]:9200", False)),
])
def test_target_host_and_scheme(url, expected):
    assert rally.target_host(url) == expected


def test_rally_ini_declares_the_git_track_repository():
    ini = rally.rally_ini("https://git.example.com/tracks.git")
    assert "esbench.url = https://git.example.com/tracks.git" in ini
    assert "default.url = https://github.com/elastic/rally-tracks" in ini
    assert "config.version = 17" in ini and "${CONFIG_DIR}" in ini


# --- command line -----------------------------------------------------------------------

COMMON = dict(esrally=["/venv/bin/esrally"], race_id="r-1", target_hosts="es:9200",
              params_file="/w/track-params.json", client_options_file="/w/client-options.json")


def test_bundled_track_runs_offline_from_its_prepared_path():
    command = rally.race_command(make_spec(), track_path="/w/tracks/smoke", **COMMON)
    assert command == [
        "/venv/bin/esrally", "race", "--pipeline=benchmark-only", "--race-id=r-1",
        "--track-path=/w/tracks/smoke", "--offline",
        "--track-params=/w/track-params.json", "--on-error=abort",
        "--target-hosts=es:9200", "--client-options=/w/client-options.json",
    ]


def test_every_workload_option_reaches_the_command_line_and_extra_args_come_last():
    spec = make_spec(source="RallyTracks", track="geonames", challenge="append-no-conflicts",
                     includeTasks=["index-append", "type:search"], testMode=True, onError="continue",
                     repository={"url": "https://github.com/elastic/rally-tracks", "revision": "abc123"},
                     rally_section={"extraArgs": ["--user-tags=team:search", "--telemetry", "node-stats"]})
    command = rally.race_command(spec, report_file="/w/report.md", **COMMON)
    assert command[4:] == [
        "--track=geonames", "--track-revision=abc123", "--challenge=append-no-conflicts",
        "--track-params=/w/track-params.json", "--on-error=continue",
        "--include-tasks=index-append,type:search", "--test-mode",
        "--target-hosts=es:9200", "--client-options=/w/client-options.json", "--report-file=/w/report.md",
        "--user-tags=team:search", "--telemetry", "node-stats",
    ]
    assert "--offline" not in command


def test_git_track_names_the_repository_declared_in_rally_ini():
    spec = make_spec(source="Git", track="my-track", excludeTasks=["force-merge"],
                     repository={"url": "https://git.example.com/tracks.git", "revision": "v1"})
    command = rally.race_command(spec, **COMMON)
    assert "--track=my-track" in command
    assert f"--track-repository={rally.GIT_REPOSITORY_NAME}" in command
    assert "--track-revision=v1" in command
    assert "--exclude-tasks=force-merge" in command


def test_a_bundled_track_without_its_prepared_path_is_a_programming_error():
    with pytest.raises(ValueError):
        rally.race_command(make_spec(), **COMMON)


# --- reading Rally's output -----------------------------------------------------------------

UNUSED_PARAM = """
[INFO] Race id is [r2]
[ERROR] Cannot race. Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/esrally/track/loader.py", line 1262, in read
    raise exceptions.TrackConfigError(f"Unused track parameters {sorted(unused_user_defined_track_params)}.")
esrally.exceptions.TrackConfigError: Unused track parameters ['bogus_param'].

\x1b[1mGetting further help:\x1b[0m
"""

BAD_QUERY = """
[INFO] Race id is [r3]
[ERROR] Cannot race. Error in load generator [0]
\tCannot run task [term]: Request returned an error. Error type: api, Description: {"error":"parsing_exception"}, HTTP Status: 400

Getting further help:
"""


def test_an_unused_track_parameter_is_a_track_error_with_rallys_message():
    assert rally.failure_kind(UNUSED_PARAM) == Reason.TRACK_ERROR
    assert rally.rally_error(UNUSED_PARAM) == (
        "esrally.exceptions.TrackConfigError: Unused track parameters ['bogus_param'].")


def test_a_failing_request_is_a_race_failure_with_the_elasticsearch_error():
    assert rally.failure_kind(BAD_QUERY) == Reason.RACE_FAILED
    message = rally.rally_error(BAD_QUERY)
    assert message.startswith("Cannot race. Error in load generator [0] Cannot run task [term]")
    assert "parsing_exception" in message


@pytest.mark.parametrize("output, kind", [
    ("[ERROR] Cannot race. Unknown challenge [nope] for track [geonames]", Reason.TRACK_ERROR),
    ("[ERROR] Cannot race. Track geonam does not exist", Reason.TRACK_ERROR),
    ("[ERROR] Cannot race. Elasticsearch REST API layer is not available.", Reason.TARGET_UNREACHABLE),
    ("[ERROR] Cannot race. There are other Rally processes running", Reason.RACE_FAILED),
])
def test_failure_kinds_from_rally_messages(output, kind):
    assert rally.failure_kind(output) == kind


def test_no_error_block_gives_no_message_but_the_exit_status():
    assert rally.rally_error("[INFO] SUCCESS (took 12 seconds)") is None
    assert rally.why_failed("[INFO] SUCCESS (took 12 seconds)", 64) == "esrally exited with status 64"
    assert rally.why_failed(BAD_QUERY, 64) == rally.rally_error(BAD_QUERY)
