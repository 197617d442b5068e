"""Client → server packets (docs/protocol.md §2) as typed, immutable events.

Every event knows its canonical XML (`to_xml()`, also echoed as `<originalRequest>` in an
errorpacket) and the Kotlin `toString()` the official server prints in error messages
(`java_repr()`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, TypeAlias

from engine.types import Move
from protocol._xml import Attrs, Node, render

if TYPE_CHECKING:
    from engine import GameState

# The one game this server plays: the `gameType` of `<join>`/`<prepare>` and the plugin id
# in replay file names.
GAME_TYPE = "swc_2026_piranhas"


# Slot descriptors written out in full in Prepare.java_repr.
MAX_REPR_SLOTS = 16


def kotlin_str(value: str | None) -> str:
    return "null" if value is None else value


def kotlin_bool(value: bool) -> str:
    return "true" if value else "false"


def _attrs(*pairs: tuple[str, str | None]) -> Attrs:
    # XStream omits attributes whose field is null.
    return tuple((name, value) for name, value in pairs if value is not None)


def move_children(move: Move) -> tuple[Node, ...]:
    """`<from x y/>` and `<direction>`: the body of every serialised Piranhas move."""
    return (
        ("from", (("x", str(move.x)), ("y", str(move.y))), None),
        ("direction", (), move.direction.name),
    )


def state_node(state: GameState) -> Node:
    """A state as a memento carries it (`<state class="state" …>`, protocol.messages renders
    the same by string building): the start position of a `<prepare>`."""
    attrs: Attrs = (("class", "state"), ("startTeam", "ONE"), ("turn", str(state.turn)))
    if state.first_union is not None:
        attrs += (("firstUnion", state.first_union.name),)
    children: tuple[Node, ...] = ()
    if state.last_move is not None:
        children += (("lastMove", (), move_children(state.last_move)),)
    rows = tuple(
        ("row", (), tuple(("field", (), cell.name) for cell in row)) for row in state.rows()
    )
    return ("state", attrs, (*children, ("board", (), rows)))


class _Event:
    """Shared behaviour: `node()` is the canonical element; everything else derives from it."""

    __slots__ = ()
    alias: ClassVar[str]

    def node(self) -> Node:
        raise NotImplementedError

    def to_xml(self) -> str:
        return render(self.node())

    def java_repr(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Join(_Event):
    """`<join [gameType]/>`: join any open room or create one."""

    game_type: str | None = None
    alias: ClassVar[str] = "join"

    def node(self) -> Node:
        return ("join", _attrs(("gameType", self.game_type)), None)

    def java_repr(self) -> str:
        return f"JoinGameRequest(gameType={kotlin_str(self.game_type)})"


@dataclass(frozen=True, slots=True)
class JoinPrepared(_Event):
    reservation_code: str | None = None
    alias: ClassVar[str] = "joinPrepared"

    def node(self) -> Node:
        return ("joinPrepared", _attrs(("reservationCode", self.reservation_code)), None)

    def java_repr(self) -> str:
        return f"JoinPreparedRoomRequest(reservationCode={kotlin_str(self.reservation_code)})"


@dataclass(frozen=True, slots=True)
class JoinRoom(_Event):
    room_id: str | None = None
    alias: ClassVar[str] = "joinRoom"

    def node(self) -> Node:
        return ("joinRoom", _attrs(("roomId", self.room_id)), None)

    def java_repr(self) -> str:
        return f"JoinRoomRequest(roomId={kotlin_str(self.room_id)})"


@dataclass(frozen=True, slots=True)
class Authenticate(_Event):
    password: str | None = None
    alias: ClassVar[str] = "authenticate"

    def node(self) -> Node:
        return ("authenticate", _attrs(("password", self.password)), None)

    def java_repr(self) -> str:
        return f"AuthenticateRequest(password={kotlin_str(self.password)})"


@dataclass(frozen=True, slots=True)
class SlotDescriptor:
    """One `<slot>` of a `<prepare>`. Missing booleans read as false, like the official
    server (XStream never runs the Kotlin constructor with its `true` defaults)."""

    display_name: str = ""
    can_timeout: bool = False
    reserved: bool = False

    def node(self, tag: str = "slot") -> Node:
        attrs = (
            ("displayName", self.display_name),
            ("canTimeout", kotlin_bool(self.can_timeout)),
            ("reserved", kotlin_bool(self.reserved)),
        )
        return (tag, attrs, None)

    def java_repr(self) -> str:
        return (
            f"SlotDescriptor(displayName={self.display_name}, "
            f"canTimeout={kotlin_bool(self.can_timeout)}, reserved={kotlin_bool(self.reserved)})"
        )


@dataclass(frozen=True, slots=True)
class Prepare(_Event):
    """`<prepare gameType pause [seed]>` with its `<slot>`s [and a `<state>`]. `seed` and
    `state` are this server's extensions (docs/server.md): the room starts on
    `GameState.initial(seed)`, or on `state` (a memento's `<state>` after the slots: "play from
    here"). Official clients never send them; they are never written unless set."""

    game_type: str | None = None
    pause: bool = False
    slots: tuple[SlotDescriptor, ...] = ()
    seed: int | None = None
    state: GameState | None = None
    alias: ClassVar[str] = "prepare"

    def node(self) -> Node:
        attrs = _attrs(
            ("gameType", self.game_type),
            ("pause", kotlin_bool(self.pause)),
            ("seed", None if self.seed is None else str(self.seed)),
        )
        nodes = tuple(slot.node() for slot in self.slots)
        if self.state is not None:
            nodes += (state_node(self.state),)
        return ("prepare", attrs, nodes or None)

    def java_repr(self) -> str:
        # Kotlin prints array properties of data classes with Arrays.toString. An official
        # prepare has one or two slots; absurd counts are abbreviated so that refusing
        # them (message, log line) costs little.
        shown = [slot.java_repr() for slot in self.slots[:MAX_REPR_SLOTS]]
        if len(self.slots) > MAX_REPR_SLOTS:
            shown.append(f"… {len(self.slots) - MAX_REPR_SLOTS} more")
        slots = ", ".join(shown)
        return (
            f"PrepareGameRequest(gameType={kotlin_str(self.game_type)}, "
            f"slotDescriptors=[{slots}], pause={kotlin_bool(self.pause)})"
        )


@dataclass(frozen=True, slots=True)
class Observe(_Event):
    room_id: str | None = None
    alias: ClassVar[str] = "observe"

    def node(self) -> Node:
        return ("observe", _attrs(("roomId", self.room_id)), None)

    def java_repr(self) -> str:
        return f"ObservationRequest(roomId={kotlin_str(self.room_id)})"


@dataclass(frozen=True, slots=True)
class PauseRequest(_Event):
    room_id: str | None = None
    pause: bool = False
    alias: ClassVar[str] = "pause"

    def node(self) -> Node:
        attrs = _attrs(("roomId", self.room_id), ("pause", kotlin_bool(self.pause)))
        return ("pause", attrs, None)

    def java_repr(self) -> str:
        return (
            f"PauseGameRequest(roomId={kotlin_str(self.room_id)}, pause={kotlin_bool(self.pause)})"
        )


@dataclass(frozen=True, slots=True)
class StepRequest(_Event):
    room_id: str | None = None
    forced: bool = False
    alias: ClassVar[str] = "step"

    def node(self) -> Node:
        attrs = _attrs(("roomId", self.room_id), ("forced", kotlin_bool(self.forced)))
        return ("step", attrs, None)

    def java_repr(self) -> str:
        return f"StepRequest(roomId={kotlin_str(self.room_id)}, forced={kotlin_bool(self.forced)})"


@dataclass(frozen=True, slots=True)
class CancelRequest(_Event):
    room_id: str | None = None
    alias: ClassVar[str] = "cancel"

    def node(self) -> Node:
        return ("cancel", _attrs(("roomId", self.room_id)), None)

    def java_repr(self) -> str:
        return f"CancelRequest(roomId={kotlin_str(self.room_id)})"


@dataclass(frozen=True, slots=True)
class MovePacket(_Event):
    """`<room roomId><data class="move">`: a move for a room. `room_id` is None when the
    attribute is missing (the official server then answers "…room with id null")."""

    room_id: str | None
    move: Move
    alias: ClassVar[str] = "room"

    def node(self) -> Node:
        data: Node = ("data", (("class", "move"),), move_children(self.move))
        return ("room", _attrs(("roomId", self.room_id)), (data,))

    def java_repr(self) -> str:
        return f"RoomPacket(roomId={kotlin_str(self.room_id)}, data={self.move})"


@dataclass(frozen=True, slots=True)
class RoomDataPacket(_Event):
    """A `<room>` whose data is a known room message other than a move (e.g. a client
    echoing `moveRequest`). `text` is the data's Kotlin toString for the official
    "Received non-move packet" message; `data_node` keeps the element for echoing."""

    room_id: str | None
    data_class: str
    text: str
    data_node: Node | None = field(default=None, repr=False)
    alias: ClassVar[str] = "room"

    def node(self) -> Node:
        attrs = _attrs(("roomId", self.room_id))
        if self.data_node is None and not self.data_class:
            return ("room", attrs, None)  # a <room> without data
        data = self.data_node or ("data", (("class", self.data_class),), None)
        return ("room", attrs, (data,))

    def java_repr(self) -> str:
        return f"RoomPacket(roomId={kotlin_str(self.room_id)}, data={self.text})"


# Server → client packet aliases and their Java classes (sdk/…/sc/protocol/**): a client
# sending one of these gets "Unhandled Packet of type: class <java class>".
RESPONSE_CLASSES: dict[str, str] = {
    "errorpacket": "sc.protocol.responses.ErrorPacket",
    "prepared": "sc.protocol.responses.GamePreparedResponse",
    "joined": "sc.protocol.responses.JoinedRoomResponse",
    "observed": "sc.protocol.responses.ObservationResponse",
    "joinedGameRoom": "sc.protocol.responses.RoomWasJoinedEvent",
    "left": "sc.protocol.RemovedFromGame",
}


@dataclass(frozen=True, slots=True)
class ResponsePacket(_Event):
    """A server → client packet received from a client (`<joined>`, `<left>`, …)."""

    name: str
    java_class: str
    packet_node: Node | None = field(default=None, repr=False)

    @property
    def alias(self) -> str:  # type: ignore[override]
        return self.name

    def node(self) -> Node:
        return self.packet_node or (self.name, (), None)

    def java_repr(self) -> str:
        simple = self.java_class.rsplit(".", 1)[-1]
        _, attrs, _ = self.node()
        return f"{simple}({', '.join(f'{name}={value}' for name, value in attrs)})"


@dataclass(frozen=True, slots=True)
class CloseRequest(_Event):
    """`<close/>`: the client is about to close the connection."""

    alias: ClassVar[str] = "close"

    def node(self) -> Node:
        return ("close", (), None)

    def java_repr(self) -> str:
        return "CloseConnection"


@dataclass(frozen=True, slots=True)
class StreamEnd(_Event):
    """The client's `</protocol>`: the end of its document. Not a packet."""

    alias: ClassVar[str] = "protocol"

    def node(self) -> Node:
        raise TypeError("StreamEnd is the end of the stream, not a packet")

    def to_xml(self) -> str:
        return "</protocol>"

    def java_repr(self) -> str:
        return "EOF"


ClientPacket: TypeAlias = (
    Join
    | JoinPrepared
    | JoinRoom
    | Authenticate
    | Prepare
    | Observe
    | PauseRequest
    | StepRequest
    | CancelRequest
    | MovePacket
    | RoomDataPacket
    | ResponsePacket
    | CloseRequest
    | StreamEnd
)

__all__ = [
    "GAME_TYPE",
    "RESPONSE_CLASSES",
    "Authenticate",
    "CancelRequest",
    "ClientPacket",
    "CloseRequest",
    "Join",
    "JoinPrepared",
    "JoinRoom",
    "MovePacket",
    "Observe",
    "PauseRequest",
    "Prepare",
    "ResponsePacket",
    "RoomDataPacket",
    "SlotDescriptor",
    "StepRequest",
    "StreamEnd",
]
