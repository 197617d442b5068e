"""Who plays next: pairing by rating and uncertainty, and the scheduler's policy.

`next_pairs` picks `want` matches among the active versions, one at a time:

1. The **seeker** is the version the ladder knows least about for its load: the largest
   deviation divided by (1 + the matches it already has waiting or running).
2. Its **opponent** is the version of another team that maximises the information of a game
   between them, `p·(1−p)` (p the fit's win probability: largest for equal ratings), weighted
   by the opponent's own uncertainty and divided by its load and by (1 + 2 · matches of this
   very pair already waiting) — so close ratings meet first, new versions get their games, and
   no pair is queued over and over while others wait.
3. A little seeded noise (±10 %) breaks ties and keeps the pairings from repeating exactly.

Never a version against itself, never two versions of one team. Which version is `a` (moves
first in the odd games of the paired board) is drawn: over many matches both sides are even.

`top_up(store, workers=W)` is the scheduler's step, called in a loop by the worker pool
(ladder.work): while fewer than `W + queued` matches are waiting or running it creates the
missing ones. Keeping a queue beside the W running matches means a worker that finishes a
match claims the next one at once rather than waiting for the scheduler's next step
(bench/ladder.py measures how busy W workers stay).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ladder import rating

if TYPE_CHECKING:
    from ladder.store import LadderStore, Version

__all__ = ["NOISE", "next_pairs", "queue_target", "top_up"]

NOISE = 0.1  # relative noise on every score (tie-breaking, variety)


def _win_probability(rating_a: float, rating_b: float) -> float:
    return 1.0 / (1.0 + math.pow(10.0, (rating_b - rating_a) / rating.SCALE))


def next_pairs(
    active: Sequence[Version],
    ratings: Mapping[int, tuple[float, float]],
    pending: Sequence[tuple[int, int]],
    want: int,
    *,
    rng: random.Random | None = None,
) -> list[tuple[int, int]]:
    """Up to `want` pairs (version_a, version_b) of the `active` versions to play next.
    `ratings` maps version ids to (rating, deviation) (a version missing there has the prior's);
    `pending` are the pairs of matches already waiting or running. Empty when fewer than two
    teams have an active version."""
    rng = rng if rng is not None else random.Random()
    prior = (rating.BASE, rating.prior_deviation())
    team_of = {version.id: version.team_id for version in active}
    ids = sorted(team_of)
    if len({team_of[v] for v in ids}) < 2 or want <= 0:
        return []
    value = {v: ratings.get(v, prior) for v in ids}
    load = dict.fromkeys(ids, 0)
    pair_load: dict[tuple[int, int], int] = {}
    for a, b in pending:
        for version in (a, b):
            if version in load:
                load[version] += 1
        key = (min(a, b), max(a, b))
        pair_load[key] = pair_load.get(key, 0) + 1
    chosen: list[tuple[int, int]] = []
    for _ in range(want):
        seeker = max(
            ids,
            key=lambda v: value[v][1] / (1 + load[v]) * (1 + NOISE * (rng.random() - 0.5) * 2),
        )
        best: tuple[float, int] | None = None
        for other in ids:
            if team_of[other] == team_of[seeker]:
                continue
            p = _win_probability(value[seeker][0], value[other][0])
            key = (min(seeker, other), max(seeker, other))
            score = (
                p
                * (1 - p)
                * math.sqrt(value[other][1] / prior[1] + 0.25)
                / (1 + load[other])
                / (1 + 2 * pair_load.get(key, 0))
                * (1 + NOISE * (rng.random() - 0.5) * 2)
            )
            if best is None or score > best[0]:
                best = (score, other)
        if best is None:  # only the seeker's team is left (cannot happen with two teams)
            break
        other = best[1]
        pair = (seeker, other) if rng.random() < 0.5 else (other, seeker)
        chosen.append(pair)
        load[seeker] += 1
        load[other] += 1
        key = (min(seeker, other), max(seeker, other))
        pair_load[key] = pair_load.get(key, 0) + 1
    return chosen


def queue_target(workers: int, queued: int | None = None) -> int:
    """How many matches the scheduler keeps waiting or running for `workers` workers: one
    running per worker plus a queue (by default as long again)."""
    return max(0, workers) + (max(1, workers) if queued is None else max(0, queued))


def top_up(
    store: LadderStore,
    *,
    workers: int,
    queued: int | None = None,
    games: int = 2,
    rng: random.Random | None = None,
) -> list[int]:
    """The scheduler's step: create ranked matches until `queue_target(workers, queued)` are
    waiting or running; the new matches' ids (none when fewer than two teams are active).
    Two schedulers on one store may overshoot the target by one step's matches, no more."""
    missing = queue_target(workers, queued) - store.pending_matches()
    if missing <= 0:
        return []
    pairs = next_pairs(
        store.active_versions(), store.ratings(), store.open_pairs(), missing, rng=rng
    )
    return [store.create_match(a, b, games=games) for a, b in pairs]
