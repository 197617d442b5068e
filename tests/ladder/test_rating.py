"""The Bradley–Terry fit: the maximum of its posterior, draws as half wins, a weak prior,
deviations that shrink with games, and the true strengths recovered from simulated games."""

from __future__ import annotations

import math
import random

import pytest

from ladder import rating


def gradient(
    results: list[tuple[int, int, float]], fitted: dict[int, tuple[float, float]]
) -> dict[int, float]:
    """The log-posterior's derivative by each version's log-strength at the fit (zero at its
    maximum), computed from the model's definition, independently of the fit's iteration."""
    strength = {v: 10 ** ((r - rating.BASE) / rating.SCALE) for v, (r, _) in fitted.items()}
    grad = {v: rating.PRIOR_GAMES * (0.5 - s / (s + 1.0)) for v, s in strength.items()}
    for a, b, score in results:
        p = strength[a] / (strength[a] + strength[b])
        grad[a] += score - p
        grad[b] -= score - p
    return grad


def test_the_fit_is_the_posteriors_maximum() -> None:
    rng = random.Random(5)
    results = [
        (a, b, rng.choice((0.0, 0.5, 1.0)))
        for a, b in (rng.sample(range(8), 2) for _ in range(300))
    ]
    fitted = rating.fit(results)
    assert set(fitted) == set(range(8))
    assert max(abs(g) for g in gradient(results, fitted).values()) < 1e-3


def test_draws_count_as_half_wins() -> None:
    drawn = rating.fit([(1, 2, 0.5), (1, 2, 0.5)])
    split = rating.fit([(1, 2, 1.0), (2, 1, 1.0)])
    assert drawn[1][0] == pytest.approx(rating.BASE) and drawn[2][0] == pytest.approx(rating.BASE)
    assert split.keys() == drawn.keys()
    assert all(split[v] == pytest.approx(drawn[v]) for v in drawn)
    assert rating.game_score(1, 1) == 0.5
    assert rating.game_score(2, 0) == 1.0 and rating.game_score(0, 2) == 0.0
    assert rating.game_score(0, 0) is None  # both broke a rule: no information


def test_the_weak_prior_keeps_one_win_finite_and_uncertain() -> None:
    one = rating.fit([(1, 2, 1.0)])
    many = rating.fit([(1, 2, 1.0)] * 100)
    assert math.isfinite(one[1][0]) and one[1][0] > rating.BASE > one[2][0]
    # The winner of one game: far from proven, but surer than nothing at all.
    assert 150 < one[1][1] < rating.prior_deviation()
    assert many[1][0] > one[1][0] + 300
    assert many[1][1] < one[1][1]
    # Symmetry: the loser mirrors the winner.
    assert one[1][0] - rating.BASE == pytest.approx(rating.BASE - one[2][0])
    assert rating.prior_deviation() == pytest.approx(400 / math.log(10) / math.sqrt(0.5))


def test_the_order_of_the_games_and_the_start_do_not_matter() -> None:
    rng = random.Random(9)
    results = [
        (a, b, rng.choice((0.0, 1.0))) for a, b in (rng.sample(range(20), 2) for _ in range(500))
    ]
    cold = rating.fit(results)
    shuffled = results[:]
    rng.shuffle(shuffled)
    warm = rating.fit(shuffled, start={v: r + rng.uniform(-300, 300) for v, (r, _) in cold.items()})
    for version, (value, deviation) in cold.items():
        assert warm[version][0] == pytest.approx(value, abs=0.05)
        assert warm[version][1] == pytest.approx(deviation, abs=0.05)


def test_simulated_games_recover_the_true_ratings_within_their_deviations() -> None:
    rng = random.Random(1)
    true = {v: rng.gauss(1500, 200) for v in range(30)}
    results = []
    for _ in range(6000):
        a, b = rng.sample(range(30), 2)
        p = 1 / (1 + 10 ** ((true[b] - true[a]) / 400))
        results.append((a, b, 1.0 if rng.random() < p else 0.0))
    fitted = rating.fit(results)
    mean_true = sum(true.values()) / 30
    mean_fit = sum(r for r, _ in fitted.values()) / 30
    # Ratings are relative: compare after centring both.
    errors = [abs((fitted[v][0] - mean_fit) - (true[v] - mean_true)) / fitted[v][1] for v in true]
    assert max(errors) < 3.5
    assert sum(e < 1 for e in errors) >= 18  # about 68 % within one deviation
    # 400 games each, p(1-p) about 0.2: 1/sqrt(80) nats, about 19 Elo.
    assert all(15 < d < 40 for _, d in fitted.values())


def test_a_version_cannot_play_itself() -> None:
    with pytest.raises(ValueError, match="itself"):
        rating.fit([(3, 3, 1.0)])
    assert rating.fit([]) == {}
