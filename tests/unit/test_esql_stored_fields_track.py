"""The esql-stored-fields track's queries (tracks/esql-stored-fields/track.py, loaded as Rally
loads it): each fraction task's filter keeps exactly that fraction of the generated corpus, as
the PR's table needs. ES|QL cannot run here (not in the offline distribution); the track's
rendering and its run up to the queries on real Elasticsearch are in tests/runner/test_studies.py."""

import random
import re

import pytest

from esbench.runner import corpus
from esbench.runner.race import TRACKS_DIR
from tests.support import track_modules

FOLDER = TRACKS_DIR / "esql-stored-fields"
PR_FRACTIONS = [100.0, 99.9, 99.0, 90.0, 30.0, 20.0, 10.0, 9.0, 8.0, 7.0, 5.0, 1.0]
track = track_modules.parameter_source("esql-stored-fields")
generator = corpus.load_generator(FOLDER)


def keeps(esql: str, text: str) -> bool:
    """ES|QL's meaning of the one filter the track writes (none, IN or NOT IN a list), on one value."""
    found = re.fullmatch(r"FROM esql-stored-fields(?: \| WHERE (NOT )?text\.keyword IN \(([^)]*)\))? "
                         r"\| STATS SUM\(LENGTH\(text\)\)", esql)
    assert found, esql
    negated, listed = found.groups()
    if listed is None:
        return True
    values = re.findall(r'"([^"]*)"', listed)
    return (text in values) != bool(negated)


def test_the_track_asks_for_the_prs_fractions_by_default():
    assert f"fractions | default({PR_FRACTIONS})" in (FOLDER / "track.json").read_text()


@pytest.mark.parametrize("fraction", PR_FRACTIONS)
def test_each_fraction_task_loads_that_fraction_of_the_documents(fraction):
    options = {**generator.DEFAULTS, "doc_count": 20_000}
    texts = [doc["text"] for doc in generator.documents(options, random.Random(1))]
    source = track.FractionQuery(None, {"index": "esql-stored-fields", "fraction": fraction, "distinct-values": 1000})
    esql = source.params()["query"]
    assert sum(keeps(esql, text) for text in texts) == round(20_000 * fraction / 100)


def test_the_prs_shapes_of_query():
    assert track.query("test", 100.0, 1000) == "FROM test | STATS SUM(LENGTH(text))"
    assert track.query("test", 99.9, 1000) == 'FROM test | WHERE NOT text.keyword IN ("text 1000") | STATS SUM(LENGTH(text))'
    assert track.query("test", 1.0, 100) == 'FROM test | WHERE text.keyword IN ("text 0001") | STATS SUM(LENGTH(text))'


def test_a_fraction_that_keeps_no_value_is_refused():
    with pytest.raises(ValueError, match="keeps 0 of them"):
        track.query("test", 0.01, 1000)


def test_a_pragma_goes_with_the_acceptance_of_its_risks_and_no_pragma_with_nothing():
    params = {"fraction": 10.0, "distinct-values": 1000}
    assert track.FractionQuery(None, {**params, "pragma": {"data_partitioning": "shard"}}).params()["body"] == {
        "pragma": {"data_partitioning": "shard"}, "accept_pragma_risks": True}
    assert track.FractionQuery(None, {**params, "pragma": {}}).params()["body"] == {}


def test_every_request_gets_a_body_of_its_own():
    # Rally's esql runner writes the query into the body it is given.
    source = track.FractionQuery(None, {"fraction": 50.0, "distinct-values": 10, "pragma": {"data_partitioning": "shard"}})
    first = source.params()
    first["body"]["query"] = "FROM elsewhere"
    assert "query" not in source.params()["body"]
