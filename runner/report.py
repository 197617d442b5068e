"""Text formatting of a match's running figures, laid out as fastchess and cutechess print them,
so people (and their scripts) who know those tools can read ours. Pure: counts in, text out.

Every function returns text without a trailing newline. NaN and infinite figures (no games yet, a
perfect score, a zero denominator) print as `nan`, `inf`, `-inf`, as fastchess prints them.
"""

from __future__ import annotations

import math

from runner.stats import Pentanomial, Sprt, SprtStatus, Trinomial, estimate

__all__ = ["figures_block", "llr_line", "score_line", "sprt_conclusion"]


def _ratio(numerator: float, denominator: float) -> float:
    """numerator/denominator, with x/0 = inf (x > 0) and 0/0 = nan instead of an exception."""
    if denominator == 0:
        return math.inf if numerator > 0 else math.nan
    return numerator / denominator


def score_line(name1: str, name2: str, counts: Trinomial) -> str:
    """cutechess's line after each game: `Score of A vs B: W - L - D  [score] N` (A's view)."""
    score = _ratio(counts.points, counts.games)
    return (
        f"Score of {name1} vs {name2}: {counts.wins} - {counts.losses} - {counts.draws}"
        f"  [{score:.3f}] {counts.games}"
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
        f"Elo: {figures.elo:.2f} +/- {figures.elo_error:.2f}, "
        f"nElo: {figures.nelo:.2f} +/- {figures.nelo_error:.2f}",
    ]
    los_line = f"LOS: {figures.los * 100:.2f} %, DrawRatio: {figures.draw_ratio * 100:.2f} %"
    if counts_penta is not None:
        pairs_ratio = _ratio(counts_penta.ww + counts_penta.wd, counts_penta.ld + counts_penta.ll)
        los_line += f", PairsRatio: {pairs_ratio:.2f}"
    lines.append(los_line)
    points_ratio = _ratio(counts_tri.points, counts_tri.games) * 100
    lines.append(
        f"Games: {counts_tri.games}, Wins: {counts_tri.wins}, Losses: {counts_tri.losses}, "
        f"Draws: {counts_tri.draws}, Points: {counts_tri.points:.1f} ({points_ratio:.2f} %)"
    )
    if counts_penta is not None:
        penta_line = "Ptnml(0-2): [{}, {}, {}, {}, {}]".format(*counts_penta.frequencies)
        if counts_penta.wl is not None and counts_penta.dd is not None:
            penta_line += f", WL/DD Ratio: {_ratio(counts_penta.wl, counts_penta.dd):.2f}"
        lines.append(penta_line)
    if sprt is not None:
        lines.append(llr_line(sprt, counts))
    return "\n".join(lines)
