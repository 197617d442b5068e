"""Where games come from: official replays (plain or gzip), league game records, a
`piranhas-match --ndjson` stream (through the replays its games name), or a room the server
is playing (observed through the client session).

Every input is bounded (`MAX_INPUT_BYTES`, also after decompression) and anything else is a
`SourceError` that says what the file is not.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import zlib
from dataclasses import dataclass
from pathlib import Path

import trio

from analysis.game import Game
from client import ClientSession, ConnectionClosed, ServerRefused
from engine import GameState, InvalidMoveError, Move, Team
from league.records import GameRecord, RecordError, read_record
from protocol.messages import Left, Memento, ResultMessage
from protocol.replay import MAX_REPLAY_BYTES, read_replay

MAX_INPUT_BYTES = MAX_REPLAY_BYTES
"""The largest input read, also after decompression (16 MiB: far above a 60-move replay)."""
MAX_NDJSON_GAMES = 10_000


class SourceError(Exception):
    """An input that is no game this tool reads; the message says what and why."""


@dataclass(frozen=True)
class Loaded:
    """A game and, for a league game record, the record and its bytes (for annotating)."""

    game: Game
    record: GameRecord | None = None
    record_bytes: bytes | None = None
    path: Path | None = None


def read_bounded(path: Path) -> bytes:
    """The file's bytes, decompressed when gzip; SourceError beyond MAX_INPUT_BYTES."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_INPUT_BYTES + 1)
    except OSError as error:
        raise SourceError(f"{path}: cannot read: {error.strerror or error}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise SourceError(f"{path}: larger than {MAX_INPUT_BYTES} bytes")
    if data[:2] == b"\x1f\x8b":
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = decompressor.decompress(data, MAX_INPUT_BYTES + 1)
        except zlib.error as error:
            raise SourceError(f"{path}: broken gzip data: {error}") from None
        if len(data) > MAX_INPUT_BYTES or decompressor.unconsumed_tail:
            raise SourceError(f"{path}: larger than {MAX_INPUT_BYTES} bytes once decompressed")
    return data


def _kind(data: bytes) -> str:
    head = data.lstrip()[:200]
    if head.startswith(b"<?xml"):
        head = head[head.find(b"?>") + 2 :].lstrip() if b"?>" in head else head
    if head.startswith(b"<protocol"):
        return "replay"
    if head.startswith(b"<game"):
        return "record"
    if head.startswith(b"{"):
        return "ndjson"
    return "unknown"


def load(path: Path) -> list[Loaded]:
    """The games in `path`: one for a replay or a game record, every game with a replay for
    a piranhas-match NDJSON stream. SourceError for anything else."""
    data = read_bounded(path)
    kind = _kind(data)
    label = path.name
    if kind == "replay":
        return [Loaded(game_from_replay(data, label), path=path)]
    if kind == "record":
        record, game = game_from_record(data, label)
        return [Loaded(game, record, data, path)]
    if kind == "ndjson":
        return [Loaded(game, path=path) for game in games_from_ndjson(data, path)]
    raise SourceError(
        f"{path}: not an official replay (<protocol>), a league game record (<game>) or a "
        "piranhas-match NDJSON stream ({...} lines)"
    )


def load_games(path: Path) -> list[Game]:
    """`load` without the records: just the games."""
    return [loaded.game for loaded in load(path)]


def game_from_replay(data: bytes, label: str = "replay") -> Game:
    """The game of an official replay: its first state and the moves between its states."""
    try:
        replay = read_replay(data, max_bytes=MAX_INPUT_BYTES)
    except Exception as error:  # the replay reader's errors are ValueErrors of several kinds
        raise SourceError(f"{label}: not a readable replay: {error}") from None
    if not replay.states:
        raise SourceError(f"{label}: the replay holds no game state")
    states = replay.states
    moves: list[Move] = []
    for before, after in itertools.pairwise(states):
        move = after.last_move
        if move is None or after.turn != before.turn + 1:
            raise SourceError(
                f"{label}: the states of turn {before.turn} and {after.turn} are not one move apart"
            )
        try:
            made = before.apply(move)
        except InvalidMoveError as error:
            raise SourceError(f"{label}: move {len(moves) + 1}: {error}") from None
        if made.rows() != after.rows():
            raise SourceError(f"{label}: move {len(moves) + 1} does not give the next state")
        moves.append(move)
    names = ("ONE", "TWO")
    winner = None
    reason = ""
    if replay.result is not None:
        by_team = {entry.team: entry.name for entry, _ in replay.result.scores}
        names = (by_team.get(Team.ONE) or "ONE", by_team.get(Team.TWO) or "TWO")
        winner = replay.result.winner
        reason = replay.result.reason
    return Game(states[0], tuple(moves), names, label, winner, reason)


def game_from_record(data: bytes, label: str = "record") -> tuple[GameRecord, Game]:
    """The game of a league game record (an illegal last move is left out, with a note)."""
    try:
        record = read_record(data)
    except RecordError as error:
        raise SourceError(f"{label}: not a readable game record: {error}") from None
    state = GameState.initial(record.seed)
    moves: list[Move] = []
    notes: list[str] = []
    for number, recorded in enumerate(record.moves, start=1):
        if state.is_over:
            notes.append(f"moves from {number} on were made after the game was over: left out")
            break
        try:
            state = state.apply(recorded.move)
        except InvalidMoveError as error:
            notes.append(f"move {number} is illegal ({error}): the analysis ends before it")
            break
        moves.append(recorded.move)
    by_side = {player.side: player.name for player in record.players}
    game = Game(
        GameState.initial(record.seed),
        tuple(moves),
        (by_side[Team.ONE], by_side[Team.TWO]),
        f"{label} ({record.label})",
        record.result.winner,
        record.result.reason,
        tuple(notes),
    )
    return record, game


def games_from_ndjson(data: bytes, path: Path) -> list[Game]:
    """The games of a piranhas-match NDJSON stream. Its `game_end` events hold the result and
    the move times but **not the moves**: a game is analysed from the replay its event names
    (`--save-replay`); a stream without replays is refused with that explanation."""
    games: list[Game] = []
    ended = without_replay = 0
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            raise SourceError(f"{path}: line {number} is not JSON") from None
        if not isinstance(event, dict) or event.get("event") != "game_end":
            continue
        ended += 1
        if ended > MAX_NDJSON_GAMES:
            raise SourceError(f"{path}: more than {MAX_NDJSON_GAMES} games")
        replay = event.get("replay")
        if not isinstance(replay, str):
            without_replay += 1
            continue
        replay_path = Path(replay)
        if not replay_path.is_absolute() and not replay_path.exists():
            replay_path = path.parent / replay_path
        game = game_from_replay(read_bounded(replay_path), f"game {event.get('game', ended)}")
        games.append(game)
    if not ended:
        raise SourceError(f"{path}: a JSON stream without game_end events (no piranhas-match run)")
    if not games:
        raise SourceError(
            f"{path}: the stream's {ended} game_end events hold no moves (only results and "
            "move times) and name no replay: run piranhas-match with --save-replay, then "
            "analyse the stream or the replays it names"
        )
    return games


async def observe_room(
    host: str,
    port: int,
    password: str | None,
    room: str,
    *,
    timeout: float = math.inf,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> Game:
    """Watch `room` on a running server as an observer (admin login) until the game ends
    (or `timeout` seconds pass) and return what was seen: the first state observed (an
    observer sees the game from where it began to observe; earlier moves are not sent) and
    every move after it. `task_status.started()` once the server confirmed the observing."""
    try:
        stream = await trio.open_tcp_stream(host, port)
    except OSError as error:
        raise SourceError(f"cannot connect to {host}:{port}: {error}") from None
    session = ClientSession(stream)
    states: list[GameState] = []
    winner = None
    reason = ""
    names = ("ONE", "TWO")
    try:
        if password is not None:
            await session.authenticate(password)
        await session.observe(room)
        task_status.started()
        with trio.move_on_after(timeout):
            while True:
                message = await session.receive()
                if isinstance(message, Memento) and message.room_id == room:
                    states.append(message.state)
                elif isinstance(message, ResultMessage) and message.room_id == room:
                    winner = message.result.winner
                    reason = message.result.reason
                    by_team = {entry.team: entry.name for entry, _ in message.result.scores}
                    names = (by_team.get(Team.ONE) or "ONE", by_team.get(Team.TWO) or "TWO")
                elif isinstance(message, Left) and message.room_id == room:
                    break
    except ServerRefused as error:
        raise SourceError(
            f"the server refused to let us observe room {room}: {error.packet.message}"
        ) from None
    except ConnectionClosed as error:
        if not states:
            raise SourceError(f"the server closed the connection ({error.reason})") from None
    finally:
        await session.aclose()
    if not states:
        raise SourceError(f"room {room}: no game state observed")
    moves = []
    for before, after in itertools.pairwise(states):
        if after.last_move is None or after.turn != before.turn + 1:
            raise SourceError(
                f"room {room}: states {before.turn} and {after.turn} are not one move apart"
            )
        moves.append(after.last_move)
    return Game(states[0], tuple(moves), names, f"room {room}", winner, reason)


def gzip_bytes(data: bytes) -> bytes:
    """`data` gzip-compressed, reproducibly (no time stamp): for tests and outputs."""
    return gzip.compress(data, mtime=0)
