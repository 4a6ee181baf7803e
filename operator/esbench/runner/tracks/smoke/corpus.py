"""Smoke corpus: small documents with a timestamp, a keyword, a number and a short text."""

from datetime import UTC, datetime, timedelta

from esbench.runner.corpus import Vocabulary

DEFAULTS = {"doc_count": 1000, "seed": 1}

START = datetime(2024, 1, 1, tzinfo=UTC)


def documents(options, rng):
    vocabulary = Vocabulary(size=1000)
    for i in range(int(options["doc_count"])):
        yield {
            "@timestamp": (START + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "id": i,
            "category": f"category-{rng.randrange(10)}",
            "value": rng.randrange(1000),
            "message": vocabulary.text(rng, rng.randint(5, 20)),
        }
