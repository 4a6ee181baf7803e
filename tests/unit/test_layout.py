"""The indices' segments a race leaves (runner.layout), from a `GET _segments` answer. Read from
real Elasticsearch in tests/runner/test_bundled_tracks.py."""

from esbench.runner import layout

MODE = "Lucene90StoredFieldsFormat.mode"


def segment(docs, size, compound, mode="BEST_SPEED"):
    return {"num_docs": docs, "size_in_bytes": size, "compound": compound, "attributes": {MODE: mode}}


def test_each_index_sums_its_shard_copies_segments_and_keeps_the_distinct_attributes():
    answer = {"indices": {
        "codec-search": {"shards": {
            "0": [{"segments": {"_0": segment(1000, 2**31, False), "_1": segment(10, 4096, True, "BEST_COMPRESSION")}}],
            "1": [{"segments": {"_0": segment(990, 2**31 - 1, False)}}, {"segments": {"_0": segment(990, 2**31 - 1, False)}}],
        }},
        ".security-7": {"shards": {"0": [{"segments": {"_0": segment(3, 100, True)}}]}},
        "another": {"shards": {"0": [{"segments": {}}]}},
    }}
    another, codec_search = layout.indices(answer)
    assert (another.index, another.segments, another.attributes) == ("another", 0, None)
    assert codec_search.index == "codec-search" and codec_search.shard_copies == 3
    assert (codec_search.segments, codec_search.compound_segments) == (4, 1)
    assert codec_search.documents == 1000 + 10 + 990 * 2 and codec_search.size_bytes == 2**31 + 4096 + 2 * (2**31 - 1)
    assert codec_search.attributes == {MODE: ["BEST_COMPRESSION", "BEST_SPEED"]}


def test_the_record_is_bounded_whatever_the_cluster_holds():
    answer = {"indices": {f"i{n:03d}": {"shards": {}} for n in range(layout.MAX_INDICES + 5)}}
    assert [i.index for i in layout.indices(answer)] == [f"i{n:03d}" for n in range(layout.MAX_INDICES)]
