"""Server → client messages (docs/protocol.md §3) with their exact official serialisation.

`to_xml(indent)` renders a message standalone at nesting level `indent` (two spaces per
level; the first line is indented too): level 0 is the replay-file form, level 1 the form
inside a `<protocol>` stream.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from engine.types import FieldState, Move, Team
from protocol._xml import INDENT, Node, escape_attr, escape_text, render, render_standalone
from protocol.errors import LocalProtocolError
from protocol.events import ClientPacket, StreamEnd, kotlin_bool, move_children

if TYPE_CHECKING:
    from engine import GameResult, GameState

# The Piranhas score definition (plugin2026 GamePlugin.scoreDefinition): name, aggregation.
SCORE_FRAGMENTS: tuple[tuple[str, str], ...] = (("Siegpunkte", "SUM"), ("Schwarmgröße", "AVERAGE"))


class _Message:
    __slots__ = ()

    def node(self) -> Node:
        raise NotImplementedError

    def to_xml(self, indent: int = 0) -> str:
        return render_standalone(self.node(), indent)

    def to_bytes(self, indent: int = 0) -> bytes:
        """`to_xml(indent)` encoded (UTF-8, as the stream is)."""
        return self.to_xml(indent).encode()

    def framed_bytes(self, indent: int = 0) -> bytes:
        """`to_bytes(indent)` as a started stream has it: after a "\n"."""
        return b"\n" + self.to_bytes(indent)


def _room(room_id: str, data: Node) -> Node:
    return ("room", (("roomId", room_id),), (data,))


@dataclass(frozen=True, slots=True)
class Joined(_Message):
    room_id: str

    def node(self) -> Node:
        return ("joined", (("roomId", self.room_id),), None)

    def to_xml(self, indent: int = 0) -> str:
        # Once a player a game: by string building, as the generic rendering of node() would.
        return f'{INDENT * indent}<joined roomId="{escape_attr(self.room_id)}"/>'


@dataclass(frozen=True, slots=True)
class JoinedGameRoom(_Message):
    room_id: str
    player_count: int

    def node(self) -> Node:
        attrs = (("roomId", self.room_id), ("playerCount", str(self.player_count)))
        return ("joinedGameRoom", attrs, None)


@dataclass(frozen=True, slots=True)
class Prepared(_Message):
    room_id: str
    reservations: tuple[str, ...] = ()

    def node(self) -> Node:
        children = tuple(("reservation", (), code) for code in self.reservations)
        return ("prepared", (("roomId", self.room_id),), children or None)

    def to_xml(self, indent: int = 0) -> str:
        # Once a game: by string building, as the generic rendering of node() would.
        pad = INDENT * indent
        head = f'{pad}<prepared roomId="{escape_attr(self.room_id)}"'
        if not self.reservations:
            return head + "/>"
        inner = f"\n{pad}{INDENT}"
        codes = "".join(
            f"{inner}<reservation>{escape_text(code)}</reservation>" for code in self.reservations
        )
        return f"{head}>{codes}\n{pad}</prepared>"


@dataclass(frozen=True, slots=True)
class Observed(_Message):
    room_id: str

    def node(self) -> Node:
        return ("observed", (("roomId", self.room_id),), None)


@dataclass(frozen=True, slots=True)
class Left(_Message):
    room_id: str

    def node(self) -> Node:
        return ("left", (("roomId", self.room_id),), None)

    def to_xml(self, indent: int = 0) -> str:
        # Once a game: by string building, as the generic rendering of node() would.
        return f'{INDENT * indent}<left roomId="{escape_attr(self.room_id)}"/>'


@dataclass(frozen=True, slots=True)
class CloseConnection(_Message):
    def node(self) -> Node:
        return ("close", (), None)


@dataclass(frozen=True, slots=True)
class WelcomeMessage(_Message):
    room_id: str
    team: Team

    def node(self) -> Node:
        data: Node = ("data", (("class", "welcomeMessage"), ("color", self.team.name)), None)
        return _room(self.room_id, data)

    def to_xml(self, indent: int = 0) -> str:
        # Once a player a game: by string building, as the generic rendering of node() would.
        pad = INDENT * indent
        return (
            f'{pad}<room roomId="{escape_attr(self.room_id)}">\n{pad}{INDENT}'
            f'<data class="welcomeMessage" color="{self.team._name_}"/>\n{pad}</room>'
        )


@dataclass(frozen=True, slots=True)
class MoveRequest(_Message):
    room_id: str

    def node(self) -> Node:
        return _room(self.room_id, ("data", (("class", "moveRequest"),), None))

    def to_xml(self, indent: int = 0) -> str:
        return _move_request_xml(self.room_id, indent)

    def to_bytes(self, indent: int = 0) -> bytes:
        return _move_request_bytes(self.room_id, indent)

    def framed_bytes(self, indent: int = 0) -> bytes:
        return _move_request_framed(self.room_id, indent)


@functools.lru_cache(maxsize=4096)
def _move_request_xml(room_id: str, indent: int) -> str:
    # One per move, the same for a room's whole game: by string building, as the generic
    # rendering of node() would, once per room.
    pad = INDENT * indent
    return (
        f'{pad}<room roomId="{escape_attr(room_id)}">\n'
        f'{pad}{INDENT}<data class="moveRequest"/>\n{pad}</room>'
    )


@functools.lru_cache(maxsize=4096)
def _move_request_bytes(room_id: str, indent: int) -> bytes:
    return _move_request_xml(room_id, indent).encode()


@functools.lru_cache(maxsize=4096)
def _move_request_framed(room_id: str, indent: int) -> bytes:
    return b"\n" + _move_request_bytes(room_id, indent)


@dataclass(frozen=True, slots=True)
class Paused(_Message):
    room_id: str
    paused: bool

    def node(self) -> Node:
        attrs = (("class", "paused"), ("paused", kotlin_bool(self.paused)))
        return _room(self.room_id, ("data", attrs, None))


@dataclass(frozen=True, slots=True)
class Memento(_Message):
    room_id: str
    state: GameState

    def __init__(self, room_id: str, state: GameState) -> None:
        # The generated frozen __init__'s work (one a move) through the slots' own setters:
        # 3.0k instead of 4.4k instructions (callgrind, 20,000 made); still frozen after it.
        _set_memento_room_id(self, room_id)
        _set_memento_state(self, state)

    def node(self) -> Node:
        raise NotImplementedError("Memento is rendered by string building, see to_xml")

    def to_xml(self, indent: int = 0) -> str:
        return _memento_xml(self.room_id, self.state, indent)

    def to_bytes(self, indent: int = 0) -> bytes:
        return _memento_bytes(self.room_id, self.state, indent)[1:]

    def framed_bytes(self, indent: int = 0) -> bytes:
        return _memento_bytes(self.room_id, self.state, indent)


_set_memento_room_id: Callable[[Memento, str], None] = vars(Memento)["room_id"].__set__
_set_memento_state: Callable[[Memento, GameState], None] = vars(Memento)["state"].__set__


@dataclass(frozen=True, slots=True)
class ResultMessage(_Message):
    room_id: str
    result: GameResult

    def node(self) -> Node:
        return _room(self.room_id, ("data", (("class", "result"),), result_children(self.result)))

    def to_xml(self, indent: int = 0) -> str:
        # The definition never changes: render it once per depth, the rest generically.
        pad = INDENT * indent
        pad1 = pad + INDENT
        pad2 = pad1 + INDENT
        # The scores and the winner by string building too (once a game), as render() of
        # result_children() would: test_result_fast_path_equals_the_generic_rendering.
        return (
            f'{pad}<room roomId="{escape_attr(self.room_id)}">\n{pad1}<data class="result">'
            f"\n{pad2}{_definition_xml(indent + 2)}\n{pad2}{_scores_xml(self.result, indent + 2)}"
            f"\n{pad2}{_winner_xml(self.result)}\n{pad1}</data>\n{pad}</room>"
        )


def _scores_xml(result: GameResult, depth: int) -> str:
    """`render(result_children(result)[1], depth)`: the `<scores>` at `depth`."""
    if not result.scores:
        return "<scores/>"
    entry_pad = "\n" + INDENT * (depth + 1)
    inner_pad = entry_pad + INDENT
    part_pad = inner_pad + INDENT
    entries = []
    for player, parts in result.scores:
        # The official PlayerConverter drops a blank display name.
        name = f' name="{escape_attr(player.name)}"' if player.name.strip() else ""
        score = "".join(f"{part_pad}<part>{escape_text(str(part))}</part>" for part in parts)
        entries.append(
            f'{entry_pad}<entry>{inner_pad}<player{name} team="{player.team._name_}"/>'
            f"{inner_pad}<score>{score}{inner_pad}</score>{entry_pad}</entry>"
        )
    return f"<scores>{''.join(entries)}\n{INDENT * depth}</scores>"


def _winner_xml(result: GameResult) -> str:
    """`render(result_children(result)[2])`: the `<winner>` element."""
    team = f' team="{result.winner._name_}"' if result.winner is not None else ""
    regular = kotlin_bool(result.regular)
    return f'<winner{team} regular="{regular}" reason="{escape_attr(result.reason)}"/>'


# An errorpacket answers absurd input cheaply: its message and its echo of the request are
# each cut to about this many characters of XML (official-sized errors are far below it, so
# they stay byte-identical). Without the cut a refused <prepare> with 9,000 <slot/>s (63 KB)
# was answered with 1.16 MB.
MAX_ECHO_CHARS = 4096
_CUT_MARK = "…"


@dataclass(frozen=True, slots=True)
class ErrorPacket(_Message):
    """Lobby-level error, echoing the request that caused it (§3.9). The message and the
    echo are each bounded by MAX_ECHO_CHARS (abbreviated with "…" beyond it)."""

    message: str
    original_request: ClientPacket | None = None

    def node(self) -> Node:
        original = self.original_request
        if original is None:
            children: tuple[Node, ...] = ()  # still written with an end tag (socha framing)
        elif isinstance(original, StreamEnd):
            raise LocalProtocolError("the end of a stream cannot be echoed in an errorpacket")
        else:
            _, attrs, content = original.node()
            echo: Node = ("originalRequest", (("class", original.alias), *attrs), content)
            children = (_bounded(echo, MAX_ECHO_CHARS)[0],)
        message = _fit(self.message, MAX_ECHO_CHARS, escape_attr)
        return ("errorpacket", (("message", message),), children)


def _fit(value: str, budget: int, escape: Callable[[str], str]) -> str:
    """`value`, cut (and marked) so that its escaped form takes at most `budget` chars."""
    if len(value) <= budget // 8 or len(escape(value)) <= budget:
        return value  # the usual case; no character escapes to more than 8
    room = budget - len(_CUT_MARK)
    kept: list[str] = []
    for char in value:
        room -= len(escape(char))
        if room < 0:
            break
        kept.append(char)
    return "".join(kept) + _CUT_MARK


def _bounded(node: Node, budget: int) -> tuple[Node, int]:
    """`node` abbreviated to about `budget` rendered characters, and its size estimate:
    long attribute values and texts are cut, children beyond the budget are left out."""
    tag, attrs, content = node
    used = 2 * len(tag) + 6
    kept_attrs: list[tuple[str, str]] = []
    for name, value in attrs:
        value = _fit(value, max(budget - used - len(name) - 4, 0), escape_attr)
        used += len(name) + 4 + len(escape_attr(value))
        kept_attrs.append((name, value))
    if isinstance(content, str):
        text = _fit(content, max(budget - used, 0), escape_text)
        return (tag, tuple(kept_attrs), text), used + len(escape_text(text))
    if not content:
        return (tag, tuple(kept_attrs), content), used
    children: list[Node] = []
    for child in content:
        room = budget - used
        if room <= 0:
            break
        small, size = _bounded(child, room)
        if size > room:
            break
        children.append(small)
        used += size + 2  # line break and indentation, roughly
    return (tag, tuple(kept_attrs), tuple(children) or None), used


@dataclass(frozen=True, slots=True)
class RoomError(_Message):
    """Room-level error after a rejected move (§3.10)."""

    room_id: str
    message: str
    original_move: Move

    def node(self) -> Node:
        original: Node = (
            "originalMessage",
            (("class", "move"),),
            move_children(self.original_move),
        )
        data: Node = ("data", (("class", "error"), ("message", self.message)), (original,))
        return _room(self.room_id, data)


ServerMessage: TypeAlias = (
    Joined
    | JoinedGameRoom
    | Prepared
    | Observed
    | WelcomeMessage
    | Memento
    | MoveRequest
    | ResultMessage
    | ErrorPacket
    | RoomError
    | Paused
    | Left
    | CloseConnection
)

# Messages a replay file may hold (§8).
ReplayPacket: TypeAlias = Memento | RoomError | ResultMessage


_DEFINITION: Node = (
    "definition",
    (),
    tuple(
        (
            "fragment",
            (("name", name),),
            (("aggregation", (), aggregation), ("relevantForRanking", (), "true")),
        )
        for name, aggregation in SCORE_FRAGMENTS
    ),
)


@functools.lru_cache(maxsize=16)
def _definition_xml(depth: int) -> str:
    return render(_DEFINITION, depth)


def result_children(result: GameResult, with_definition: bool = True) -> tuple[Node, ...]:
    """`<definition>`, `<scores>`, `<winner>` of a `<data class="result">` (§3.8)."""
    definition: Node = _DEFINITION if with_definition else ("definition", (), None)
    entries: list[Node] = []
    for player, parts in result.scores:
        # The official PlayerConverter drops a blank display name.
        player_attrs = (("name", player.name),) if player.name.strip() else ()
        player_node: Node = ("player", (*player_attrs, ("team", player.team.name)), None)
        score_node: Node = ("score", (), tuple(("part", (), str(part)) for part in parts))
        entries.append(("entry", (), (player_node, score_node)))
    scores: Node = ("scores", (), tuple(entries) or None)
    winner_attrs = (("team", result.winner.name),) if result.winner is not None else ()
    winner: Node = (
        "winner",
        (*winner_attrs, ("regular", kotlin_bool(result.regular)), ("reason", result.reason)),
        None,
    )
    return (definition, scores, winner)


@functools.lru_cache(maxsize=16)
def _board_pieces(depth: int) -> tuple[dict[str, str], str, str, str, str]:
    """Precomputed lines for a board whose `<board>` sits at `depth`: field line per
    field name, row open, row close, empty row, board close."""
    row_indent = "\n" + INDENT * (depth + 1)
    field_indent = "\n" + INDENT * (depth + 2)
    fields = {state.name: f"{field_indent}<field>{state.name}</field>" for state in FieldState}
    return (
        fields,
        f"{row_indent}<row>",
        f"{row_indent}</row>",
        f"{row_indent}<row/>",
        f"\n{INDENT * depth}</board>",
    )


def board_xml(rows: list[list[FieldState]], depth: int) -> str:
    """`<board>` at `depth` (first line unindented): rows[0] is y = 0, the first `<row>`."""
    if not rows:
        return "<board/>"
    fields, row_open, row_close, empty_row, board_close = _board_pieces(depth)
    parts = ["<board>"]
    for row in rows:
        if row:
            # _name_ is a plain attribute; Enum.name and Enum.__hash__ are Python-level calls.
            parts.append(row_open + "".join([fields[cell._name_] for cell in row]) + row_close)
        else:
            parts.append(empty_row)
    parts.append(board_close)
    return "".join(parts)


# The same state goes to both players, the observers and the replay: remember the last
# few renderings. Keyed by identity (hashing a GameState and its last move by value took a
# tenth of a memento's rendering): the entry holds the state, so its id is not reused while
# the entry lives. The trio thread and the replay-writer threads share it: the lock keeps
# "evict the oldest" atomic (two threads evicting the same key used to raise KeyError).
# Rendering happens outside the lock.
_STATE_CACHE: dict[tuple[int, int], tuple[GameState, str]] = {}
_STATE_CACHE_SIZE = 32
_STATE_CACHE_LOCK = threading.Lock()


def state_xml(state: GameState, depth: int, room_id: str | None = None) -> str:
    """`<state class="state" …>` at `depth` (first line unindented), as in a memento
    (`room_id`: of the room it is sent in, whose last board is then mostly reused)."""
    key = (id(state), depth)
    entry = _STATE_CACHE.get(key)
    if entry is not None and entry[0] is state:
        return entry[1]
    xml = _render_state(state, depth, room_id)
    with _STATE_CACHE_LOCK:
        while len(_STATE_CACHE) >= _STATE_CACHE_SIZE:
            del _STATE_CACHE[next(iter(_STATE_CACHE))]
        _STATE_CACHE[key] = (state, xml)
    return xml


def _render_state(state: GameState, depth: int, room_id: str | None = None) -> str:
    return (
        f"{_state_open(state, depth)}{_state_board_xml(state, depth + 1, room_id)}"
        f"\n{INDENT * depth}</state>"
    )


def _state_open(state: GameState, depth: int) -> str:
    """The state's lines before its board (whose first line's indentation included)."""
    inner = "\n" + INDENT * (depth + 1)
    first_union = state.first_union
    union = "" if first_union is None else f' firstUnion="{first_union._name_}"'
    move = state.last_move
    if move is None:
        last = ""
    else:
        # (_name_: Enum.name is a Python-level property; this runs once per move.)
        key = (depth, move.x, move.y, move.direction._name_)
        last = _LAST_MOVES.get(key, "")
        if not last:
            deeper = inner + INDENT
            last = (
                f'{inner}<lastMove>{deeper}<from x="{move.x}" y="{move.y}"/>'
                f"{deeper}<direction>{key[3]}</direction>{inner}</lastMove>"
            )
            if len(_LAST_MOVES) >= _LAST_MOVES_SIZE:
                _LAST_MOVES.clear()  # (threads: a lost entry is only rendered again)
            _LAST_MOVES[key] = last
    return f'<state class="state" startTeam="ONE" turn="{state.turn}"{union}>{last}{inner}'


# A state's <lastMove> by (depth, x, y, direction name): a board has 100 fields and 8
# directions. Cleared when full.
_LAST_MOVES: dict[tuple[int, int, int, str], str] = {}
_LAST_MOVES_SIZE = 4096


# Rendered rows by (depth, width, GameState.row_keys() entry) for boards rendered without a
# room (replays, tests): a move changes at most two rows of ten, so a board is mostly rows
# rendered before. Cleared when full.
_ROW_CACHE: dict[tuple[int, int, tuple[int, int, int, int, int]], str] = {}
_ROW_CACHE_SIZE = 4096


# The board last rendered for each room (room id, depth): its width, height, bitboards and
# its lines as one flat list ("<board>", then per row its opening, its fields and its
# closing, then "</board>"). A move changes two fields, found from the bitboards'
# difference: only those lines are replaced, and the list is joined. Cleared when full.
_ROOM_BOARDS: dict[tuple[str, int], tuple[int, int, tuple[int, ...], list[str]]] = {}
_ROOM_BOARDS_SIZE = 2048


def _state_board_xml(state: GameState, depth: int, room_id: str | None = None) -> str:
    """board_xml(state.rows(), depth), with the rows rendered before taken from the caches
    (`room_id`: from the board last rendered for that room, too)."""
    width, height = state.width, state.height
    if width == 0 or height == 0:
        return board_xml(state.rows(), depth)
    pieces = _board_pieces(depth)
    if room_id is None:
        return _cached_rows_xml(state, depth, pieces)
    return "".join(_room_board(state, depth, room_id, pieces))


def _changed_mask(boards: tuple[int, ...], old_boards: tuple[int, ...]) -> int:
    """The fields (one bit each) whose state differs between two `GameState.bitboards()`."""
    one, two, squid, ge2, ge3 = boards
    return (
        (one ^ old_boards[0])
        | (two ^ old_boards[1])
        | (squid ^ old_boards[2])
        | (ge2 ^ old_boards[3])
        | (ge3 ^ old_boards[4])
    )


def _field_name(bit: int, boards: tuple[int, ...]) -> str:
    """The `FieldState` name of the field `bit` in `boards` (a `GameState.bitboards()`)."""
    one, two, squid, ge2, ge3 = boards
    if bit & squid:
        return "SQUID"
    if bit & (one | two):
        size = "L" if bit & ge3 else "M" if bit & ge2 else "S"
        return ("ONE_" if bit & one else "TWO_") + size
    return "EMPTY"


def _room_board(
    state: GameState,
    depth: int,
    room_id: str,
    pieces: tuple[dict[str, str], str, str, str, str],
) -> list[str]:
    """The lines of `state`'s board, reusing the room's last board: the fields that differ
    from it are looked up in the bitboards, the rest is copied."""
    width, height = state.width, state.height
    boards = state.bitboards()
    slot = (room_id, depth)
    previous = _ROOM_BOARDS.get(slot)
    if previous is not None and previous[0] == width and previous[1] == height:
        changed = _changed_mask(boards, previous[2])
        stride = width + 1  # field (x, y) is bit y * (width + 1) + x
        if changed >> (height * stride) == 0:  # (else bits off the board: render it all)
            lines = list(previous[3])  # a copy: a replay thread may render the same room
            fields = pieces[0]
            row_length = width + 2  # a row's lines: its opening, its fields, its closing
            while changed:
                low = changed & -changed
                changed ^= low
                y, x = divmod(low.bit_length() - 1, stride)
                if x == width:  # the padding column: not a field
                    break
                lines[1 + y * row_length + 1 + x] = fields[_field_name(low, boards)]
            else:
                _ROOM_BOARDS[slot] = (width, height, boards, lines)
                return lines
    fields, row_open, row_close, _, board_close = pieces
    lines = ["<board>"]
    for row in state.rows():
        lines.append(row_open)
        lines.extend([fields[cell._name_] for cell in row])
        lines.append(row_close)
    lines.append(board_close)
    if previous is None and len(_ROOM_BOARDS) >= _ROOM_BOARDS_SIZE:
        _ROOM_BOARDS.clear()  # (threads: a lost entry is only rendered again)
    _ROOM_BOARDS[slot] = (width, height, boards, lines)
    return lines


def _cached_rows_xml(
    state: GameState, depth: int, pieces: tuple[dict[str, str], str, str, str, str]
) -> str:
    """The board with the rows rendered before (by their bits) taken from the row cache."""
    cache = _ROW_CACHE
    parts = ["<board>"]
    fields, row_open, row_close, _, board_close = pieces
    width = state.width
    for y, key in enumerate(state.row_keys()):
        cached = cache.get((depth, width, key))
        if cached is None:
            cells = state.row(y)
            cached = row_open + "".join([fields[cell._name_] for cell in cells]) + row_close
            if len(cache) >= _ROW_CACHE_SIZE:
                cache.clear()  # (threads: a lost entry is only rendered again)
            cache[(depth, width, key)] = cached
        parts.append(cached)
    parts.append(board_close)
    return "".join(parts)


def _memento_xml(room_id: str, state: GameState, depth: int) -> str:
    head, tail = _memento_frame(room_id, depth)
    return head + state_xml(state, depth + 2, room_id) + tail


# A memento as the stream's bytes (`Memento.to_bytes`, once per move for the players): the
# board last sent in each room (room id, depth) is kept encoded, with its width, height and
# bitboards. Every field's name has the same length (below), so a field sits at a fixed
# offset: the fields a move changed are written over in a copy, and the memento is one
# bytes formatting, without rendering, joining and encoding the board's 120 lines. Entries
# are replaced, never changed (threads may render the same room). Cleared when full.
_FIELD_NAMES = {state.name: state.name.encode() for state in FieldState}
_FIELD_NAME_BYTES = len(next(iter(_FIELD_NAMES.values())))
_FIXED_FIELDS = all(len(name) == _FIELD_NAME_BYTES for name in _FIELD_NAMES.values())
# (width, height, bitboards, board bytes, _field_offsets of the board, the memento's head
# as the stream has it ("\n" first) and its tail: the frame kept with the room's board)
_BoardEntry: TypeAlias = tuple[
    int, int, tuple[int, int, int, int, int], bytes | bytearray, dict[int, int], bytes, bytes
]
_ROOM_BOARD_BYTES: dict[tuple[str, int], _BoardEntry] = {}
# The board of the last room's first memento, by depth: where the next room's first starts.
_START_BOARD_BYTES: dict[int, _BoardEntry] = {}


@functools.lru_cache(maxsize=64)
def _field_offsets(depth: int, width: int, height: int) -> dict[int, int]:
    """For a board at `depth` of `width` × `height` fields: the offset of each field's name in
    the board's bytes, by the field's bit (y * (width + 1) + x, as GameState.bitboards)."""
    fields, row_open, row_close, _, _ = _board_pieces(depth)
    field_bytes = len(fields["EMPTY"].encode())
    row_bytes = len(row_open.encode()) + width * field_bytes + len(row_close.encode())
    first = len(b"<board>") + len(row_open.encode()) + fields["EMPTY"].encode().index(b"EMPTY")
    return {
        1 << (y * (width + 1) + x): first + y * row_bytes + x * field_bytes
        for y in range(height)
        for x in range(width)
    }


def _memento_bytes(room_id: str, state: GameState, depth: int) -> bytes:
    """`b"\n" + _memento_xml(room_id, state, depth).encode()`: the memento as a started
    stream has it, from the room's last board."""
    # GameState's width, height, bitboards(), turn, first_union and last_move read from its
    # slots (six Python-level calls a move otherwise).
    geo = state._geo
    width, height = geo.width, geo.height
    if not _FIXED_FIELDS or width == 0 or height == 0 or depth + 2 >= len(_INNER_BYTES):
        return b"\n" + _memento_xml(room_id, state, depth).encode()
    one, two, squid, ge2, ge3 = state._one, state._two, state._squid, state._ge2, state._ge3
    slot = (room_id, depth)
    previous = _ROOM_BOARD_BYTES.get(slot)
    # A room's first memento starts from the start board sent last (often the same board:
    # a seed played twice, or again and again): its changed fields patched, not 100 rendered.
    base = previous if previous is not None else _START_BOARD_BYTES.get(depth)
    board: bytes | bytearray | None = None
    if base is not None and base[0] == width and base[1] == height:
        offsets = base[4]
        # _changed_mask inlined (once per move).
        old = base[2]
        changed = (
            (one ^ old[0]) | (two ^ old[1]) | (squid ^ old[2]) | (ge2 ^ old[3]) | (ge3 ^ old[4])
        )
        if not changed:
            board = base[3]
        else:
            patched = bytearray(base[3])
            while changed:
                low = changed & -changed
                changed ^= low
                at = offsets.get(low)
                if at is None:  # the padding column or off the board: render it all
                    break
                # _field_name inlined, as bytes (two or three fields a move).
                if low & squid:
                    name = b"SQUID"
                elif low & one:
                    name = b"ONE_L" if low & ge3 else b"ONE_M" if low & ge2 else b"ONE_S"
                elif low & two:
                    name = b"TWO_L" if low & ge3 else b"TWO_M" if low & ge2 else b"TWO_S"
                else:
                    name = b"EMPTY"
                patched[at : at + _FIELD_NAME_BYTES] = name
            else:
                # Stored as it is (never changed after: the next move patches a copy), and
                # joined below without a bytes() copy first.
                board = patched
    else:
        offsets = _field_offsets(depth + 3, width, height)
    if board is None:
        board = board_xml(state.rows(), depth + 3).encode()
        if previous is None and len(_ROOM_BOARD_BYTES) >= _ROOM_BOARDS_SIZE:
            _ROOM_BOARD_BYTES.clear()  # (threads: a lost entry is only rendered again)
    if previous is not None:
        head, tail = previous[5], previous[6]  # (the room's frame: no cache call a move)
    else:
        head, tail = _memento_frame_bytes(room_id, depth)
    entry = (width, height, (one, two, squid, ge2, ge3), board, offsets, head, tail)
    _ROOM_BOARD_BYTES[slot] = entry
    if previous is None:
        _START_BOARD_BYTES[depth] = entry
    # The state's opening from tables by turn (no bytes formatting, no Team hashed).
    turn = state._turn
    first_union = state._first_union
    if first_union is None:
        openings = _OPENINGS
    elif first_union is Team.ONE:
        openings = _OPENINGS_ONE
    else:
        openings = _OPENINGS_TWO
    opening = openings[turn] if turn < _OPENING_TURNS else _opening(turn, first_union)
    move = state._last_move
    if move is None:
        last = _INNER_BYTES[depth + 2]
    else:
        # _last_move_bytes' cache hit inlined (once per move).
        last = _LAST_MOVE_BYTES.get((depth + 2, move.x, move.y, move.direction._name_), b"")
        if not last:
            last = _last_move_bytes(depth + 2, move)
    return b"".join((head, opening, last, board, tail))


def _opening(turn: int, first_union: Team | None) -> bytes:
    """The state's start tag at `turn` (as _state_open renders it)."""
    union = b"" if first_union is None else f' firstUnion="{first_union.name}"'.encode()
    return b'<state class="state" startTeam="ONE" turn="%d"%b>' % (turn, union)


# What `_state_open` renders, as bytes: the start tag by turn (a game has 61 turns; later
# ones formatted), without and with firstUnion; the indentation of the state's children by
# the state's depth.
_OPENING_TURNS = 128
_OPENINGS = tuple(_opening(turn, None) for turn in range(_OPENING_TURNS))
_OPENINGS_ONE = tuple(_opening(turn, Team.ONE) for turn in range(_OPENING_TURNS))
_OPENINGS_TWO = tuple(_opening(turn, Team.TWO) for turn in range(_OPENING_TURNS))
_INNER_BYTES = tuple(("\n" + INDENT * (depth + 1)).encode() for depth in range(64))
# A state's <lastMove>, and the indentation of the board after it, as bytes, by (depth, x,
# y, direction name). Cleared when full.
_LAST_MOVE_BYTES: dict[tuple[int, int, int, str], bytes] = {}


def _last_move_bytes(depth: int, move: Move) -> bytes:
    """The <lastMove> lines of a state at `depth` whose last move is `move` (as _state_open),
    and the next line's indentation."""
    # (_name_: Enum.name is a Python-level property; this runs once per move.)
    key = (depth, move.x, move.y, move.direction._name_)
    last = _LAST_MOVE_BYTES.get(key)
    if last is None:
        inner = "\n" + INDENT * (depth + 1)
        deeper = inner + INDENT
        last = (
            f'{inner}<lastMove>{deeper}<from x="{move.x}" y="{move.y}"/>'
            f"{deeper}<direction>{key[3]}</direction>{inner}</lastMove>{inner}"
        ).encode()
        if len(_LAST_MOVE_BYTES) >= _LAST_MOVES_SIZE:
            _LAST_MOVE_BYTES.clear()  # (threads: a lost entry is only rendered again)
        _LAST_MOVE_BYTES[key] = last
    return last


@functools.lru_cache(maxsize=4096)
def _memento_frame_bytes(room_id: str, depth: int) -> tuple[bytes, bytes]:
    """What comes before the state's opening (the stream's "\n" first) and after its board
    in a memento of `room_id` (once per room): the memento's frame, and the state's closing
    tag."""
    head, tail = _memento_frame(room_id, depth)
    return f"\n{head}".encode(), f"\n{INDENT * (depth + 2)}</state>{tail}".encode()


@functools.lru_cache(maxsize=4096)
def _memento_frame(room_id: str, depth: int) -> tuple[str, str]:
    """What comes before and after the state in a memento of `room_id` (once per room)."""
    pad = INDENT * depth
    pad1 = pad + INDENT
    return (
        f'{pad}<room roomId="{escape_attr(room_id)}">\n{pad1}<data class="memento">'
        f"\n{pad1}{INDENT}",
        f"\n{pad1}</data>\n{pad}</room>",
    )


__all__ = [
    "MAX_ECHO_CHARS",
    "SCORE_FRAGMENTS",
    "CloseConnection",
    "ErrorPacket",
    "Joined",
    "JoinedGameRoom",
    "Left",
    "Memento",
    "MoveRequest",
    "Observed",
    "Paused",
    "Prepared",
    "ReplayPacket",
    "ResultMessage",
    "RoomError",
    "ServerMessage",
    "WelcomeMessage",
    "board_xml",
    "result_children",
    "state_xml",
]
