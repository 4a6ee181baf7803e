"""Rules the CRD cannot express (free-form track params) live in the typed model."""

import pytest
from pydantic import ValidationError

from esbench.api.models import ExperimentSpec

BASE = {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}


def spec(index=None, track_params=None, **elasticsearch):
    body = {"elasticsearch": {"version": "8.15.3", **elasticsearch}, "workload": {"track": "smoke"}}
    if index is not None:
        body["index"] = index
    if track_params is not None:
        body["workload"]["trackParams"] = track_params
    return body


@pytest.mark.parametrize("index, params, expected", [
    ({"shards": 2}, {"number_of_shards": 3}, "workload.trackParams.number_of_shards conflicts with index.shards"),
    ({"replicas": 1}, {"number_of_replicas": 0}, "workload.trackParams.number_of_replicas conflicts with index.replicas"),
    ({"codec": "best_compression"}, {"index_settings": {}}, "workload.trackParams.index_settings conflicts"),
    ({"refreshInterval": "30s"}, {"index_settings": {}}, "workload.trackParams.index_settings conflicts"),
])
def test_track_params_may_not_repeat_index_fields(index, params, expected):
    with pytest.raises(ValidationError, match=expected.replace(".", r"\.")):
        ExperimentSpec.model_validate(spec(index=index, track_params=params))


@pytest.mark.parametrize("load, param", [
    ({"targetThroughput": 10}, "target_throughput"),
    ({"taskTargetThroughputs": {"range-1950s": 5}}, "target_throughputs"),
    ({"clients": 4}, "search_clients"),
    ({"timePeriodSeconds": 60}, "search_time_period"),
    ({"targetThroughput": 10, "schedule": "poisson"}, "search_schedule"),
])
def test_track_params_may_not_repeat_the_load_settings(load, param):
    body = {**BASE, "workload": {"track": "range-queries", "load": load, "trackParams": {param: 1}}}
    with pytest.raises(ValidationError, match=rf"workload\.trackParams\.{param} conflicts with workload\.load"):
        ExperimentSpec.model_validate(body)



def test_the_index_snapshot_param_is_esbenchs_own():
    body = {**BASE, "workload": {"track": "codec-search", "trackParams": {"index_snapshot": {"restore": True}}}}
    with pytest.raises(ValidationError, match=r"workload\.trackParams\.index_snapshot conflicts with workload\.reuseIndex"):
        ExperimentSpec.model_validate(body)


def test_track_params_alone_are_fine():
    parsed = ExperimentSpec.model_validate(spec(track_params={"number_of_shards": 3, "bulk_size": 500}))
    assert parsed.workload.track_params == {"number_of_shards": 3, "bulk_size": 500}


def test_unknown_fields_are_rejected_like_the_api_server_does():
    with pytest.raises(ValidationError, match="codecs"):
        ExperimentSpec.model_validate(spec(index={"codecs": "best_compression"}))


def test_settings_and_config_take_scalars_only():
    with pytest.raises(ValidationError):
        ExperimentSpec.model_validate(spec(index={"settings": {"index.mapping.ignore_malformed": True}}))
    with pytest.raises(ValidationError):
        ExperimentSpec.model_validate(spec(config={"thread_pool.write.queue_size": {"x": 1}}))
    ExperimentSpec.model_validate(spec(index={"settings": {"index.mapping.ignore_malformed": "true",
                                                            "index.merge.scheduler.max_thread_count": 1}}))


@pytest.mark.parametrize("store_type", ["mmapfs", "hybridfs"])
def test_a_track_params_store_type_needing_mmap_needs_a_node_with_mmap(store_type):
    params = {"index_settings": {"index.store.type": store_type}}
    with pytest.raises(ValidationError, match=rf"index\.store\.type to {store_type}, which Elasticsearch refuses"):
        ExperimentSpec.model_validate(spec(track_params=params))
    with pytest.raises(ValidationError, match="refuses on a node without mmap"):
        ExperimentSpec.model_validate(spec(track_params=params, config={"node.store.allow_mmap": "false"}))
    ExperimentSpec.model_validate(spec(track_params=params, config={"node.store.allow_mmap": "true"}))
    ExperimentSpec.model_validate(spec(track_params={"index_settings": {"index.store.type": "niofs"}}))
