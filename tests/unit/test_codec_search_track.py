"""The codec-search track's random-hits parameter source (tracks/codec-search/track.py, loaded
as Rally loads it): scattered hits over the corpus's own hosts, the same sequence in every race.
Its queries run on real Elasticsearch in tests/runner (test_bundled_tracks, test_studies)."""

import itertools
import random

from esbench.runner import corpus
from tests.support import track_modules

track = track_modules.parameter_source("codec-search")


def requests(source, count):
    return [source.params()["body"] for _ in range(count)]


def test_the_hosts_asked_for_are_the_corpus_hosts():
    rng, vocabulary = random.Random(1), corpus.Vocabulary()
    hosts = {corpus.log_event(i, rng, vocabulary)["host"] for i in range(5000)}
    assert hosts == {f"host-{n:02d}" for n in range(track.HOSTS)}


def test_every_race_asks_the_same_sequence_and_every_client_its_own():
    params = {"index": "codec-search", "size": 20}
    first, again = track.RandomHits(None, params), track.RandomHits(None, params)
    assert requests(first.partition(0, 4), 50) == requests(again.partition(0, 4), 50)
    clients = [requests(track.RandomHits(None, params).partition(n, 4), 50) for n in range(4)]
    assert all(a != b for a, b in itertools.combinations(clients, 2))


def test_each_request_asks_another_host_and_seed_for_size_hits():
    bodies = requests(track.RandomHits(None, {"size": 7}), 1000)
    assert all(b["size"] == 7 for b in bodies)
    asked = {(b["query"]["function_score"]["query"]["term"]["host"], b["query"]["function_score"]["random_score"]["seed"])
             for b in bodies}
    assert len(asked) == 1000
    assert len({host for host, _ in asked}) == track.HOSTS
