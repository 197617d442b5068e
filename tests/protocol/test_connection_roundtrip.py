"""Both directions: what one side writes, the other side reads back as the same object."""

from __future__ import annotations

import dataclasses
import random

import pytest

from engine import (
    Direction,
    GameResult,
    GameState,
    Move,
    PlayerEntry,
    Team,
    Violation,
    ViolationKind,
    game_result,
)
from protocol import NEED_DATA, ClientConnection, RemoteProtocolError, ServerConnection
from protocol.events import (
    GAME_TYPE,
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
    SlotDescriptor,
    StepRequest,
    StreamEnd,
)
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


def played_states(seed: int, moves: int) -> list[GameState]:
    rng = random.Random(seed)
    state = GameState.initial(seed=seed)
    states = [state]
    for _ in range(moves):
        legal = state.legal_moves()
        if state.is_over or not legal:
            break
        state = state.apply(rng.choice(legal))
        states.append(state)
    return states


def server_messages() -> list[ServerMessage]:
    states = played_states(5, 60)
    final = states[-1]
    players = [PlayerEntry(Team.ONE, "alice & 'bob'"), PlayerEntry(Team.TWO, "")]
    violation = Violation(ViolationKind.RULE_VIOLATION, "Zielfeld ist besetzt bei 'x'")
    return [
        Joined("r-1"),
        JoinedGameRoom("r-1", 2),
        Prepared("r-1", ("a", "b")),
        Prepared("r-2", ()),
        Observed("r-1"),
        WelcomeMessage("r-1", Team.ONE),
        WelcomeMessage("r-1", Team.TWO),
        *(Memento("r-1", state) for state in states),
        MoveRequest("r-1"),
        Paused("r-1", True),
        Paused("r-1", False),
        ResultMessage("r-1", game_result(final, players)),
        ResultMessage(
            "r-1", game_result(final, [players[0], PlayerEntry(Team.TWO, "x", violation)])
        ),
        ResultMessage("r-1", game_result(final, players, aborted="Server beendet")),
        ErrorPacket("sc.Foo: Couldn't\n<find>", JoinPrepared("code")),
        ErrorPacket("m", Prepare("g", True, (SlotDescriptor("ä", True, False),))),
        ErrorPacket("m", MovePacket("r", Move(-1, 12, Direction.DOWN_LEFT))),
        ErrorPacket("m", Observe(None)),
        RoomError("r-1", "Ungueltiger Zug von 'a'.\nX", Move(3, 4, Direction.UP_LEFT)),
        Left("r-1"),
        CloseConnection(),
    ]


def read_all(conn: ClientConnection, data: bytes) -> list[ServerMessage]:
    conn.receive_data(data)
    out: list[ServerMessage] = []
    while (message := conn.next_event()) is not NEED_DATA:
        assert not isinstance(message, type(NEED_DATA))
        out.append(message)
    return out


def on_the_wire(message: ServerMessage) -> ServerMessage:
    """What survives the wire: a result carries no violation objects, only their text."""
    if not isinstance(message, ResultMessage):
        return message
    result = message.result
    scores = [(dataclasses.replace(entry, violation=None), score) for entry, score in result.scores]
    return ResultMessage(message.room_id, dataclasses.replace(result, scores=scores))


def test_every_server_message_round_trips() -> None:
    messages = server_messages()
    server = ServerConnection()
    data = b"".join(server.send(message) for message in messages)
    assert read_all(ClientConnection(), data) == [on_the_wire(m) for m in messages]


def test_server_stream_split_at_every_byte_reads_the_same() -> None:
    messages = server_messages()[:12]
    server = ServerConnection()
    data = b"".join(server.send(message) for message in messages)
    client = ClientConnection()
    out: list[ServerMessage] = []
    for index in range(len(data)):
        out += read_all(client, data[index : index + 1])
    assert out == [on_the_wire(m) for m in messages]


def test_end_of_the_server_stream_is_eof_for_the_client() -> None:
    server = ServerConnection()
    data = server.send(Left("r")) + server.close()
    client = ClientConnection()
    client.receive_data(data)
    assert client.next_event() == Left("r")
    with pytest.raises(RemoteProtocolError) as info:
        client.next_event()
    assert info.value.eof


def test_result_without_winner_reads_as_the_official_tie() -> None:
    data = (
        b'<protocol><room roomId="r"><data class="result"><definition/><scores><entry>'
        b'<player team="ONE"/><score><part>1</part><part>5</part></score></entry></scores>'
        b"</data></room>"
    )
    [message] = read_all(ClientConnection(), data)
    assert message == ResultMessage(
        "r",
        GameResult(
            [(PlayerEntry(Team.ONE, ""), (1, 5))], None, True, "Beide Spieler sind gleichauf"
        ),
    )


CLIENT_PACKETS: list[ClientPacket] = [
    Join(),
    Join(GAME_TYPE),
    JoinPrepared("c"),
    JoinRoom("r"),
    Authenticate("pässword <&>"),
    Prepare("g", False, (SlotDescriptor("p1", True, True), SlotDescriptor("p2", False, False))),
    Prepare(None, True, ()),
    Observe("r"),
    PauseRequest("r", True),
    StepRequest("r", True),
    CancelRequest("r"),
    MovePacket("r", Move(9, 0, Direction.UP_LEFT)),
    CloseRequest(),
]


def test_every_client_packet_round_trips_through_the_server() -> None:
    client = ClientConnection()
    data = b"".join(client.send(packet) for packet in CLIENT_PACKETS) + client.send(StreamEnd())
    assert data.startswith(b"<protocol>\n  <join/>")
    assert data.endswith(b"\n</protocol>")
    server = ServerConnection()
    server.receive_data(data)
    out: list[ClientPacket] = []
    while (event := server.next_event()) is not NEED_DATA:
        assert not isinstance(event, type(NEED_DATA))
        out.append(event)
        if isinstance(event, StreamEnd):
            break
    assert out == [*CLIENT_PACKETS, StreamEnd()]


@pytest.mark.parametrize("packet", CLIENT_PACKETS, ids=lambda p: type(p).__name__)
def test_errorpacket_echo_round_trips(packet: ClientPacket) -> None:
    server = ServerConnection()
    [message] = read_all(ClientConnection(), server.send(ErrorPacket("m", packet)))
    assert message == ErrorPacket("m", packet)


def test_unknown_server_message_is_a_remote_error() -> None:
    client = ClientConnection()
    client.receive_data(b"<protocol><hello/>")
    with pytest.raises(RemoteProtocolError, match="hello"):
        client.next_event()


@pytest.mark.parametrize(
    ("data", "word"),
    [
        (b'<room roomId="r"><data class="memento"><state turn="0"/></data></room>', "board"),
        (
            b'<room roomId="r"><data class="memento"><state turn="0"><board><row>'
            b"<field>FISH</field></row></board></state></data></room>",
            "FISH",
        ),
        (b'<room roomId="r"><data class="welcomeMessage" color="red"/></room>', "red"),
        (b'<room roomId="r"><data class="nope"/></room>', "nope"),
        (b'<room roomId="r"><data class="memento"><state/></data></room>', "turn"),
        (
            b'<room roomId="r"><data class="result"><scores><entry><player team="ONE"/>'
            b"</entry></scores></data></room>",
            "<score>",
        ),
        (
            b'<room roomId="r"><data class="result"><scores><entry><player team="ONE"/><score>'
            b"<part>1</part></score></entry></scores></data></room>",
            "1 parts",
        ),
        (b'<room roomId="r"><data class="result"><definition/></data></room>', "<scores>"),
    ],
)
def test_bad_server_messages_are_named(data: bytes, word: str) -> None:
    client = ClientConnection()
    client.receive_data(b"<protocol>" + data)
    with pytest.raises(RemoteProtocolError) as info:
        client.next_event()
    assert word in info.value.message
