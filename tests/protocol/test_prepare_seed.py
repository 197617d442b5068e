"""The `seed` extension of `<prepare>`: parsed as an int, written only when set."""

from __future__ import annotations

import pytest

from protocol import ClientConnection, RemoteProtocolError, ServerConnection
from protocol.events import Prepare, SlotDescriptor

SLOTS = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))


def decode(xml: bytes) -> object:
    server = ServerConnection()
    server.receive_data(xml)
    return server.next_event()


def test_seed_round_trips() -> None:
    for seed in (0, 42, -7, 2**70):
        packet = Prepare("swc_2026_piranhas", True, SLOTS, seed)
        assert decode(ClientConnection().send(packet)) == packet


def test_without_seed_nothing_changes_on_the_wire() -> None:
    data = ClientConnection().send(Prepare("swc_2026_piranhas", False, SLOTS))
    assert b"seed" not in data
    assert decode(data) == Prepare("swc_2026_piranhas", False, SLOTS, None)
    # The official server's Kotlin toString never shows it.
    assert "seed" not in Prepare("swc_2026_piranhas", False, SLOTS, 5).java_repr()


@pytest.mark.parametrize("text", ["", "x", "1.5", "0x10"])
def test_a_seed_that_is_no_integer_is_refused(text: str) -> None:
    xml = f'<protocol><prepare seed="{text}"><slot displayName="a"/></prepare>'.encode()
    with pytest.raises(RemoteProtocolError, match="seed must be an integer"):
        decode(xml)
