"""Property tests: chunking never changes what is read; garbage only ever raises the
protocol's own error."""

from __future__ import annotations

import contextlib
import itertools
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Direction, GameResult, GameState, Move, PlayerEntry, Team
from protocol import (
    NEED_DATA,
    ClientConnection,
    ProtocolLimits,
    RemoteProtocolError,
    ServerConnection,
)
from protocol.events import (
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
from protocol.replay import read_replay

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Every character XML 1.0 can carry (the writer escapes the rest, but a reader cannot
# get them back).
xml_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff")
    | st.sampled_from("\t\n\r&<>\"'"),
    max_size=12,
)
optional_text = st.none() | xml_text
java_int = st.integers(-(2**31), 2**31 - 1)
moves = st.builds(Move, java_int, java_int, st.sampled_from(Direction))
slots = st.builds(SlotDescriptor, xml_text, st.booleans(), st.booleans())

client_packets: st.SearchStrategy[ClientPacket] = st.one_of(
    st.builds(Join, optional_text),
    st.builds(JoinPrepared, optional_text),
    st.builds(JoinRoom, optional_text),
    st.builds(Authenticate, optional_text),
    st.builds(Prepare, optional_text, st.booleans(), st.lists(slots, max_size=3).map(tuple)),
    st.builds(Observe, optional_text),
    st.builds(PauseRequest, optional_text, st.booleans()),
    st.builds(StepRequest, optional_text, st.booleans()),
    st.builds(CancelRequest, optional_text),
    st.builds(MovePacket, xml_text, moves),
    st.just(CloseRequest()),
)


@st.composite
def game_states(draw: st.DrawFn) -> GameState:
    rng = random.Random(draw(st.integers(0, 2**16)))
    state = GameState.initial(seed=rng.randrange(2**16))
    for _ in range(draw(st.integers(0, 12))):
        legal = state.legal_moves()
        if state.is_over or not legal:
            break
        state = state.apply(rng.choice(legal))
    return state


results = st.builds(
    GameResult,
    st.lists(
        st.tuples(
            st.builds(PlayerEntry, st.sampled_from(Team), xml_text),
            st.tuples(st.integers(-1, 2), st.integers(-1, 50)),
        ),
        min_size=1,
        max_size=2,
    ),
    st.none() | st.sampled_from(Team),
    st.booleans(),
    xml_text,
)

server_messages: st.SearchStrategy[ServerMessage] = st.one_of(
    st.builds(Joined, xml_text),
    st.builds(JoinedGameRoom, xml_text, java_int),
    st.builds(Prepared, xml_text, st.lists(xml_text, max_size=3).map(tuple)),
    st.builds(Observed, xml_text),
    st.builds(Left, xml_text),
    st.builds(WelcomeMessage, xml_text, st.sampled_from(Team)),
    st.builds(MoveRequest, xml_text),
    st.builds(Paused, xml_text, st.booleans()),
    st.builds(Memento, xml_text, game_states()),
    st.builds(ErrorPacket, xml_text, st.none() | client_packets),
    st.builds(RoomError, xml_text, xml_text, moves),
)


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    cuts = sorted({p % (len(data) + 1) for p in points})
    bounds = [0, *cuts, len(data)]
    # No empty chunks: b"" means EOF.
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _server_read(chunks: list[bytes]) -> list[ClientPacket]:
    conn = ServerConnection()
    out: list[ClientPacket] = []
    for chunk in chunks:
        conn.receive_data(chunk)
        while (event := conn.next_event()) is not NEED_DATA:
            assert not isinstance(event, type(NEED_DATA))
            out.append(event)
    return out


@FAST
@given(st.lists(client_packets, max_size=6), st.lists(st.integers(0, 10**6), max_size=8))
def test_client_packets_read_the_same_however_the_bytes_are_cut(
    packets: list[ClientPacket], points: list[int]
) -> None:
    client = ClientConnection()
    data = b"".join(client.send(p) for p in packets) + client.send(StreamEnd())
    expected = [*packets, StreamEnd()]
    assert _server_read([data]) == expected
    assert _server_read(_cuts(data, points)) == expected


def _normalise(message: ServerMessage) -> ServerMessage:
    # Blank display names are not written (PlayerConverter): they read back as "".
    if isinstance(message, ResultMessage):
        scores = [
            (PlayerEntry(e.team, e.name if e.name.strip() else ""), s)
            for e, s in message.result.scores
        ]
        r = message.result
        return ResultMessage(message.room_id, GameResult(scores, r.winner, r.regular, r.reason))
    return message


@FAST
@given(
    st.lists(server_messages | st.builds(ResultMessage, xml_text, results), max_size=5),
    st.lists(st.integers(0, 10**6), max_size=8),
)
def test_server_messages_read_the_same_however_the_bytes_are_cut(
    messages: list[ServerMessage], points: list[int]
) -> None:
    server = ServerConnection()
    data = b"".join(server.send(m) for m in messages)
    client = ClientConnection()
    out: list[ServerMessage] = []
    for chunk in _cuts(data, points):
        client.receive_data(chunk)
        while (message := client.next_event()) is not NEED_DATA:
            assert not isinstance(message, type(NEED_DATA))
            out.append(message)
    assert out == [_normalise(m) for m in messages]


def _drain_server(data: bytes, limits: ProtocolLimits) -> None:
    conn = ServerConnection(limits)
    try:
        conn.receive_data(data)
        conn.receive_data(b"")
        while conn.next_event() is not NEED_DATA:
            pass
    except RemoteProtocolError:
        pass


def _drain_client(data: bytes) -> None:
    conn = ClientConnection()
    try:
        conn.receive_data(data)
        while conn.next_event() is not NEED_DATA:
            pass
    except RemoteProtocolError:
        pass


@FAST
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_the_protocol_error(data: bytes) -> None:
    _drain_server(data, ProtocolLimits())
    _drain_server(b"<protocol>" + data, ProtocolLimits(max_packet_bytes=64, max_depth=3))
    _drain_client(b"<protocol>" + data)
    with contextlib.suppress(RemoteProtocolError):
        read_replay(data)


VALID_CLIENT = (
    b'<?xml version="1.0"?><protocol><join gameType="g"/><prepare gameType="g" pause="true">'
    b'<slot displayName="a" canTimeout="true" reserved="true"/></prepare><room roomId="R">'
    b'<data class="move"><from x="1" y="2"/><direction>UP</direction></data></room>'
    b'<room roomId="R"><data class="moveRequest"/></room><joined roomId="x"/>'
    b'<errorpacket message="m"><originalRequest class="join"/></errorpacket></protocol>'
)


@FAST
@given(
    st.lists(
        st.tuples(st.integers(0, len(VALID_CLIENT)), st.integers(0, 3), st.binary(max_size=4)),
        min_size=1,
        max_size=4,
    )
)
def test_mutated_valid_streams_only_raise_the_protocol_error(
    edits: list[tuple[int, int, bytes]],
) -> None:
    data = bytearray(VALID_CLIENT)
    for position, deleted, inserted in edits:
        data[position : position + deleted] = inserted
    _drain_server(bytes(data), ProtocolLimits())
    _drain_client(bytes(data))
