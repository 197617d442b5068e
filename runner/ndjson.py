"""The run as a stream of JSON events, one per line, flushed as it happens (`--ndjson FILE`),
and reading it back to continue an interrupted run (`--resume FILE`).

Events (every one has `event` and `time`, ISO 8601 UTC):

- `run_start`: `players` [name1, name2], `games`, `seed`, `boards` (null, or a digest of the
  --boards list), `concurrency`, `resumed` (games an earlier run of the stream finished; a
  resumed run writes a run_start of its own);
- `game_end`: `game` (1-based), `room`, `players` (names in slot order: ONE, TWO), `one`
  (0 when player1 played ONE), `seed` (the board seed when the board was the seeded one,
  else null), `winner` (a name or null), `regular`, `reason`, `siegpunkte` and
  `schwarmgroesse` (slot order), `turn`, `move_ms` (the observer's time between consecutive
  states: a move's time as the runner saw it), `replay` (path or null), `notes`;
  `server_move_ms` (the server's own measurement, in-process server only, else null),
  `irregular_loss` ({`player`, `kind`} or null), `reproducer` (its folder or null),
  `phases_ms` (where the game's wall time went: `prepare`, `launch`, `cleanup` are the
  runner's; `startup`, `exit` the bots'; `game` the game itself);
- `stats`: player1's `wins`, `draws`, `losses`, `siegpunkte` [player1, player2], `elo`,
  `elo_error` (95 %), `nelo`, `nelo_error`, `los`, `draw_ratio` (null when not finite) and,
  with paired boards, the `pentanomial` counts over finished pairs [LL, LD, DD+WL, WD, WW]
  (player1's points per pair 0 … 2); with --sprt `sprt` {`test`, `llr`, `bounds`, `status`};
- `run_end`: `status` (`done`, `interrupted`, `error`), `played`, `error` (a message or null),
  `stats` (as above) and `times` (per bot: moves, p50/p95/p99/max ms, near misses,
  timeouts, crashes, violations by kind, over the games this invocation played; `source`
  says who measured).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from engine import GameResult, PlayerEntry, Team
from launching import MatchError
from runner.options import Options
from runner.scores import GameSummary, Scoreboard, player_at


class EventLog:
    """Appends events to a file, one JSON object per line, flushed after each."""

    def __init__(self, path: Path | None) -> None:
        """No path: every write is a no-op (no --ndjson)."""
        self.path = path
        self._file: TextIO | None = None

    def open(self) -> None:
        """Open for appending (a resumed run continues its own stream)."""
        if self.path is None:
            return
        try:
            self._file = self.path.open("a", encoding="utf-8")
            # An interrupted write may have left a torn last line: end it, so the next event
            # starts a line of its own.
            if self._file.tell() > 0:
                with self.path.open("rb") as existing:
                    existing.seek(-1, 2)
                    if existing.read(1) != b"\n":
                        self._file.write("\n")
        except OSError as error:
            raise MatchError(f"cannot write {self.path}: {error}") from None

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def write(self, event: str, **fields: Any) -> None:
        """One event line."""
        if self._file is None:
            return
        record = {"event": event, "time": datetime.now(UTC).isoformat(), **fields}
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def run_start(self, options: Options, resumed: int = 0) -> None:
        """The run's identity (what a resume must match); `resumed`: games already played."""
        self.write(
            "run_start",
            players=list(options.names),
            games=options.games,
            seed=options.seed,
            boards=boards_digest(options.boards),
            concurrency=options.concurrency,
            resumed=resumed,
        )

    def game_end(
        self,
        summary: GameSummary,
        names: tuple[str, str],
        move_ms: list[float],
        replay: Path | None,
        *,
        server_move_ms: list[float] | None = None,
        loss: tuple[int, str] | None = None,
        reproducer: Path | None = None,
        phases: dict[str, float] | None = None,
    ) -> None:
        """One finished game."""
        result = summary.result
        winner = None
        if result.winner is not None:
            winner = names[player_at(0 if result.winner is Team.ONE else 1, summary.one)]
        self.write(
            "game_end",
            game=summary.number,
            room=summary.room_id,
            players=[entry.name for entry, _ in result.scores],
            one=summary.one,
            seed=summary.seed,
            winner=winner,
            regular=result.regular,
            reason=result.reason,
            siegpunkte=[points for _, (points, _swarm) in result.scores],
            schwarmgroesse=[swarm for _, (_points, swarm) in result.scores],
            turn=summary.turn,
            move_ms=[round(ms, 3) for ms in move_ms],
            server_move_ms=server_move_ms,
            irregular_loss=None if loss is None else {"player": names[loss[0]], "kind": loss[1]},
            reproducer=None if reproducer is None else str(reproducer),
            phases_ms={name: round(seconds * 1000, 3) for name, seconds in (phases or {}).items()},
            replay=None if replay is None else str(replay),
            notes=summary.notes,
        )

    def stats(self, match: Scoreboard) -> None:
        """The tally so far, from player1's side."""
        self.write("stats", **stats_fields(match))

    def run_end(
        self, status: str, played: int, error: str | None = None, match: Scoreboard | None = None
    ) -> None:
        """The end of the run (also after Ctrl+C or an error), with the final figures and
        the move times when there is a match."""
        fields: dict[str, Any] = {}
        if match is not None:
            fields["stats"] = stats_fields(match)
            if match.times is not None:
                fields["times"] = match.times.figures()
        self.write("run_end", status=status, played=played, error=error, **fields)


def finite(value: float) -> float | None:
    """JSON has no NaN or infinity: null."""
    return round(value, 4) if math.isfinite(value) else None


def stats_fields(match: Scoreboard) -> dict[str, Any]:
    """Player1's tally and figures: W/D/L, Siegpunkte, Elo ± 95 % CI, nElo, LOS, draw
    ratio, the pentanomial with paired boards, the SPRT's LLR and state with --sprt."""
    losses, draws, wins = match.trinomial()
    figures = match.estimate()
    fields: dict[str, Any] = {
        "games": len(match.played),
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "siegpunkte": [score.points for score in match.scores],
        "elo": finite(figures.elo),
        "elo_error": finite(figures.elo_error),
        "nelo": finite(figures.nelo),
        "nelo_error": finite(figures.nelo_error),
        "los": finite(figures.los),
        "draw_ratio": finite(figures.draw_ratio),
    }
    pentanomial = match.pentanomial()
    if pentanomial is not None:
        fields["pentanomial"] = list(pentanomial)
    if match.sprt is not None:
        pairs = match.pairs()
        counts = match.counts() if pairs is None else pairs
        status = match.sprt_status()
        lower, upper = match.sprt.bounds
        fields["sprt"] = {
            "test": str(match.sprt),
            "llr": finite(match.sprt.llr(counts)),
            "bounds": [round(lower, 4), round(upper, 4)],
            "status": None if status is None else status.value,
        }
    return fields


@dataclass
class Resumed:
    """What an earlier run of the same match finished."""

    games: list[GameSummary]


# A game_end line is a few KB (60 move times twice, notes): a line far longer is not one.
MAX_RESUME_LINE = 1 << 20
MAX_SIEGPUNKTE = 2  # a game gives 2 (win), 1 (draw) or 0 (§6.3)
MAX_SWARM = 10_000  # far above any swarm of a 10×10 board; refuses 1e30 and the like
MAX_TURN = 10_000


class _BadEvent(Exception):
    """A game_end event that is not what this runner writes; the message names the key."""


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _integer(event: dict[str, Any], key: str, low: int, high: int) -> int:
    value = event.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadEvent(f"{key} must be an integer, got {value!r:.60}")
    if not low <= value <= high:
        raise _BadEvent(f"{key} must be {low}..{high}, got {value}")
    return value


def _pair_of_integers(event: dict[str, Any], key: str, high: int) -> None:
    values = event.get(key)
    if not isinstance(values, list) or len(values) != 2:
        raise _BadEvent(f"{key} must be a list of 2 integers, got {values!r:.60}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
            raise _BadEvent(f"{key} must be integers 0..{high}, got {values!r:.60}")


def check_game_end(event: dict[str, Any], options: Options) -> None:
    """Raise _BadEvent unless `event` is a game_end this match could have written: a game
    number of this match, its two players, scores within what a game gives."""
    for key in ("game", "room", "players", "one", "winner", "regular", "reason"):
        if key not in event:
            raise _BadEvent(f"no key {key!r}")
    _integer(event, "game", 1, options.games)
    players = event["players"]
    if (
        not isinstance(players, list)
        or len(players) != 2
        or sorted(players) != sorted(options.names)
    ):
        raise _BadEvent(
            f"players must be this match's two players {list(options.names)}, got {players!r:.80}"
        )
    _integer(event, "one", 0, 1)
    if event["winner"] is not None and event["winner"] not in players:
        raise _BadEvent(f"winner must be one of the players or null, got {event['winner']!r:.60}")
    if not isinstance(event["regular"], bool):
        raise _BadEvent(f"regular must be true or false, got {event['regular']!r:.60}")
    if not isinstance(event["room"], str) or not isinstance(event["reason"], str):
        raise _BadEvent("room and reason must be strings")
    _pair_of_integers(event, "siegpunkte", MAX_SIEGPUNKTE)
    _pair_of_integers(event, "schwarmgroesse", MAX_SWARM)
    if event.get("turn") is not None:
        _integer(event, "turn", 0, MAX_TURN)
    seed = event.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise _BadEvent(f"seed must be an integer or null, got {seed!r:.60}")
    notes = event.get("notes")
    if notes is not None and (
        not isinstance(notes, list) or not all(isinstance(note, str) for note in notes)
    ):
        raise _BadEvent("notes must be a list of strings")


def _lines(path: Path) -> list[bytes]:
    """The stream's lines, none longer than MAX_RESUME_LINE (a longer one is an error)."""
    if path.exists() and not path.is_file():  # a FIFO would block the open
        raise MatchError(f"--resume: {path} is not a regular file")
    try:
        with path.open("rb") as file:
            lines: list[bytes] = []
            while line := file.readline(MAX_RESUME_LINE + 1):
                if len(line) > MAX_RESUME_LINE:
                    raise MatchError(
                        f"--resume: {path}:{len(lines) + 1} is longer than "
                        f"{MAX_RESUME_LINE} bytes: not an event line"
                    )
                lines.append(line)
            return lines
    except OSError as error:
        raise MatchError(f"--resume: cannot read {path}: {error}") from None


def read_resume(path: Path, options: Options) -> Resumed:
    """The finished games of the stream at `path`; raises MatchError when it is missing,
    unreadable, belongs to another match (other players, number of games, seed or boards), or has an
    event this runner would not have written (a game number out of range, scores no game
    gives, NaN, a missing key): the stream decides what is counted, so every line is checked."""
    lines = _lines(path)
    games: dict[int, GameSummary] = {}
    start: dict[str, Any] | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line, parse_constant=_reject_constant)
            if not isinstance(event, dict):
                raise TypeError("not an object")
            kind = event["event"]
        except (ValueError, TypeError, KeyError):
            # An interrupted write leaves at most a torn last line.
            if number == len(lines):
                break
            raise MatchError(f"--resume: {path}:{number} is not an event line") from None
        if kind == "run_start" and start is None:
            start = event
        elif kind == "game_end":
            try:
                check_game_end(event, options)
            except _BadEvent as error:
                raise MatchError(f"--resume: {path}:{number}: game_end: {error}") from None
            games[event["game"]] = summary_of(event)
    if start is None:
        raise MatchError(f"--resume: {path} has no run_start event")
    mine = {
        "players": list(options.names),
        "games": options.games,
        "seed": options.seed,
        "boards": boards_digest(options.boards),
    }
    theirs = {key: start.get(key) for key in mine}
    if theirs != mine:
        raise MatchError(f"--resume: {path} is another match: {theirs} (this run: {mine})")
    return Resumed([games[number] for number in sorted(games)])


def boards_digest(boards: tuple[int, ...] | None) -> str | None:
    """What identifies a --boards list in the stream (a resume must play the same boards):
    its seeds' SHA-256, not the list, which may be 50,000 seeds long."""
    if boards is None:
        return None
    text = ",".join(map(str, boards))
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def summary_of(event: dict[str, Any]) -> GameSummary:
    """A finished game back from its `game_end` event (enough to count it)."""
    teams = (Team.ONE, Team.TWO)
    scores = [
        (PlayerEntry(team, name), (points, swarm))
        for team, name, points, swarm in zip(
            teams, event["players"], event["siegpunkte"], event["schwarmgroesse"], strict=True
        )
    ]
    winner = None
    if event["winner"] is not None:
        winner = teams[event["players"].index(event["winner"])]
    result = GameResult(scores, winner, event["regular"], event["reason"])
    return GameSummary(
        event["game"],
        event["one"],
        event["room"],
        result,
        event["turn"],
        event["seed"],
        list(event.get("notes") or []),
    )
