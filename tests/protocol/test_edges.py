"""Edges of the client stream: stalled broken XML, exact packet limit, namespaces, a
`<room>` without roomId, bounded error echoes."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Direction, Move
from protocol import (
    NEED_DATA,
    ClientConnection,
    ProtocolLimits,
    RemoteProtocolError,
    ServerConnection,
)
from protocol._xml import render
from protocol.events import (
    Authenticate,
    ClientPacket,
    Join,
    MovePacket,
    Prepare,
    RoomDataPacket,
    SlotDescriptor,
)
from protocol.messages import MAX_ECHO_CHARS, ErrorPacket


def events_of(data: bytes, conn: ServerConnection | None = None) -> list[ClientPacket]:
    conn = conn or ServerConnection()
    conn.receive_data(data)
    out: list[ClientPacket] = []
    while (event := conn.next_event()) is not NEED_DATA:
        assert not isinstance(event, type(NEED_DATA))
        out.append(event)
    return out


# --- <room> without roomId (protocol §3.9) ---------------------------------------------------

MOVE_WITHOUT_ROOM = (
    b'<room><data class="move"><from x="0" y="1"/><direction>UP</direction></data></room>'
)


def test_room_without_room_id_is_an_event_and_the_stream_goes_on() -> None:
    events = events_of(
        b"<protocol>" + MOVE_WITHOUT_ROOM + b"<room><data class='moveRequest'/></room><join/>"
    )
    assert events[0] == MovePacket(None, Move(0, 1, Direction.UP))
    assert isinstance(events[1], RoomDataPacket) and events[1].room_id is None
    assert events[1].java_repr().startswith("RoomPacket(roomId=null, data=")
    assert events[2] == Join()


def test_room_without_room_id_is_echoed_without_the_attribute() -> None:
    error = ErrorPacket(
        "sc.api.plugins.exceptions.GameRoomException: Couldn't find a room with id null",
        MovePacket(None, Move(0, 1, Direction.UP)),
    )
    assert error.to_xml(1) == (
        '  <errorpacket message="sc.api.plugins.exceptions.GameRoomException: '
        'Couldn&apos;t find a room with id null">\n'
        '    <originalRequest class="room">\n'
        '      <data class="move">\n'
        '        <from x="0" y="1"/>\n'
        "        <direction>UP</direction>\n"
        "      </data>\n"
        "    </originalRequest>\n"
        "  </errorpacket>"
    )


# --- namespaces (XStream compares local names) -----------------------------------------------


def test_default_namespace_on_the_root_is_ignored() -> None:
    data = (
        b'<protocol xmlns="http://example.org/sc"><join gameType="g"/>'
        + MOVE_WITHOUT_ROOM.replace(b"<room>", b'<room roomId="R">')
        + b'<x:join xmlns:x="urn:x"/>'
    )
    events = events_of(data)
    assert events == [Join("g"), MovePacket("R", Move(0, 1, Direction.UP)), Join()]
    # Echoes carry the local names only: byte-identical to the un-namespaced packet.
    assert events[1].to_xml() == MovePacket("R", Move(0, 1, Direction.UP)).to_xml()


def test_namespaced_unknown_packet_is_named_by_its_local_name() -> None:
    conn = ServerConnection()
    conn.receive_data(b'<protocol xmlns="urn:sc"><yarr/>')
    with pytest.raises(RemoteProtocolError, match="unknown packet <yarr>"):
        conn.next_event()


# --- bounded echo ----------------------------------------------------------------------------


def _unauthenticated(packet: ClientPacket) -> ErrorPacket:
    # The lobby's answer to an admin request from a client that did not authenticate.
    message = f"sc.server.network.UnauthenticatedException: Request {packet.java_repr()} "
    return ErrorPacket(message + "requires authentication", packet)


def test_refusing_an_absurd_prepare_costs_less_than_it_came_with() -> None:
    data = b'<protocol><prepare gameType="g">' + b"<slot/>" * 9000 + b"</prepare>"
    [prepare] = events_of(data)
    assert isinstance(prepare, Prepare) and len(prepare.slots) == 9000
    error = _unauthenticated(prepare)
    # What the answer was before (all slots in the message and in the echo).
    every_slot = ", ".join(slot.java_repr() for slot in prepare.slots)
    unbounded = len(every_slot) + len(render(("originalRequest", (), prepare.node()[2])))
    answer = ServerConnection().send(error)
    before, after = unbounded / len(data), len(answer) / len(data)
    assert before > 15  # what it was: 1.16 MB out for 63 KB in
    assert after <= 2 * MAX_ECHO_CHARS / len(data) + 0.01 and after <= 2
    # Still one valid, decodable errorpacket, echoing the first slots.
    client = ClientConnection()
    client.receive_data(answer)
    echoed = client.next_event()
    assert isinstance(echoed, ErrorPacket) and isinstance(echoed.original_request, Prepare)
    assert 0 < len(echoed.original_request.slots) < 9000
    assert echoed.message.startswith("sc.server.network.UnauthenticatedException: Request ")
    assert "… 8984 more]" in echoed.message


@pytest.mark.parametrize("char", ["A", "\u0378", "&", "\t"])
def test_a_long_attribute_is_echoed_cut(char: str) -> None:
    # U+0378 (unassigned) is written as a 7-character reference: the worst escape ratio.
    value = char * 16000
    packet = Authenticate(value)
    error = ErrorPacket("sc.server.network.AuthenticationFailedException: …", packet)
    assert len(ServerConnection().send(error)) <= MAX_ECHO_CHARS + 200
    client = ClientConnection()
    client.receive_data(ServerConnection().send(error))
    echoed = client.next_event()
    assert isinstance(echoed, ErrorPacket) and isinstance(echoed.original_request, Authenticate)
    password = echoed.original_request.password
    assert (
        password is not None
        and password.endswith("…")
        and password[:-1] == value[: len(password) - 1]
    )


def test_official_sized_errors_are_not_cut() -> None:
    slots = (SlotDescriptor("Häschenschule", True, True), SlotDescriptor("Testhase", True, True))
    prepare = Prepare("swc_2026_piranhas", False, slots)
    error = _unauthenticated(prepare)
    full = (
        "errorpacket",
        (("message", error.message),),
        (("originalRequest", (("class", "prepare"), *prepare.node()[1]), prepare.node()[2]),),
    )
    assert error.to_xml(1) == "  " + render(full, 1)


# --- broken XML that libxml2 would wait on forever ------------------------------------------


def _outcome(
    chunks: list[bytes], limits: ProtocolLimits | None = None
) -> tuple[list[ClientPacket], str]:
    """Events and the error (or "NEED_DATA") after feeding `chunks` one by one."""
    conn = ServerConnection(limits)
    events: list[ClientPacket] = []
    try:
        for chunk in chunks:
            conn.receive_data(chunk)
            while (event := conn.next_event()) is not NEED_DATA:
                assert not isinstance(event, type(NEED_DATA))
                events.append(event)
    except RemoteProtocolError as error:
        return events, error.message
    return events, "NEED_DATA"


STALLING = [
    b'<join gameType="a"\'b"/>',
    b"<join 'x'/>",
    b"<join a==\"x'/>",
    b"<join a='1' b\"c/>",
    b'<jo"in/>',
    b'<room roomId="r"><data class="move" x="1"\'/></room>',
]


@pytest.mark.parametrize("packet", STALLING)
def test_broken_start_tags_are_reported_at_once(packet: bytes) -> None:
    data = b"<protocol><join/>" + packet
    events, error = _outcome([data])
    assert events == [Join()]
    assert "broken XML" in error


@pytest.mark.parametrize("packet", STALLING)
def test_broken_start_tags_are_reported_whatever_the_split(packet: bytes) -> None:
    data = b"<protocol><join/>" + packet
    for split in range(1, len(data)):
        events, error = _outcome([data[:split], data[split:]])
        assert events == [Join()] and "broken XML" in error, split
    events, error = _outcome([bytes([byte]) for byte in data])
    assert events == [Join()] and "broken XML" in error


@pytest.mark.parametrize(
    ("packet", "event"),
    [
        (b'<join gameType="a\'>b"/>', Join("a'>b")),
        (b"<join gameType = 'x\"y' />", Join('x"y')),
        (b'<join\n gameType="x"\n/>', Join("x")),
        (b"<!-- \"'<x -->\n<?pi '\"?><join/>", Join()),
        (b"<join><![CDATA[\"']]></join>", Join()),
        (b'<join></join  ><join gameType="&quot;&apos;&gt;"/>', Join()),
    ],
)
def test_unusual_but_well_formed_packets_pass_whatever_the_split(
    packet: bytes, event: ClientPacket
) -> None:
    data = b"<protocol>" + packet
    for split in range(1, len(data)):
        events, outcome = _outcome([data[:split], data[split:]])
        assert outcome == "NEED_DATA" and events[0] == event, split
    events, outcome = _outcome([bytes([byte]) for byte in data])
    assert outcome == "NEED_DATA" and events[0] == event


# --- maxPacketBytes to the byte ---------------------------------------------------------------

LIMIT = 300


def _packet_of(size: int, lead: int) -> bytes:
    """A <join> of exactly `size` bytes, `lead` of them whitespace before it."""
    body = size - lead - len(b'<join gameType=""/>')
    assert body >= 0
    return b" " * lead + b'<join gameType="' + b"g" * body + b'"/>'


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(LIMIT - 3, LIMIT + 2), min_size=1, max_size=4),
    small=st.integers(20, 60),
    lead=st.integers(0, 5),
    cuts=st.lists(st.integers(0, 10**6), max_size=12),
)
def test_packet_limit_is_exact_whatever_the_chunking(
    sizes: list[int], small: int, lead: int, cuts: list[int]
) -> None:
    # Packets of the limit pass, one byte more fails, wherever the chunks are cut (also
    # when the previous packet completes inside the same chunk).
    packets = [_packet_of(small, 0)] + [_packet_of(size, lead) for size in sizes]
    assert [len(p) for p in packets[1:]] == sizes
    data = b"<protocol>" + b"".join(packets)
    events, outcome = _outcome(_chunks(data, cuts), ProtocolLimits(max_packet_bytes=LIMIT))
    fitting = next((n for n, size in enumerate(sizes) if size > LIMIT), len(sizes))
    assert len(events) == 1 + fitting
    if fitting == len(sizes):
        assert outcome == "NEED_DATA"
    else:
        assert f"exceeds {LIMIT} bytes" in outcome


def test_an_unfinished_packet_fails_as_soon_as_it_passes_the_limit() -> None:
    conn = ServerConnection(ProtocolLimits(max_packet_bytes=LIMIT))
    conn.receive_data(b"<protocol><join/>" + b'<join gameType="' + b"g" * (LIMIT - 16))
    assert conn.next_event() == Join()
    assert conn.next_event() is NEED_DATA  # exactly LIMIT bytes so far
    conn.receive_data(b"g")
    with pytest.raises(RemoteProtocolError, match=f"exceeds {LIMIT} bytes"):
        conn.next_event()


def test_prepare_repr_abbreviates_absurd_slot_counts() -> None:
    two = Prepare("g", False, (SlotDescriptor("a", True, True), SlotDescriptor("b")))
    assert two.java_repr() == (
        "PrepareGameRequest(gameType=g, slotDescriptors=[SlotDescriptor(displayName=a, "
        "canTimeout=true, reserved=true), SlotDescriptor(displayName=b, canTimeout=false, "
        "reserved=false)], pause=false)"
    )
    many = Prepare("g", False, (SlotDescriptor(),) * 9000)
    assert len(many.java_repr()) < 2000
    assert many.java_repr().endswith(", … 8984 more], pause=false)")


def test_a_long_message_is_cut() -> None:
    # e.g. "unknown packet <…>" naming a 60 KB tag.
    message = "unknown packet <" + "\u0378" * 60000 + ">"
    data = ServerConnection().send(ErrorPacket(message, None))
    assert len(data) <= MAX_ECHO_CHARS + 100
    client = ClientConnection()
    client.receive_data(data)
    echoed = client.next_event()
    assert isinstance(echoed, ErrorPacket)
    assert echoed.message.startswith("unknown packet <\u0378") and echoed.message.endswith("…")
