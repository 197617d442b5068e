"""The interval `bench.server --relay --repeat N` prints for the median server/relay ratio."""

from __future__ import annotations

import math
import random

import pytest

from bench.serverprocess import median_interval


def test_ten_runs_give_the_second_and_ninth_smallest() -> None:
    runs = [1.85, 1.59, 2.11, 1.95, 1.81, 1.77, 1.90, 1.70, 1.88, 1.92]
    low, high, coverage = median_interval(runs)
    assert (low, high) == (1.70, 1.95)
    assert coverage == pytest.approx(1 - 2 * 11 / 1024)


def test_too_few_runs_give_the_range_with_its_lower_coverage() -> None:
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (1.0, 5.0, 1 - 2 / 32)
    low, high, coverage = median_interval([])
    assert math.isnan(low) and math.isnan(high) and coverage == 0.0


@pytest.mark.parametrize("runs", [10, 20, 41])
def test_the_interval_holds_the_true_median_about_as_often_as_it_says(runs: int) -> None:
    # A skewed population (exponential, median ln 2): the interval needs no normality.
    rng = random.Random(runs)
    trials = 4000
    hits = 0
    coverage = 0.0
    for _ in range(trials):
        low, high, coverage = median_interval([rng.expovariate(1.0) for _ in range(runs)])
        hits += low <= math.log(2) <= high
    assert coverage >= 0.95
    assert abs(hits / trials - coverage) < 0.015
