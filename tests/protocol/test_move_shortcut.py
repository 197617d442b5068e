"""The server reads a move in its usual layout without the XML parser
(`PacketReader.take_whole` with `move_packet_pattern`): whatever the bytes, the limits and
the chunking, a connection with the shortcut must read exactly what one without it reads,
the same packets and the same errors in the same order."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Direction, Move
from protocol import (
    NEED_DATA,
    ClientConnection,
    ProtocolLimits,
    RemoteProtocolError,
    ServerConnection,
)
from protocol._reader import PacketReader
from protocol.events import JoinPrepared, MovePacket

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _Reference(ServerConnection):
    """The server side without the shortcuts: every packet through the parser."""

    _move_shortcut = False
    _join_shortcut = False
    _prepare_shortcut = False


def _read_all(
    connection: ServerConnection, chunks: list[bytes], *, fused: bool = False
) -> list[object]:
    """Everything the connection reads from `chunks`, the end of stream included: packets
    as themselves, errors as (message, eof). `fused`: each chunk offered to `receive_move`
    first, as the server's read loop does."""
    out: list[object] = []
    for chunk in [*chunks, b""]:
        if fused:
            move = connection.receive_move(chunk)
            if move is not None:
                out.append(move)
                continue
        connection.receive_data(chunk)
        while True:
            try:
                event = connection.next_event()
            except RemoteProtocolError as error:
                out.append((error.message, error.eof))
                return out
            if event is NEED_DATA:
                break
            out.append(event)
    return out


def _read_alike(
    chunks: list[bytes], limit: ProtocolLimits | None, *kinds: type[ServerConnection]
) -> list[object]:
    """Read `chunks` with each of `kinds` (both ways: fused or not) and without any
    shortcut: all must agree. What they read."""
    expected = _read_all(_Reference(limit), chunks)
    for kind in kinds:
        assert _read_all(kind(limit), chunks) == expected
        assert _read_all(kind(limit), chunks, fused=True) == expected
    return expected


def _as_sent(draw: st.DrawFn, packets: list[bytes], max_cuts: int) -> list[bytes]:
    """`packets` one a chunk, as bots write, or joined and cut anywhere."""
    if draw(st.booleans()):
        return packets
    data = b"".join(packets)
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=max_cuts)))
    return [data[start:end] for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _move_bytes(room: str, move: Move) -> bytes:
    client = ClientConnection()
    client.send(JoinPrepared("x"))  # the document's opening goes with the first packet
    return client.send(MovePacket(room, move))


room_ids = st.text("abcdefABCDEF0123456789-_.:", min_size=1, max_size=40) | st.sampled_from(
    ["", "a" * 300, "ümlaut", "a b", "a&amp;b", 'a"b', "a'b"]
)
moves = st.builds(
    Move,
    st.integers(-3, 12) | st.integers(-(2**40), 2**40),
    st.integers(-3, 12),
    st.sampled_from(list(Direction)),
)
spaces = st.text(" \t\r\n", max_size=3)


@st.composite
def move_variants(draw: st.DrawFn) -> bytes:
    """A move as the clients send it, in another spacing, or mutated byte-wise."""
    data = _move_bytes(draw(room_ids), draw(moves))
    if draw(st.booleans()):
        # The usual layout with other whitespace between the tags.
        parts = data.split(b">")
        data = b">".join(part + draw(spaces).encode() for part in parts[:-1]) + parts[-1]
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "swap"]))
        position = draw(st.integers(0, len(data)))
        if kind == "insert":
            data = data[:position] + draw(mutation_bytes) + data[position:]
        elif kind == "delete":
            data = data[:position] + data[position + draw(st.integers(1, 4)) :]
        elif kind == "replace":
            data = data[:position] + draw(mutation_bytes) + data[position + 1 :]
        else:
            data = data.replace(
                draw(st.sampled_from([b'"', b"UP", b"x=", b"move", b"room", b"/>"])),
                draw(st.sampled_from([b"'", b"up", b"y=", b"Move", b"rooms", b">"])),
                1,
            )
    return data


mutation_bytes = st.sampled_from(
    [
        *(b" ", b"\n", b"\r", b"\t", b"<", b">", b"/", b'"', b"'", b"&", b"&amp;", b"&#65;"),
        *(b"\x00", b"\xc3\xa4", b"<!-- c -->", b"<?pi x?>", b"<![CDATA[x]]>", b" a='1'"),
        *(b"<from x='1'/>", b"0", b"-", b"9999999999", b"0x1"),
    ]
) | st.binary(max_size=3)

others = st.sampled_from(
    [
        b'\n  <joinPrepared reservationCode="abc"/>',
        b"\n  <close/>",
        b'<room roomId="r"><data class="moveRequest"/></room>',
        b"</protocol>",
        b"  ",
        b"<room",
    ]
)

prologs = st.sampled_from(
    [
        b"",
        b'<?xml version="1.0"?>',
        b'<?xml version="1.0" encoding="UTF-8"?>\n',
        b"\xef\xbb\xbf<?xml version='1.0' encoding='utf-8'?>",
        b'<?xml version="1.0" encoding="ISO-8859-1"?>',
        b'<?xml version="1.0" encoding="UTF-16"?>',
        b"<!-- hello -->",
    ]
)
roots = st.sampled_from([b"<protocol>", b'<protocol xmlns="urn:x">', b"<protocol a='1'>"])
limits = st.sampled_from(
    [
        ProtocolLimits(),
        ProtocolLimits(max_packet_bytes=120),
        ProtocolLimits(max_packet_bytes=60),
        ProtocolLimits(max_depth=2),
        ProtocolLimits(max_depth=3),
        ProtocolLimits(max_attribute_bytes=8),
        ProtocolLimits(max_attribute_bytes=3),
        ProtocolLimits(max_attribute_bytes=1),
    ]
)


@st.composite
def streams(draw: st.DrawFn) -> list[bytes]:
    """A client's stream in chunks: mostly one packet per chunk, as bots write, sometimes
    cut or joined anywhere."""
    packets = [draw(prologs) + draw(roots), b'\n  <joinPrepared reservationCode="abc"/>']
    for _ in range(draw(st.integers(1, 6))):
        packets.append(draw(move_variants() | others))
    return _as_sent(draw, packets, 6)


@PROPERTY
@given(streams(), limits)
def test_the_shortcut_reads_what_the_parser_reads(
    chunks: list[bytes], limit: ProtocolLimits
) -> None:
    _read_alike(chunks, limit, ServerConnection)


@PROPERTY
@given(st.lists(st.tuples(room_ids, moves), min_size=1, max_size=5), limits)
def test_moves_as_clients_send_them_read_alike(
    sent: list[tuple[str, Move]], limit: ProtocolLimits
) -> None:
    chunks = [b'<protocol>\n  <joinPrepared reservationCode="abc"/>']
    chunks += [_move_bytes(room, move) for room, move in sent]
    _read_alike(chunks, limit, ServerConnection)


def _never_parsed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Record what reaches the parser."""
    fed: list[bytes] = []
    original = PacketReader._feed

    def feed(self: PacketReader, chunk: bytes, *, force: bool = False) -> None:
        fed.append(chunk)
        original(self, chunk, force=force)

    monkeypatch.setattr(PacketReader, "_feed", feed)
    return fed


def test_a_usual_move_skips_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shortcut is taken (else it would save nothing): the parser never sees the move,
    and a packet after it still reads."""
    connection = ServerConnection()
    connection.receive_data(b'<protocol>\n  <joinPrepared reservationCode="abc"/>')
    assert connection.next_event() == JoinPrepared("abc")
    fed = _never_parsed(monkeypatch)
    move = Move(3, 0, Direction.UP_RIGHT)
    for _ in range(3):
        connection.receive_data(_move_bytes("5d9a-77", move))
        assert connection.next_event() == MovePacket("5d9a-77", move)
    # The socha Python client's layout: no indentation of the packet, a newline after it.
    connection.receive_data(
        b'<room roomId="R">\n  <data class="move">\n    <from x="0" y="3"/>\n'
        b"    <direction>UP_RIGHT</direction>\n  </data>\n</room>\n"
    )
    assert connection.next_event() == MovePacket("R", Move(0, 3, Direction.UP_RIGHT))
    # receive_move takes it without queuing it; a chunk it does not take is left alone.
    assert connection.receive_move(_move_bytes("5d9a-77", move)) == MovePacket("5d9a-77", move)
    assert connection.next_event() is NEED_DATA
    # The server's read loop takes the same move as its fields (no packet made).
    assert connection.receive_move_fields(_move_bytes("5d9a-77", move)) == ("5d9a-77", move)
    assert connection.next_event() is NEED_DATA
    assert connection.receive_move(b"\n  <close/>") is None
    assert connection.receive_move_fields(b"\n  <close/>") is None
    assert connection.next_event() is NEED_DATA
    assert fed == []
    connection.receive_data(b"\n  <close/>")
    assert connection.next_event() is not NEED_DATA
    assert fed  # the rest goes through the parser


@pytest.mark.parametrize(
    ("limit", "data"),
    [
        # Each limit still holds: the shortcut gives way and the parser's error comes.
        (ProtocolLimits(max_packet_bytes=60), b""),
        (ProtocolLimits(max_depth=2), b""),
        (ProtocolLimits(max_attribute_bytes=4), b""),
        # And every unusual layout is the parser's.
        (ProtocolLimits(), b'<room roomId=\'r\'><data class="move"><from x="1" y="2"/>'),
        (ProtocolLimits(), b'<room roomId="r"><data class="move"><from x="01" y="2"/>'),
        (ProtocolLimits(), b'<room roomId="r"><data class="move"><from x="1" y="2" />'),
    ],
)
def test_what_the_shortcut_leaves_to_the_parser(limit: ProtocolLimits, data: bytes) -> None:
    if not data:
        data = _move_bytes("an-ordinary-room-id", Move(1, 2, Direction.LEFT)).lstrip()
    else:
        data += b"<direction>LEFT</direction></data></room>"
    chunks = [b'<protocol>\n  <joinPrepared reservationCode="abc"/>', data, b"\n  <close/>"]
    _read_alike(chunks, limit, ServerConnection)


@pytest.mark.parametrize("max_attribute_bytes", [1, 2, 3, 4])
def test_a_move_under_an_attribute_limit_below_its_class_is_refused_alike(
    max_attribute_bytes: int,
) -> None:
    """Regression: under max_attribute_bytes < 4 the parser refuses class="move" (four
    characters) even where the room id and the numbers fit; the shortcut took the move."""
    limit = ProtocolLimits(max_attribute_bytes=max_attribute_bytes)
    chunks = [b'<protocol>\n  <joinPrepared reservationCode="a"/>']
    chunks.append(_move_bytes("r", Move(1, 2, Direction.LEFT)))
    expected = _read_alike(chunks, limit, ServerConnection)
    if max_attribute_bytes < 4:
        assert "attribute class of <data> exceeds" in str(expected[-1])
    else:
        assert expected[1] == MovePacket("r", Move(1, 2, Direction.LEFT))


def test_a_long_stream_of_usual_moves_reads_alike() -> None:
    """Many moves back to back, one per chunk, as in a game (more lines than the shortcut
    keeps count of before it hands them to the parser), then broken XML: its error names
    the same line and column."""
    rng = random.Random(21)
    chunks = [b'<protocol>\n  <joinPrepared reservationCode="abc"/>']
    for _ in range(800):
        move = Move(rng.randrange(10), rng.randrange(10), rng.choice(list(Direction)))
        chunks.append(_move_bytes("e7c1b0f2-4a7e-4bb8-9a55-0c0a3f6b8d21", move))
    chunks.append(b"\n  <room roomId='x'><data class=\"move\"></dat></room>")
    read = _read_all(ServerConnection(), chunks)
    assert read == _read_all(_Reference(), chunks)
    assert _read_all(ServerConnection(), chunks, fused=True) == read
    assert len(read) == 802
    assert isinstance(read[-1], tuple)
    message, eof = read[-1]
    assert "line 4803, column 45" in str(message) and not eof


def test_moves_read_again_and_after_the_read_cache_filled_read_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shortcut keeps the moves and room ids it read by their bytes: the same moves read
    again (from the cache), among many rooms and moves that fill and clear a small cache,
    off-board and long numbers among them, are the parser's packets."""
    from protocol import _decode

    monkeypatch.setattr(_decode, "_READ_CACHE_SIZE", 16)
    monkeypatch.setattr(_decode, "_MOVES", {})
    monkeypatch.setattr(_decode, "_ROOM_IDS", {})
    rng = random.Random(2026)
    chunks = [b'<protocol>\n  <joinPrepared reservationCode="abc"/>']
    for index in range(600):
        x = rng.choice([rng.randrange(10), rng.randrange(-3, 13), 123456789, 0])
        move = Move(x, rng.randrange(4), rng.choice(list(Direction)))
        chunks.append(_move_bytes(f"room-{index % 23}", move))
    read = _read_all(ServerConnection(), chunks)
    assert read == _read_all(_Reference(), chunks)
    assert _read_all(ServerConnection(), chunks, fused=True) == read
    assert len(read) == 602 and 0 < len(_decode._MOVES) <= 16 and _decode._ROOM_IDS  # (+ EOF)


def test_receive_move_leaves_queued_bytes_and_the_end_of_stream_alone() -> None:
    """A move behind queued bytes comes after them; nothing is taken at or after the end."""
    connection = ServerConnection()
    connection.receive_data(b'<protocol>\n  <joinPrepared reservationCode="abc"/>')
    move = _move_bytes("r", Move(1, 2, Direction.LEFT))
    assert connection.receive_move(move) is None  # the join is still queued
    connection.receive_data(move)
    assert connection.next_event() == JoinPrepared("abc")
    assert connection.next_event() == MovePacket("r", Move(1, 2, Direction.LEFT))
    assert connection.receive_move(b"") is None
    connection.receive_data(b"")
    assert connection.receive_move(move) is None
    with pytest.raises(RemoteProtocolError):
        connection.next_event()
