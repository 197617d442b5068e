"""Static evaluation of a position for the search bot: heaviest swarm, spread and fragments.

Everything is read through the engine's public API (`rows()`); the swarms are recomputed
here (bit masks, as the engine does) because the engine only exposes the heaviest weight,
not the number of fragments.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine import FieldState, GameState
from engine.geometry import connected_component

# (team index, size) of every fish field by id(): hashing an Enum member runs Python code,
# id() does not, and this lookup is the evaluation's hot loop.
_FISH_INFO = {
    id(field): (field.team.value, field.size) for field in FieldState if field.team is not None
}
_EMPTY = FieldState.EMPTY
_SQUID = FieldState.SQUID

# Weights of the evaluation terms, in hundredths of a swarm weight point.
SWARM_WEIGHT = 100
"""Per point of the heaviest swarm: the round-limit winner and the tie-breaker at the end."""
SPREAD_WEIGHT = 12
"""Per field of Chebyshev distance to the centroid beyond the tightest possible packing."""
FRAGMENT_WEIGHT = 25
"""Per swarm beyond the first."""


def _tightest_spread(count: int) -> int:
    """The least sum of Chebyshev distances to one field for `count` fish: ring k around it
    holds 8k fields at distance k."""
    total, ring, left = 0, 0, count
    while left > 0:
        fields = 1 if ring == 0 else 8 * ring
        taken = min(left, fields)
        total += taken * ring
        left -= taken
        ring += 1
    return total


_TIGHTEST = [_tightest_spread(count) for count in range(257)]


@dataclass(frozen=True, slots=True)
class TeamFeatures:
    """What the evaluation knows about one team's fish."""

    fish: int
    heaviest_swarm: int  # -1 without fish, as GameState.greatest_swarm_weight
    swarms: int
    spread: float  # sum of Chebyshev distances to the centroid beyond the tightest packing

    def score(self) -> float:
        """This team's material-and-shape score (higher is better for it)."""
        if self.fish == 0:
            return -SWARM_WEIGHT
        return (
            SWARM_WEIGHT * self.heaviest_swarm
            - SPREAD_WEIGHT * self.spread
            - FRAGMENT_WEIGHT * (self.swarms - 1)
        )


def _features(
    mask: int, heavy: int, large: int, places: list[tuple[int, int]], stride: int
) -> TeamFeatures:
    """Features of one team: `mask` holds its fish (bit y*stride+x), `heavy` those of size ≥ 2,
    `large` those of size 3; `places` their (x, y)."""
    count = len(places)
    if not count:
        return TeamFeatures(0, -1, 0, 0.0)
    heaviest = 0
    swarms = 0
    remaining = mask
    while remaining:
        swarm = connected_component(remaining & -remaining, remaining, stride)
        remaining ^= swarm
        swarms += 1
        weight = swarm.bit_count() + (swarm & heavy).bit_count() + (swarm & large).bit_count()
        if weight > heaviest:
            heaviest = weight
    cx = sum(x for x, _ in places) / count
    cy = sum(y for _, y in places) / count
    spread = 0.0
    for x, y in places:
        dx, dy = abs(x - cx), abs(y - cy)
        spread += dx if dx > dy else dy
    return TeamFeatures(count, heaviest, swarms, max(0.0, spread - _TIGHTEST[min(count, 256)]))


def team_features(state: GameState) -> tuple[TeamFeatures, TeamFeatures]:
    """The features of (ONE, TWO) in `state`."""
    stride = state.width + 1  # a guard column keeps shifted masks from wrapping across rows
    masks = [0, 0]
    places: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
    heavy = large = 0
    info = _FISH_INFO
    for y, row in enumerate(state.rows()):
        base = y * stride
        for x, field in enumerate(row):
            if field is not _EMPTY and field is not _SQUID:
                team, size = info[id(field)]
                bit = 1 << (base + x)
                masks[team] |= bit
                places[team].append((x, y))
                if size >= 2:
                    heavy |= bit
                    if size == 3:
                        large |= bit
    return (
        _features(masks[0], heavy, large, places[0], stride),
        _features(masks[1], heavy, large, places[1], stride),
    )


def evaluate(state: GameState) -> int:
    """The heuristic value of a non-final `state` for the team to move, in hundredths of a
    swarm weight point (far below the search's win scores)."""
    one, two = team_features(state)
    value = one.score() - two.score()
    return round(value if state.current_team.value == 0 else -value)


def _mask_score(mask: int, heavy: int, large: int, stride: int) -> float:
    """TeamFeatures.score() of the fish in `mask`, straight from the bit masks (no rows)."""
    count = mask.bit_count()
    if not count:
        return -SWARM_WEIGHT
    heaviest = 0
    swarms = 0
    remaining = mask
    while remaining:
        swarm = connected_component(remaining & -remaining, remaining, stride)
        remaining ^= swarm
        swarms += 1
        weight = swarm.bit_count() + (swarm & heavy).bit_count() + (swarm & large).bit_count()
        if weight > heaviest:
            heaviest = weight
    xs: list[int] = []
    ys: list[int] = []
    remaining = mask
    while remaining:
        low = remaining & -remaining
        remaining ^= low
        y, x = divmod(low.bit_length() - 1, stride)
        xs.append(x)
        ys.append(y)
    cx = sum(xs) / count
    cy = sum(ys) / count
    spread = 0.0
    for x, y in zip(xs, ys, strict=True):
        dx, dy = abs(x - cx), abs(y - cy)
        spread += dx if dx > dy else dy
    spread = max(0.0, spread - _TIGHTEST[min(count, 256)])
    return SWARM_WEIGHT * heaviest - SPREAD_WEIGHT * spread - FRAGMENT_WEIGHT * (swarms - 1)


def evaluate_for_one(state: GameState) -> int:
    """`evaluate` from ONE's side whoever is to move, read from the engine's bit masks: the
    same value as `evaluate` (tests check it), about twice as fast; the search caches it by
    board, which is why it does not depend on the side to move."""
    one, two, _, ge2, ge3 = state.bitboards()
    stride = state.width + 1
    return round(_mask_score(one, ge2, ge3, stride) - _mask_score(two, ge2, ge3, stride))
