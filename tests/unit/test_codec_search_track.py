"""The codec-search track's parameter sources (tracks/codec-search/track.py, loaded as Rally loads
it): scattered hits over the corpus's own hosts, full-text matches on the corpus's own words, the
same sequence in every race.
Its queries run on real Elasticsearch in tests/runner (test_bundled_tracks, test_studies)."""

import collections
import itertools
import json
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


def test_random_matches_draw_two_words_of_the_corpus_as_often_as_they_occur(tmp_path):
    rng, vocabulary = random.Random(3), corpus.Vocabulary()
    with open(tmp_path / "documents-1k.json", "w") as sample:
        for i in range(1000):
            sample.write(json.dumps(corpus.log_event(i, rng, vocabulary, 2000)) + "\n")
    words = track.corpus_words(tmp_path / "documents-1k.json")
    assert len(words) > 200_000
    known = set(vocabulary.words)
    assert len([w for w in words if w not in known]) <= 1000  # a message's last word may be cut
    params = {"size": 10, "words_file": str(tmp_path / "documents-1k.json")}
    source = track.RandomMatches(None, params)
    bodies = requests(source.partition(0, 2), 2000)
    assert all(b["size"] == 10 and len(b["query"]["match"]["message"].split()) == 2 for b in bodies)
    asked = collections.Counter(w for b in bodies for w in b["query"]["match"]["message"].split())
    # Zipf: the corpus's most common word is asked far more often than a word of rank 100.
    assert asked[vocabulary.words[0]] > 10 * max(1, asked[vocabulary.words[99]])
    assert len(asked) > 300  # and many words, not a few cached answers
    # The same sequence in every race, another for every client.
    assert requests(track.RandomMatches(None, params).partition(0, 2), 50) == bodies[:50]
    assert requests(track.RandomMatches(None, params).partition(1, 2), 50) != bodies[:50]
