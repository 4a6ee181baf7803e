"""Log events, the same shape as the indexing track's: text and keywords that compress the way
real logs do, so that default (LZ4) and best_compression (DEFLATE) stored fields differ."""

from esbench.runner.corpus import Vocabulary, log_event

DEFAULTS = {"doc_count": 100000, "seed": 1, "message_bytes": None}


def documents(options, rng):
    vocabulary = Vocabulary()
    for i in range(int(options["doc_count"])):
        yield log_event(i, rng, vocabulary, options["message_bytes"] and int(options["message_bytes"]))
