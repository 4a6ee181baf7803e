"""Rally parameter source of the codec-search track's random-hits task: every request returns
`size` documents spread over the whole index, so that its stored-field reads land anywhere in
the store, as a search application's scattered hits do, and no cache holds the answers.

The documents of one host (one of the corpus's 50), ordered by a random score with its own
seed: another host and seed each request, from a seeded generator, so that both codecs are
asked the very same sequence. Scoring a host's documents (2 % of them) is cheap next to
loading the hits, which is the cost this task measures.

Loaded by Rally (its own Python), so it stands alone: nothing from esbench is imported here.
"""

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


def register(registry):
    registry.register_param_source("random-hits", RandomHits)
