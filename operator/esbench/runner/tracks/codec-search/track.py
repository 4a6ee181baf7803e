"""Rally parameter sources of the codec-search track.

random-hits: every request returns `size` documents spread over the whole index, so that its
stored-field reads land anywhere in the store, as a search application's scattered hits do,
and no cache holds the answers.

The documents of one host (one of the corpus's 50), ordered by a random score with its own
seed: another host and seed each request, from a seeded generator, so that both codecs are
asked the very same sequence. Scoring a host's documents (2 % of them) is cheap next to
loading the hits, which is the cost this task measures.

random-matches: a search application's query, full text: `match` on two words drawn from the
corpus's own messages (so as often as they occur there: common words often, rare ones seldom),
the `size` best hits with their `_source`. Each request other words, from a seeded generator.

Loaded by Rally (its own Python), so it stands alone: nothing from esbench is imported here.
"""

import json
import os
import random

HOSTS = 50  # the corpus's hosts: host-00 .. host-49 (esbench.runner.corpus.log_event)


def query(host, seed, size):
    return {
        "size": size,
        "query": {"function_score": {
            "query": {"term": {"host": f"host-{host:02d}"}},
            "random_score": {"seed": seed, "field": "_seq_no"},
            "boost_mode": "replace",
        }},
    }


class RandomHits:
    def __init__(self, track, params, **kwargs):
        self._params = params
        self._index = params.get("index", "codec-search")
        self._size = int(params.get("size", 20))
        self._random = random.Random(params.get("seed", 1))
        self.infinite = True

    def partition(self, partition_index, total_partitions):
        # Each client its own sequence; the same clients ask the same sequences in every race.
        return RandomHits(None, {**self._params, "seed": self._params.get("seed", 1) * 1000 + partition_index})

    def params(self):
        rng = self._random
        return {"index": self._index, "cache": False,
                "body": query(rng.randrange(HOSTS), rng.randrange(2**31), self._size)}


# The first 1000 documents of the corpus, which esbench writes into the prepared track (Rally's
# --test-mode file): their messages are the words random-matches draws from.
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "documents-1k.json")


def corpus_words(path=SAMPLE):
    with open(path, encoding="utf-8") as lines:
        return [word for line in lines for word in json.loads(line)["message"].split()]


class RandomMatches:
    def __init__(self, track, params, words=None, **kwargs):
        self._params = params
        self._index = params.get("index", "codec-search")
        self._size = int(params.get("size", 10))
        self._words = words if words is not None else corpus_words(params.get("words_file", SAMPLE))
        self._random = random.Random(params.get("seed", 1))
        self.infinite = True

    def partition(self, partition_index, total_partitions):
        seed = self._params.get("seed", 1) * 1000 + partition_index
        return RandomMatches(None, {**self._params, "seed": seed}, words=self._words)

    def params(self):
        words = " ".join(self._random.choice(self._words) for _ in range(2))
        return {"index": self._index, "cache": False,
                "body": {"query": {"match": {"message": words}}, "size": self._size}}


def register(registry):
    registry.register_param_source("random-hits", RandomHits)
    registry.register_param_source("random-matches", RandomMatches)
