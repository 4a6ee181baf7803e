"""Log events: timestamps a few milliseconds apart, low-cardinality keywords, numbers, an IP
and a short free-text message; the typical shape of observability data."""

from esbench.runner.corpus import Vocabulary, log_event

DEFAULTS = {"doc_count": 100000, "seed": 1, "message_bytes": None}


def documents(options, rng):
    vocabulary = Vocabulary()
    for i in range(int(options["doc_count"])):
        yield log_event(i, rng, vocabulary, options["message_bytes"] and int(options["message_bytes"]))
