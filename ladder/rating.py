"""Ratings: a Bradley–Terry fit of every ranked game, on the Elo scale.

The model: version i beats version j with probability γi / (γi + γj); a version's rating is
`BASE + SCALE · log10(γi)` (SCALE = 400: a 400-point gap is 10:1 odds, as in Elo). A game
scores 1 for a win, ½ for a draw and 0 for a loss, by Siegpunkte (2/1/0 in the SC rules: the
side with more points won; equal points are a draw); a game in which neither side scored (both
broke a rule) says nothing about who is better and is left out.

A weak prior keeps every rating finite: each version also played PRIOR_GAMES virtual games
against an anchor of rating BASE and scored half of them. A version that won its only game
gets a finite rating and a large deviation; the prior's pull vanishes as real games pile up.

The fit is the maximum of the posterior, found by Newman's iteration for Bradley–Terry (M. E. J.
Newman, "Efficient computation of rankings from pairwise comparisons", JMLR 24, 2023: an order
of magnitude fewer sweeps than Zermelo's/Hunter's MM), updating one version at a time with the
others' newest values, each sweep followed by the exact common shift of every connected group
(`_recentre`: the one direction the sweeps find slowly); warm-started from the previous
ratings when a match is added, so the store's refit after a match takes a sweep or two.

The deviation is 1/√(Fisher information) of a version's log-strength with the others held at
their fit (the diagonal of the information matrix; it ignores that opponents' ratings are
uncertain too, so it is a little optimistic for versions with few opponents), on the Elo scale.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

__all__ = [
    "BASE",
    "PRIOR_GAMES",
    "SCALE",
    "Pairs",
    "aggregate",
    "fit",
    "fit_pairs",
    "game_score",
    "prior_deviation",
]

BASE = 1500.0
SCALE = 400.0
PRIOR_GAMES = 2.0
TOLERANCE = 1e-6  # largest change of a log-strength in a sweep (≈ 0.0002 Elo) that ends the fit
MAX_SWEEPS = 2000

_ELO_PER_NAT = SCALE / math.log(10.0)

# (a, b) with a < b → (games, a's score): the sufficient statistics of the fit.
Pairs = Mapping[tuple[int, int], tuple[float, float]]


def game_score(points_a: int, points_b: int) -> float | None:
    """A's score of one game from the two sides' Siegpunkte: 1, ½, 0; None when neither side
    scored (the game does not count)."""
    if points_a <= 0 and points_b <= 0:
        return None
    if points_a > points_b:
        return 1.0
    if points_a < points_b:
        return 0.0
    return 0.5


def aggregate(results: Iterable[tuple[int, int, float]]) -> dict[tuple[int, int], list[float]]:
    """Games `(a, b, a's score)` summed per pair of versions (the smaller id first)."""
    pairs: dict[tuple[int, int], list[float]] = {}
    for a, b, score in results:
        if a == b:
            raise ValueError(f"version {a} cannot play itself")
        key, own = ((a, b), score) if a < b else ((b, a), 1.0 - score)
        entry = pairs.setdefault(key, [0.0, 0.0])
        entry[0] += 1.0
        entry[1] += own
    return pairs


def _components(count: int, opponents: list[list[tuple[int, float, float]]]) -> list[list[int]]:
    """The versions (by slot) in groups that are connected by games."""
    seen = [False] * count
    groups = []
    for first in range(count):
        if seen[first]:
            continue
        seen[first] = True
        group, todo = [], [first]
        while todo:
            i = todo.pop()
            group.append(i)
            for j, _, _ in opponents[i]:
                if not seen[j]:
                    seen[j] = True
                    todo.append(j)
        groups.append(group)
    return groups


def _recentre(strength: list[float], members: list[int]) -> float:
    """Move a connected group's log-strengths by the common shift that maximises the posterior;
    the shift's size. The games' likelihood is the same for any common shift (only ratios
    count), so only the prior decides it: a direction in which the sweeps alone crawl (the
    prior is weak) solved at once by Newton's method in one variable."""
    shift = 0.0
    for _ in range(20):
        slope = 0.0
        curvature = 0.0
        factor = math.exp(shift)
        for i in members:
            moved = strength[i] * factor
            p = moved / (moved + 1.0)
            slope += 0.5 - p
            curvature += p * (1.0 - p)
        step = slope / curvature
        shift += step
        if abs(step) < TOLERANCE / 10:
            break
    factor = math.exp(shift)
    for i in members:
        strength[i] *= factor
    return abs(shift)


def prior_deviation() -> float:
    """The deviation of a version without games (the prior's alone), on the Elo scale."""
    return _ELO_PER_NAT / math.sqrt(PRIOR_GAMES / 4.0)


def fit(
    results: Iterable[tuple[int, int, float]], *, start: Mapping[int, float] | None = None
) -> dict[int, tuple[float, float]]:
    """version id → (rating, deviation) of the games `(version_a, version_b, a's score)`."""
    return fit_pairs(
        {key: (value[0], value[1]) for key, value in aggregate(results).items()}, start=start
    )


def fit_pairs(
    pairs: Pairs, *, start: Mapping[int, float] | None = None
) -> dict[int, tuple[float, float]]:
    """version id → (rating, deviation) from per-pair sums (see `aggregate`); `start` are
    earlier ratings to begin from (any start converges to the same fit)."""
    index: dict[int, int] = {}
    for a, b in pairs:
        index.setdefault(a, len(index))
        index.setdefault(b, len(index))
    count = len(index)
    # Each version's opponents as (opponent, games, score against it).
    opponents: list[list[tuple[int, float, float]]] = [[] for _ in range(count)]
    for (a, b), (games, score_a) in pairs.items():
        if games <= 0:
            continue
        i, j = index[a], index[b]
        opponents[i].append((j, games, score_a))
        opponents[j].append((i, games, games - score_a))
    strength = [1.0] * count
    if start:
        for version, slot in index.items():
            if version in start:
                strength[slot] = 10.0 ** ((start[version] - BASE) / SCALE)
    components = _components(count, opponents)
    half_prior = PRIOR_GAMES / 2.0
    for _ in range(MAX_SWEEPS):
        largest = 0.0
        for i in range(count):
            own = strength[i]
            # Newman's iteration: (wins weighted by the beaten's strength) over (losses).
            # The anchor has strength 1 (rating BASE) and splits the prior games.
            share = half_prior / (own + 1.0)
            numerator = share
            denominator = share
            for j, games, score in opponents[i]:
                other = strength[j]
                total = own + other
                numerator += score * other / total
                denominator += (games - score) / total
            new = numerator / denominator
            change = abs(math.log(new / own))
            largest = max(largest, change)
            strength[i] = new
        for members in components:
            largest = max(largest, _recentre(strength, members))
        if largest < TOLERANCE:
            break
    fitted: dict[int, tuple[float, float]] = {}
    for version, i in index.items():
        own = strength[i]
        information = PRIOR_GAMES * own / (own + 1.0) ** 2
        for j, games, _ in opponents[i]:
            information += games * own * strength[j] / (own + strength[j]) ** 2
        fitted[version] = (
            BASE + _ELO_PER_NAT * math.log(own),
            _ELO_PER_NAT / math.sqrt(information),
        )
    return fitted
