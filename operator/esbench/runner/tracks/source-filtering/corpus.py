"""Articles: a few small fields and one large text field (`body`, about body_bytes bytes), so
that what a search returns, not what it matches, dominates its cost."""

from datetime import UTC, datetime, timedelta

from esbench.runner.corpus import Vocabulary

DEFAULTS = {"doc_count": 20000, "seed": 1, "body_bytes": 8192}

START = datetime(2020, 1, 1, tzinfo=UTC)

# Rally's test mode indexes the newest 1000, the ones an export with export_count reads: the
# first 1000 hold none of them when doc_count exceeds export_count by 1000 or more.
TEST_MODE_LAST = True


def documents(options, rng):
    vocabulary = Vocabulary()
    body_bytes = int(options["body_bytes"])
    for i in range(int(options["doc_count"])):
        yield {
            "id": i,
            "title": vocabulary.text(rng, rng.randint(2, 6)),
            "category": f"category-{rng.randrange(20)}",
            "created": (START + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "price": round(rng.uniform(1, 500), 2),
            "body": vocabulary.text_of_bytes(rng, int(rng.uniform(0.5, 1.5) * body_bytes)),
        }
