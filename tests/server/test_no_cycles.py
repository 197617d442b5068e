"""A finished game's connections go with their last reference: nothing of them waits for the
garbage collector (whose passes over a busy server's young objects took 2-22 ms each while
every connection left a cycle through its reader's stored error and frames)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import trio

from protocol.events import CloseRequest
from server.connection import Connection
from tests.helpers.server import LIMIT, join_pair, play_to_the_result, running_server


@contextmanager
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("goodbye", ["closes", "sends <close/>"])
async def test_a_finished_games_connections_are_freed_without_the_collector(
    goodbye: str,
) -> None:
    with collector_off(), trio.fail_after(2 * LIMIT):
        async with running_server() as server:
            one, two, room_id = await join_pair(server)
            # The server's two Connections of this game (no other connection is open).
            connections = [weakref.ref(o) for o in gc.get_objects() if type(o) is Connection]
            assert len(connections) == 2
            await play_to_the_result(one, two, room_id)
            for client in (one, two):
                if goodbye != "closes":
                    await client.send(CloseRequest())
                await client.aclose()  # (a bot that just closes: the stream ends early)
            del client, one, two
            # Each connection's task ends (and drops it) once it read the end of its stream.
            with trio.move_on_after(LIMIT / 2):
                while any(alive() is not None for alive in connections):
                    await trio.sleep(0.01)
            kept = [alive() for alive in connections if alive() is not None]
            assert not kept, f"kept alive by a cycle: {kept}"
