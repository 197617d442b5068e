"""Text formatting of a match's running figures, laid out as fastchess and cutechess print them,
so people (and their scripts) who know those tools can read ours. Pure: counts in, text out.

Every function returns text without a trailing newline. Where fastchess prints `nan` or `inf`
(no games yet, a perfect score, a zero denominator) we say what is known instead: a perfect
score gives a 95 % bound on the Elo ("Elo: > 212.43 (all 8 games won, 95 % bound)"), a ratio
with a zero denominator its two counts ("3:0"), a figure without data "n/a".
"""

from __future__ import annotations

import math

from runner.stats import (
    Estimate,
    Pentanomial,
    Sprt,
    SprtStatus,
    Trinomial,
    elo_from_score,
    estimate,
)

__all__ = [
    "elo_text",
    "figures_block",
    "llr_line",
    "perfect_score_bound",
    "score_line",
    "sprt_conclusion",
]

# Two-sided 95 %: the one-sided tail of a perfect score's Clopper-Pearson bound.
_TAIL = 0.025


def _ratio(numerator: float, denominator: float) -> float:
    """numerator/denominator, with x/0 = inf (x > 0) and 0/0 = nan instead of an exception."""
    if denominator == 0:
        return math.inf if numerator > 0 else math.nan
    return numerator / denominator


def _figure(value: float, spec: str = ".2f") -> str:
    """A finite figure formatted; "n/a" for NaN (no data), "unbounded" for ±inf."""
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "unbounded"
    return format(value, spec)


def _ratio_text(numerator: float, denominator: float) -> str:
    """The ratio, or both counts when the denominator is 0 ("3:0", "0:0")."""
    if denominator == 0:
        return f"{numerator:g}:{denominator:g}"
    return f"{numerator / denominator:.2f}"


def perfect_score_bound(games: int) -> float:
    """The 95 % bound on the Elo of a player who won all `games` games: the score p for
    which winning them all has probability 2.5 % (p^n = 0.025, Clopper-Pearson), as Elo.
    Nothing is known without games: NaN."""
    if games <= 0:
        return math.nan
    return elo_from_score(_TAIL ** (1 / games))


def elo_text(figures: Estimate, spec: str = ".2f", plus_minus: str = "+/-") -> str:
    """`12.34 +/- 5.67`; for a perfect score the bound, `> 212.43 (all 8 games won, 95 % bound)`
    (`< -212.43 (all 8 games lost, …)`); "n/a" without games."""
    if math.isinf(figures.elo):
        bound = perfect_score_bound(figures.games)
        won = figures.elo > 0
        side, sign = ("won", ">") if won else ("lost", "<")
        value = format(bound if won else -bound, spec)
        return f"{sign} {value} (all {figures.games} games {side}, 95 % bound)"
    if math.isnan(figures.elo):
        return "n/a"
    if math.isinf(figures.elo_error):
        return f"{format(figures.elo, spec)} (95 % interval unbounded)"
    return f"{format(figures.elo, spec)} {plus_minus} {_figure(figures.elo_error, spec)}"


def _nelo_text(figures: Estimate) -> str:
    if math.isnan(figures.nelo) or math.isinf(figures.nelo):
        # σ = 0 (every game or pair alike): the normalised scale is not defined.
        return "n/a (no variance)" if figures.games else "n/a"
    return f"{figures.nelo:.2f} +/- {_figure(figures.nelo_error)}"


def score_line(name1: str, name2: str, counts: Trinomial) -> str:
    """cutechess's line after each game: `Score of A vs B: W - L - D  [score] N` (A's view)."""
    score = _figure(_ratio(counts.points, counts.games), ".3f")
    return (
        f"Score of {name1} vs {name2}: {counts.wins} - {counts.losses} - {counts.draws}"
        f"  [{score}] {counts.games}"
    )


def llr_line(sprt: Sprt, counts: Trinomial | Pentanomial) -> str:
    """fastchess's SPRT line: `LLR: 0.31 (10.4%) (-2.94, 2.94) [0.00, 10.00]`.

    The percentage is how far the LLR has gone towards the bound on its side.
    """
    llr = sprt.llr(counts)
    lower, upper = sprt.bounds
    return (
        f"LLR: {llr:.2f} ({sprt.fraction(llr) * 100:.1f}%) ({lower:.2f}, {upper:.2f})"
        f" [{sprt.elo0:.2f}, {sprt.elo1:.2f}]"
    )


def sprt_conclusion(status: SprtStatus) -> str:
    """One sentence for the end of a run: which hypothesis was accepted, or none."""
    if status is SprtStatus.H1:
        return "SPRT: H1 was accepted"
    if status is SprtStatus.H0:
        return "SPRT: H0 was accepted"
    return "SPRT: inconclusive (neither bound reached)"


def figures_block(
    name1: str,
    name2: str,
    counts_tri: Trinomial,
    counts_penta: Pentanomial | None = None,
    sprt: Sprt | None = None,
    *,
    conditions: str | None = None,
) -> str:
    """fastchess's periodic report of a head-to-head match, from `name1`'s point of view.

    Elo, nElo, LOS, the draw ratio and the LLR come from the pairs when `counts_penta` is given
    (as fastchess does when it reports pentanomial figures), from the games otherwise; the
    Games/Wins/Losses/Draws line always counts games. `conditions` (time per move, boards …) goes
    in brackets after the names. Lines for pairs and SPRT appear only when they are given; the
    WL/DD ratio only when the pentanomial counts know WL apart from DD.
    """
    counts = counts_tri if counts_penta is None else counts_penta
    figures = estimate(counts)
    heading = f"Results of {name1} vs {name2}"
    lines = [
        f"{heading} ({conditions}):" if conditions else f"{heading}:",
        f"Elo: {elo_text(figures)}, nElo: {_nelo_text(figures)}",
    ]
    los_line = (
        f"LOS: {_figure(figures.los * 100)} %, DrawRatio: {_figure(figures.draw_ratio * 100)} %"
    )
    if counts_penta is not None:
        pairs_ratio = _ratio_text(
            counts_penta.ww + counts_penta.wd, counts_penta.ld + counts_penta.ll
        )
        los_line += f", PairsRatio: {pairs_ratio}"
    lines.append(los_line)
    points_ratio = _figure(_ratio(counts_tri.points, counts_tri.games) * 100)
    lines.append(
        f"Games: {counts_tri.games}, Wins: {counts_tri.wins}, Losses: {counts_tri.losses}, "
        f"Draws: {counts_tri.draws}, Points: {counts_tri.points:.1f} ({points_ratio} %)"
    )
    if counts_penta is not None:
        penta_line = "Ptnml(0-2): [{}, {}, {}, {}, {}]".format(*counts_penta.frequencies)
        if counts_penta.wl is not None and counts_penta.dd is not None:
            penta_line += f", WL/DD Ratio: {_ratio_text(counts_penta.wl, counts_penta.dd)}"
        lines.append(penta_line)
    if sprt is not None:
        lines.append(llr_line(sprt, counts))
    return "\n".join(lines)
