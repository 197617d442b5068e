"""The statistics in the runner: figures live and at the end, and an SPRT that stops the run
early with an exit status a CI job can gate on (0 = H1, 1 = H0, 3 = inconclusive)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engine import GameResult, PlayerEntry, Team
from launching import MatchError
from runner.options import parse_options
from runner.scores import GameSummary, Scoreboard
from runner.stats import Pentanomial, Sprt, SprtStatus, Trinomial
from tests.runner.test_match import FAST_BOT, game_lines, run_match

pytestmark = pytest.mark.timeout(90)

# Wide hypotheses so that a handful of one-sided pairs decide (8 WW pairs accept H1).
WIDE = "elo0=0,elo1=200,model=logistic"
LOSER = f"{FAST_BOT} --illegal-at-turn 0"  # loses every game on its first move


def game(number: int, one: int, winner_slot: int | None) -> GameSummary:
    entries = [PlayerEntry(Team.ONE, "x"), PlayerEntry(Team.TWO, "y")]
    winner = None if winner_slot is None else (Team.ONE, Team.TWO)[winner_slot]
    points = [(1, 1), (1, 1)] if winner_slot is None else [(2, 0), (0, 0)]
    if winner_slot == 1:
        points.reverse()
    scores = [(entries[0], points[0]), (entries[1], points[1])]
    return GameSummary(number, one, f"r{number}", GameResult(scores, winner, True, "ok"), 60)


def test_match_figures_from_pairs_and_the_sprt_state() -> None:
    out = io.StringIO()
    match = Scoreboard(("p1", "p2"), 20, paired=True, out=out, sprt=Sprt.parse(WIDE))
    # player1 wins every game: game k has player1 on slot 0 when k is odd.
    for number in range(1, 15):
        one = (number - 1) % 2
        match.record(game(number, one, 0 if one == 0 else 1))
    assert match.counts() == Trinomial(wins=14)
    assert match.pairs() == Pentanomial(ww=7, wl=0)
    assert match.sprt_status() is SprtStatus.CONTINUE  # 7 pairs are not enough
    match.record(game(15, 0, 0))
    assert match.sprt_status() is SprtStatus.CONTINUE  # a half pair does not count
    match.record(game(16, 1, 1))
    assert match.sprt_status() is SprtStatus.H1
    final = match.final_figures()
    assert "Results of p1 vs p2 (16 of 20 games):" in final
    assert "Ptnml(0-2): [0, 0, 0, 0, 8]" in final
    assert "LLR: " in final and final.endswith("SPRT: H1 was accepted")
    assert "LLR" in match.running_figures()


def test_sprt_option_is_checked() -> None:
    options = parse_options(
        ["--player1", FAST_BOT, "--player2", FAST_BOT, "--sprt", WIDE], threads=2
    )
    assert options.sprt == Sprt(0, 200, model="logistic")
    with pytest.raises(MatchError, match="--sprt: SPRT elo0"):
        parse_options(
            ["--player1", FAST_BOT, "--player2", FAST_BOT, "--sprt", "elo0=5,elo1=1"], threads=2
        )


async def test_sprt_stops_a_strong_vs_weak_match_at_h1(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", FAST_BOT, "--player2", LOSER, "--games", "40", "--seed", "7"),
        *("--sprt", WIDE, "--concurrency", "1", "--no-reproducers", "--ndjson", "e.jsonl"),
        limit=60,
    )
    assert run.status == 0, run.stdout + run.stderr  # H1 accepted
    assert len(game_lines(run.stdout)) == 16  # 8 pairs, not 40 games
    assert "SPRT: H1 accepted after 16 games; stopping (24 games not played)" in run.stdout
    assert run.stdout.rstrip().count("SPRT: H1 was accepted") == 1
    # One bot won every game: a bound instead of `inf +/- nan` (issue 17 item 19).
    assert "Elo: > " in run.stdout and "(all 16 games won, 95 % bound)" in run.stdout
    assert "LOS: 100.00 %" in run.stdout
    assert "nan" not in run.stdout and " inf" not in run.stdout
    events = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    end = events[-1]
    assert end["event"] == "run_end" and end["played"] == 16
    assert end["stats"]["sprt"]["status"] == "H1"
    assert end["stats"]["pentanomial"] == [0, 0, 0, 0, 8]
    assert end["stats"]["siegpunkte"] == [32, 0]

    # Resuming a decided run plays nothing more and keeps the verdict.
    again = await run_match(
        tmp_path,
        *("--player1", FAST_BOT, "--player2", LOSER, "--games", "40", "--seed", "7"),
        *("--sprt", WIDE, "--concurrency", "1", "--no-reproducers", "--resume", "e.jsonl"),
        limit=60,
    )
    assert again.status == 0, again.stdout + again.stderr
    assert "SPRT: H1 accepted already by the resumed games" in again.stdout
    assert game_lines(again.stdout) == []


async def test_sprt_accepts_h0_for_the_weak_side(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", LOSER, "--player2", FAST_BOT, "--games", "40", "--seed", "7"),
        *("--sprt", WIDE, "--concurrency", "2", "--no-reproducers"),
        limit=60,
    )
    assert run.status == 1, run.stdout + run.stderr  # H0 accepted
    assert "SPRT: H0 was accepted" in run.stdout
    assert len(game_lines(run.stdout)) < 40


async def test_sprt_on_equal_bots_does_not_accept_h1(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", f"{FAST_BOT} --seed 1", "--player2", f"{FAST_BOT} --seed 2"),
        *("--games", "12", "--seed", "5", "--sprt", WIDE, "--concurrency", "2"),
        limit=60,
    )
    assert run.status in (1, 3), run.stdout + run.stderr  # H0 or inconclusive, never H1
    assert "H1 was accepted" not in run.stdout
    expected = "SPRT: H0 was accepted" if run.status == 1 else "SPRT: inconclusive"
    assert expected in run.stdout
