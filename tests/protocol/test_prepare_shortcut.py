"""The server reads an admin's `<prepare>` in its usual layout (the official admin clients'
and `Prepare.node`'s) without the XML parser: whatever the bytes, the limits and the
chunking, a connection with the shortcut must read exactly what one without it reads, the
same packets and the same errors (their lines and columns too) in the same order."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Direction, Move
from protocol import ClientConnection, ProtocolLimits, ServerConnection
from protocol.events import (
    Authenticate,
    CloseRequest,
    JoinPrepared,
    MovePacket,
    Prepare,
    SlotDescriptor,
)
from tests.protocol.test_move_shortcut import _as_sent, _read_alike, _read_all

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOTS = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))


class _NoPrepares(ServerConnection):
    """The other shortcuts alone, as before the prepare's."""

    _prepare_shortcut = False


def _rendered(*prepares: Prepare) -> list[bytes]:
    """What an admin client sends: <protocol> with its <authenticate>, then the prepares."""
    client = ClientConnection()
    return [client.send(Authenticate("pw")), *(client.send(prepare) for prepare in prepares)]


def _alike(chunks: list[bytes], limit: ProtocolLimits | None = None) -> list[object]:
    """Read `chunks` with and without the shortcut: both must agree."""
    return _read_alike(chunks, limit, ServerConnection, _NoPrepares)


def _taken(chunks: list[bytes]) -> list[object]:
    """Read `chunks` where the parser never sees a `<prepare>`."""
    connection = ServerConnection()
    fed: list[bytes] = []
    reader = connection._reader
    original = reader._feed

    def feed(chunk: bytes, *, force: bool = False) -> None:
        fed.append(chunk)
        original(chunk, force=force)

    reader._feed = feed  # type: ignore[method-assign]
    read = _read_all(connection, chunks)
    assert not any(b"prepare" in chunk for chunk in fed)
    return read


@pytest.mark.parametrize(
    "prepare",
    [
        Prepare("swc_2026_piranhas", False, SLOTS),
        Prepare("swc_2026_piranhas", True, SLOTS, seed=2026),
        Prepare("swc_2026_piranhas", False, SLOTS, seed=-(2**63)),
        Prepare("swc_2026_piranhas", True, (SlotDescriptor("Spieler 1", False, True),)),
        Prepare("g", False, (SlotDescriptor("", False, False),) * 3),
        Prepare(None, False, ()),
        Prepare("", True, (SlotDescriptor("a=b/c;d(e)!", True, False),)),
    ],
)
def test_prepares_as_admins_send_them_skip_the_parser(prepare: Prepare) -> None:
    chunks = _rendered(prepare, prepare)
    read = _taken(chunks)
    assert read == _alike(chunks)
    assert read[1:3] == [prepare, prepare]


def test_the_official_layouts_skip_the_parser() -> None:
    # docs/protocol.md: the official SDK's test, the GUI's capture (one packet a line).
    official = [
        b'<prepare gameType="testgame" pause="false">\n'
        b'  <slot displayName="p1" canTimeout="true" reserved="false"/>\n'
        b'  <slot displayName="p2" canTimeout="true" reserved="true"/>\n'
        b"</prepare>",
        b'\n  <prepare gameType="swc_2018_hase_und_igel">\n'
        b'  <slot displayName="Testhase" canTimeout="true" reserved="true"/>\n'
        b"</prepare>",
        b'\n  <prepare gameType="swc_2025_hase_und_igel" pause="true">\n'
        b'    <slot displayName="Spieler 1" canTimeout="true" reserved="true"/>\n'
        b'    <slot displayName="Spieler 2" canTimeout="true" reserved="true"/>\n'
        b"  </prepare>\n",
    ]
    chunks = [b'<protocol><authenticate password="pw"/>', *official]
    read = _taken(chunks)
    assert read == _alike(chunks)
    assert read[1:4] == [
        Prepare(
            "testgame", False, (SlotDescriptor("p1", True, False), SlotDescriptor("p2", True, True))
        ),
        Prepare("swc_2018_hase_und_igel", False, (SlotDescriptor("Testhase", True, True),)),
        Prepare(
            "swc_2025_hase_und_igel",
            True,
            (SlotDescriptor("Spieler 1", True, True), SlotDescriptor("Spieler 2", True, True)),
        ),
    ]


def test_a_fresh_connection_of_one_prepare_gets_no_parser() -> None:
    connection = ServerConnection()
    client = ClientConnection()
    connection.receive_data(client.send(Prepare("g", False, SLOTS)))
    assert connection.next_event() == Prepare("g", False, SLOTS)
    assert connection._reader._parser is None


SLOT = b'<slot displayName="a" canTimeout="true" reserved="true"/>'


@pytest.mark.parametrize(
    "prepare",
    [
        b'<prepare gameType="g" pause="false">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" pause="false"/>',
        b'<prepare gameType="g" pause="false" />',
        b'<prepare gameType="g" pause="false"></prepare>',
        b'<prepare gameType="g" pause="false">\n\t' + SLOT + b"\n\t" + SLOT + b"\n</prepare>",
        b"<prepare>" + SLOT + b"</prepare>",
        b'<prepare seed="7">' + SLOT + b"</prepare>",
        b'<prepare pause="TRUE" gameType="g">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" gameType="h">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" pause="false" other="x">' + SLOT + b"</prepare>",
        b"<prepare gameType='g'>" + SLOT + b"</prepare>",
        b'<prepare  gameType="g">' + SLOT + b"</prepare>",
        b'<prepare gameType="g">' + SLOT + b"</prepare >",
        b'<prepare gameType="g">' + SLOT + b"\r\n</prepare>",
        b'<prepare gameType="g">' + SLOT + b"text</prepare>",
        b'<prepare gameType="g">' + SLOT + b"<!-- c --></prepare>",
        b'<prepare gameType="g">' + SLOT + b"<state/></prepare>",
        b'<prepare gameType="g">' + SLOT + b"<x/></prepare>",
        b'<prepare gameType="g"><slot/></prepare>',
        b'<prepare gameType="g"><slot displayName="a"/></prepare>',
        b'<prepare gameType="g"><slot displayName="a" canTimeout="true" reserved="true">'
        b"</slot></prepare>",
        b'<prepare gameType="g"><slot displayName="a" canTimeout="true" reserved="true"><x/>'
        b"</slot></prepare>",
        b'<prepare gameType="g"><slot reserved="true" displayName="a" canTimeout="true"/>'
        b"</prepare>",
        b'<prepare gameType="g"><slot displayName="a" canTimeout="yes" reserved="True"/></prepare>',
        b'<prepare gameType="g"><slot displayName="a&amp;b" canTimeout="true" reserved="true"/>'
        b"</prepare>",
        b'<prepare gameType="g"><slot displayName="a&bogus;" canTimeout="true" reserved="true"/>'
        b"</prepare>",
        b'<prepare gameType="g"><slot displayName="a\tb" canTimeout="true" reserved="true"/>'
        b"</prepare>",
        b'<prepare gameType="g"><slot displayName="\xc3\xa4" canTimeout="true" reserved="true"/>'
        b"</prepare>",
        b'<prepare gameType="g"><slot displayName="\xc3" canTimeout="true" reserved="true"/>'
        b"</prepare>",
        b'<prepare gameType="g"><slot displayName="a<b" canTimeout="true" reserved="true"/>'
        b"</prepare>",
        b'<prepare gameType="g"><slot displayName="a\x01" canTimeout="true" reserved="true"/>'
        b"</prepare>",
        b'<prepare gameType="g\x7f">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="-12">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="+12">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="1_000">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed=" 5 ">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="--1">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="0x10">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="' + b"9" * 19 + b'">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="-' + b"9" * 19 + b'">' + SLOT + b"</prepare>",
        b'<prepare gameType="g" seed="' + b"9" * 5000 + b'">' + SLOT + b"</prepare>",
        b'<prepare gameType="' + b"g" * 5000 + b'">' + SLOT + b"</prepare>",
        b'<prepare gameType="g">' + SLOT * 400 + b"</prepare>",
        b'<prepare gameType="g">' + SLOT,
        b'<prepare gameType="g">' + SLOT + b"</prepare><close/>",
        b'<prepare gameType="g">' + SLOT + b"</prepare></protocol>",
        b'<x:prepare xmlns:x="urn:x" gameType="g">' + SLOT + b"</x:prepare>",
        b'<prepare xmlns="urn:x" gameType="g">' + SLOT + b"</prepare>",
        b'<Prepare gameType="g">' + SLOT + b"</Prepare>",
        b'<prepare gameType="g">' + SLOT + b"</perpare>",
    ],
)
@pytest.mark.parametrize("before", [b"\n  ", b""])
@pytest.mark.parametrize(
    "limit",
    [
        ProtocolLimits(),
        ProtocolLimits(max_attribute_bytes=1),
        ProtocolLimits(max_attribute_bytes=2),
        ProtocolLimits(max_attribute_bytes=4),
        ProtocolLimits(max_attribute_bytes=5),
        ProtocolLimits(max_packet_bytes=60),
        ProtocolLimits(max_packet_bytes=100),
        ProtocolLimits(max_depth=1),
        ProtocolLimits(max_depth=2),
    ],
)
def test_prepares_read_alike(prepare: bytes, before: bytes, limit: ProtocolLimits) -> None:
    after = [b" \n", b'\n  <prepare gameType="h"/>', b"\n  <room roomId='r'><data></dat></room>"]
    _alike([b'<protocol><authenticate password="pw"/>', before + prepare, *after], limit)
    _alike([b"<protocol>" + before + prepare, *after], limit)
    _alike([b"<protocol>", before + prepare, *after], limit)


def test_an_error_after_many_prepares_names_the_same_line_and_column() -> None:
    prepare = Prepare("g", False, SLOTS)
    chunks = _rendered(*[prepare] * 1500)
    chunks.append(b"\n  <room roomId='x'><data class=\"move\"></dat></room>")
    read = _alike(chunks)
    assert read[1:-1] == [prepare] * 1500
    assert "line 6003, column 45" in str(read[-1])


values = st.sampled_from(["", "a", "swc_2026_piranhas", "Spieler 1", "x" * 30, "true", "TrUe"])
values_of_any_kind = values | st.text(max_size=8)
slots = st.builds(SlotDescriptor, values_of_any_kind, st.booleans(), st.booleans())
prepares = st.builds(
    Prepare,
    st.none() | values_of_any_kind,
    st.booleans(),
    st.lists(slots, max_size=4).map(tuple),
    st.none() | st.integers(-(2**64), 2**64),
)
others = st.sampled_from(
    [
        b"\n  <close/>",
        b"</protocol>",
        b"  ",
        b"\r",
        b"<prepare",
        b"<slot/>",
        b"<!-- c -->",
        b"\x01",
        b'\n  <prepare gameType="g"><slot displayName="a" canTimeout="true" reserved="true"/>',
    ]
)
limits = st.sampled_from(
    [
        ProtocolLimits(),
        ProtocolLimits(max_packet_bytes=150),
        ProtocolLimits(max_packet_bytes=40),
        ProtocolLimits(max_depth=1),
        ProtocolLimits(max_depth=2),
        ProtocolLimits(max_attribute_bytes=3),
        ProtocolLimits(max_attribute_bytes=17),
    ]
)


@st.composite
def streams(draw: st.DrawFn) -> list[bytes]:
    client = ClientConnection()
    packets = [client.send(Authenticate("pw"))]
    for item in draw(st.lists(prepares | others, max_size=5)):
        packets.append(client.send(item) if isinstance(item, Prepare) else item)
    return _as_sent(draw, packets, 5)


@PROPERTY
@given(streams(), limits)
def test_streams_with_prepares_read_alike(chunks: list[bytes], limit: ProtocolLimits) -> None:
    _alike(chunks, limit)


def test_prepares_sent_together_are_taken_one_by_one_without_the_parser() -> None:
    """An admin's batch arrives as one chunk: each usual packet at its start is taken, the
    rest stays queued; an unusual one in the batch goes to the parser, in its place."""
    batch = [Prepare("g", False, SLOTS, seed=seed) for seed in range(5)]
    chunks = _rendered(*batch)
    together = [chunks[0], b"".join(chunks[1:])]
    read = _taken(together)
    assert read == _alike(together)
    assert read[1:6] == batch
    unusual = b"\n  <prepare gameType='g'/>"
    mixed = [chunks[0], chunks[1] + unusual + chunks[2] + b"\n  <close/>" + chunks[3]]
    read = _alike(mixed)
    assert read[1:5] == [batch[0], Prepare("g"), batch[1], CloseRequest()]
    # Together with the opening, and split anywhere: the same.
    data = b"".join(chunks)
    for cut in range(0, len(data), 7):
        _alike([data[:cut], data[cut:]])
    _alike([data], ProtocolLimits(max_packet_bytes=130))


@pytest.mark.parametrize("limit", [ProtocolLimits(), ProtocolLimits(max_packet_bytes=120)])
def test_several_packets_in_one_chunk_read_alike(limit: ProtocolLimits) -> None:
    client = ClientConnection()
    join = client.send(JoinPrepared("abc"))
    moves = [client.send(MovePacket("r", Move(i, 2, Direction.LEFT))) for i in range(4)]
    broken = b"\n  <room roomId='r'><data></dat></room>"
    _alike([join + b"".join(moves) + broken], limit)
    _alike([join, b"".join(moves) + b"\n  \x01" + moves[0]], limit)
    _alike([join, moves[0] + b"   \n\t" + moves[1] + b"<room", b' roomId="r"/>'], limit)
