"""The bundled tracks follow rally-tracks' parameter conventions and generate the same corpus
for the same parameters (the Rally races themselves run in tests/runner)."""

import json

import pytest

from esbench.api import models
from esbench.runner import corpus
from esbench.runner.race import TRACKS_DIR

STANDARD_PARAMS = ("number_of_shards", "number_of_replicas", "index_settings", "cluster_health")


def test_every_bundled_track_is_shipped():
    assert sorted(p.name for p in TRACKS_DIR.iterdir() if (p / "track.json").exists()) == sorted(models.BUNDLED_TRACKS)


@pytest.mark.parametrize("track", models.BUNDLED_TRACKS)
def test_a_bundled_track_accepts_the_params_esbench_derives_from_the_spec(track):
    # Rally rejects unused track params, and the runner passes these whenever the spec sets them.
    text = "".join(p.read_text() for p in (TRACKS_DIR / track).glob("*.json"))
    for param in (*STANDARD_PARAMS, *corpus.load_generator(TRACKS_DIR / track).DEFAULTS):
        assert param in text, f"{track} does not use track param {param}"


@pytest.mark.parametrize("track", models.BUNDLED_TRACKS)
def test_a_bundled_track_has_a_readme_listing_its_parameters(track):
    readme = (TRACKS_DIR / track / "README.md").read_text()
    load = LOAD_PARAMS if track in models.LOAD_TRACKS else ()
    for param in (*STANDARD_PARAMS, "doc_count", "seed", *load):
        assert f"`{param}`" in readme


LOAD_PARAMS = tuple(models.Load(target_throughput=1, task_target_throughputs={}, clients=1, time_period_seconds=1,
                                warmup_time_period_seconds=1, schedule="poisson").track_params())


@pytest.mark.parametrize("track", models.BUNDLED_TRACKS)
def test_the_load_settings_drive_every_search_task_of_the_tracks_that_take_them(track):
    text = (TRACKS_DIR / track / "track.json").read_text()
    assert ('rally.collect(parts="../search-load.j2")' in text) == (track in models.LOAD_TRACKS)
    if track in models.LOAD_TRACKS:
        # Each task's text runs from its operation's type to the next one's: a search's must call search_load.
        for task in text.split('"operation-type": ')[1:]:
            assert not task.startswith('"search"') or "search_load(" in task, "a search task without search_load"
        assert "iterations" not in text and "search_clients" not in text  # only through search-load.j2
    shared = (TRACKS_DIR / "search-load.j2").read_text()
    assert all(param in shared for param in LOAD_PARAMS)


@pytest.mark.parametrize("track", models.BUNDLED_TRACKS)
def test_the_tracks_that_reuse_an_index_snapshot_and_restore_it_the_shared_way(track):
    text = (TRACKS_DIR / track / "track.json").read_text()
    reuses = track in models.INDEX_REUSE_TRACKS
    assert ('rally.collect(parts="../index-reuse.j2")' in text) == reuses
    assert (f'snapshot_and_delete("{track}")' in text and f'restore("{track}")' in text) == reuses
    assert "index_snapshot" not in text and "restore-snapshot" not in text  # only through index-reuse.j2


def test_source_filtering_finds_its_newest_documents_where_its_corpus_dates_them():
    # export_count's range repeats corpus.py's start and default document count: a template cannot import them.
    generator = corpus.load_generator(TRACKS_DIR / "source-filtering")
    text = (TRACKS_DIR / "source-filtering" / "track.json").read_text()
    assert f'"{generator.START:%Y-%m-%dT%H:%M:%SZ}||+"' in text
    assert f"doc_count | default({generator.DEFAULTS['doc_count']})" in text


@pytest.mark.parametrize("track", models.BUNDLED_TRACKS)
def test_the_same_params_generate_byte_identical_corpora(track, tmp_path):
    params = {"doc_count": 50, "body_bytes": 300}
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        folder.mkdir()
        (folder / corpus.GENERATOR).write_bytes((TRACKS_DIR / track / corpus.GENERATOR).read_bytes())
        generated = corpus.generate(folder, track, params)
    assert (first / corpus.DOCUMENTS).read_bytes() == (second / corpus.DOCUMENTS).read_bytes()
    lines = (first / corpus.DOCUMENTS).read_bytes().splitlines(keepends=True)
    assert generated.document_count == len(lines) == 50
    assert generated.uncompressed_bytes == sum(len(line) for line in lines)
    assert json.loads((first / corpus.CORPUS_DEFINITION).read_text()) == {
        "name": track,
        "documents": [{"source-file": corpus.DOCUMENTS, "document-count": 50,
                       "uncompressed-bytes": generated.uncompressed_bytes}],
    }


def test_a_cached_corpus_is_generated_once_per_generator_and_params(tmp_path):
    cache = tmp_path / "cache"

    def prepared(name: str, **params) -> tuple[corpus.Corpus, bytes]:
        folder = tmp_path / name
        folder.mkdir()
        (folder / corpus.GENERATOR).write_bytes((TRACKS_DIR / "smoke" / corpus.GENERATOR).read_bytes())
        generated = corpus.generate(folder, "smoke", {"doc_count": 20, **params}, cache)
        return generated, (folder / corpus.DOCUMENTS).read_bytes()

    first, documents = prepared("first")
    (kept,) = cache.iterdir()
    # Not a copy: one written while the race that follows is measured would count in its I/O.
    assert all((tmp_path / "first" / file).samefile(kept / file) for file in corpus.CORPUS_FILES)
    assert not list(cache.glob(".*")), "the staging folder was renamed into place"
    # Marked in the cache: a corpus that comes out with the mark was taken from it, not generated again.
    (kept / corpus.DOCUMENTS).write_bytes(documents + b"{}\n")
    again, taken = prepared("again")
    assert again == first and taken == documents + b"{}\n"
    other, different = prepared("other", seed=2)
    assert other.options["seed"] == 2 and different != documents and len(list(cache.iterdir())) == 2


def test_another_seed_gives_another_corpus_and_test_mode_gets_the_first_1000(tmp_path):
    texts = []
    for seed in (1, 2):
        folder = tmp_path / str(seed)
        folder.mkdir()
        (folder / corpus.GENERATOR).write_bytes((TRACKS_DIR / "smoke" / corpus.GENERATOR).read_bytes())
        corpus.generate(folder, "smoke", {"doc_count": 1200, "seed": seed})
        texts.append((folder / corpus.DOCUMENTS).read_bytes())
        first_1k = (folder / corpus.TEST_MODE_DOCUMENTS).read_bytes()
        assert first_1k.count(b"\n") == 1000 and texts[-1].startswith(first_1k)
    assert texts[0] != texts[1]


def test_a_corpus_needs_at_least_one_document(tmp_path):
    with pytest.raises(ValueError):
        corpus.corpus_options(corpus.load_generator(TRACKS_DIR / "smoke"), {"doc_count": 0})


def test_range_queries_decades_cover_exactly_the_years_of_a_period():
    generator = corpus.load_generator(TRACKS_DIR / "range-queries")
    assert generator.decades(1949, 1961) == ["1940", "1950", "1960"]
    assert generator.decades(1950, 1950) == ["1950"]


@pytest.mark.parametrize("track", ["indexing", "codec-search"])
def test_message_bytes_makes_log_events_of_that_size_and_leaves_the_default_corpus_as_it_was(track, tmp_path):
    sizes = {}
    for message_bytes in (None, 5000):
        folder = tmp_path / str(message_bytes)
        folder.mkdir()
        (folder / corpus.GENERATOR).write_bytes((TRACKS_DIR / track / corpus.GENERATOR).read_bytes())
        params = {"doc_count": 400} | ({"message_bytes": message_bytes} if message_bytes else {})
        generated = corpus.generate(folder, track, params)
        sizes[message_bytes] = generated.uncompressed_bytes / generated.document_count
    assert 250 < sizes[None] < 450  # the short log lines the README states (about 350 bytes)
    assert 5000 < sizes[5000] < 5600  # the message plus the other fields
    # A bulk size in bytes becomes documents of this corpus.
    assert generated.documents_in(5 * 2**20) == round(5 * 2**20 / sizes[5000])
