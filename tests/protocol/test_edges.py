"""Edges of the client stream: stalled broken XML, exact packet limit, namespaces, a
`<room>` without roomId, bounded error echoes."""

from __future__ import annotations

import pytest

from engine import Direction, Move
from protocol import NEED_DATA, RemoteProtocolError, ServerConnection
from protocol.events import ClientPacket, Join, MovePacket, RoomDataPacket
from protocol.messages import ErrorPacket


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
