"""The plan of an ExperimentSweep: cells, field paths, CRD validation, baseline, run order, cluster keys."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from esbench.api import models
from esbench.planning import grid

TEMPLATE = {"elasticsearch": {"version": "8.15.0"}, "workload": {"track": "smoke"}}
CODECS = {"field": "index.codec", "values": ["default", "best_compression"]}
VERSIONS = {"field": "elasticsearch.version", "values": ["8.15.0", "8.16.0"]}


def sweep(*matrix: dict[str, Any], **fields: Any) -> models.SweepSpec:
    return models.SweepSpec(template=fields.pop("template", TEMPLATE), matrix=list(matrix), **fields)


def plan(*matrix: dict[str, Any], **fields: Any) -> grid.Plan:
    return grid.plan(sweep(*matrix, **fields), "sweep", "default")


def bulk_sizes(n: int) -> dict[str, Any]:
    return {"field": "workload.trackParams.bulk_size", "values": [100 * (i + 1) for i in range(n)]}


def keys(p: grid.Plan) -> list[tuple[str, int]]:
    return [run.key for run in p.runs]


# --- cells ---------------------------------------------------------------------------------


def test_matrix_product_varies_the_first_axis_slowest_with_ids_and_labels():
    cells = plan(CODECS, VERSIONS).cells
    assert [c.id for c in cells] == ["c0", "c1", "c2", "c3"]
    assert [c.values for c in cells] == [
        {"index.codec": "default", "elasticsearch.version": "8.15.0"},
        {"index.codec": "default", "elasticsearch.version": "8.16.0"},
        {"index.codec": "best_compression", "elasticsearch.version": "8.15.0"},
        {"index.codec": "best_compression", "elasticsearch.version": "8.16.0"},
    ]
    assert cells[3].label == 'index.codec="best_compression", elasticsearch.version="8.16.0"'
    assert cells[3].spec["index"]["codec"] == "best_compression"
    assert cells[3].spec["elasticsearch"]["version"] == "8.16.0"


def test_a_template_without_matrix_is_one_cell_repeated_after_one_warmup_run_by_default():
    p = plan(repetitions=4)
    assert [(c.id, c.values, c.label) for c in p.cells] == [("c0", {}, "template")]
    assert keys(p) == [("w0", 1), *(("c0", r) for r in range(1, 5))]


def test_exclude_drops_matching_cells():
    dropped = {"index.codec": "best_compression", "elasticsearch.version": "8.15.0"}
    cells = plan(CODECS, VERSIONS, exclude=[dropped]).cells
    assert [tuple(c.values.values()) for c in cells] == [
        ("default", "8.15.0"), ("default", "8.16.0"), ("best_compression", "8.16.0")]
    assert [c.id for c in cells] == ["c0", "c1", "c2"]


def test_include_adds_a_cell_once():
    extra = {"index.codec": "best_compression", "elasticsearch.version": "8.17.0"}
    existing = {"index.codec": "default", "elasticsearch.version": "8.15.0"}
    cells = plan(CODECS, VERSIONS, include=[extra, existing, extra]).cells
    assert len(cells) == 5
    assert (cells[4].id, cells[4].values) == ("c4", extra)
    assert cells[4].spec["elasticsearch"]["version"] == "8.17.0"


def test_excluding_every_cell_is_invalid():
    with pytest.raises(grid.InvalidSweep, match="no cells"):
        plan(CODECS, exclude=[{"index.codec": "default"}, {"index.codec": "best_compression"}])


def test_a_matrix_with_too_many_combinations_is_refused_before_it_is_expanded(monkeypatch):
    eight_axes = [{"field": f"workload.trackParams.p{i}", "values": list(range(50))} for i in range(8)]
    monkeypatch.setattr(grid.itertools, "product", lambda *axes: pytest.fail("the matrix was expanded"))
    with pytest.raises(grid.InvalidSweep, match=f"39062500000000 combinations; at most {grid.MAX_COMBINATIONS}"):
        plan(*eight_axes)


def test_cells_are_checked_under_the_longest_name_a_run_gets():
    # A 20-character sweep's longest run is NAME-c1-r3-a2 (29 characters); ECK's pod names allow
    # name + nodeSet name + digits of the count <= 48.
    node_sets = {"field": "elasticsearch.nodeSets", "values": [[{"name": "n" * 18, "count": 9}],
                                                             [{"name": "n" * 19, "count": 9}]]}
    with pytest.raises(grid.InvalidSweep, match="cell c1 .*too long together"):
        grid.plan(sweep(node_sets, repetitions=3, max_retries=1), "s" * 20, "default")
    fits = {**node_sets, "values": node_sets["values"][:1]}
    assert len(grid.plan(sweep(fits, repetitions=3, max_retries=1), "s" * 20, "default").cells) == 1


def test_more_than_max_cells_is_invalid():
    # An axis has at most 50 values: 41 x 5 = 205 cells, 50 x 4 = 200.
    clients = {"field": "workload.trackParams.clients", "values": [1, 2, 4, 8, 16]}
    with pytest.raises(grid.InvalidSweep, match=f"makes 205 cells; at most {grid.MAX_CELLS}"):
        plan(bulk_sizes(41), clients)
    assert len(plan(bulk_sizes(50), {**clients, "values": [1, 2, 4, 8]}, repetitions=1).cells) == grid.MAX_CELLS


# --- field paths -----------------------------------------------------------------------------


def test_index_settings_path_sets_one_dotted_key():
    assert models.field_path("index.settings.index.translog.durability") == ["index", "settings", "index.translog.durability"]
    cell = plan({"field": "index.settings.index.translog.durability", "values": ["async"]}).cells[0]
    assert cell.spec["index"]["settings"] == {"index.translog.durability": "async"}


def test_track_params_and_version_paths():
    cell = plan(bulk_sizes(1), {"field": "elasticsearch.version", "values": ["8.16.1"]}).cells[0]
    assert cell.spec["workload"]["trackParams"] == {"bulk_size": 100}
    assert cell.spec["elasticsearch"]["version"] == "8.16.1"


def test_with_value_leaves_the_template_untouched():
    template = {"index": {"settings": {"a": "1"}}}
    assert grid.with_value(template, "index.settings.b", "2") == {"index": {"settings": {"a": "1", "b": "2"}}}
    assert template == {"index": {"settings": {"a": "1"}}}


# --- validation against the Experiment CRD ------------------------------------------------


@pytest.mark.parametrize("field, value, message", [
    ("index.codec", "zstd", 'spec.index.codec: Unsupported value: "zstd"'),
    ("elasticsearch.version", "8.x", "elasticsearch.version must look like MAJOR.MINOR.PATCH"),
])
def test_a_cell_the_crd_rejects_is_invalid_naming_the_cell(field, value, message):
    with pytest.raises(grid.InvalidSweep) as error:
        plan({"field": "workload.trackParams.bulk_size", "values": [1, 2]}, {"field": field, "values": [value]})
    assert str(error.value).startswith(f'cell c0 (workload.trackParams.bulk_size=1, {field}="{value}"): ')
    assert 'Experiment.esbench.io "sweep-c1-r3-a2" is invalid' in str(error.value)  # the longest run name
    assert message in str(error.value)


@pytest.mark.parametrize("field", ["metadata.name", "spec.index.codec", "index", "index..codec"])
def test_a_field_outside_the_spec_is_invalid(field):
    with pytest.raises(grid.InvalidSweep, match="not a field of the Experiment spec"):
        plan({"field": field, "values": ["x"]})


@pytest.mark.parametrize("field, value", [
    ("rally.image", "mine/rally:1"), ("elasticsearch.image", "mine/es:1"), ("workload.source", "Git"),
    ("workload.repository.url", "https://example.org/tracks.git"), ("target.external.url", "http://es:9200"),
])
def test_what_admission_checks_against_the_creator_cannot_vary_between_cells(field, value):
    # Runs are created by the operator: the chart's admission policy only sees the template.
    for matrix, include in (([{"field": field, "values": [value]}], None), ([], [{field: value}])):
        with pytest.raises(grid.InvalidSweep, match=f"field '{field}' cannot vary between cells"):
            plan(*matrix, include=include)


ORDERS = {"field": "workload.trackParams.queries", "values": [["a", "b"], ["b", "a"]]}


def test_a_round_the_crd_rejects_is_invalid_naming_the_cell_and_the_round():
    shards = {"field": "workload.trackParams.number_of_shards", "values": [1, 2]}
    with pytest.raises(grid.InvalidSweep) as error:
        plan(CODECS, per_round=[shards], template={**TEMPLATE, "index": {"shards": 3}})
    assert str(error.value).startswith('cell c0 (index.codec="default") in round 1: ')
    assert "workload.trackParams.number_of_shards conflicts with index.shards" in str(error.value)


def test_a_rounds_values_come_round_again_and_leave_the_cells_as_they_are():
    p = plan(CODECS, per_round=[ORDERS])
    assert all("queries" not in (cell.spec["workload"].get("trackParams") or {}) for cell in p.cells)
    per_round = sweep(CODECS, per_round=[ORDERS]).per_round
    assert [grid.round_spec(p.cells[1].spec, per_round, r)["workload"]["trackParams"]["queries"] for r in (1, 2, 3)] \
        == [["a", "b"], ["b", "a"], ["a", "b"]]
    assert grid.round_spec(p.cells[1].spec, None, 2) == p.cells[1].spec


def test_cells_come_back_with_crd_defaults():
    spec = plan(CODECS).cells[0].spec
    assert spec["workload"]["source"] == "Bundled"
    assert spec["lifecycle"]["cleanup"] == "Delete"


# --- baseline and gates -------------------------------------------------------------------


def test_baseline_is_chosen_by_values_and_defaults_to_the_first_cell():
    assert plan(CODECS, VERSIONS).baseline.id == "c0"
    assert plan(CODECS, VERSIONS, baseline={"index.codec": "best_compression"}).baseline.id == "c2"


LIMITS = {"field": "elasticsearch.heap", "values": ["1g", "2g"]}


def test_compare_within_gives_each_level_a_baseline_of_its_own():
    # c0 1g/default, c1 1g/best_compression, c2 2g/default, c3 2g/best_compression
    expected = {"c0": "c0", "c1": "c0", "c2": "c2", "c3": "c2"}
    assert plan(LIMITS, CODECS, compareWithin=["elasticsearch.heap"]).baselines == expected
    chosen = plan(LIMITS, CODECS, compareWithin=["elasticsearch.heap"], baseline={"index.codec": "best_compression"})
    assert chosen.baselines == {"c0": "c1", "c1": "c1", "c2": "c3", "c3": "c3"} and chosen.baseline.id == "c1"
    assert plan(LIMITS, CODECS).baselines == dict.fromkeys(expected, "c0")


def test_compare_within_needs_the_baseline_at_every_level_and_not_named_in_it():
    excluded = [{"elasticsearch.heap": "2g", "index.codec": "default"}]
    with pytest.raises(grid.InvalidSweep, match=r'matches no cell with \{"elasticsearch.heap": "2g"\}'):
        plan(LIMITS, CODECS, compareWithin=["elasticsearch.heap"], exclude=excluded)
    with pytest.raises(grid.InvalidSweep, match="baseline names elasticsearch.heap, which compareWithin gives"):
        plan(LIMITS, CODECS, compareWithin=["elasticsearch.heap"], baseline={"elasticsearch.heap": "1g"})
    gate = {"task": "bulk", "metric": "throughput.median", "maxRegressionPercent": 5, "cells": ["c2", "c3"]}
    with pytest.raises(grid.InvalidSweep, match="names the baseline c2"):
        plan(LIMITS, CODECS, compareWithin=["elasticsearch.heap"], gates=[gate])


def test_a_baseline_matching_no_cell_is_invalid():
    with pytest.raises(grid.InvalidSweep, match="matches no cell"):
        plan(CODECS, baseline={"index.codec": "zstd"})


def test_a_gate_naming_an_unknown_cell_is_invalid():
    gate = {"task": "bulk", "metric": "throughput.median", "maxRegressionPercent": 5, "cells": ["c1", "c9"]}
    with pytest.raises(grid.InvalidSweep, match=r"unknown cells \['c9'\]"):
        plan(CODECS, gates=[gate])


# --- run order -------------------------------------------------------------------------------


def test_interleaved_runs_rounds_of_every_cell_in_the_cells_order():
    assert keys(plan(CODECS, repetitions=2, order="Interleaved", warmup_runs=0)) == [
        ("c0", 1), ("c1", 1), ("c0", 2), ("c1", 2)]


def test_sequential_runs_a_cells_repetitions_back_to_back():
    assert keys(plan(CODECS, repetitions=2, order="Sequential", warmup_runs=0)) == [
        ("c0", 1), ("c0", 2), ("c1", 1), ("c1", 2)]


def test_the_default_order_is_counterbalanced_every_cell_in_every_position_equally_often():
    for cells in (2, 3, 4, 5):
        rounds = cells if cells % 2 == 0 else 2 * cells  # a Williams design's rows
        p = plan(bulk_sizes(cells), repetitions=rounds, warmup_runs=0)
        measured = [run for run in p.runs]
        by_round = [[run.cell.id for run in measured if run.repetition == r] for r in range(1, rounds + 1)]
        assert all(sorted(ids) == sorted(f"c{i}" for i in range(cells)) for ids in by_round)
        positions = Counter((cell, position) for ids in by_round for position, cell in enumerate(ids))
        assert set(positions.values()) == {rounds // cells}, positions
        # ... and every cell follows every other equally often (first-order carry-over balanced).
        follows = Counter((a, b) for ids in by_round for a, b in itertools.pairwise(ids))
        assert len(follows) == cells * (cells - 1) and len(set(follows.values())) == 1


def test_the_williams_rows_are_a_latin_square_and_cells_get_their_letters_from_the_seed():
    assert [grid.williams_row(4, r) for r in range(4)] == [[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
    assert grid.williams_row(3, 3) == grid.williams_row(3, 0)[::-1]
    assert grid.williams_row(2, 5) == [1, 0]
    orders = {tuple(keys(plan(bulk_sizes(4), repetitions=4, seed=seed, warmup_runs=0))) for seed in range(8)}
    assert len(orders) > 1  # the seed assigns the letters
    assert keys(plan(bulk_sizes(4), repetitions=4, seed=3)) == keys(plan(bulk_sizes(4), repetitions=4, seed=3))


def test_shuffled_rounds_are_seeded_permutations_of_every_cell():
    def shuffled(seed: int) -> list[tuple[str, int]]:
        return keys(plan(bulk_sizes(8), repetitions=3, order="Shuffled", seed=seed, warmup_runs=0))

    order = shuffled(7)
    assert order == shuffled(7)
    assert order != shuffled(8)
    for repetition in (1, 2, 3):
        round_ = order[(repetition - 1) * 8:repetition * 8]
        assert sorted(round_) == sorted((f"c{i}", repetition) for i in range(8))
    # 8! orders: not the interleaved one
    assert order != keys(plan(bulk_sizes(8), repetitions=3, order="Interleaved", warmup_runs=0))


@pytest.mark.parametrize("order", list(models.RunOrder))
def test_every_run_appears_exactly_once_in_every_order(order):
    runs = keys(plan(CODECS, VERSIONS, repetitions=3, order=order, warmup_runs=0))
    assert Counter(runs) == Counter((f"c{c}", r) for c in range(4) for r in (1, 2, 3))


# --- cluster keys ------------------------------------------------------------------------------


def key_of(**overrides: Any) -> str:
    spec = TEMPLATE
    for field, value in overrides.items():
        spec = grid.with_value(spec, field.replace("__", "."), value)
    return grid.cluster_key(grid.plan(models.SweepSpec(template=spec), "sweep", "default").cells[0].spec)


def test_cells_differing_only_in_index_or_track_params_share_a_cluster():
    assert key_of() == key_of(index__codec="best_compression") == key_of(workload__trackParams__bulk_size=500)


def test_cells_differing_in_the_cluster_do_not_share_it():
    assert key_of() != key_of(elasticsearch__version="8.16.0")
    assert key_of() != key_of(elasticsearch__nodeCount=3)


def test_cells_with_different_tracks_do_not_share_a_cluster():
    # Rally's store size and segment count cover every index on the cluster (grid.cluster_key).
    assert key_of() != key_of(workload__track="indexing")


def test_an_exclude_naming_a_field_no_axis_has_is_an_error_not_a_no_op():
    spec = models.SweepSpec.model_validate({
        "template": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}},
        "matrix": [{"field": "index.codec", "values": ["default", "best_compression"]}],
        "exclude": [{"index.codec_": "default"}]})
    with pytest.raises(grid.InvalidSweep, match="exclude names index.codec_"):
        grid.plan(spec, "sweep", "default")


def test_a_gate_on_the_baseline_itself_is_an_error():
    spec = models.SweepSpec.model_validate({
        "template": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}},
        "matrix": [{"field": "index.codec", "values": ["default", "best_compression"]}],
        "gates": [{"task": "index-append", "metric": "throughput.median", "maxRegressionPercent": 5, "cells": ["c0"]}]})
    with pytest.raises(grid.InvalidSweep, match="names the baseline c0"):
        grid.plan(spec, "sweep", "default")


def test_warmup_runs_go_first_on_each_shared_cluster_as_cells_of_their_own():
    p = plan(CODECS, VERSIONS, repetitions=1, warmup_runs=2, order="Interleaved")
    assert keys(p)[:4] == [("w0", 1), ("w0", 2), ("w1", 1), ("w1", 2)]
    assert [c.id for c in p.cells] == ["c0", "c1", "c2", "c3"], "warm-up cells are never compared"
    warm = {run.cell.id: run.cell for run in p.runs[:4]}
    # One warm-up cell per cluster (version), racing the spec of that cluster's first cell.
    assert warm["w0"].spec == p.cells[0].spec and warm["w1"].spec == p.cells[1].spec
    assert {grid.cluster_key(c.spec) for c in warm.values()} == {grid.cluster_key(c.spec) for c in p.cells}


def test_no_warmup_runs_without_cluster_reuse():
    assert [run for run in plan(CODECS, warmup_runs=2, cluster_reuse=False).runs if run.cell.id.startswith("w")] == []
