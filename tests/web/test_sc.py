"""web.sc: the viewer's admin requests and a person's slot, as SC clients of a real in-process
game server on loopback."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest
import trio

from client import ConnectionClosed
from engine import Direction, Move, Team
from protocol import GAME_TYPE
from protocol.events import Prepare, SlotDescriptor
from tests.helpers.server import PASSWORD, running_server
from tests.web.players import random_bot
from web.sc import HumanPlayer, admin_request

LIMIT = 10
HUMAN_FIRST = (SlotDescriptor("Ada", False, True), SlotDescriptor("bot", True, True))


async def until(condition: Callable[[], bool]) -> None:
    """Wait for `condition()` (real sockets and a real server: a short poll)."""
    while not condition():
        await trio.sleep(0.005)


async def test_admin_request_collects_answers_and_refusals() -> None:
    prepare = Prepare(GAME_TYPE, False, HUMAN_FIRST)
    with trio.fail_after(LIMIT):
        # No delay for a failed login: its errorpacket comes before the connection closes.
        async with running_server(login_failure_delay=0.0) as server:
            reply = await admin_request(server.port, PASSWORD, [prepare, prepare])
            assert reply.errors == [] and len(reply.prepared) == 2
            assert reply.prepared[0].room_id != reply.prepared[1].room_id
            wrong = await admin_request(server.port, "wrong", [prepare])
            assert wrong.prepared == []
            assert "Failed to authenticate" in wrong.errors[0]


async def test_admin_request_to_no_server_is_connection_closed() -> None:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()
    with trio.fail_after(LIMIT), pytest.raises(ConnectionClosed, match="cannot connect"):
        await admin_request(port, PASSWORD, [])


async def test_a_person_plays_a_whole_game() -> None:
    with trio.fail_after(LIMIT):
        async with running_server() as server, trio.open_nursery() as nursery:
            reply = await admin_request(
                server.port, PASSWORD, [Prepare(GAME_TYPE, False, HUMAN_FIRST)]
            )
            human_code, bot_code = reply.prepared[0].reservations
            human = HumanPlayer("t", human_code, "owner")
            nursery.start_soon(human.run, server.port)
            nursery.start_soon(partial(random_bot, server.port, reservation=bot_code))
            await until(lambda: human.my_turn or human.ended)
            assert human.team is Team.ONE and human.state is not None
            assert await human.move(human.state.legal_moves()[0]) is None
            assert await human.move(human.state.legal_moves()[0]) == "it is not your turn"
            while not human.ended:
                await until(lambda: human.my_turn or human.ended)
                if human.my_turn:
                    assert human.state is not None
                    assert await human.move(human.state.legal_moves()[0]) is None
            assert human.result is not None and human.errors == []


async def test_a_lost_server_ends_the_persons_game_with_a_reason() -> None:
    async def join_then_vanish(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)  # the <joinPrepared>
        await stream.send_all(b'<protocol>\n  <joined roomId="r"/>')
        await stream.aclose()

    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(trio.serve_tcp, join_then_vanish, 0, host="127.0.0.1")
            )
            human = HumanPlayer("t", "code", "owner")
            await human.run(listeners[0].socket.getsockname()[1])
            nursery.cancel_scope.cancel()
    assert human.ended and human.room_id == "r" and human.result is None
    assert human.errors == [
        "connection to the game server failed: the server closed the connection"
    ]
    assert await human.move(Move(0, 1, Direction.UP)) == "it is not your turn"
