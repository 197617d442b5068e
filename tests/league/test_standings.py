"""Standings as SC ranks them, against tables computed by hand (ties on every criterion)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from fractions import Fraction

from league.config import LeagueConfig
from league.schedule import Match, build_schedule
from league.standings import compute_standings, lot_order
from league.store import GameOutcome, StoredGame

MakeLeague = Callable[..., LeagueConfig]

# Per unordered pair: the two games as (winner or "draw", {team: swarm}). Hand-made so that
# a is first on match points, d beats b and c on Siegpunkte, c beats b on Schwarmgröße.
RESULTS: dict[frozenset[str], list[tuple[str, dict[str, int]]]] = {
    frozenset("ab"): [("a", {"a": 10, "b": 6}), ("a", {"a": 10, "b": 6})],
    frozenset("ac"): [("a", {"a": 10, "c": 6}), ("draw", {"a": 8, "c": 8})],
    frozenset("ad"): [("a", {"a": 10, "d": 6}), ("a", {"a": 10, "d": 6})],
    frozenset("bc"): [("b", {"b": 10, "c": 6}), ("b", {"b": 10, "c": 7})],
    frozenset("cd"): [("c", {"c": 10, "d": 6}), ("draw", {"c": 8, "d": 8})],
    frozenset("bd"): [("d", {"d": 10, "b": 6}), ("d", {"d": 10, "b": 6})],
}


def finished(
    matches: tuple[Match, ...], skip: frozenset[tuple[int, int]] = frozenset()
) -> list[StoredGame]:
    games = []
    for match in matches:
        for game, (winner, swarms) in zip(
            match.games, RESULTS[frozenset((match.home, match.away))], strict=True
        ):
            if (match.id, game.number) in skip:
                continue
            one, two = game.team_one, game.team_two
            points = (1, 1) if winner == "draw" else (2, 0) if winner == one else (0, 2)
            outcome = GameOutcome(
                points, (swarms[one], swarms[two]), None if winner == "draw" else winner, True, ""
            )
            games.append(StoredGame(game, 1, outcome))
    return games


def test_golden_table_match_points_then_siegpunkte_then_schwarmgroesse(
    make_league: MakeLeague,
) -> None:
    config = make_league(list("abcd"), "games_per_match = 2")
    matches = build_schedule(config)
    standings = compute_standings(config, matches, finished(matches))
    table = [
        (r.rank, r.team_id, r.matches, r.won, r.drawn, r.lost, r.match_points,
         r.games_won, r.games_drawn, r.games_lost, r.siegpunkte, r.schwarm_average, r.decided_by)
        for r in standings.rows
    ]  # fmt: skip
    assert table == [
        (1, "a", 3, 3, 0, 0, 6, 5, 1, 0, 11, Fraction(58, 6), None),
        (2, "d", 3, 1, 0, 2, 2, 2, 1, 3, 5, Fraction(46, 6), "match-points"),
        (3, "c", 3, 1, 0, 2, 2, 1, 2, 3, 4, Fraction(45, 6), "siegpunkte"),
        (4, "b", 3, 1, 0, 2, 2, 2, 0, 4, 4, Fraction(44, 6), "schwarmgroesse"),
    ]
    assert standings.crosstable["a"]["b"] == ("2-0",)
    assert standings.crosstable["c"]["a"] == ("0-1",)
    assert standings.crosstable["d"]["b"] == ("2-0",)
    assert standings.crosstable["b"]["d"] == ("0-2",)
    assert (standings.matches_complete, standings.games_recorded) == (6, 12)


def test_the_chain_is_configurable(make_league: MakeLeague) -> None:
    config = make_league(
        list("abcd"), 'games_per_match = 2\ntiebreaks = ["games-won", "siegpunkte"]'
    )
    matches = build_schedule(config)
    rows = compute_standings(config, matches, finished(matches)).rows
    # b and d won 2 games each (d more Siegpunkte), c only 1.
    assert [(r.team_id, r.decided_by) for r in rows] == [
        ("a", None),
        ("d", "match-points"),
        ("b", "siegpunkte"),
        ("c", "games-won"),
    ]


def test_a_complete_tie_is_decided_by_the_seeded_lot(make_league: MakeLeague) -> None:
    for seed in range(6):
        config = make_league(list("xyz"), f"games_per_match = 2\nseed = {seed}")
        matches = build_schedule(config)
        draws = [
            StoredGame(g, 1, GameOutcome((1, 1), (5, 5), None, True, ""))
            for m in matches
            for g in m.games
        ]
        rows = compute_standings(config, matches, draws).rows
        lots = lot_order(seed, "xyz")
        assert sorted(lots.values()) == [1, 2, 3]
        assert [r.team_id for r in rows] == sorted("xyz", key=lots.__getitem__)
        assert [r.decided_by for r in rows] == [None, "lot", "lot"]
        assert all(
            (r.match_points, r.siegpunkte, r.schwarm_average) == (2, 4, Fraction(5)) for r in rows
        )
    # Reproducible, and the seed matters: not every seed draws the same order.
    assert lot_order(3, "xyz") == lot_order(3, "zyx")
    assert len({tuple(sorted("xyz", key=lot_order(s, "xyz").__getitem__)) for s in range(6)}) > 1


def test_incomplete_matches_do_not_count(make_league: MakeLeague) -> None:
    config = make_league(list("abcd"), "games_per_match = 2")
    matches = build_schedule(config)
    ab = next(m for m in matches if {m.home, m.away} == {"a", "b"})
    standings = compute_standings(config, matches, finished(matches, frozenset({(ab.id, 2)})))
    a = next(r for r in standings.rows if r.team_id == "a")
    assert (a.matches, a.match_points, a.siegpunkte) == (2, 4, 7)
    assert standings.crosstable["a"]["b"] == ()
    assert (standings.matches_complete, standings.games_recorded) == (5, 11)


def test_exports(make_league: MakeLeague) -> None:
    config = make_league(list("abcd"), "games_per_match = 2")
    matches = build_schedule(config)
    standings = compute_standings(config, matches, finished(matches))
    data = json.loads(standings.to_json())
    assert [row["team"] for row in data["standings"]] == ["a", "d", "c", "b"]
    assert data["standings"][2]["schwarmgroesse"] == 7.5
    assert data["standings"][0]["schwarmgroesse_exact"] == "29/3"
    assert data["criteria"] == ["match-points", "siegpunkte", "schwarmgroesse", "lot"]
    assert data["crosstable"]["a"]["c"] == ["1-0"]
    rows = list(csv.DictReader(io.StringIO(standings.to_csv())))
    assert [(r["rank"], r["team"], r["match_points"], r["siegpunkte"]) for r in rows] == [
        ("1", "a", "6", "11"),
        ("2", "d", "2", "5"),
        ("3", "c", "2", "4"),
        ("4", "b", "2", "4"),
    ]
    page = standings.to_html()
    assert page.startswith("<!DOCTYPE html>")
    assert "Team A" in page and "<style>" in page
    # Self-contained: no scripts, no external resources.
    assert '<td class="note">Schwarmgröße</td>' in page  # b below c: tie broken by Schwarmgröße
    assert '<td class="note">match points</td>' not in page  # not a tie
    assert "<script" not in page and "http" not in page and "<link" not in page


def test_html_escapes_names(make_league_text: Callable[..., str]) -> None:
    from league.config import parse_league

    text = make_league_text(["a", "b"]).replace('name = "Team A"', 'name = "<b>Evil</b> & Co"')
    config = parse_league(text)
    page = compute_standings(config, build_schedule(config), []).to_html()
    assert "&lt;b&gt;Evil&lt;/b&gt; &amp; Co" in page
    assert "<b>Evil" not in page
