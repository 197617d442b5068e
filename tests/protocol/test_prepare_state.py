"""The `<state>` extension of `<prepare>` (a room's start position, "play from here"):
written only when set, read back equal, and a malformed one is a protocol error."""

from __future__ import annotations

import random

import pytest

from engine import GameState
from protocol import ClientConnection, RemoteProtocolError, ServerConnection
from protocol.events import Prepare, SlotDescriptor
from protocol.messages import Memento

SLOTS = (SlotDescriptor("a", True, True), SlotDescriptor("b", False, True))


def decode(xml: bytes) -> object:
    server = ServerConnection()
    server.receive_data(xml)
    return server.next_event()


def played(moves: int, seed: int = 5) -> GameState:
    rng = random.Random(seed)
    state = GameState.initial(seed=seed)
    for _ in range(moves):
        state = state.apply(rng.choice(state.legal_moves()))
    return state


@pytest.mark.parametrize("moves", [0, 1, 17])
def test_a_start_state_round_trips_with_turn_last_move_and_union(moves: int) -> None:
    state = played(moves)
    packet = Prepare("swc_2026_piranhas", False, SLOTS, state=state)
    back = decode(ClientConnection().send(packet))
    assert isinstance(back, Prepare) and back == packet
    assert back.state is not None
    assert back.state.rows() == state.rows() and back.state.turn == state.turn
    assert back.state.last_move == state.last_move
    assert back.state.first_union == state.first_union


def test_the_state_is_written_as_a_memento_writes_it() -> None:
    state = played(9)
    xml = Prepare("swc_2026_piranhas", False, SLOTS, state=state).to_xml()
    memento = Memento("r", state).to_xml()
    body = memento[memento.index("<state") : memento.index("</state>")]
    # The same elements and text, whatever the indentation.
    assert "".join(xml.split()).count("".join(body.split())) == 1


def test_without_a_state_nothing_changes_on_the_wire() -> None:
    data = ClientConnection().send(Prepare("swc_2026_piranhas", False, SLOTS))
    assert b"state" not in data
    assert decode(data) == Prepare("swc_2026_piranhas", False, SLOTS)


BOARD = "<board>" + "<row>" + "<field>EMPTY</field>" * 10 + "</row>" + "<row/>" * 9 + "</board>"


@pytest.mark.parametrize(
    ("inner", "word"),
    [
        (f'<slot displayName="a"/><state class="state">{BOARD}</state>', "turn"),
        ('<slot displayName="a"/><state class="state" turn="3"></state>', "lacks <board>"),
        (f'<slot displayName="a"/><state class="state" turn="3">{BOARD}</state>', "rectangle"),
        (
            '<slot displayName="a"/><state class="state" turn="3"><board><row>'
            "<field>WHALE</field></row></board></state>",
            "unknown field",
        ),
        (
            '<slot displayName="a"/><state class="state" turn="-1"><board><row>'
            "<field>EMPTY</field></row></board></state>",
            "negative",
        ),
        (
            '<state class="state" turn="1"><board><row><field>EMPTY</field></row></board>'
            '</state><slot displayName="a"/>',
            "unexpected element <slot>",
        ),
        (
            '<slot displayName="a"/>'
            + '<state class="state" turn="1"><board><row><field>EMPTY</field></row></board>'
            "</state>" * 2,
            "unexpected element <state>",
        ),
    ],
)
def test_a_malformed_start_state_is_a_protocol_error(inner: str, word: str) -> None:
    with pytest.raises(RemoteProtocolError, match=word):
        decode(f"<protocol><prepare>{inner}</prepare>".encode())
