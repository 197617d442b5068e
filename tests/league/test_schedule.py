"""Schedules: every pair the right number of times, sides balanced, boards paired, deterministic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import combinations

import pytest

from engine import GameState
from league.config import LeagueConfig
from league.schedule import board_seed, build_schedule, schedule_fingerprint

MakeLeague = Callable[..., LeagueConfig]


def ids(n: int) -> list[str]:
    return [f"t{i}" for i in range(n)]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9])
def test_round_robin_meets_every_pair_once(make_league: MakeLeague, n: int) -> None:
    matches = build_schedule(make_league(ids(n)))
    assert len(matches) == n * (n - 1) // 2
    pairs = Counter(frozenset((m.home, m.away)) for m in matches)
    assert set(pairs) == {frozenset(p) for p in combinations(ids(n), 2)}
    assert set(pairs.values()) == {1}
    # Each round: nobody plays twice; n - 1 rounds for even n, n for odd n (one bye each).
    rounds: dict[int, list[str]] = {}
    for match in matches:
        rounds.setdefault(match.round, []).extend((match.home, match.away))
    assert all(len(teams) == len(set(teams)) for teams in rounds.values())
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    # Home (first move in the odd-numbered games) within one of away for every team.
    home, away = Counter(m.home for m in matches), Counter(m.away for m in matches)
    assert all(abs(home[t] - away[t]) <= 1 for t in ids(n))
    assert [m.id for m in matches] == list(range(1, len(matches) + 1))


@pytest.mark.parametrize("n", [2, 4, 5])
def test_double_round_robin_meets_every_pair_twice_with_sides_swapped(
    make_league: MakeLeague, n: int
) -> None:
    matches = build_schedule(make_league(ids(n), 'format = "double-round-robin"'))
    assert len(matches) == n * (n - 1)
    ordered = Counter((m.home, m.away) for m in matches)
    for a, b in combinations(ids(n), 2):
        assert ordered[a, b] == 1 and ordered[b, a] == 1
    home, away = Counter(m.home for m in matches), Counter(m.away for m in matches)
    assert all(home[t] == away[t] for t in ids(n))


def test_gauntlet_plays_the_challenger_against_the_field(make_league: MakeLeague) -> None:
    matches = build_schedule(make_league(ids(5), 'format = "gauntlet"\ngauntlet = "t2"'))
    assert len(matches) == 4
    assert all("t2" in (m.home, m.away) for m in matches)
    assert sorted({m.home, m.away} - {"t2"} for m in matches) == [{"t0"}, {"t1"}, {"t3"}, {"t4"}]
    assert Counter(m.home for m in matches)["t2"] == 2


@pytest.mark.parametrize("games", [2, 6, 10])
def test_games_alternate_sides_and_share_boards_in_pairs(
    make_league: MakeLeague, games: int
) -> None:
    matches = build_schedule(make_league(ids(4), f"games_per_match = {games}\nseed = 77"))
    for match in matches:
        assert [g.number for g in match.games] == list(range(1, games + 1))
        sides = Counter(g.team_one for g in match.games)
        assert sides[match.home] == sides[match.away] == games // 2
        for first, second in zip(match.games[::2], match.games[1::2], strict=True):
            assert first.board_seed == second.board_seed == board_seed(77, match.id, first.pair)
            assert (first.team_one, first.team_two) == (match.home, match.away)
            assert (second.team_one, second.team_two) == (match.away, match.home)
    all_seeds = [g.board_seed for m in matches for g in m.games[::2]]
    assert len(set(all_seeds)) == len(all_seeds)  # a new board for every pair
    assert all(0 <= seed < 2**63 for seed in all_seeds)


def test_the_schedule_is_deterministic_and_depends_on_the_seed(make_league: MakeLeague) -> None:
    first = build_schedule(make_league(ids(6), "seed = 5"))
    assert first == build_schedule(make_league(ids(6), "seed = 5"))
    other = build_schedule(make_league(ids(6), "seed = 6"))
    assert schedule_fingerprint(first) == schedule_fingerprint(
        build_schedule(make_league(ids(6), "seed = 5"))
    )
    assert schedule_fingerprint(first) != schedule_fingerprint(other)
    # A fixed value: board seeds must never change between versions (resumed leagues, audits).
    assert board_seed(0, 1, 0) == 586998334701471542
    # The same seed gives the same start board.
    seed = first[0].games[0].board_seed
    assert GameState.initial(seed) == GameState.initial(seed)
