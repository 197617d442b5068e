"""Small pieces of the app module that need no running server."""

from __future__ import annotations

import socket

from server.app import _reachable_host


def test_connect_hint_names_this_machine_when_listening_everywhere() -> None:
    assert _reachable_host("0.0.0.0") == socket.gethostname()
    assert _reachable_host("::") == socket.gethostname()
    assert _reachable_host("127.0.0.1") == "127.0.0.1"
    assert _reachable_host("gameserver") == "gameserver"
