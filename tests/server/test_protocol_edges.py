"""Protocol edges end to end over a Connection: a start tag libxml2 would wait on forever,
and a `<room>` without roomId (protocol §3.9)."""

from __future__ import annotations

import trio

from protocol.messages import ErrorPacket, Joined
from tests.helpers.lobby import Harness, HarnessFactory

from .test_connection import connect


async def test_a_start_tag_that_can_never_end_is_refused_at_once(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    with trio.fail_after(5):
        await client.send_raw(b'<protocol><join gameType="a"\'b"/>')
        error = await client.expect(ErrorPacket)
        assert "broken XML" in error.message
        await client.expect_closed()


async def test_a_room_packet_without_room_id_keeps_the_connection(
    make_harness: HarnessFactory, nursery: trio.Nursery
) -> None:
    harness: Harness = await make_harness()
    client = await connect(nursery, harness)
    with trio.fail_after(5):
        await client.send_raw(
            b'<protocol><room><data class="move"><from x="0" y="1"/>'
            b"<direction>UP</direction></data></room>"
        )
        error = await client.expect(ErrorPacket)
        assert error.message == (
            "sc.api.plugins.exceptions.GameRoomException: Couldn't find a room with id null"
        )
        await client.send_raw(b"<join/>")
        await client.expect(Joined)
