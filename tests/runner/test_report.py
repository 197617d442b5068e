"""Text reports of the running figures: exact strings for the golden inputs (fastchess/cutechess
layout) and for the degenerate cases."""

from __future__ import annotations

import math

from runner.report import (
    figures_block,
    llr_line,
    perfect_score_bound,
    score_line,
    sprt_conclusion,
)
from runner.stats import Pentanomial, Sprt, SprtStatus, Trinomial

GOLDEN_TRI = Trinomial(losses=50, draws=90, wins=60)
# The pentanomial golden counts with 10 of the 110 half-point pairs won-and-lost; the games
# behind them: LL 5 → 10 L; LD 40 → 40 L 40 D; WL 10 → 10 W 10 L; DD 100 → 200 D;
# WD 35 → 35 W 35 D; WW 10 → 20 W.
GOLDEN_PENTA = Pentanomial(5, 40, 110, 35, 10, wl=10)
GAMES_OF_GOLDEN_PENTA = Trinomial(losses=60, draws=275, wins=65)


def test_trinomial_block_with_sprt() -> None:
    assert figures_block("A", "B", GOLDEN_TRI, None, Sprt(0, 10)) == (
        "Results of A vs B:\n"
        "Elo: 17.39 +/- 35.85, nElo: 23.48 +/- 48.15\n"
        "LOS: 83.04 %, DrawRatio: 45.00 %\n"
        "Games: 200, Wins: 60, Losses: 50, Draws: 90, Points: 105.0 (52.50 %)\n"
        "LLR: 0.31 (10.4%) (-2.94, 2.94) [0.00, 10.00]"
    )


def test_pentanomial_block_with_conditions_and_logistic_sprt() -> None:
    block = figures_block(
        "alpha",
        "beta",
        GAMES_OF_GOLDEN_PENTA,
        GOLDEN_PENTA,
        Sprt(0, 10, model="logistic"),
        conditions="2 s/move, 200 boards",
    )
    assert block == (
        "Results of alpha vs beta (2 s/move, 200 boards):\n"
        "Elo: 4.34 +/- 19.80, nElo: 7.48 +/- 34.05\n"
        "LOS: 66.66 %, DrawRatio: 55.00 %, PairsRatio: 1.00\n"
        "Games: 400, Wins: 65, Losses: 60, Draws: 275, Points: 202.5 (50.62 %)\n"
        "Ptnml(0-2): [5, 40, 110, 35, 10], WL/DD Ratio: 0.10\n"
        "LLR: -0.06 (2.1%) (-2.94, 2.94) [0.00, 10.00]"
    )


def test_pentanomial_without_wl_split_and_without_sprt() -> None:
    block = figures_block("A", "B", GAMES_OF_GOLDEN_PENTA, Pentanomial(5, 40, 110, 35, 10))
    assert block.splitlines()[-1] == "Ptnml(0-2): [5, 40, 110, 35, 10]"
    assert "LLR" not in block


def test_no_games_yet() -> None:
    assert figures_block("A", "B", Trinomial(), Pentanomial(wl=0), Sprt(0, 10)) == (
        "Results of A vs B:\n"
        "Elo: n/a, nElo: n/a\n"
        "LOS: n/a %, DrawRatio: n/a %, PairsRatio: 0:0\n"
        "Games: 0, Wins: 0, Losses: 0, Draws: 0, Points: 0.0 (n/a %)\n"
        "Ptnml(0-2): [0, 0, 0, 0, 0], WL/DD Ratio: 0:0\n"
        "LLR: 0.00 (0.0%) (-2.94, 2.94) [0.00, 10.00]"
    )


def test_perfect_score_says_what_is_known_instead_of_nan() -> None:
    """All games won: a 95 % bound on the Elo (0.025 ** (1/n) as a score), the ratios as
    counts; no `nan` or `inf` anywhere (issue 17 item 19)."""
    block = figures_block("A", "B", Trinomial(wins=4), Pentanomial(ww=2, wl=0))
    bound = -400 * math.log10(1 / 0.025 ** (1 / 4) - 1)
    assert block.splitlines()[1:3] == [
        f"Elo: > {bound:.2f} (all 4 games won, 95 % bound), nElo: n/a (no variance)",
        "LOS: 100.00 %, DrawRatio: 0.00 %, PairsRatio: 2:0",
    ]
    assert block.splitlines()[4] == "Ptnml(0-2): [0, 0, 0, 0, 2], WL/DD Ratio: 0:0"
    lost = figures_block("A", "B", Trinomial(losses=30))
    assert "Elo: < -" in lost and "(all 30 games lost, 95 % bound)" in lost
    for text in (block, lost, figures_block("A", "B", Trinomial())):
        assert "nan" not in text and "inf" not in text


def test_the_perfect_score_bound_grows_with_the_games() -> None:
    assert math.isnan(perfect_score_bound(0))
    assert perfect_score_bound(4) < 0 < perfect_score_bound(10) < perfect_score_bound(100)


def test_llr_line_percentages_point_to_the_nearer_bound() -> None:
    sprt = Sprt(0, 10, alpha=0.05, beta=0.05)
    assert llr_line(sprt, Trinomial(wins=200)).startswith("LLR: ")
    losing = llr_line(sprt, Trinomial(losses=60, draws=90, wins=50))
    assert losing.startswith("LLR: -")
    assert "(-2.94, 2.94) [0.00, 10.00]" in losing


def test_score_line_like_cutechess() -> None:
    assert score_line("A", "B", GOLDEN_TRI) == "Score of A vs B: 60 - 50 - 90  [0.525] 200"
    assert score_line("x", "y", Trinomial(wins=1)) == "Score of x vs y: 1 - 0 - 0  [1.000] 1"
    assert score_line("x", "y", Trinomial()) == "Score of x vs y: 0 - 0 - 0  [n/a] 0"


def test_sprt_conclusions() -> None:
    assert sprt_conclusion(SprtStatus.H1) == "SPRT: H1 was accepted"
    assert sprt_conclusion(SprtStatus.H0) == "SPRT: H0 was accepted"
    assert "inconclusive" in sprt_conclusion(SprtStatus.CONTINUE)
