"""Pairing: uncertain versions first, close ratings, never one team against itself, no pair
queued over and over; the scheduler's step keeps the queue at its target."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from ladder import pairing, rating
from ladder.store import LadderStore, Version
from tests.helpers.ladder import FakeClock, active_version, paired_results, teams_with_versions


def version(version_id: int, team_id: int) -> Version:
    return Version(version_id, team_id, 1, "", 1, "0" * 64, 0, "passed", None, True)


def test_never_a_version_against_its_own_team() -> None:
    active = [version(1, 10), version(2, 10), version(3, 11)]
    pairs = pairing.next_pairs(active, {}, [], 20, rng=random.Random(1))
    assert len(pairs) == 20
    assert all({a, b} in ({1, 3}, {2, 3}) for a, b in pairs)
    assert pairing.next_pairs(active[:2], {}, [], 5) == []  # one team only
    assert pairing.next_pairs(active, {}, [], 0) == []


def test_uncertain_versions_get_games_and_close_ratings_meet() -> None:
    active = [version(v, v) for v in range(1, 9)]
    # Seven settled versions 100 points apart and one newcomer.
    ratings = {v: (1200.0 + 100 * v, 40.0) for v in range(1, 8)}
    pairs = pairing.next_pairs(active, ratings, [], 4, rng=random.Random(2))
    assert 8 in pairs[0]  # the newcomer (prior deviation) plays first
    counts = Counter(v for pair in pairs for v in pair)
    assert counts[8] >= 2
    # Among the settled ones: opponents close in rating.
    settled = pairing.next_pairs(active[:7], ratings, [], 30, rng=random.Random(3))
    gaps = [abs(ratings[a][0] - ratings[b][0]) for a, b in settled]
    assert sum(gaps) / len(gaps) < 250  # random pairs of 7 versions 100 apart: ~267 on average
    assert Counter(gaps)[100.0] > len(gaps) / 3


def test_load_spreads_over_versions_and_pairs() -> None:
    active = [version(v, v) for v in range(1, 7)]
    pending = [(1, 2)] * 3
    pairs = pairing.next_pairs(active, {}, pending, 6, rng=random.Random(4))
    assert (1, 2) not in pairs and (2, 1) not in pairs
    counts = Counter(v for pair in pairs for v in pair)
    assert counts[1] + counts[2] <= 2 and max(counts.values()) <= 3
    # Sides are drawn: over many pairs each version is `a` about half the time.
    many = pairing.next_pairs(active[:2], {}, [], 200, rng=random.Random(5))
    assert 70 < sum(a == 1 for a, _ in many) < 130


def test_top_up_keeps_workers_plus_a_queue_of_matches(tmp_path: Path) -> None:
    store = LadderStore.open(str(tmp_path / "ladder.sqlite"), clock=FakeClock())
    try:
        assert pairing.top_up(store, workers=2) == []  # nobody to pair yet
        teams = teams_with_versions(store, 4)
        created = pairing.top_up(store, workers=2, rng=random.Random(6))
        assert len(created) == pairing.queue_target(2) == 4
        assert pairing.top_up(store, workers=2) == []
        claim = store.claim_match("w")
        assert claim is not None
        store.record_match(claim, paired_results(claim, a_wins=2))
        assert len(pairing.top_up(store, workers=2, rng=random.Random(7))) == 1
        assert store.pending_matches() == 4
        # A second version of a team: only the active one is paired.
        second = active_version(store, teams[0][0], "second")
        new = pairing.top_up(store, workers=10, queued=0, rng=random.Random(8))
        paired = {v for match_id in new for v in _versions(store, match_id)}
        assert teams[0][1] not in paired and second in paired
        assert rating.BASE in {s.rating for s in store.standings()}
    finally:
        store.close()


def _versions(store: LadderStore, match_id: int) -> tuple[int, int]:
    match = store.match(match_id)
    assert match is not None
    return match.version_a, match.version_b
