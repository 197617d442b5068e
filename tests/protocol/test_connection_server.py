"""ServerConnection: the client's stream in, typed events out (§1.2, §1.4, §2, §3.9)."""

from __future__ import annotations

import gc
import weakref

import pytest

from engine import Direction, Move
from protocol import NEED_DATA, LocalProtocolError, ProtocolLimits, RemoteProtocolError
from protocol import ServerConnection as Conn
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
    ResponsePacket,
    RoomDataPacket,
    SlotDescriptor,
    StepRequest,
    StreamEnd,
)

SOCHA_MOVE = (
    b'<room roomId="R">\n  <data class="move">\n    <from x="0" y="3"/>\n'
    b"    <direction>UP_RIGHT</direction>\n  </data>\n</room>\n"
)


def events_of(data: bytes, conn: Conn | None = None) -> list[ClientPacket]:
    """All events `data` yields before more data is needed."""
    conn = conn or Conn()
    conn.receive_data(data)
    out: list[ClientPacket] = []
    while (event := conn.next_event()) is not NEED_DATA:
        assert not isinstance(event, type(NEED_DATA))
        out.append(event)
    return out


def error_of(data: bytes, limits: ProtocolLimits | None = None) -> RemoteProtocolError:
    conn = Conn(limits or ProtocolLimits())
    conn.receive_data(data)
    with pytest.raises(RemoteProtocolError) as info:
        while conn.next_event() is not NEED_DATA:
            pass
    return info.value


# --- every client packet of §2 -------------------------------------------------------------


@pytest.mark.parametrize(
    ("xml", "event"),
    [
        (b"<join/>", Join(None)),
        (b'<join gameType="swc_2026_piranhas"/>', Join("swc_2026_piranhas")),
        ('<join gameType="Häschen"/>'.encode(), Join("Häschen")),
        (b'<joinPrepared reservationCode="ab22"/>', JoinPrepared("ab22")),
        (b"<joinPrepared/>", JoinPrepared(None)),
        (b'<joinRoom roomId="X"/>', JoinRoom("X")),
        (b'<authenticate password="examplepassword"/>', Authenticate("examplepassword")),
        (b'<authenticate passphrase="old"/>', Authenticate(None)),  # unknown attribute ignored
        (b'<observe roomId="r"/>', Observe("r")),
        (b'<pause roomId="r" pause="true"/>', PauseRequest("r", True)),
        (b'<pause roomId="r"/>', PauseRequest("r", False)),
        (b'<step roomId="r" forced="true"/>', StepRequest("r", True)),
        (b'<step roomId="r"/>', StepRequest("r", False)),
        (b"<step/>", StepRequest(None, False)),
        (b'<cancel roomId="r"/>', CancelRequest("r")),
        (b"<cancel/>", CancelRequest(None)),
        (b"<close/>", CloseRequest()),
        (SOCHA_MOVE, MovePacket("R", Move(0, 3, Direction.UP_RIGHT))),
        (
            b'<room roomId="R"><data class="sc.plugin2026.Move"><direction>LEFT</direction>'
            b'<from x="9" y="3"/></data></room>',
            MovePacket("R", Move(9, 3, Direction.LEFT)),
        ),
        # Off-board coordinates are the engine's business (START_OUT_OF_BOUNDS), not ours.
        (
            b'<room roomId="R"><data class="move"><from x="-1" y="99"/>'
            b"<direction>DOWN</direction></data></room>",
            MovePacket("R", Move(-1, 99, Direction.DOWN)),
        ),
    ],
)
def test_each_packet_becomes_its_event(xml: bytes, event: ClientPacket) -> None:
    assert events_of(b"<protocol>" + xml) == [event]
    # Its canonical form reads back as the same event.
    assert events_of(b"<protocol>" + event.to_xml().encode()) == [event]


def test_prepare_with_umlauts_declaration_and_missing_booleans_as_officially() -> None:
    data = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<protocol><prepare gameType="swc_2018_hase_und_igel">\n'
        '  <slot displayName="Häschenschule" canTimeout="true" reserved="true"/>\n'
        '  <slot displayName="Testhase"/>\n'
        "  <slot/>\n"
        "</prepare>"
    ).encode()
    assert events_of(data) == [
        Prepare(
            "swc_2018_hase_und_igel",
            False,
            (
                SlotDescriptor("Häschenschule", True, True),
                SlotDescriptor("Testhase", False, False),
                SlotDescriptor("", False, False),
            ),
        )
    ]


def test_prepare_without_slots_and_booleans_read_like_xstream() -> None:
    [event] = events_of(b'<protocol><prepare gameType="g" pause="TRUE"/>')
    assert event == Prepare("g", True, ())
    [event] = events_of(b'<protocol><pause roomId="r" pause="yes"/>')
    assert event == PauseRequest("r", False)


@pytest.mark.parametrize(
    ("text", "value"),
    [("10", 10), ("-3", -3), ("+7", 7), ("0x1F", 31), ("#10", 16), ("010", 8), ("0", 0)],
)
def test_coordinates_read_like_xstream_long_decode(text: str, value: int) -> None:
    data = (
        f'<protocol><room roomId="R"><data class="move"><from x="{text}" y="1"/>'
        "<direction>UP</direction></data></room>"
    ).encode()
    assert events_of(data) == [MovePacket("R", Move(value, 1, Direction.UP))]


def test_int_overflow_wraps_like_a_java_int_cast() -> None:
    data = (
        b'<protocol><room roomId="R"><data class="move"><from x="0xFFFFFFFF" y="2147483648"/>'
        b"<direction>UP</direction></data></room>"
    )
    assert events_of(data) == [MovePacket("R", Move(-1, -(2**31), Direction.UP))]


def test_missing_coordinate_is_the_jvm_default_zero() -> None:
    data = b'<protocol><room roomId="R"><data class="move"><from y="4"/><direction>UP</direction>'
    assert events_of(data + b"</data></room>") == [MovePacket("R", Move(0, 4, Direction.UP))]


def test_response_packets_carry_the_official_java_class() -> None:
    data = (
        b'<protocol><joined roomId="a"/><left roomId="a"/><observed roomId="a"/>'
        b'<joinedGameRoom roomId="a" playerCount="1"/><prepared roomId="a">'
        b'<reservation>x</reservation></prepared><errorpacket message="m">'
        b'<originalRequest class="join"/></errorpacket>'
    )
    assert [(e.name, e.java_class) for e in events_of(data) if isinstance(e, ResponsePacket)] == [
        ("joined", "sc.protocol.responses.JoinedRoomResponse"),
        ("left", "sc.protocol.RemovedFromGame"),
        ("observed", "sc.protocol.responses.ObservationResponse"),
        ("joinedGameRoom", "sc.protocol.responses.RoomWasJoinedEvent"),
        ("prepared", "sc.protocol.responses.GamePreparedResponse"),
        ("errorpacket", "sc.protocol.responses.ErrorPacket"),
    ]
    [joined] = events_of(b'<protocol><joined roomId="q"/>')
    assert joined.to_xml() == '<joined roomId="q"/>'


def test_room_with_other_known_data_is_a_room_data_packet() -> None:
    [event] = events_of(b'<protocol><room roomId="R"><data class="moveRequest"/></room>')
    assert isinstance(event, RoomDataPacket)
    assert (event.room_id, event.data_class) == ("R", "moveRequest")
    assert event.java_repr().startswith("RoomPacket(roomId=R, data=sc.protocol.room.MoveRequest@")
    assert event.to_xml() == '<room roomId="R">\n  <data class="moveRequest"/>\n</room>'
    [welcome] = events_of(
        b'<protocol><room roomId="R"><data class="welcomeMessage" color="ONE"/></room>'
    )
    assert isinstance(welcome, RoomDataPacket)
    assert welcome.text == "WelcomeMessage(color=ONE)"
    [empty] = events_of(b'<protocol><room roomId="R"/>')
    assert isinstance(empty, RoomDataPacket)
    assert empty.java_repr() == "RoomPacket(roomId=R, data=null)"
    assert empty.to_xml() == '<room roomId="R"/>'


# --- the stream ---------------------------------------------------------------------------------

STREAM = (
    (
        "\ufeff<?xml version='1.0' encoding='UTF-8'?>\n<!-- hi -->\n<protocol>\n  <join/>\n"
        '  <authenticate password="pw"/>\n<?pi ignored?>'
        '<prepare gameType="g" pause="true"><!-- c --><slot displayName="ä" reserved="true"/>'
        "</prepare>\n"
    ).encode()
    + SOCHA_MOVE * 2
    + b"<close/>\n</protocol>"
)
STREAM_EVENTS: list[ClientPacket] = [
    Join(None),
    Authenticate("pw"),
    Prepare("g", True, (SlotDescriptor("ä", False, True),)),
    MovePacket("R", Move(0, 3, Direction.UP_RIGHT)),
    MovePacket("R", Move(0, 3, Direction.UP_RIGHT)),
    CloseRequest(),
    StreamEnd(),
]


def test_whole_stream_in_one_chunk() -> None:
    assert events_of(STREAM) == STREAM_EVENTS


def test_stream_split_at_every_byte() -> None:
    conn = Conn()
    out: list[ClientPacket] = []
    for index in range(len(STREAM)):
        out += events_of(STREAM[index : index + 1], conn)
    assert out == STREAM_EVENTS


@pytest.mark.parametrize("cut", range(1, 40))
def test_stream_split_in_two_anywhere_near_the_start(cut: int) -> None:
    conn = Conn()
    assert events_of(STREAM[:cut], conn) + events_of(STREAM[cut:], conn) == STREAM_EVENTS


def test_packets_are_delivered_as_soon_as_complete() -> None:
    conn = Conn()
    assert events_of(b"<protocol><join", conn) == []
    assert events_of(b"/>", conn) == [Join(None)]
    assert events_of(SOCHA_MOVE[:-9], conn) == []
    assert events_of(SOCHA_MOVE[-9:], conn) == [MovePacket("R", Move(0, 3, Direction.UP_RIGHT))]


def test_many_packets_in_one_chunk() -> None:
    assert (
        events_of(b"<protocol>" + SOCHA_MOVE * 500)
        == [MovePacket("R", Move(0, 3, Direction.UP_RIGHT))] * 500
    )


def test_any_root_name_is_accepted_and_root_attributes_ignored() -> None:
    assert events_of(b'<whatever version="9">\n<join />') == [Join(None)]


def test_a_packet_sent_as_root_ends_the_document_at_once() -> None:
    # Officially this is an EOF on the first read (LOST_CONNECTION).
    assert events_of(b"<join/>") == [StreamEnd()]


def test_data_after_the_end_of_the_document_is_ignored() -> None:
    conn = Conn()
    assert events_of(b"<protocol></protocol><<garbage", conn) == [StreamEnd()]
    assert events_of(b"more garbage", conn) == []


def test_eof_without_end_of_document_is_lost_connection() -> None:
    conn = Conn()
    assert events_of(b"<protocol><join/><joi", conn) == [Join(None)]
    conn.receive_data(b"")
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    assert info.value.eof
    with pytest.raises(RemoteProtocolError):
        conn.next_event()  # stays dead


def test_eof_after_end_of_document_is_also_eof() -> None:
    conn = Conn()
    assert events_of(b"<protocol></protocol>", conn) == [StreamEnd()]
    conn.receive_data(b"")
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    assert info.value.eof


def test_eof_before_anything() -> None:
    conn = Conn()
    conn.receive_data(b"")
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    assert info.value.eof


def test_receiving_after_eof_is_our_error() -> None:
    conn = Conn()
    conn.receive_data(b"")
    with pytest.raises(LocalProtocolError):
        conn.receive_data(b"<protocol>")


# --- bad input: the peer's fault, named --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"<protocol><>/I-do/>NOT<CARE" + b" " * 100 + b"<x/>", ["broken XML"]),
        (b"hello<protocol>", ["broken XML", "hello"]),
        (b"<protocol><yarr/>", ["unknown packet", "yarr"]),
        (b"<protocol><state/>", ["not a packet", "state"]),
        (b"<protocol><move/>", ["not a packet", "move"]),
        (b'<protocol><room roomId="R"><data class="foo"/></room>', ["unknown data class", "foo"]),
        (b'<protocol><room roomId="R"><data/></room>', ["class"]),
        (b'<protocol><room roomId="R"><x/></room>', ["unexpected element", "<x>"]),
        (
            b'<protocol><room roomId="R"><data class="move"><from x="0" y="1"/>'
            b"<direction>NORTH</direction></data></room>",
            ["unknown direction", "NORTH"],
        ),
        (
            b'<protocol><room roomId="R"><data class="move"><from x="1.5" y="1"/>'
            b"<direction>UP</direction></data></room>",
            ["<from x>", "1.5", "not an integer"],
        ),
        (
            b'<protocol><room roomId="R"><data class="move"><from x="1" y="99999999999"/>'
            b"<direction>UP</direction></data></room>",
            ["<from y>", "out of the int range"],
        ),
        (
            b'<protocol><room roomId="R"><data class="move"><direction>UP</direction>'
            b"</data></room>",
            ["lacks <from>"],
        ),
        (
            b'<protocol><room roomId="R"><data class="move"><from x="1" y="1"/></data></room>',
            ["lacks <direction>"],
        ),
        (
            b'<protocol><room roomId="R"><data class="move"><from x="1" y="1"/><from/>'
            b"<direction>UP</direction></data></room>",
            ["unexpected element <from>"],
        ),
        (b"<protocol><join><x/></join>", ["<join>", "unexpected element <x>"]),
        (b"<protocol><prepare><slotDescriptor/></prepare>", ["<slotDescriptor>"]),
        (b"<protocol><joined><x/></joined>", ["<joined>", "<x>"]),
        (b'<protocol><joinedGameRoom playerCount="two"/>', ["playerCount", "two"]),
        (
            b'<protocol><errorpacket><originalRequest class="nope"/></errorpacket>',
            ["unknown packet <nope>"],
        ),
        (b"<protocol><errorpacket><originalRequest/></errorpacket>", ["class"]),
        (b"<protocol><join>&foo;</join>", ["broken XML", "foo"]),
        (b"<protocol><a x='&#0;'/>", ["broken XML"]),
        (b"<protocol></protocal>", ["broken XML"]),
    ],
)
def test_bad_input_is_a_named_remote_error(data: bytes, words: list[str]) -> None:
    error = error_of(data + b" " * 64)
    assert not error.eof
    for word in words:
        assert word in error.message


def test_after_an_error_the_stream_is_dead() -> None:
    conn = Conn()
    conn.receive_data(b"<protocol><join/><yarr/><join/>")
    assert conn.next_event() == Join(None)
    with pytest.raises(RemoteProtocolError) as first:
        conn.next_event()
    with pytest.raises(RemoteProtocolError) as second:
        conn.next_event()
    assert (second.value.message, second.value.eof) == (first.value.message, first.value.eof)
    conn.receive_data(b"<join/>")
    with pytest.raises(RemoteProtocolError):
        conn.next_event()


@pytest.mark.parametrize(
    ("data", "eof"),
    [(b"<protocol><join/><yarr/>", False), (b"<protocol><join/><join", True)],
    ids=["broken", "ended early"],
)
def test_a_dead_stream_is_freed_without_the_garbage_collector(data: bytes, eof: bool) -> None:
    """The error kept to raise again holds no frames: a connection whose stream broke or
    ended early (every bot that closes without </protocol>) goes with its last reference,
    not with the collector's next pass (a cycle through the reader's frames otherwise)."""
    gc.disable()
    try:
        conn = Conn()
        conn.receive_data(data)
        if eof:
            conn.receive_data(b"")
        assert conn.next_event() == Join(None)
        for _ in range(2):
            with pytest.raises(RemoteProtocolError) as error:
                conn.next_event()
            assert error.value.eof is eof
            assert error.value.__traceback__ is not None
        del error
        alive = weakref.ref(conn)
        del conn
        assert alive() is None
    finally:
        gc.enable()


def test_packets_before_broken_xml_in_the_same_chunk_are_still_delivered() -> None:
    conn = Conn()
    conn.receive_data(b"<protocol><join/><close/></protocol>trailing<<<")
    assert conn.next_event() == Join(None)
    assert conn.next_event() == CloseRequest()
    assert conn.next_event() == StreamEnd()
    conn2 = Conn()
    conn2.receive_data(b"<protocol><join/><a></b>")
    assert conn2.next_event() == Join(None)
    with pytest.raises(RemoteProtocolError):
        conn2.next_event()


@pytest.mark.parametrize(
    "garbage", [b"\x00\x01\x02", b"*\xf1M\xb6\xb6m\x19\x98", b"\x1b[2J", b"ab\x0ccd", b"<jo\x07"]
)
def test_control_bytes_are_refused_at_once_not_when_the_next_tag_comes(garbage: bytes) -> None:
    # libxml2 holds short character data back until the next "<": found by the chaos test,
    # a client that sent a few bytes of binary garbage and waited got no error at all.
    conn = Conn()
    conn.receive_data(b"<protocol><join/>" + garbage)
    assert conn.next_event() == Join(None)
    with pytest.raises(RemoteProtocolError) as error:
        conn.next_event()
    assert "is not allowed in XML" in error.value.message and not error.value.eof


def test_control_bytes_after_the_end_of_the_document_are_ignored() -> None:
    assert events_of(b"<protocol><join/></protocol>\x00\x01") == [Join(None), StreamEnd()]


# --- limits and hostile input ------------------------------------------------------------------


@pytest.mark.parametrize(
    "prolog",
    [
        b'<!DOCTYPE protocol [<!ENTITY x "yyyy">]><protocol>&x;',
        b'<?xml version="1.0"?><!DOCTYPE p SYSTEM "file:///etc/passwd"><p/>',
        b"<!ENTITY x 'y'><protocol>",
        b"\xef\xbb\xbf<!-- c --><!DOCTYPE x>",
    ],
)
def test_doctype_and_entity_declarations_are_refused(prolog: bytes) -> None:
    error = error_of(prolog)
    assert "DOCTYPE" in error.message


def test_billion_laughs_cannot_even_start() -> None:
    lol = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        + b"".join(
            b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
            for i in range(1, 10)
        )
        + b"]><protocol>&lol9;</protocol>"
    )
    assert "DOCTYPE" in error_of(lol).message


def _feed_until_error(conn: Conn, chunk: bytes, total: int) -> tuple[int, str]:
    """Feed `chunk` repeatedly (up to `total` bytes); the bytes fed when the error
    surfaced, and its message."""
    fed = 0
    while fed < total:
        conn.receive_data(chunk)
        fed += len(chunk)
        try:
            while conn.next_event() is not NEED_DATA:
                pass
        except RemoteProtocolError as error:
            return fed, error.message
    raise AssertionError(f"no error after {fed} bytes")


def test_endless_attribute_value_hits_the_size_limit_early() -> None:
    conn = Conn()
    conn.receive_data(b'<protocol><join gameType="')
    fed, message = _feed_until_error(conn, b"a" * 4096, 10 * 1024 * 1024)
    assert fed <= 65536 + 2 * 16384
    assert "exceeds 65536 bytes" in message


def test_endless_nesting_hits_the_depth_limit_early() -> None:
    conn = Conn()
    conn.receive_data(b"<protocol><prepare>")
    fed, message = _feed_until_error(conn, b"<slot>" * 1000, 10 * 1024 * 1024)
    assert fed <= 6000 * 2
    assert "nested deeper than 16" in message


def test_depth_limit_names_the_element() -> None:
    error = error_of(b'<protocol><room roomId="R">' + b"<a>" * 20, ProtocolLimits(max_depth=5))
    assert "<a>" in error.message and "5" in error.message


def test_endless_text_between_packets_hits_the_size_limit() -> None:
    conn = Conn(ProtocolLimits(max_packet_bytes=1000))
    conn.receive_data(b"<protocol><join/>")
    assert conn.next_event() == Join(None)
    fed, message = _feed_until_error(conn, b" " * 100, 10 * 1024 * 1024)
    assert fed <= 2000
    assert "exceeds 1000 bytes" in message


def test_endless_prolog_hits_the_size_limit() -> None:
    conn = Conn(ProtocolLimits(max_packet_bytes=1000))
    fed, message = _feed_until_error(conn, b"\n" * 100, 10 * 1024 * 1024)
    assert fed <= 1200
    assert "no root start tag within 1000 bytes" in message


def test_one_huge_chunk_is_cut_off_without_parsing_all_of_it() -> None:
    conn = Conn()
    conn.receive_data(b'<protocol><join gameType="' + b"a" * (10 * 1024 * 1024))
    with pytest.raises(RemoteProtocolError) as info:
        conn.next_event()
    assert "65536" in info.value.message


def test_large_but_complete_packets_within_the_limit_pass() -> None:
    name = "n" * 10000
    data = f'<protocol><prepare gameType="g"><slot displayName="{name}"/></prepare>'.encode()
    [event] = events_of(data)
    assert isinstance(event, Prepare)
    assert event.slots[0].display_name == name


def test_attribute_limit_applies_to_values_we_read() -> None:
    error = error_of(
        b'<protocol><join gameType="' + b"g" * 200 + b'"/>',
        ProtocolLimits(max_attribute_bytes=100),
    )
    assert "gameType" in error.message and "100" in error.message


def test_a_long_stream_of_packets_never_trips_the_limit() -> None:
    conn = Conn(ProtocolLimits(max_packet_bytes=512))
    conn.receive_data(b"<protocol>")
    for _ in range(2000):
        conn.receive_data(SOCHA_MOVE)
        assert isinstance(conn.next_event(), MovePacket)
        assert conn.next_event() is NEED_DATA


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ProtocolLimits(max_packet_bytes=0)


def test_declared_encoding_is_honoured() -> None:
    data = b'<?xml version="1.0" encoding="ISO-8859-1"?><protocol><join gameType="H\xe4schen"/>'
    assert events_of(data) == [Join("Häschen")]


def test_unexpected_packets_are_echoed_verbatim_in_an_errorpacket() -> None:
    from protocol.messages import ErrorPacket

    joined, room = events_of(
        b'<protocol><joined roomId="q"/><room roomId="R"><data class="paused" paused="true"/>'
        b"</room>"
    )
    assert ErrorPacket("m", joined).to_xml() == (
        '<errorpacket message="m">\n  <originalRequest class="joined" roomId="q"/>\n</errorpacket>'
    )
    assert ErrorPacket("m", room).to_xml() == (
        '<errorpacket message="m">\n  <originalRequest class="room" roomId="R">\n'
        '    <data class="paused" paused="true"/>\n  </originalRequest>\n</errorpacket>'
    )


def test_an_unknown_packet_is_refused_at_its_start_tag() -> None:
    # LobbyTest.shouldEndGameOnIllegalMessage sends a bare "<yarr>": XStream resolves the
    # class on the start tag, so no end tag is needed to end the game.
    conn = Conn()
    conn.receive_data(b"<protocol>\n<join />\n<yarr>")
    assert conn.next_event() == Join(None)
    with pytest.raises(RemoteProtocolError, match="unknown packet <yarr>"):
        conn.next_event()


def test_known_packets_still_wait_for_their_end_tag() -> None:
    conn = Conn()
    assert events_of(b'<protocol><room roomId="R">', conn) == []


@pytest.mark.timeout(20)
@pytest.mark.parametrize("opening", [b"", b"<!--", b"<?xml "])
def test_a_prolog_trickled_byte_by_byte_is_scanned_in_linear_time(opening: bytes) -> None:
    # Rescanning the whole prolog on every byte took minutes for 64 KiB.
    conn = Conn()
    if opening:
        conn.receive_data(opening)
    fed, message = 0, ""
    for _ in range(70000):
        conn.receive_data(b" ")
        fed += 1
        try:
            conn.next_event()
        except RemoteProtocolError as error:
            message = error.message
            break
    assert "no root start tag within 65536 bytes" in message
    assert fed <= 65536 + 1


def test_prolog_items_split_anywhere_still_lead_to_the_root() -> None:
    prolog = b'\xef\xbb\xbf<?xml version="1.0"?> <!-- a - b ->--> <?pi x?>\n<protocol><join/>'
    for cut in range(1, len(prolog)):
        conn = Conn()
        assert events_of(prolog[:cut], conn) + events_of(prolog[cut:], conn) == [Join(None)]
