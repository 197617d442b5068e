"""Where the time goes: per bot, its move times (p50, p95, p99, max), near misses (moves over
75 % of the soft limit), and the games it lost irregularly, by kind (timeouts, crashes, rule
and protocol violations).

With the server in this process the move times are the server's own (the lobby measures each
move from the request leaving to the move arriving; they reach the runner as `FinishedGame`s
through `ServerGames`, a recorder sink the runner hands the server when it composes it).
Against a running server the runner only has the observer's view: the gaps between the
states it receives, which include the server's and the network's share; the report says so.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import GameResult, Team
from server.recorder import FinishedGame

NEAR_MISS = 0.75  # of the soft limit: a move this slow is one hiccup away from a loss

# Violation kinds as the runner reports them: the official kinds, plus CRASH for a LEFT whose
# bot process ended by itself (it died; it did not just hang up).
CRASH = "CRASH"
KINDS = ("SOFT_TIMEOUT", "HARD_TIMEOUT", CRASH, "LEFT", "RULE_VIOLATION", "PROCESS_VIOLATION")
TIMEOUTS = ("SOFT_TIMEOUT", "HARD_TIMEOUT")

# The start of each official reason text, `%s` the violator's name (engine.results).
_REASON_PREFIXES = (
    ("LEFT", "%s hat das Spiel verlassen: "),
    ("RULE_VIOLATION", "Regelverletzung von %s: "),
    ("PROCESS_VIOLATION", "Missachtung des Spielablaufs von %s: "),
    ("SOFT_TIMEOUT", "%s hat fuer die Antwort auf die Zugaufforderung laenger als "),
    ("HARD_TIMEOUT", "%s hat innerhalb von "),
)


class ServerGames:
    """A recorder sink (server.recorder.GameSink) that keeps each finished game for the
    runner to pick up by room id. The recorder calls `write` in a worker thread before it
    sends `<left>`, so a game is here by the time the observer has seen the room end."""

    def __init__(self) -> None:
        self._games: dict[str, FinishedGame] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """What it writes, for the server's error log."""
        return "match runner"

    def write(self, game: FinishedGame, replay: Path | None) -> None:
        """Keep `game` (called by the server's recorder)."""
        with self._lock:
            self._games[game.room_id] = game

    def take_any(self) -> FinishedGame | None:
        """Some finished game, once (a server with one room); None if there is none yet."""
        with self._lock:
            return self._games.pop(next(iter(self._games)), None) if self._games else None

    def take(self, room_id: str) -> FinishedGame | None:
        """The finished game of `room_id`, once; None if the server has not recorded it."""
        with self._lock:
            return self._games.pop(room_id, None)


def violation_kind(result: GameResult, name: str, team: Team | None = None) -> str | None:
    """The official kind of violation by which the player named `name` (or on `team`) lost,
    or None. From the result's entries when the server filled them in, else from the
    official reason text (an observer's result carries only that)."""
    if result.regular:
        return None
    for entry, _score in result.scores:
        if entry.violation is not None and (entry.name == name or entry.team is team):
            return entry.violation.kind.value
    for kind, prefix in _REASON_PREFIXES:
        if result.reason.startswith(prefix.replace("%s", name, 1)):
            return kind
    return None


def movers(count: int, first_turn: int = 0) -> list[int]:
    """The slot (0 = team ONE) that made each of `count` consecutive moves from `first_turn`:
    team ONE moves on even turns."""
    return [(first_turn + index) % 2 for index in range(count)]


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (`fraction` 0..1) of `values`; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass
class BotTimes:
    """One bot's move times and irregular losses over the run."""

    name: str
    move_ms: list[float] = field(default_factory=list)
    near_misses: int = 0
    losses: Counter[str] = field(default_factory=Counter)  # violation kind -> games

    def add_moves(self, move_ms: Sequence[float], soft_ms: float | None) -> None:
        """Count moves; `soft_ms` None: the bot cannot time out (no near misses)."""
        self.move_ms.extend(move_ms)
        if soft_ms is not None:
            self.near_misses += sum(ms > NEAR_MISS * soft_ms for ms in move_ms)

    @property
    def timeouts(self) -> int:
        """Games lost on time."""
        return sum(self.losses[kind] for kind in TIMEOUTS)

    @property
    def crashes(self) -> int:
        """Games lost because the bot's process died."""
        return self.losses[CRASH]

    def figures(self) -> dict[str, Any]:
        """The JSON form (NDJSON `run_end`, tests)."""

        def rounded(value: float) -> float | None:
            return None if math.isnan(value) else round(value, 3)

        return {
            "name": self.name,
            "moves": len(self.move_ms),
            "p50_ms": rounded(percentile(self.move_ms, 0.50)),
            "p95_ms": rounded(percentile(self.move_ms, 0.95)),
            "p99_ms": rounded(percentile(self.move_ms, 0.99)),
            "max_ms": rounded(max(self.move_ms, default=math.nan)),
            "near_misses": self.near_misses,
            "timeouts": self.timeouts,
            "crashes": self.crashes,
            "violations": {kind: self.losses[kind] for kind in KINDS if self.losses[kind]},
        }


@dataclass
class TimeReport:
    """Both bots' figures and where the times come from."""

    names: tuple[str, str]
    soft_timeout: float  # seconds
    source: str  # "server" or "observer"
    bots: tuple[BotTimes, BotTimes] = field(init=False)

    def __post_init__(self) -> None:
        self.bots = (BotTimes(self.names[0]), BotTimes(self.names[1]))

    def add_game(
        self,
        one: int,
        move_ms: Sequence[float],
        can_timeout: tuple[bool, bool],
        loser_kind: tuple[int, str] | None,
    ) -> None:
        """Count a game: `one` the player on team ONE, `move_ms` every move's time in move
        order from turn 0, `loser_kind` (player, kind) when someone lost irregularly."""
        by_player: tuple[list[float], list[float]] = ([], [])
        for slot, ms in zip(movers(len(move_ms)), move_ms, strict=True):
            by_player[one if slot == 0 else 1 - one].append(ms)
        for player, bot in enumerate(self.bots):
            soft = self.soft_timeout * 1000 if can_timeout[player] else None
            bot.add_moves(by_player[player], soft)
        if loser_kind is not None:
            player, kind = loser_kind
            self.bots[player].losses[kind] += 1

    def figures(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "source": self.source,
            "soft_timeout_s": self.soft_timeout,
            "bots": [bot.figures() for bot in self.bots],
        }

    def table(self) -> str:
        """The text report: one row per bot."""
        if self.source == "server":
            heading = "Move times (measured by the server, ms):"
        else:
            heading = (
                "Move times (measured by the observer, ms: the gaps between the states it "
                "received, including the server's and the network's share; a running server "
                "does not hand the runner its own figures):"
            )
        header = ("player", "moves", "p50", "p95", "p99", "max", "near", "timeouts", "crashes")
        rows = []
        for bot in self.bots:
            figures = bot.figures()

            def cell(key: str, figures: dict[str, Any] = figures) -> str:
                value = figures[key]
                return "-" if value is None else f"{value:.1f}"

            rows.append(
                (
                    bot.name,
                    str(figures["moves"]),
                    cell("p50_ms"),
                    cell("p95_ms"),
                    cell("p99_ms"),
                    cell("max_ms"),
                    str(bot.near_misses),
                    str(bot.timeouts),
                    str(bot.crashes),
                )
            )
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
        lines = [heading]
        for row in (header, *rows):
            first = row[0].ljust(widths[0])
            rest = [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
            lines.append("  ".join([first, *rest]))
        lines.append(f"near = moves over {NEAR_MISS:.0%} of the {self.soft_timeout:g} s soft limit")
        for bot in self.bots:
            kinds = [f"{kind} {bot.losses[kind]}" for kind in KINDS if bot.losses[kind]]
            if kinds:
                lines.append(f"{bot.name} lost irregularly: {', '.join(kinds)}")
        return "\n".join(lines)


def irregular_loss(
    result: GameResult, names: tuple[str, str], one: int, crashed: Sequence[int] = ()
) -> tuple[int, str] | None:
    """(player, kind) of the player who lost the game irregularly, None for a regular game
    (or an irregular one nobody lost, e.g. a server shutdown). `one`: the player on team
    ONE; `crashed`: players whose process died during the game (kind CRASH)."""
    if result.regular:
        return None
    for player in crashed:
        return player, CRASH
    for player in (0, 1):
        team = Team.ONE if player == one else Team.TWO
        kind = violation_kind(result, names[player], team)
        if kind is not None:
            return player, kind
    return None
