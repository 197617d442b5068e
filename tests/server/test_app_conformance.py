"""What the real socha 4.3.9 client can read (docs/clients.md "How socha 4.3.9 cuts the server's
stream"): it never parses the stream as XML, it cuts messages out with one regular expression.
Every byte stream the server writes to a player over real TCP is cut the same way here, and
must then consist of whole messages and stream framing only: a `<left>` that is not
self-closing, an `<errorpacket>` without end tag or any other unmatched message would be
invisible to that client (it hangs). On top: memento before every moveRequest, and the server
never ends a player's stream without `<left>` or `<errorpacket>` as the last message."""

from __future__ import annotations

import re

import pytest
import trio

from engine import Direction, Move, Team
from protocol.events import CloseRequest, MovePacket, RoomDataPacket
from protocol.messages import (
    ErrorPacket,
    Left,
    MoveRequest,
    ResultMessage,
    RoomError,
)
from tests.helpers.rawclient import RawClient
from tests.helpers.server import LIMIT, join_pair, play_to_the_result, running_server

# socha 4.3.9, socha/api/networking/xml_protocol_interface.py (docs/clients.md)
SOCHA_CUT = re.compile(
    rb"<((room[\s\S]+?</room>)|(errorpacket[\s\S]+?</errorpacket>)|(prepared[\s\S]+?</prepared>)"
    rb"|(joined|left|join|observe|pause|step|cancel|creatGame|authenticate)[\s\S]*?/>)"
)
FRAMING = re.compile(rb"\s*(<protocol>)?\s*(</protocol>)?\s*")


def socha_cut(raw: bytes) -> list[bytes]:
    """The messages socha finds, in order; asserts that nothing else is in the stream."""
    found = []
    position = 0
    while (match := SOCHA_CUT.search(raw, position)) is not None:
        skipped = raw[position : match.start()]
        assert FRAMING.fullmatch(skipped), f"invisible to socha: {skipped!r}"
        found.append(match.group())
        position = match.end()
    rest = raw[position:]
    assert FRAMING.fullmatch(rest), f"invisible to socha: {rest!r}"
    return found


def check_player_stream(client: RawClient, *, closed_by_server: bool = False) -> list[bytes]:
    cut = socha_cut(bytes(client.raw))
    # One socha message per message the server sent, nothing merged, nothing lost.
    assert len(cut) == len(client.received), (cut, client.received)
    last_room_data = b""
    for message in cut:
        kind = re.match(rb'<room roomId="[^"]*">\s*<data class="(\w+)"', message)
        if kind is not None:
            if kind.group(1) == b"moveRequest":
                assert last_room_data == b"memento", "moveRequest without a memento before it"
            last_room_data = kind.group(1)
    if closed_by_server:
        assert cut[-1].startswith((b"<left ", b"<errorpacket ")), cut[-1]
    return cut


async def play_out(one: RawClient, two: RawClient, room_id: str) -> None:
    await play_to_the_result(one, two, room_id)
    for client in (one, two):
        await client.receive_until(Left)


async def test_every_player_stream_is_whole_messages_for_socha() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            # A whole game; then each client closes the way a client does.
            one, two, room_id = await join_pair(server)
            await play_out(one, two, room_id)
            await one.send(CloseRequest())
            await one.expect_closed()
            await two.aclose()
            for client in (one, two):
                assert check_player_stream(client)[-1] == f'<left roomId="{room_id}"/>'.encode()

            # A rule violation: room error, result, left.
            one, two, room_id = await join_pair(server)
            await one.receive_until(MoveRequest)
            await one.send(MovePacket(room_id, Move(0, 0, Direction.UP)))
            await one.receive_until(Left)
            await two.receive_until(Left)
            assert any(isinstance(m, RoomError) for m in one.received)
            for client in (one, two):
                check_player_stream(client)

            # An errorpacket that echoes a <room> (nested data) mid-game, then not-your-turn.
            one, two, room_id = await join_pair(server)
            await one.receive_until(MoveRequest)
            await one.send(RoomDataPacket(room_id, "moveRequest", ""))
            await one.expect(ErrorPacket)
            await two.send(MovePacket(room_id, Move(1, 0, Direction.UP)))
            for client in (one, two):
                await client.receive_until(Left)
                check_player_stream(client)

            # A protocol error: errorpacket, then the server closes; the opponent gets left.
            one, two, room_id = await join_pair(server)
            await one.receive_until(MoveRequest)
            await one.send_raw(b"<yarr/>")
            await one.receive_until(ErrorPacket)
            await one.expect_closed()
            check_player_stream(one, closed_by_server=True)
            await two.receive_until(Left)
            check_player_stream(two)

            # Shutdown mid-game: result and left go out before the server closes.
            one, two, room_id = await join_pair(server)
            waiting = await server.client()
            await waiting.send_raw(b"<protocol><join/>\n")
            await one.receive_until(MoveRequest)
            server.stop.set()
            for client in (one, two, waiting):
                messages = await client.receive_until(Left)
                assert isinstance(messages[-2], ResultMessage)
                await client.expect_closed()
                check_player_stream(client, closed_by_server=True)
            await server.done.wait()


def test_the_socha_cut_model_rejects_what_socha_cannot_see() -> None:
    # The checker itself: the forms clients.md names as fatal for socha are caught.
    good = b'<protocol>\n  <joined roomId="r"/>\n  <left roomId="r"/>\n</protocol>'
    assert socha_cut(good) == [b'<joined roomId="r"/>', b'<left roomId="r"/>']
    for bad in (
        b'<protocol>\n  <left roomId="r"></left>',
        b'<protocol>\n  <errorpacket message="m"/>',
        b"<protocol>\n  <result/>",
    ):
        with pytest.raises(AssertionError):
            socha_cut(bad)


async def test_client_end_of_document_is_a_lost_connection_and_gets_no_close() -> None:
    # §1.3/§1.4: the client's </protocol> counts as LOST_CONNECTION; the server only ends
    # its own document (no <close/>) and closes. The opponent wins and gets left.
    with trio.fail_after(LIMIT):
        async with running_server() as server:
            one, two, room_id = await join_pair(server)
            await one.receive_until(MoveRequest)
            await one.send_raw(b"\n</protocol>")
            await one.expect_closed()
            assert b"<close/>" not in one.raw
            messages = await two.receive_until(Left)
            assert messages[-1] == Left(room_id)
            result = messages[-2]
            assert isinstance(result, ResultMessage)
            assert result.result.winner is Team.TWO
            assert result.result.reason == "ONE hat das Spiel verlassen: LOST_CONNECTION"
            check_player_stream(two)
