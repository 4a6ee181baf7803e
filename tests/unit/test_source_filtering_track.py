"""The source-filtering track (study 000) exports newest first, as the seed's PMC export did: its
searches sort by `created` descending, and its corpus makes each article newer than the one
before. Its races run on real Elasticsearch in tests/cli/test_profile.py."""

import random

from esbench.runner import corpus
from esbench.runner.race import TRACKS_DIR

TRACK = TRACKS_DIR / "source-filtering"


def test_the_exports_sort_newest_first():
    text = (TRACK / "track.json").read_text()
    assert text.count('"sort": [{"created": "desc"}]') == 1  # the one search body every export task shares


def test_each_article_is_newer_than_the_one_before():
    articles = list(corpus.load_generator(TRACK).documents({"doc_count": 500, "body_bytes": 100}, random.Random(1)))
    assert [a["id"] for a in articles] == list(range(500))
    created = [a["created"] for a in articles]
    assert created == sorted(set(created))  # ISO 8601 in UTC: text order is time order


def test_test_mode_indexes_the_newest_articles_which_an_export_of_the_newest_reads(tmp_path):
    (tmp_path / corpus.GENERATOR).write_bytes((TRACK / corpus.GENERATOR).read_bytes())
    corpus.generate(tmp_path, "source-filtering", {"doc_count": 2500, "body_bytes": 100})
    lines = (tmp_path / corpus.DOCUMENTS).read_bytes().splitlines(keepends=True)
    assert (tmp_path / corpus.TEST_MODE_DOCUMENTS).read_bytes() == b"".join(lines[-corpus.TEST_MODE_COUNT:])
