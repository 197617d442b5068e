"""Small pieces of the app module that need no running server."""

from __future__ import annotations

import socket

import pytest
import trio

from server.app import Admission, _reachable_host, accept_loop
from server.config import Settings
from server.limits import Episode


def test_connect_hint_names_this_machine_when_listening_everywhere() -> None:
    assert _reachable_host("0.0.0.0") == socket.gethostname()
    assert _reachable_host("::") == socket.gethostname()
    assert _reachable_host("127.0.0.1") == "127.0.0.1"
    assert _reachable_host("gameserver") == "gameserver"


async def test_admission_counts_per_address_and_in_total() -> None:
    settings = Settings(max_connections_per_address=2)
    admission = Admission(settings, cap=5)
    assert admission.admit("10.0.0.1") is None
    assert admission.admit("::ffff:10.0.0.1") is None  # the same address, spelled as IPv6
    refusal = admission.admit("10.0.0.1")
    assert refusal is not None and "Too many connections from 10.0.0.1" in refusal
    assert admission.admit("10.0.0.2") is None
    # Loopback is exempt from the per-address cap, not from the total.
    assert admission.admit("127.0.0.1") is None
    assert admission.admit("127.0.0.1") is None
    refusal = admission.admit("127.0.0.1")
    assert refusal is not None and "accepts 5 at once" in refusal
    assert admission.total_episode.refused_total == 1
    admission.release("10.0.0.1")
    assert admission.admit("10.0.0.1") is None
    for host in ("10.0.0.1", "::ffff:10.0.0.1", "10.0.0.2", "127.0.0.1", "127.0.0.1"):
        admission.release(host)
    assert admission.total == 0 and admission.by_address == {}


async def test_admission_limits_loopback_when_told() -> None:
    settings = Settings(max_connections_per_address=1, per_address_limit_on_loopback=True)
    admission = Admission(settings, cap=5)
    assert admission.admit("127.0.0.1") is None
    assert admission.admit("127.0.0.1") is not None
    assert admission.admit("::1") is None  # another address


async def test_the_accept_loop_of_a_listener_closed_before_it_ran() -> None:
    """A server stopped at once (a league table opened and closed) may close its listener
    before the accept loop's task first runs: a ClosedResourceError, as trio's own accept
    raises, or the stop's cancellation, never a crash on the closed descriptor."""
    exhausted = Episode("out of descriptors")
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    await listener.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await accept_loop(listener, lambda *_: None, exhausted)
    with trio.CancelScope() as scope:
        scope.cancel()  # the stop came first: cancelled, not refused for the closed listener
        await accept_loop(listener, lambda *_: None, exhausted)
    assert scope.cancelled_caught
