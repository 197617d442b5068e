"""The server reads a prepared game's `<joinPrepared>` in its usual layout without the XML
parser, and a player whose packets all take a shortcut (the join, then usual moves) never
gets a parser: whatever the bytes, the prolog, the limits and the chunking, a connection
with the shortcuts must read exactly what one without them reads, the same packets and the
same errors (their lines and columns too) in the same order."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Direction, Move
from protocol import ClientConnection, ProtocolLimits, ServerConnection
from protocol.events import JoinPrepared, MovePacket, StreamEnd
from tests.protocol.test_move_shortcut import _as_sent, _read_alike, _read_all

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODE = "0b7e6c2a-5f3d-4e8a-9c1b-2d4f6a8e0c13"


class _MovesOnly(ServerConnection):
    """The move shortcut alone, as before the join's."""

    _join_shortcut = False


def _opening(code: str = CODE) -> bytes:
    """What a player's client sends first: <protocol> and its join, one chunk."""
    return ClientConnection().send(JoinPrepared(code))


def _move(move: Move, room: str = "e7c1b0f2-4a7e") -> bytes:
    client = ClientConnection()
    client.send(JoinPrepared("x"))
    return client.send(MovePacket(room, move))


def _alike(chunks: list[bytes], limit: ProtocolLimits | None = None) -> list[object]:
    """Read `chunks` with every combination of shortcuts: all must agree."""
    return _read_alike(chunks, limit, ServerConnection, _MovesOnly)


def test_a_player_of_usual_packets_never_gets_a_parser() -> None:
    moves = [Move(3, 0, Direction.UP_RIGHT), Move(0, 9, Direction.DOWN), Move(9, 4, Direction.LEFT)]
    for first in ([_opening()], [b"<protocol>", _opening()[len(b"<protocol>") :]]):
        connection = ServerConnection()
        chunks = first + [_move(move) for move in moves]
        read = _read_all(connection, chunks, fused=True)
        assert read == _alike(chunks)
        assert read[0] == JoinPrepared(CODE)
        assert read[1:4] == [MovePacket("e7c1b0f2-4a7e", move) for move in moves]
        assert connection._reader._parser is None
    # A packet the shortcuts do not take makes the parser, which then reads it.
    connection = ServerConnection()
    connection.receive_data(_opening())
    assert connection.next_event() == JoinPrepared(CODE)
    connection.receive_data(b"\n  </protocol>")
    assert connection.next_event() == StreamEnd()
    assert connection._reader._parser is not None


@pytest.mark.parametrize(
    "prolog",
    [
        b"",
        b"\n \t\r\n",
        b"\xef\xbb\xbf",
        b'<?xml version="1.0"?>',
        b"<?xml version='1.0' encoding='UTF-8'?>\n",
        b'\xef\xbb\xbf<?xml version="1.0" encoding="utf-8"?>\r\n',
        # What libxml2 reads otherwise, or refuses: the parser's way, its errors.
        b' <?xml version="1.0"?>',
        b"<?xml version='1.0\"?>",
        b'<?xml version="1.1"?>',
        b'<?xml version="1.0" encoding="UTF-16"?>',
        b'<?xml version="1.0" encoding="ISO-8859-1"?>',
        b'<?xml version="1.0" standalone="yes"?>',
        b'<?xml  version="1.0"?>',
        b"<!-- a comment -->",
        b"<?pi x?>",
        b"<!DOCTYPE protocol>",
        b"\x00",
        b'<?xml version="1.0"?><?xml version="1.0"?>',
    ],
)
@pytest.mark.parametrize("root", [b"<protocol>", b'<protocol xmlns="urn:x">', b"<protocol >"])
def test_prologs_and_roots_read_alike(prolog: bytes, root: bytes) -> None:
    join = b'\n  <joinPrepared reservationCode="abc"/>'
    then = [_move(Move(1, 2, Direction.LEFT)), b"\n  <room roomId='r'><data></dat></room>"]
    _alike([prolog + root + join, *then])
    _alike([prolog + root, join, *then])
    _alike([prolog, root + join, *then])


@pytest.mark.parametrize(
    "join",
    [
        b'<joinPrepared reservationCode="abc"/>',
        b'<joinPrepared reservationCode="abc" />',
        b'<joinPrepared reservationCode="abc"\n\t/>',
        b"<joinPrepared reservationCode='abc'/>",
        b'<joinPrepared reservationCode="a&amp;c"/>',
        b'<joinPrepared reservationCode="&#65;bc"/>',
        b'<joinPrepared reservationCode="a&bogus;c"/>',
        b'<joinPrepared reservationCode="a\tc"/>',
        b'<joinPrepared reservationCode="a\rc"/>',
        b'<joinPrepared reservationCode="\xc3\xa4bc"/>',
        b'<joinPrepared reservationCode=""/>',
        b'<joinPrepared reservationCode="' + b"a" * 64 + b'"/>',
        b'<joinPrepared reservationCode="' + b"a" * 65 + b'"/>',
        b'<joinPrepared reservationCode="' + b"a" * 5000 + b'"/>',
        b'<joinPrepared reservationCode="abc" reservationCode="abd"/>',
        b'<joinPrepared reservationCode="abc"></joinPrepared>',
        b'<joinPrepared reservationCode="abc"><x/></joinPrepared>',
        b"<joinPrepared/>",
        b'<joinPrepared reservationCode="abc"',
        b'<joinPrepared reservationCode="abc"/><close/>',
        b'<x:joinPrepared xmlns:x="urn:x" reservationCode="abc"/>',
        b'<joinPrepared xmlns="urn:x" reservationCode="abc"/>',
        b'<joinPrepared reservationcode="abc"/>',
        b'<JoinPrepared reservationCode="abc"/>',
    ],
)
@pytest.mark.parametrize("before", [b"\n  ", b"", b"\r\n", b"\n\t \n"])
@pytest.mark.parametrize(
    "limit",
    [
        ProtocolLimits(),
        ProtocolLimits(max_attribute_bytes=1),
        ProtocolLimits(max_attribute_bytes=3),
        ProtocolLimits(max_packet_bytes=30),
        ProtocolLimits(max_packet_bytes=12),
        ProtocolLimits(max_depth=1),
    ],
)
def test_joins_read_alike(join: bytes, before: bytes, limit: ProtocolLimits) -> None:
    after = [b" \n", _move(Move(1, 2, Direction.LEFT)), b"\n  <room roomId='r'><data></dat></room>"]
    _alike([b"<protocol>" + before + join, *after], limit)
    _alike([b"<protocol>", before + join, *after], limit)


def test_an_error_after_many_shortcut_lines_names_the_same_line_and_column() -> None:
    """More lines than the reader keeps count of before it hands them to a parser (made for
    them if there was none), then broken XML."""
    chunks = [_opening()]
    chunks += [_move(Move(i % 10, i % 7, Direction.RIGHT)) for i in range(800)]
    chunks.append(b"\n  <room roomId='x'><data class=\"move\"></dat></room>")
    read = _alike(chunks)
    assert len(read) == 802
    assert "line 4803, column 45" in str(read[-1])


joins = st.sampled_from(
    [
        b'\n  <joinPrepared reservationCode="abc"/>',
        b'<joinPrepared reservationCode="' + CODE.encode() + b'" />',
        b"\n  <joinPrepared reservationCode='abc'/>",
        b'\r\n<joinPrepared reservationCode="a&#98;c"/>',
        b'\n  <joinPrepared reservationCode="abc"/>\n  <close/>',
    ]
)
others = st.sampled_from(
    [
        _move(Move(1, 2, Direction.LEFT)),
        _move(Move(0, 0, Direction.UP), room="r"),
        b"\n  <close/>",
        b"</protocol>",
        b"  ",
        b"\r",
        b"<room",
        b"<!-- c -->",
        b"\x01",
    ]
)
prologs = st.sampled_from(
    [
        *(b"", b'<?xml version="1.0"?>', b'\xef\xbb\xbf<?xml version="1.0" encoding="UTF-8"?>\n'),
        *(b' <?xml version="1.0"?>', b"<!-- x -->", b'<?xml version="1.0" encoding="UTF-16"?>'),
    ]
)
limits = st.sampled_from(
    [
        ProtocolLimits(),
        ProtocolLimits(max_packet_bytes=60),
        ProtocolLimits(max_packet_bytes=20),
        ProtocolLimits(max_depth=1),
        ProtocolLimits(max_depth=3),
        ProtocolLimits(max_attribute_bytes=2),
        ProtocolLimits(max_attribute_bytes=4),
    ]
)


@st.composite
def streams(draw: st.DrawFn) -> list[bytes]:
    packets = [draw(prologs) + draw(st.sampled_from([b"<protocol>", b"<protocol a='1'>"]))]
    packets += [draw(joins), *draw(st.lists(joins | others, max_size=5))]
    if draw(st.booleans()):
        packets[:2] = [packets[0] + packets[1]]  # the usual opening: one chunk
    return _as_sent(draw, packets, 5)


@PROPERTY
@given(streams(), limits)
def test_streams_with_joins_read_alike(chunks: list[bytes], limit: ProtocolLimits) -> None:
    _alike(chunks, limit)


def test_lines_taken_without_a_parser_stay_bounded() -> None:
    """The whitespace that stands in for the shortcut's bytes is handed to a parser (made
    for it) every few thousand lines, and dropped there: a long game does not grow it."""
    connection = ServerConnection()
    chunks = [_opening()] + [_move(Move(i % 10, 3, Direction.UP)) for i in range(2000)]
    assert len(_read_all(connection, chunks, fused=True)) == 2002  # (+ the EOF error)
    reader = connection._reader
    root = reader._root
    assert reader._parser is not None and root is not None
    assert len(reader._unparsed) + len(root.text or "") + reader._skipped_lines < 5000
