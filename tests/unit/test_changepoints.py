"""Change points by Apache Otava (its own virtualenv, scripts/otava-env.sh), on series with known
change points and on series without one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from esbench.analysis import changepoints


@pytest.fixture(scope="module")
def otava() -> Path:
    try:
        return changepoints.otava_python()
    except changepoints.OtavaMissing as error:
        pytest.fail(f"{error} (make deps installs it)", pytrace=False)


def _noisy(level: float, n: int, rng: np.random.Generator, cv: float = 0.05) -> list[float]:
    return list(level * rng.lognormal(0.0, cv, n))


def test_a_step_is_found_where_it_is(otava):
    series = []
    for seed in (1, 2, 3):  # three noise draws, one start of Otava for them all
        rng = np.random.default_rng(seed)
        series.append(_noisy(100, 12, rng) + _noisy(130, 10, rng))
    for found in changepoints.find_each(series, otava):
        (change,) = found
        assert change.index == 12
        assert change.change_percent == pytest.approx(30, abs=6)
        assert change.pvalue < changepoints.MAX_PVALUE


def test_two_steps_are_both_found(otava):
    rng = np.random.default_rng(4)
    values = _noisy(100, 10, rng) + _noisy(150, 10, rng) + _noisy(110, 10, rng)
    assert [c.index for c in changepoints.find_each([values], otava)[0]] == [10, 20]


def test_noise_alone_raises_nothing(otava):
    """Run-to-run noise like this host's (CV 10 %), no change, five draws: no alarm."""
    series = [_noisy(100, 30, np.random.default_rng(seed), cv=0.10) for seed in range(5)]
    assert changepoints.find_each(series, otava) == [[]] * 5


def test_a_small_step_within_the_noise_is_not_claimed(otava):
    rng = np.random.default_rng(7)
    values = _noisy(100, 10, rng, cv=0.15) + _noisy(103, 10, rng, cv=0.15)
    assert changepoints.find_each([values], otava) == [[]]


def test_series_too_short_for_a_test_have_none_and_the_others_keep_their_places(otava):
    rng = np.random.default_rng(4)
    step = _noisy(100, 10, rng) + _noisy(150, 10, rng)
    found = changepoints.find_each([[1.0, 50.0], step, []], otava)
    assert [[c.index for c in points] for points in found] == [[], [10], []]


def test_a_missing_virtualenv_is_named_with_the_way_to_make_it(tmp_path):
    with pytest.raises(changepoints.OtavaMissing, match="scripts/otava-env.sh"):
        changepoints.otava_python(str(tmp_path))
