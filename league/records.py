"""Game records: the league's audit format, one XML document per game (docs/game-records.md).

Modelled on tournament game records of board-game federations: a header (league, round, match,
game, date, board seed), one `<player>` block per player (display name, team id, side, a
`<penalty>` when the player was penalised), one `<move>` block per move, and the `<result>` *as
recorded*. `verify` replays the moves through the engine from the seeded start board and reports
every way the recorded result differs from the correct one, and every illegal move; `to_replay`
turns a record into an official replay for the GUI.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from engine import (
    Direction,
    GameResult,
    GameState,
    InvalidMoveError,
    Move,
    PlayerEntry,
    Team,
    Violation,
    ViolationKind,
    game_result,
)
from protocol.messages import Memento, ReplayPacket, ResultMessage, RoomError
from protocol.replay import write_replay

__all__ = [
    "MAX_RECORD_BYTES",
    "Discrepancy",
    "GameRecord",
    "RecordError",
    "RecordMove",
    "RecordPlayer",
    "RecordedResult",
    "read_record",
    "read_record_file",
    "record_game",
    "refused_move",
    "to_replay",
    "verify",
    "write_record",
]

# A full game is ~60 moves of ~100 bytes: anything near this is not a game record.
MAX_RECORD_BYTES = 4 * 1024 * 1024


class RecordError(Exception):
    """A document that is not a well-formed game record; the message says what and where."""


@dataclass(frozen=True)
class RecordPlayer:
    """A player of the game: display name, team id, side (Team.ONE moves first), and the
    violation that ended the game for them, if any (timeouts and rule or process violations)."""

    name: str
    team_id: str
    side: Team
    penalty: Violation | None = None


@dataclass(frozen=True)
class RecordMove:
    """A move and the milliseconds the player used for it (None when not measured)."""

    move: Move
    ms: float | None = None


@dataclass(frozen=True)
class RecordedResult:
    """The result as recorded. `scores` in player order: (Siegpunkte, Schwarmgröße).
    `aborted`: the game ended for a reason that is nobody's fault (e.g. the runner stopped)."""

    scores: tuple[tuple[int, int], ...]
    winner: Team | None
    regular: bool
    reason: str
    aborted: bool = False


@dataclass(frozen=True)
class GameRecord:
    """One game of the league."""

    league: str
    round: int
    match: int
    number: int
    date: str  # ISO 8601, UTC
    seed: int  # GameState.initial(seed) is the start board
    players: tuple[RecordPlayer, ...]
    moves: tuple[RecordMove, ...]
    result: RecordedResult

    @property
    def label(self) -> str:
        """How reports name this game."""
        return f"match {self.match} game {self.number}"


@dataclass(frozen=True)
class Discrepancy:
    """One way a record differs from the game its moves produce."""

    game: str
    item: str
    recorded: str
    correct: str

    def __str__(self) -> str:
        return f"{self.game}: {self.item}: recorded {self.recorded!r}, correct {self.correct!r}"


def record_game(
    *,
    league: str,
    round: int,
    match: int,
    number: int,
    date: str,
    seed: int,
    team_ids: Sequence[str],
    moves: Sequence[Move],
    move_ms: Sequence[float | None],
    result: GameResult,
) -> GameRecord:
    """Build a record from what a runner has at the end of a game: the engine's result (its
    players in slot order, with their violations) and the team id of each slot."""
    players = tuple(
        RecordPlayer(entry.name, team_id, entry.team, entry.violation)
        for (entry, _), team_id in zip(result.scores, team_ids, strict=True)
    )
    recorded = RecordedResult(
        tuple(score for _, score in result.scores), result.winner, result.regular, result.reason
    )
    timed = list(move_ms) + [None] * (len(moves) - len(move_ms))
    return GameRecord(
        league,
        round,
        match,
        number,
        date,
        seed,
        players,
        tuple(RecordMove(move, ms) for move, ms in zip(moves, timed, strict=False)),
        recorded,
    )


def refused_move(result: GameResult, packets: Sequence[object]) -> Move | None:
    """The move that ended the game as a rule violation, from what an observer received: the
    room error that carries it (the server applies and keeps only legal moves). None when no
    player was penalised for an illegal move. The record lists it as its last move
    (docs/game-records.md); `verify` checks it is illegal for the penalty's reason."""
    if not any(
        entry.violation is not None and entry.violation.kind is ViolationKind.RULE_VIOLATION
        for entry, _ in result.scores
    ):
        return None
    errors = [packet for packet in packets if isinstance(packet, RoomError)]
    return errors[-1].original_move if errors else None


# ---- XML -----------------------------------------------------------------------------------


def _text(parent: etree._Element, tag: str, text: str) -> etree._Element:
    element = etree.SubElement(parent, tag)
    element.text = text
    return element


def _format_ms(ms: float) -> str:
    return f"{ms:.3f}".rstrip("0").rstrip(".")


def write_record(record: GameRecord) -> bytes:
    """The record as an indented UTF-8 XML document."""
    game = etree.Element("game")
    header = etree.SubElement(game, "header")
    _text(header, "league", record.league)
    _text(header, "round", str(record.round))
    _text(header, "match", str(record.match))
    _text(header, "number", str(record.number))
    _text(header, "date", record.date)
    _text(header, "seed", str(record.seed))
    for player in record.players:
        block = etree.SubElement(game, "player")
        _text(block, "name", player.name)
        _text(block, "id", player.team_id)
        _text(block, "side", player.side.name)
        if player.penalty is not None:
            penalty = _text(block, "penalty", player.penalty.detail)
            penalty.set("kind", player.penalty.kind.value)
    for recorded in record.moves:
        block = etree.SubElement(game, "move")
        start = etree.SubElement(block, "from")
        start.set("x", str(recorded.move.x))
        start.set("y", str(recorded.move.y))
        _text(block, "direction", recorded.move.direction.name)
        if recorded.ms is not None:
            _text(block, "ms", _format_ms(recorded.ms))
    result = etree.SubElement(game, "result")
    if record.result.aborted:
        result.set("aborted", "true")
    for player, (siegpunkte, swarm) in zip(record.players, record.result.scores, strict=True):
        score = etree.SubElement(result, "score")
        score.set("side", player.side.name)
        _text(score, "siegpunkte", str(siegpunkte))
        _text(score, "schwarmgroesse", str(swarm))
    if record.result.winner is not None:
        _text(result, "winner", record.result.winner.name)
    _text(result, "regular", "true" if record.result.regular else "false")
    _text(result, "reason", record.result.reason)
    etree.indent(game, space="  ")
    return etree.tostring(game, xml_declaration=True, encoding="UTF-8", pretty_print=True)


_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
)


def _child(parent: etree._Element, tag: str) -> etree._Element:
    element = parent.find(tag)
    if element is None:
        raise RecordError(f"line {parent.sourceline}: <{parent.tag}> has no <{tag}>")
    return element


def _child_text(parent: etree._Element, tag: str) -> str:
    return _child(parent, tag).text or ""


def _int(element: etree._Element, text: str | None, what: str) -> int:
    try:
        return int((text or "").strip())
    except ValueError:
        raise RecordError(
            f"line {element.sourceline}: {what} is not an integer: {text!r}"
        ) from None


def _team(element: etree._Element, text: str | None) -> Team:
    try:
        return Team[(text or "").strip()]
    except KeyError:
        raise RecordError(f"line {element.sourceline}: side must be ONE or TWO: {text!r}") from None


def read_record(data: bytes) -> GameRecord:
    """Parse a record written by `write_record` (or by hand). Raises RecordError."""
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(f"larger than {MAX_RECORD_BYTES} bytes")
    try:
        game = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as error:
        raise RecordError(f"not well-formed XML: {error}") from None
    if game.tag != "game":
        raise RecordError(f"the root element is <{game.tag}>, not <game>")
    header = _child(game, "header")

    def header_int(tag: str) -> int:
        element = _child(header, tag)
        return _int(element, element.text, f"<{tag}>")

    players: list[RecordPlayer] = []
    for block in game.findall("player"):
        penalty = None
        penalty_element = block.find("penalty")
        if penalty_element is not None:
            kind = penalty_element.get("kind", "")
            try:
                penalty = Violation(ViolationKind(kind), penalty_element.text or "")
            except ValueError:
                raise RecordError(
                    f"line {penalty_element.sourceline}: unknown penalty kind {kind!r}"
                ) from None
        side_element = _child(block, "side")
        players.append(
            RecordPlayer(
                _child_text(block, "name"),
                _child_text(block, "id"),
                _team(side_element, side_element.text),
                penalty,
            )
        )
    if len(players) != 2 or {p.side for p in players} != {Team.ONE, Team.TWO}:
        raise RecordError("a game record needs two <player> blocks, sides ONE and TWO")

    moves: list[RecordMove] = []
    for block in game.findall("move"):
        start = _child(block, "from")
        direction_element = _child(block, "direction")
        try:
            direction = Direction[(direction_element.text or "").strip()]
        except KeyError:
            raise RecordError(
                f"line {direction_element.sourceline}: unknown direction {direction_element.text!r}"
            ) from None
        move = Move(
            _int(start, start.get("x"), "from x"), _int(start, start.get("y"), "from y"), direction
        )
        ms_element = block.find("ms")
        ms = None
        if ms_element is not None:
            try:
                ms = float((ms_element.text or "").strip())
            except ValueError:
                raise RecordError(
                    f"line {ms_element.sourceline}: <ms> is not a number: {ms_element.text!r}"
                ) from None
        moves.append(RecordMove(move, ms))

    result_element = _child(game, "result")
    by_side: dict[Team, tuple[int, int]] = {}
    for score in result_element.findall("score"):
        siegpunkte = _child(score, "siegpunkte")
        swarm = _child(score, "schwarmgroesse")
        by_side[_team(score, score.get("side"))] = (
            _int(siegpunkte, siegpunkte.text, "<siegpunkte>"),
            _int(swarm, swarm.text, "<schwarmgroesse>"),
        )
    if set(by_side) != {Team.ONE, Team.TWO}:
        raise RecordError(
            f"line {result_element.sourceline}: <result> needs a <score> for sides ONE and TWO"
        )
    winner_element = result_element.find("winner")
    winner = None if winner_element is None else _team(winner_element, winner_element.text)
    regular_text = _child_text(result_element, "regular").strip()
    if regular_text not in ("true", "false"):
        raise RecordError(f"<regular> must be true or false: {regular_text!r}")
    result = RecordedResult(
        tuple(by_side[player.side] for player in players),
        winner,
        regular_text == "true",
        _child_text(result_element, "reason"),
        aborted=result_element.get("aborted") == "true",
    )
    return GameRecord(
        league=_child_text(header, "league"),
        round=header_int("round"),
        match=header_int("match"),
        number=header_int("number"),
        date=_child_text(header, "date"),
        seed=header_int("seed"),
        players=tuple(players),
        moves=tuple(moves),
        result=result,
    )


def read_record_file(path: Path | str) -> GameRecord:
    """Read and parse the record file at `path`. Only a regular file is read, and at most
    MAX_RECORD_BYTES + 1 bytes of it: a link to /dev/zero or a FIFO is refused at once (opened
    without blocking, then checked), a huge file after one bounded read. Raises RecordError
    (OSError as RecordError too, with the cause)."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer would wait forever.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise RecordError(error.strerror or str(error)) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise RecordError(f"not a regular file ({_file_kind(mode)})")
        chunks: list[bytes] = []
        left = MAX_RECORD_BYTES + 1
        while left > 0 and (chunk := os.read(descriptor, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        raise RecordError(error.strerror or str(error)) from None
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    return read_record(data)


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


# ---- replaying -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Replayed:
    states: list[GameState]  # the start board and the state after every legal move
    illegal: tuple[int, InvalidMoveError] | None  # 1-based move number and the error
    after_end: int | None  # the first move made after the game was over


def _replay(record: GameRecord) -> _Replayed:
    state = GameState.initial(record.seed)
    states = [state]
    for index, recorded in enumerate(record.moves, start=1):
        if state.is_over:
            return _Replayed(states, None, index)
        try:
            state = state.apply(recorded.move)
        except InvalidMoveError as error:
            return _Replayed(states, (index, error), None)
        states.append(state)
    return _Replayed(states, None, None)


def verify(record: GameRecord) -> list[Discrepancy]:
    """Replay the record from its seeded start board and compare. Reports illegal moves (an
    illegal move is fine only as the last move of a player penalised with RULE_VIOLATION for
    exactly that move), moves after the end, a regular result for an unfinished game, and every
    score, the winner, the regular flag and the reason that differ from the correct result."""
    found: list[Discrepancy] = []

    def report(item: str, recorded: str, correct: str) -> None:
        found.append(Discrepancy(record.label, item, recorded, correct))

    replayed = _replay(record)
    state = replayed.states[-1]
    penalties = {player.side: player.penalty for player in record.players}
    correct_penalty = dict(penalties)
    if replayed.after_end is not None:
        move = record.moves[replayed.after_end - 1].move
        report(f"move {replayed.after_end}", str(move), "no move: the game was already over")
        return found
    if replayed.illegal is not None:
        number, error = replayed.illegal
        mover = state.current_team
        penalty = penalties[mover]
        if (
            number == len(record.moves)
            and penalty is not None
            and penalty.kind is ViolationKind.RULE_VIOLATION
        ):
            correct_penalty[mover] = Violation(ViolationKind.RULE_VIOLATION, str(error))
            if penalty.detail != str(error):
                report(f"penalty of {mover.name}", penalty.detail, str(error))
        else:
            report(f"move {number}", str(error.move), f"illegal: {error.mistake.message}")
            return found  # nothing after an unexplained illegal move can be checked
    for side, penalty in penalties.items():
        if (
            penalty is not None
            and penalty.kind is ViolationKind.RULE_VIOLATION
            and replayed.illegal is None
        ):
            report(f"penalty of {side.name}", penalty.detail, "no illegal move was played")
            correct_penalty[side] = None

    entries = [
        PlayerEntry(player.side, player.name, correct_penalty[player.side])
        for player in record.players
    ]
    if record.result.aborted:
        correct = game_result(state, entries, aborted=record.result.reason)
    else:
        if not state.is_over and all(entry.violation is None for entry in entries):
            report("end", f"{len(record.moves)} moves", "the game is not over after these moves")
        correct = game_result(state, entries)

    for player, recorded, (_, expected) in zip(
        record.players, record.result.scores, correct.scores, strict=True
    ):
        if recorded[0] != expected[0]:
            report(f"Siegpunkte of {player.side.name}", str(recorded[0]), str(expected[0]))
        if recorded[1] != expected[1]:
            report(f"Schwarmgröße of {player.side.name}", str(recorded[1]), str(expected[1]))

    def team_name(team: Team | None) -> str:
        return "none" if team is None else team.name

    if record.result.winner is not correct.winner:
        report("winner", team_name(record.result.winner), team_name(correct.winner))
    if record.result.regular != correct.regular:
        report("regular", str(record.result.regular).lower(), str(correct.regular).lower())
    if record.result.reason != correct.reason:
        report("reason", record.result.reason, correct.reason)
    return found


def to_replay(record: GameRecord, room_id: str = "league") -> bytes:
    """An official replay (docs/protocol.md §8) of the record: a memento per state, the room
    error of a final illegal move, and the recorded result."""
    replayed = _replay(record)
    packets: list[ReplayPacket] = [Memento(room_id, state) for state in replayed.states]
    players = [PlayerEntry(player.side, player.name, player.penalty) for player in record.players]
    if replayed.illegal is not None:
        _, error = replayed.illegal
        mover = replayed.states[-1].current_team
        name = next(p.name for p in players if p.team is mover)
        message = f"Ungueltiger Zug von '{name}'.\n{error.official_repr()}"
        packets.append(RoomError(room_id, message, error.move))
    result = GameResult(
        list(zip(players, record.result.scores, strict=True)),
        record.result.winner,
        record.result.regular,
        record.result.reason,
    )
    packets.append(ResultMessage(room_id, result))
    return write_replay(room_id, packets)
