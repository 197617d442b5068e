"""Our bytes through the real official Python client (socha 4.3.9): its regex framing
(NetworkSocket.receive) and its xsdata deserialisation must accept every message we send,
and its own move packets must parse here."""

from __future__ import annotations

from typing import Any

import pytest

from engine import (
    Direction,
    GameState,
    Move,
    PlayerEntry,
    Team,
    Violation,
    ViolationKind,
    game_result,
)
from protocol import NEED_DATA, ServerConnection
from protocol.events import Join, JoinPrepared, MovePacket
from protocol.messages import (
    ErrorPacket,
    Joined,
    Left,
    Memento,
    MoveRequest,
    Paused,
    ResultMessage,
    RoomError,
    ServerMessage,
    WelcomeMessage,
)

pytest.importorskip("socha")
pytestmark = pytest.mark.socha

from socha import _socha  # noqa: E402
from socha.api.networking import xml_protocol_interface as xpi  # noqa: E402
from socha.api.networking.network_socket import NetworkSocket  # noqa: E402
from socha.api.networking.utils import handle_move, message_to_state  # noqa: E402
from socha.api.protocol import protocol as sp  # noqa: E402

from tests.helpers.socha import SOCHA_FIELD_NAMES  # noqa: E402


class _OneShotSocket:
    """Hands socha's NetworkSocket the bytes queued in `data` once, then times out like an
    idle server."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def recv(self, size: int) -> bytes:
        data, self.data = self.data, b""
        if not data:
            raise TimeoutError
        return data


def socha_interface(data: bytes) -> Any:
    """socha's XMLProtocolInterface as its constructor builds it, minus the TCP connect."""
    interface: Any = xpi.XMLProtocolInterface.__new__(xpi.XMLProtocolInterface)
    network = NetworkSocket()
    network.socket = _OneShotSocket(data)
    interface.network_interface = network
    interface.first_time = True
    interface.deserializer = xpi.XmlParser(
        handler=xpi.XmlEventHandler,
        context=xpi.XmlContext(),
        config=xpi.ParserConfig(class_factory=xpi.custom_class_factory),
    )
    interface.serializer = xpi.XmlSerializer(
        config=xpi.SerializerConfig(pretty_print=True, xml_declaration=False, encoding="utf-8")
    )
    return interface


def socha_receive(messages: list[ServerMessage]) -> list[Any]:
    """What socha makes of our stream. Each message arrives in its own poll, as in a real
    game: socha drops identical packets that sit in its buffer together (bytes.replace)."""
    server = ServerConnection()
    interface = socha_interface(b"")
    received = []
    for message in messages:
        interface.network_interface.socket.data = server.send(message)
        received.append(interface._receive())
    assert interface._receive() is None  # nothing left over in its buffer
    return received


def played(seed: int) -> list[GameState]:
    state = GameState.initial(seed=seed)
    states = [state]
    while not state.is_over:
        legal = state.legal_moves()
        state = state.apply(legal[(state.turn * 7) % len(legal)])
        states.append(state)
    return states


def test_a_whole_game_as_a_player_sees_it() -> None:
    states = played(3)
    final = states[-1]
    players = [PlayerEntry(Team.ONE, "Spieler 1"), PlayerEntry(Team.TWO, "")]
    result = game_result(final, players)
    messages: list[ServerMessage] = [Joined("R"), WelcomeMessage("R", Team.TWO)]
    for state in states:
        messages.append(Memento("R", state))
        messages.append(MoveRequest("R"))
    messages += [ResultMessage("R", result), Left("R")]

    received = socha_receive(messages)
    assert len(received) == len(messages)
    assert isinstance(received[0], sp.Joined)
    assert received[0].room_id == "R"
    welcome = received[1].data.class_binding
    assert isinstance(welcome, sp.WelcomeMessage)
    assert welcome.team == _socha.TeamEnum.Two

    for state, memento, request in zip(states, received[2:-2:2], received[3:-2:2], strict=True):
        theirs = message_to_state(memento)
        assert theirs.turn == state.turn
        assert [[repr(f) for f in row] for row in theirs.board.map] == [
            [SOCHA_FIELD_NAMES[f] for f in row] for row in state.rows()
        ]
        if state.last_move is None:
            assert theirs.last_move is None
        else:
            assert (theirs.last_move.start.x, theirs.last_move.start.y) == (
                state.last_move.x,
                state.last_move.y,
            )
        assert isinstance(request.data.class_binding, sp.MoveRequest)

    socha_result = received[-2].data.class_binding
    assert isinstance(socha_result, sp.Result)
    assert [f.name for f in socha_result.definition.fragment] == ["Siegpunkte", "Schwarmgröße"]
    assert [(e.player.team, e.player.name, e.score.part) for e in socha_result.scores.entry] == [
        (entry.team.name, entry.name or None, list(score)) for entry, score in result.scores
    ]
    assert socha_result.winner.reason == result.reason
    assert socha_result.winner.regular == result.regular
    assert isinstance(received[-1], sp.Left)


def test_tie_violation_error_and_paused_do_not_kill_socha() -> None:
    state = GameState.initial(seed=1)
    violation = Violation(ViolationKind.RULE_VIOLATION, "Zielfeld ist besetzt bei 'x'")
    players = [PlayerEntry(Team.ONE, "a"), PlayerEntry(Team.TWO, "b", violation)]
    messages: list[ServerMessage] = [
        Paused("R", True),
        RoomError("R", "Ungueltiger Zug von 'b'.\nX", Move(1, 0, Direction.UP)),
        ResultMessage(
            "R", game_result(state, [PlayerEntry(Team.ONE, ""), PlayerEntry(Team.TWO, "")])
        ),
        ResultMessage("R", game_result(state, players)),
        ErrorPacket("sc.Foo: bar", JoinPrepared("code")),
        ErrorPacket("sc.Foo: bar", None),
    ]
    received = socha_receive(messages)
    assert len(received) == len(messages)
    error = received[1].data.class_binding
    assert isinstance(error, sp.Error)
    assert (error.originalMessage.from_.x, error.originalMessage.direction) == (1, "UP")
    tie = received[2].data.class_binding
    assert tie.winner.team is None and tie.winner.reason == "Beide Spieler sind gleichauf"
    assert received[3].data.class_binding.winner.team == "ONE"
    assert isinstance(received[4], sp.Errorpacket)
    assert isinstance(received[5], sp.Errorpacket)


def test_socha_packets_parse_here() -> None:
    interface = socha_interface(b"")
    first = xpi.PROTOCOL_PREFIX + interface._serialize_object(sp.Join())
    move = _socha.Move(_socha.Coordinate(0, 3), _socha.Direction.UpRight)
    room = interface._serialize_object(sp.Room(room_id="R", data=handle_move(move)))
    conn = ServerConnection()
    conn.receive_data(first + room)
    assert conn.next_event() == Join(None)
    assert conn.next_event() == MovePacket("R", Move(0, 3, Direction.UP_RIGHT))
    assert conn.next_event() is NEED_DATA
