"""The period-search track's queries (tracks/period-search/track.py, loaded as Rally loads it):
every form of "lived between A and B" means start <= B and end >= A, checked here for every
year pair against an evaluator of the clauses it builds; the real Elasticsearch check is in
tests/runner/test_bundled_tracks.py."""

import json
import random

import pytest

from esbench.runner import corpus
from esbench.runner.race import TRACKS_DIR
from tests.support import track_modules

FOLDER = TRACKS_DIR / "period-search"
track = track_modules.parameter_source("period-search")
generator = corpus.load_generator(FOLDER)


def matches(clause, doc):
    """Elasticsearch's meaning of the clauses the track builds, on one document."""
    if "bool" in clause:
        should = clause["bool"]["should"]
        return sum(matches(c, doc) for c in should) >= clause["bool"]["minimum_should_match"]
    if "terms" in clause:
        (field, values), = clause["terms"].items()
        return doc[field] in values
    (field, bounds), = clause["range"].items()
    if field == "period":  # intersects
        return doc["period"]["gte"] <= bounds["lte"] and doc["period"]["lte"] >= bounds["gte"]
    return bounds.get("gte", -10**9) <= doc[field] <= bounds.get("lte", 10**9)


@pytest.mark.parametrize("variant", ["ranges", "integer-range", "decades-and-edges", "terms-only"])
def test_every_form_means_lived_at_some_time_between_the_two_years(variant):
    rng = random.Random(3)
    people = list(generator.documents({"doc_count": 3000, "seed": 1}, rng))
    windows = [(a, a + rng.randint(10, 60)) for a in (rng.randint(1600, 1950) for _ in range(60))]
    windows += [(1900, 1950), (1908, 1952), (1600, 1700), (1599, 1601), (1550, 2020)]
    for first, last in windows:
        clauses = track.overlap(variant, first, last)
        for doc in people:
            expected = doc["start_year"] <= last and doc["end_year"] >= first
            assert all(matches(c, doc) for c in clauses) == expected, (variant, first, last, doc)


def test_the_queries_ask_for_surnames_the_corpus_has_most_often():
    names = json.loads(next(line for line in (FOLDER / "track.json").read_text().splitlines()
                            if line.startswith("{%- set surnames =")).split("=", 1)[1].removesuffix("-%}"))
    assert names == corpus.Vocabulary(size=3000).words[:16]


def test_every_task_gets_the_same_questions_and_each_client_its_own():
    params = {"variant": "ranges", "surnames": ["a", "b", "c"], "tags": list("abcdefgh"), "seed": 1}
    first = [track.PeriodQuery(None, {**params, "variant": v}).partition(0, 2).params()["body"] for v in ("match", "ranges")]
    windows = [json.dumps(body["query"]["bool"]["must"][0]) for body in first]
    assert windows[0] == windows[1]  # the same surname first
    other_client = track.PeriodQuery(None, params).partition(1, 2)
    sequence = [json.dumps(other_client.params()["body"]) for _ in range(5)]
    assert sequence != [json.dumps(track.PeriodQuery(None, params).partition(0, 2).params()["body"]) for _ in range(5)]
    assert track.PeriodQuery(None, params).partition(0, 1).params()["cache"] is False  # no request cache
