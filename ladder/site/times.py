"""A version's time profile: how long its moves took in its ladder games (the game server's
own clock, `ladder_move_times`) against the 2 s move limit — the figures (median, p90, p99,
max, moves near and over the limit) and a small histogram, as inline SVG (the CSP forbids
inline script and style: presentation attributes only).

The figures are `runner.timing`'s (nearest-rank percentiles, a near miss is a move over
`NEAR_MISS` of the limit), so a team reads the same numbers here as in `piranhas-match`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ladder.site.pages import esc, table
from ladder.store import MoveTimes, Version
from runner.timing import NEAR_MISS, percentile

SOFT_LIMIT_MS = 2000.0  # the official soft timeout: a slower move loses the game
# Histogram bins (ms): fine where bots usually are, then up to and past the limit.
EDGES = (0.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 1500.0, SOFT_LIMIT_MS)


@dataclass(frozen=True)
class Profile:
    """The figures of a set of moves (times in ms; None without moves)."""

    games: int
    moves: int
    median: float | None
    p90: float | None
    p99: float | None
    max: float | None
    near: int  # moves over NEAR_MISS of the limit (the limit included)
    over: int  # moves over the limit
    bins: tuple[int, ...]  # counts per EDGES bin, the last one past the limit

    def to_json(self) -> dict[str, Any]:
        return {
            "games": self.games,
            "moves": self.moves,
            "median_ms": self.median,
            "p90_ms": self.p90,
            "p99_ms": self.p99,
            "max_ms": self.max,
            "near_limit": self.near,
            "over_limit": self.over,
            "limit_ms": SOFT_LIMIT_MS,
            "histogram": [
                {"from_ms": low, "to_ms": high, "moves": count}
                for (low, high), count in zip(_ranges(), self.bins, strict=True)
            ],
        }


def _ranges() -> list[tuple[float, float | None]]:
    return [*itertools.pairwise(EDGES), (EDGES[-1], None)]


def profile(games: Sequence[MoveTimes]) -> Profile:
    """The profile of these games' moves."""
    times = [ms for game in games for ms in game.move_ms]
    bins = [0] * len(EDGES)
    last = len(EDGES) - 1
    for ms in times:
        # A move of exactly the limit is in time (the official rule: longer than 2 s loses).
        index = next(
            (i for i in range(1, len(EDGES)) if ms < EDGES[i] or (i == last and ms <= EDGES[i])),
            len(EDGES),
        )
        bins[index - 1] += 1

    def figure(value: float) -> float | None:
        return None if math.isnan(value) else round(value, 1)

    return Profile(
        games=len(games),
        moves=len(times),
        median=figure(percentile(times, 0.50)),
        p90=figure(percentile(times, 0.90)),
        p99=figure(percentile(times, 0.99)),
        max=figure(max(times, default=math.nan)),
        near=sum(ms > NEAR_MISS * SOFT_LIMIT_MS for ms in times),
        over=sum(ms > SOFT_LIMIT_MS for ms in times),
        bins=tuple(bins),
    )


def _ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.1f} ms"


def figures_text(p: Profile) -> str:
    """The figures as one line of HTML."""
    return (
        f"median {_ms(p.median)} · p90 {_ms(p.p90)} · p99 {_ms(p.p99)} · max {_ms(p.max)} · "
        f"{p.near} of {p.moves} moves over {NEAR_MISS:.0%} of the "
        f"{SOFT_LIMIT_MS / 1000:.0f} s limit, {p.over} over it"
    )


def limit_bar(p: Profile, *, width: float = 200.0) -> str:
    """How close to the limit: a bar from 0 to the limit with p90 shaded, p99 and max
    marked (past the limit: at its end, red)."""
    if p.moves == 0 or p.p90 is None or p.p99 is None or p.max is None:
        return ""
    height = 14.0

    def x(ms: float) -> float:
        return width * min(ms, SOFT_LIMIT_MS) / SOFT_LIMIT_MS

    danger = "#d93025" if p.max > NEAR_MISS * SOFT_LIMIT_MS else "#f9ab00"
    return (
        f'<svg class="limit-bar" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="img" aria-label="move times against the limit: '
        f'p99 {_ms(p.p99)}, max {_ms(p.max)} of {SOFT_LIMIT_MS:.0f} ms">'
        f'<rect x="0" y="2" width="{width:.0f}" height="10" fill="#e8eaed"/>'
        f'<rect x="{x(NEAR_MISS * SOFT_LIMIT_MS):.1f}" y="2" '
        f'width="{width - x(NEAR_MISS * SOFT_LIMIT_MS):.1f}" height="10" fill="#fce8e6"/>'
        f'<rect x="0" y="2" width="{max(x(p.p90), 1.0):.1f}" height="10" fill="#1a73e8"/>'
        f'<rect x="{x(p.p99):.1f}" y="0" width="2" height="14" fill="#174ea6"/>'
        f'<rect x="{max(x(p.max) - 2, 0):.1f}" y="0" width="2" height="14" fill="{danger}"/>'
        "</svg>"
    )


def histogram(p: Profile, *, name: str = "") -> str:
    """The histogram of move times (bars scaled to the fullest bin) as inline SVG."""
    if p.moves == 0:
        return '<p class="empty">No timed moves yet.</p>'
    width, height, top, bottom = 560.0, 110.0, 14.0, 22.0
    slot = width / len(p.bins)
    biggest = max(p.bins)
    parts = []
    for index, ((low, high), count) in enumerate(zip(_ranges(), p.bins, strict=True)):
        bar = (height - top - bottom) * count / biggest
        if count:
            bar = max(bar, 1.0)
        left = index * slot + 3
        colour = "#d93025" if high is None else "#f9ab00" if low >= 1000 else "#1a73e8"
        label = f">{low / 1000:g}s" if high is None else f"<{_edge(high)}"
        parts.append(
            f'<rect x="{left:.1f}" y="{height - bottom - bar:.1f}" width="{slot - 6:.1f}" '
            f'height="{bar:.1f}" fill="{colour}"><title>{esc(_edge(low))}–'
            f"{esc(_edge(high) if high is not None else '')}: {count} moves</title></rect>"
            f'<text x="{left + (slot - 6) / 2:.1f}" y="{height - bottom - bar - 3:.1f}" '
            f'font-size="10" text-anchor="middle">{count if count else ""}</text>'
            f'<text x="{left + (slot - 6) / 2:.1f}" y="{height - 8:.1f}" font-size="10" '
            f'text-anchor="middle">{esc(label)}</text>'
        )
    named = f' id="{esc(name)}"' if name else ""
    return (
        f'<svg{named} class="time-histogram" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" height="{height:.0f}" role="img" '
        f'aria-label="move times histogram" data-moves="{p.moves}">' + "".join(parts) + "</svg>"
    )


def _edge(ms: float) -> str:
    return f"{ms / 1000:g}s" if ms >= 1000 else f"{ms:g}ms"


def times_table(base: str, profiles: list[tuple[Version, Profile]]) -> str:
    """Every version's time profile in one table (the team's own view)."""
    if not profiles:
        return '<p class="empty">No versions yet.</p>'

    def ms(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f}"

    rows = [
        [
            f"v{version.number}",
            str(p.games),
            str(p.moves),
            ms(p.median),
            ms(p.p90),
            ms(p.p99),
            ms(p.max),
            f"{p.near} / {p.over}",
            limit_bar(p),
            f'<a href="{base}/versions/{version.id}/times">JSON</a>',
        ]
        for version, p in profiles
    ]
    return table(
        ["version", "games", "moves", "median ms", "p90", "p99", "max", "near / over 2 s", "", ""],
        rows,
        name="time-profiles",
    )
