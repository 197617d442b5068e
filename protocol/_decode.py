"""Parsed elements → typed events/messages, with XStream's reading rules (§1.2).

Unknown attributes are ignored; unknown child elements, unknown classes and bad values
are the peer's fault (RemoteProtocolError naming the packet, element and value). Missing
attributes read as the JVM default (null, false, 0), as XStream never runs constructors.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from lxml import etree

from engine.types import Direction, FieldState, Move, Team
from protocol._xml import Node
from protocol.errors import RemoteProtocolError
from protocol.events import (
    RESPONSE_CLASSES,
    Authenticate,
    CancelRequest,
    ClientPacket,
    CloseRequest,
    Join,
    JoinPrepared,
    JoinRoom,
    MovePacket,
    Observe,
    PauseRequest,
    Prepare,
    ResponsePacket,
    RoomDataPacket,
    SlotDescriptor,
    StepRequest,
)
from protocol.limits import ProtocolLimits
from protocol.messages import (
    CloseConnection,
    ErrorPacket,
    Joined,
    JoinedGameRoom,
    Left,
    Memento,
    MoveRequest,
    Observed,
    Paused,
    Prepared,
    ResultMessage,
    RoomError,
    ServerMessage,
    WelcomeMessage,
)

if TYPE_CHECKING:
    from engine import GameResult, GameState, PlayerEntry

Element = etree._Element

# `class=` values of room data: XStream aliases, plus the fully qualified Java class names
# XStream also resolves.
_MOVE_CLASSES = frozenset({"move", "sc.plugin2026.Move"})
_ROOM_DATA_CLASSES: dict[str, str] = {
    "moveRequest": "moveRequest",
    "sc.protocol.room.MoveRequest": "moveRequest",
    "welcomeMessage": "welcomeMessage",
    "sc.protocol.room.WelcomeMessage": "welcomeMessage",
    "memento": "memento",
    "sc.protocol.room.MementoMessage": "memento",
    "paused": "paused",
    "sc.protocol.room.GamePaused": "paused",
    "error": "error",
    "sc.protocol.room.ErrorMessage": "error",
    "result": "result",
    "sc.shared.GameResult": "result",
}
# Well-formed elements the official server knows but that are no packets: reading one at
# top level is "Received object of unknown class" (PROTOCOL_ERROR).
_NOT_PACKETS = frozenset(
    {
        "move",
        "state",
        "board",
        "field",
        "slotDescriptor",
        "direction",
        "coordinates",
        "result",
        "memento",
        "moveRequest",
        "welcomeMessage",
        "paused",
        "error",
        "team",
        "score",
        "scoreDefinition",
        "fragment",
        "violation",
    }
)
_SERVER_PACKETS = frozenset(
    {"room", "joined", "observed", "left", "joinedGameRoom", "prepared", "close", "errorpacket"}
)
_TIE_REASON = "Beide Spieler sind gleichauf"

_JAVA_INT = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|#[0-9a-fA-F]+|0[0-7]+|[0-9]+)\Z")


def _fail(where: str, what: str) -> RemoteProtocolError:
    return RemoteProtocolError(f"{where}: {what}")


def java_int(text: str, where: str) -> int:
    """An int as XStream reads it: Long.decode (decimal, 0x/# hex, leading-0 octal), then
    narrowed to 32 bits, so 0xFFFFFFFF reads as -1 and larger values are an error."""
    if text.isdigit() and text.isascii() and (text[0] != "0" or len(text) == 1) and len(text) < 10:
        return int(text)  # the usual case: a small plain decimal
    match = _JAVA_INT.match(text)
    if match is None:
        raise _fail(where, f"{text!r} is not an integer")
    sign, digits = match.groups()
    if digits[0] == "#":
        value = int(digits[1:], 16)
    elif digits[:2] in ("0x", "0X"):
        value = int(digits[2:], 16)
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits[1:], 8)
    else:
        value = int(digits)
    if sign == "-":
        value = -value
    if not -(2**31) <= value <= 0xFFFFFFFF:
        raise _fail(where, f"{text!r} is out of the int range")
    return (value + 2**31) % 2**32 - 2**31


def java_bool(text: str | None) -> bool:
    # XStream's BooleanConverter: "true" in any case is true, everything else false.
    return text is not None and text.lower() == "true"


class _Reader:
    """Element access with the attribute-size limit and error messages naming the packet."""

    __slots__ = ("_max_attribute",)

    def __init__(self, limits: ProtocolLimits) -> None:
        self._max_attribute = limits.max_attribute_bytes

    def attr(self, element: Element, name: str, packet: str) -> str | None:
        value = element.get(name)
        if value is not None and len(value) > self._max_attribute:
            raise _fail(
                packet,
                f"attribute {name} of <{element.tag}> exceeds {self._max_attribute} characters",
            )
        return value

    def required_attr(self, element: Element, name: str, packet: str) -> str:
        value = self.attr(element, name, packet)
        if value is None:
            raise _fail(packet, f"<{element.tag}> lacks the attribute {name}")
        return value


def _children(element: Element) -> Iterator[Element]:
    # Element children only (comments and PIs are already dropped by the parser).
    return element.iterchildren(etree.Element)


def _no_children(element: Element, packet: str) -> None:
    for child in _children(element):
        raise _fail(packet, f"unexpected element <{child.tag}> in <{element.tag}>")


def _only_child(element: Element, tag: str, packet: str) -> Element | None:
    found: Element | None = None
    for child in _children(element):
        if child.tag != tag:
            raise _fail(packet, f"unexpected element <{child.tag}> in <{element.tag}>")
        if found is not None:
            raise _fail(packet, f"<{tag}> given twice in <{element.tag}>")
        found = child
    return found


def element_node(element: Element) -> Node:
    """An element as a Node (for echoing packets we do not model field by field)."""
    attrs = tuple((str(name), str(value)) for name, value in element.attrib.items())
    children = tuple(element_node(child) for child in _children(element))
    if children:
        return (str(element.tag), attrs, children)
    text = element.text
    return (str(element.tag), attrs, text if text else None)


# --- moves -----------------------------------------------------------------------------


def decode_move(data: Element, packet: str, reader: _Reader) -> Move:
    """The body of `<data class="move">` / `<lastMove>` / `<originalMessage>`."""
    source: Element | None = None
    direction: Element | None = None
    for child in _children(data):
        if child.tag == "from" and source is None:
            source = child
        elif child.tag == "direction" and direction is None:
            direction = child
        else:
            raise _fail(packet, f"unexpected element <{child.tag}> in <{data.tag}>")
    if source is None:
        raise _fail(packet, f"<{data.tag}> lacks <from>")
    if direction is None:
        raise _fail(packet, f"<{data.tag}> lacks <direction>")
    _no_children(source, packet)
    _no_children(direction, packet)
    # A missing coordinate is the JVM default 0, exactly as the official server reads it.
    x_text = reader.attr(source, "x", packet)
    y_text = reader.attr(source, "y", packet)
    x = java_int(x_text, f"{packet}: <from x>") if x_text is not None else 0
    y = java_int(y_text, f"{packet}: <from y>") if y_text is not None else 0
    name = direction.text or ""
    try:
        heading = Direction[name]
    except KeyError:
        raise _fail(packet, f"unknown direction {name!r}") from None
    return Move(x, y, heading)


# The commonest client packet in its usual layout, read without the XML parser
# (`PacketReader.take_whole`): plain ASCII only, so the parser would read exactly what the
# groups hold. Anything else (other spacing inside tags, quotes, entities, more attributes,
# an unknown direction, a number the decimal shortcut of `java_int` does not cover) does not
# match and takes the parser's way, with its errors.
_S = rb"[ \t\n]*+"  # no CR: libxml2 counts a lone CR as a line, take_whole counts LFs
# Possessive: what follows one is never whitespace, and a chunk of spaces is not tried
# at each of its positions.
_ROOM_ID_CHARS = 200  # a room id is a UUID (36); longer ones take the parser's way
_NUMBER_DIGITS = 9  # fewer than ten digits: `java_int`'s plain decimal case
_MOVE_CLASS = b"move"  # an attribute value as any other: max_attribute_bytes applies


def _move_body(limits: ProtocolLimits) -> bytes | None:
    """A move's packet for `limits` (None: no shortcut, a move would break a limit)."""
    if limits.max_depth < 3:  # <room>, <data>, <from>
        return None
    if limits.max_attribute_bytes < len(_MOVE_CLASS):
        return None  # the parser refuses class="move" itself: every move is an error
    room_chars = min(_ROOM_ID_CHARS, limits.max_attribute_bytes)
    digits = min(_NUMBER_DIGITS, limits.max_attribute_bytes)
    number = rb"0|[1-9][0-9]{0,%d}" % (digits - 1)
    directions = b"|".join(direction.name.encode() for direction in Direction)
    return (
        rb'<room roomId="(?P<room>[A-Za-z0-9_.:-]{1,%d})">' % room_chars
        + (_S + rb'<data class="' + _MOVE_CLASS + rb'">' + _S)
        + (rb'<from x="(?P<x>' + number + rb')" y="(?P<y>' + number + rb')"/>' + _S)
        + (rb"<direction>(?P<direction>" + directions + rb")</direction>" + _S)
        + (rb"</data>" + _S + rb"</room>")
    )


@functools.lru_cache(maxsize=8)
def move_packet_pattern(limits: ProtocolLimits) -> re.Pattern[bytes] | None:
    """The pattern for `limits` (None: no shortcut, a move would break a limit)."""
    body = _move_body(limits)
    return None if body is None else re.compile(_S + rb"(?P<packet>" + body + rb")" + _S)


# A prepared game's player sends <joinPrepared> right after <protocol>: read the same way,
# it and the moves after it never need a parser (PacketReader makes none until a packet
# needs it). A reservation code is a UUID; other codes take the parser's way.
_RESERVATION_CHARS = 64


def _join_body(limits: ProtocolLimits) -> bytes:
    # At depth 1 and with one attribute: only the attribute limit can refuse it.
    chars = min(_RESERVATION_CHARS, limits.max_attribute_bytes)
    return rb'<joinPrepared reservationCode="(?P<code>[A-Za-z0-9_.:-]{1,%d})"' % chars + (
        _S + rb"/>"
    )


# An admin's <prepare> as the official admin clients and `Prepare.node` lay it out: the
# attributes gameType, pause, seed (each optional, in this order) and slots with
# displayName, canTimeout and reserved (all three, in this order). A value is printable
# ASCII without `"`, `&` and `<` (what the parser reads as it is: no entity, no newline it
# would normalise, no encoding) and within max_attribute_bytes; a seed is a plain decimal
# (`_seed` reads it as the parser path does). Anything else takes the parser's way.
_VALUE_CHARS = rb"[ !#-%'-;=-~]"
_SEED_DIGITS = 19


def _value(limits: ProtocolLimits) -> bytes:
    return _VALUE_CHARS + rb"{0,%d}" % limits.max_attribute_bytes


def _slot(value: bytes) -> bytes:
    names = (b"displayName", b"canTimeout", b"reserved")
    return b"<slot" + b"".join(b' %s="%s"' % (name, value) for name in names) + b"/>"


# A slot of the group "slots" of a `packet_pattern` match, which held only such slots (each
# value checked there): here a value needs no bound.
_SLOT: re.Pattern[bytes] = re.compile(_S + _slot(rb'([^"]*)'))


def _prepare_body(limits: ProtocolLimits) -> bytes | None:
    if limits.max_depth < 2:  # <prepare>, <slot>: the parser refuses a slot
        return None
    value = _value(limits)
    seed = rb'(?=[^"]{0,%d}")-?[0-9]{1,%d}' % (limits.max_attribute_bytes, _SEED_DIGITS)
    slot = _slot(value)
    return (
        rb"<prepare"
        + (rb'(?: gameType="(?P<game>' + value + rb')")?')
        + (rb'(?: pause="(?P<pause>' + value + rb')")?')
        + (rb'(?: seed="(?P<seed>' + seed + rb')")?')
        + (rb"(?:/>|>(?P<slots>(?:" + _S + slot + rb")*)" + _S + rb"</prepare>)")
    )


_NEVER = rb"(?!)"  # the branch of a packet without a shortcut: its groups exist, unmatched


@functools.lru_cache(maxsize=16)
def packet_pattern(
    limits: ProtocolLimits, moves: bool, joins: bool, prepares: bool
) -> re.Pattern[bytes] | None:
    """The packets read without the parser under `limits`, in one pattern: a move (group
    "move"), a `<joinPrepared>` ("join"), a `<prepare>` ("prepare"). None: no shortcut."""
    move = _move_body(limits) if moves else None
    join = _join_body(limits) if joins else None
    prepare = _prepare_body(limits) if prepares else None
    if move is None and join is None and prepare is None:
        return None
    return re.compile(
        _S
        + rb"(?P<packet>(?P<move>"
        + (move or _NEVER)
        + rb")|(?P<join>"
        + (join or _NEVER)
        + rb")|(?P<prepare>"
        + (prepare or _NEVER)
        + rb"))"
        + _S
    )


def shortcut_packet(match: re.Match[bytes]) -> ClientPacket:
    """The packet a match of `packet_pattern` holds."""
    if match.start("move") >= 0:
        return move_packet(match)
    if match.start("join") >= 0:
        return JoinPrepared(match.group("code").decode("ascii"))
    return prepare_packet(match)


def prepare_packet(match: re.Match[bytes]) -> Prepare:
    """What `ClientDecoder._prepare` reads from the `<prepare>` of a `packet_pattern` match:
    the same conversions (java_bool, `_seed`) of the same strings."""
    game, pause, seed = match.group("game", "pause", "seed")
    slots = match.group("slots")
    return Prepare(
        game_type=None if game is None else game.decode("ascii"),
        pause=java_bool(None if pause is None else pause.decode("ascii")),
        slots=()
        if not slots
        else tuple(
            SlotDescriptor(
                display_name=name.decode("ascii"),
                can_timeout=java_bool(timeout.decode("ascii")),
                reserved=java_bool(reserved.decode("ascii")),
            )
            for name, timeout, reserved in _SLOT.findall(slots)
        ),
        seed=_seed(None if seed is None else seed.decode("ascii"), "<prepare>"),
    )


# The moves and room ids `move_packet` read, by their bytes: a board has 100 fields and 8
# directions and a room sends its id with every move, so most were read before (a frozen
# dataclass is built field by field, the numbers parsed). Both immutable; cleared when full.
_MOVES: dict[tuple[bytes, bytes, bytes], Move] = {}
_ROOM_IDS: dict[bytes, str] = {}
_READ_CACHE_SIZE = 4096


def move_packet(match: re.Match[bytes]) -> MovePacket:
    """The packet a match of `move_packet_pattern` holds."""
    room_id, move = move_fields(match)
    return MovePacket(room_id, move)


def move_fields(match: re.Match[bytes]) -> tuple[str, Move]:
    """The room id and move of `move_packet(match)`, without the packet: the server's read
    loop makes one only when it needs it (a frozen dataclass costs ~4.5k instructions)."""
    room, x, y, direction = match.group("room", "x", "y", "direction")
    key = (x, y, direction)
    move = _MOVES.get(key)
    if move is None:
        move = Move(int(x), int(y), Direction[direction.decode("ascii")])
        if len(_MOVES) >= _READ_CACHE_SIZE:
            _MOVES.clear()  # (threads: a lost entry is only read again)
        _MOVES[key] = move
    room_id = _ROOM_IDS.get(room)
    if room_id is None:
        room_id = room.decode("ascii")
        if len(_ROOM_IDS) >= _READ_CACHE_SIZE:
            _ROOM_IDS.clear()
        _ROOM_IDS[room] = room_id
    return room_id, move


# --- client → server -------------------------------------------------------------------


def _room_data_text(data_class: str, data: Element) -> str:
    """Kotlin toString of room data the server does not expect from a client."""
    if data_class == "moveRequest":
        # MoveRequest has no toString: Object.toString with an identity hash that
        # differs per JVM run; any stable hex stands in for it.
        return f"sc.protocol.room.MoveRequest@{zlib.crc32(b'MoveRequest'):x}"
    if data_class == "welcomeMessage":
        return f"WelcomeMessage(color={data.get('color')})"
    if data_class == "paused":
        return f"GamePaused(paused={'true' if java_bool(data.get('paused')) else 'false'})"
    if data_class == "error":
        return f"ErrorMessage(originalMessage=..., message={data.get('message')})"
    if data_class == "memento":
        return "MementoMessage(state=GameState(...), perspective=null)"
    return "GameResult(...)"


def _seed(text: str | None, packet: str) -> int | None:
    """The `seed` extension of `<prepare>`: a decimal integer (any size, any sign)."""
    if text is None:
        return None
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise _fail(packet, f"seed must be an integer, got {text!r}") from None


class ClientDecoder:
    """Decodes the client packets of §2. It holds nothing of a connection (the limits and
    its table of handlers only): `client_decoder` shares one between connections."""

    __slots__ = ("_by_tag", "_reader")

    def __init__(self, limits: ProtocolLimits) -> None:
        self._reader = _Reader(limits)
        self._by_tag: dict[str, Callable[[Element, str], ClientPacket]] = {
            "join": self._join,
            "joinPrepared": self._join_prepared,
            "joinRoom": self._join_room,
            "authenticate": self._authenticate,
            "prepare": self._prepare,
            "observe": self._observe,
            "pause": self._pause,
            "step": self._step,
            "cancel": self._cancel,
            "room": self._room,
            "close": self._close,
        }

    def check_packet_name(self, name: str) -> None:
        """Raise for a tag that can never be a client packet."""
        if name in self._by_tag or name in RESPONSE_CLASSES:
            return
        if name in _NOT_PACKETS or name in _MOVE_CLASSES or name in _ROOM_DATA_CLASSES:
            raise RemoteProtocolError(f"<{name}> is not a packet")
        raise RemoteProtocolError(f"unknown packet <{name}>")

    def decode(self, element: Element, tag: str | None = None) -> ClientPacket:
        """`tag` overrides the element name (an `<originalRequest class="…">`)."""
        name = str(element.tag) if tag is None else tag
        handler = self._by_tag.get(name)
        if handler is not None:
            return handler(element, f"<{name}>")
        java_class = RESPONSE_CLASSES.get(name)
        if java_class is not None:
            return self._response(element, name, java_class)
        self.check_packet_name(name)
        raise AssertionError("unreachable: check_packet_name raises for other names")

    def _attr(self, element: Element, name: str, packet: str) -> str | None:
        return self._reader.attr(element, name, packet)

    def _join(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return Join(self._attr(element, "gameType", packet))

    def _join_prepared(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return JoinPrepared(self._attr(element, "reservationCode", packet))

    def _join_room(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return JoinRoom(self._attr(element, "roomId", packet))

    def _authenticate(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return Authenticate(self._attr(element, "password", packet))

    def _prepare(self, element: Element, packet: str) -> ClientPacket:
        slots: list[SlotDescriptor] = []
        state: GameState | None = None
        for child in _children(element):
            if child.tag == "state" and state is None:
                # Our extension (Prepare): the start position, after the slots.
                state = decode_state(child, packet, self._reader)
                continue
            if child.tag != "slot" or state is not None:
                raise _fail(packet, f"unexpected element <{child.tag}> in <prepare>")
            _no_children(child, packet)
            slots.append(
                SlotDescriptor(
                    display_name=self._attr(child, "displayName", packet) or "",
                    can_timeout=java_bool(self._attr(child, "canTimeout", packet)),
                    reserved=java_bool(self._attr(child, "reserved", packet)),
                )
            )
        return Prepare(
            game_type=self._attr(element, "gameType", packet),
            pause=java_bool(self._attr(element, "pause", packet)),
            slots=tuple(slots),
            seed=_seed(self._attr(element, "seed", packet), packet),
            state=state,
        )

    def _observe(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return Observe(self._attr(element, "roomId", packet))

    def _pause(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return PauseRequest(
            self._attr(element, "roomId", packet), java_bool(self._attr(element, "pause", packet))
        )

    def _step(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return StepRequest(
            self._attr(element, "roomId", packet), java_bool(self._attr(element, "forced", packet))
        )

    def _cancel(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return CancelRequest(self._attr(element, "roomId", packet))

    def _close(self, element: Element, packet: str) -> ClientPacket:
        _no_children(element, packet)
        return CloseRequest()

    def _room(self, element: Element, packet: str) -> ClientPacket:
        # Without roomId the official server reads null and answers "…room with id null".
        room_id = self._attr(element, "roomId", packet)
        data = _only_child(element, "data", packet)
        if data is None:
            # RoomPacket with data = null: officially "Received non-move packet".
            return RoomDataPacket(room_id, "", "null", None)
        data_class = self._attr(data, "class", packet)
        if data_class is None:
            raise _fail(packet, "<data> lacks the class attribute")
        if data_class in _MOVE_CLASSES:
            return MovePacket(room_id, decode_move(data, packet, self._reader))
        alias = _ROOM_DATA_CLASSES.get(data_class)
        if alias is None:
            raise _fail(packet, f"unknown data class {data_class!r}")
        if alias in ("moveRequest", "welcomeMessage", "paused"):
            _no_children(data, packet)
        return RoomDataPacket(room_id, alias, _room_data_text(alias, data), element_node(data))

    def _response(self, element: Element, name: str, java_class: str) -> ClientPacket:
        packet = f"<{name}>"
        allowed = {"prepared": "reservation", "errorpacket": "originalRequest"}.get(name)
        for child in _children(element):
            if child.tag != allowed:
                raise _fail(packet, f"unexpected element <{child.tag}> in <{name}>")
            if name == "errorpacket":
                # XStream instantiates the echoed request by its class attribute.
                alias = self._reader.required_attr(child, "class", packet)
                self.check_packet_name(alias)
        count = self._attr(element, "playerCount", packet)
        if name == "joinedGameRoom" and count is not None:
            java_int(count, f"{packet}: playerCount")
        return ResponsePacket(name, java_class, element_node(element))


@functools.lru_cache(maxsize=8)
def client_decoder(limits: ProtocolLimits) -> ClientDecoder:
    """The decoder for `limits`, made once (a server's connections share their limits):
    making one per connection cost about half of a connection's set-up."""
    return ClientDecoder(limits)


# --- server → client -------------------------------------------------------------------


def _team(text: str | None, where: str) -> Team:
    try:
        return Team[text or ""]
    except KeyError:
        raise _fail(where, f"unknown team {text!r}") from None


def decode_state(state: Element, packet: str, reader: _Reader) -> GameState:
    """A `<state class="state">` (a memento's, or a `<prepare>`'s start position)."""
    import engine

    turn_text = reader.required_attr(state, "turn", packet)
    turn = java_int(turn_text, f"{packet}: turn")
    union_text = reader.attr(state, "firstUnion", packet)
    first_union = _team(union_text, packet) if union_text is not None else None
    last_move: Move | None = None
    rows: list[list[FieldState]] | None = None
    for child in _children(state):
        if child.tag == "lastMove" and last_move is None:
            last_move = decode_move(child, packet, reader)
        elif child.tag == "board" and rows is None:
            rows = _board(child, packet)
        else:
            raise _fail(packet, f"unexpected element <{child.tag}> in <state>")
    if rows is None:
        raise _fail(packet, "<state> lacks <board>")
    try:
        return engine.GameState.from_rows(rows, turn, first_union, last_move)
    except ValueError as error:  # a ragged board, a negative turn
        raise _fail(packet, str(error)) from None


def _board(board: Element, packet: str) -> list[list[FieldState]]:
    rows: list[list[FieldState]] = []
    for row in _children(board):
        if row.tag != "row":
            raise _fail(packet, f"unexpected element <{row.tag}> in <board>")
        cells: list[FieldState] = []
        for cell in _children(row):
            if cell.tag != "field":
                raise _fail(packet, f"unexpected element <{cell.tag}> in <row>")
            try:
                cells.append(FieldState[cell.text or ""])
            except KeyError:
                raise _fail(packet, f"unknown field {cell.text!r}") from None
        rows.append(cells)
    return rows


class ServerDecoder:
    """Decodes the server messages of §3 (for ClientConnection and replays)."""

    def __init__(self, limits: ProtocolLimits) -> None:
        self._reader = _Reader(limits)
        self._client = ClientDecoder(limits)

    def check_packet_name(self, name: str) -> None:
        if name not in _SERVER_PACKETS:
            raise RemoteProtocolError(f"unknown message <{name}>")

    def decode(self, element: Element) -> ServerMessage:
        tag = str(element.tag)
        packet = f"<{tag}>"
        reader = self._reader
        if tag == "room":
            return self._room(element)
        if tag in ("joined", "observed", "left"):
            _no_children(element, packet)
            room_id = reader.required_attr(element, "roomId", packet)
            if tag == "joined":
                return Joined(room_id)
            return Observed(room_id) if tag == "observed" else Left(room_id)
        if tag == "joinedGameRoom":
            _no_children(element, packet)
            count = reader.required_attr(element, "playerCount", packet)
            return JoinedGameRoom(
                reader.required_attr(element, "roomId", packet),
                java_int(count, f"{packet}: playerCount"),
            )
        if tag == "prepared":
            codes: list[str] = []
            for child in _children(element):
                if child.tag != "reservation":
                    raise _fail(packet, f"unexpected element <{child.tag}> in <prepared>")
                codes.append(child.text or "")
            return Prepared(reader.required_attr(element, "roomId", packet), tuple(codes))
        if tag == "close":
            _no_children(element, packet)
            return CloseConnection()
        if tag == "errorpacket":
            original = _only_child(element, "originalRequest", packet)
            request: ClientPacket | None = None
            if original is not None:
                alias = reader.required_attr(original, "class", packet)
                request = self._client.decode(original, alias)
            return ErrorPacket(reader.attr(element, "message", packet) or "", request)
        raise RemoteProtocolError(f"unknown message <{tag}>")

    def _room(self, element: Element) -> ServerMessage:
        packet = "<room>"
        reader = self._reader
        room_id = reader.required_attr(element, "roomId", packet)
        data = _only_child(element, "data", packet)
        if data is None:
            raise _fail(packet, "<room> lacks <data>")
        data_class = reader.required_attr(data, "class", packet)
        packet = f"<room> ({data_class})"
        if data_class == "memento":
            state = _only_child(data, "state", packet)
            if state is None:
                raise _fail(packet, "<data> lacks <state>")
            return Memento(room_id, self.decode_state(state, packet))
        if data_class == "moveRequest":
            _no_children(data, packet)
            return MoveRequest(room_id)
        if data_class == "welcomeMessage":
            _no_children(data, packet)
            return WelcomeMessage(room_id, _team(data.get("color"), packet))
        if data_class == "paused":
            _no_children(data, packet)
            return Paused(room_id, java_bool(data.get("paused")))
        if data_class == "result":
            return ResultMessage(room_id, self.decode_result(data, packet))
        if data_class == "error":
            original = _only_child(data, "originalMessage", packet)
            if original is None:
                raise _fail(packet, "<data> lacks <originalMessage>")
            message = reader.attr(data, "message", packet) or ""
            return RoomError(room_id, message, decode_move(original, packet, reader))
        raise _fail(packet, f"unknown data class {data_class!r}")

    def decode_state(self, state: Element, packet: str) -> GameState:
        return decode_state(state, packet, self._reader)

    def decode_result(self, data: Element, packet: str) -> GameResult:
        import engine

        reader = self._reader
        scores: list[tuple[PlayerEntry, tuple[int, int]]] = []
        winner_element: Element | None = None
        seen: set[str] = set()
        for child in _children(data):
            tag = str(child.tag)
            if tag not in ("definition", "scores", "winner") or tag in seen:
                raise _fail(packet, f"unexpected element <{tag}> in <data>")
            seen.add(tag)
            if tag == "scores":
                scores = [self._entry(entry, packet) for entry in _children(child)]
            elif tag == "winner":
                winner_element = child
        if "scores" not in seen:
            raise _fail(packet, "<data> lacks <scores>")
        if winner_element is None:
            # The official reader's default when <winner> is absent.
            return engine.GameResult(scores, None, True, _TIE_REASON)
        team_text = reader.attr(winner_element, "team", packet)
        winner = _team(team_text, packet) if team_text is not None else None
        regular = reader.attr(winner_element, "regular", packet) == "true"
        reason = reader.attr(winner_element, "reason", packet) or ""
        return engine.GameResult(scores, winner, regular, reason)

    def _entry(self, entry: Element, packet: str) -> tuple[PlayerEntry, tuple[int, int]]:
        import engine

        if entry.tag != "entry":
            raise _fail(packet, f"unexpected element <{entry.tag}> in <scores>")
        found: dict[str, Element] = {}
        for child in _children(entry):
            if child.tag not in ("player", "score") or child.tag in found:
                raise _fail(packet, f"unexpected element <{child.tag}> in <entry>")
            found[str(child.tag)] = child
        if len(found) != 2:
            raise _fail(packet, "<entry> needs one <player> and one <score>")
        parts: list[int] = []
        for part in _children(found["score"]):
            if part.tag != "part":
                raise _fail(packet, f"unexpected element <{part.tag}> in <score>")
            parts.append(java_int(part.text or "", f"{packet}: <part>"))
        if len(parts) != 2:
            raise _fail(packet, f"<score> has {len(parts)} parts, Piranhas has 2")
        player = found["player"]
        name = self._reader.attr(player, "name", packet) or ""
        team = _team(player.get("team"), packet)
        return engine.PlayerEntry(team, name), (parts[0], parts[1])
