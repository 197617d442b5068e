"""Byte layout of everything we write, against the examples the official tests and
captures pin (docs/protocol.md §1.2, §3, §10 † items) and socha's framing (docs/clients.md)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import re

import pytest

from engine import Direction, FieldState, GameResult, GameState, Move, PlayerEntry, Team
from protocol import LocalProtocolError, ServerConnection
from protocol._xml import escape_attr, escape_text, render_standalone
from protocol.events import (
    Authenticate,
    CancelRequest,
    CloseRequest,
    Join,
    JoinPrepared,
    JoinRoom,
    MovePacket,
    Observe,
    PauseRequest,
    Prepare,
    SlotDescriptor,
    StepRequest,
    StreamEnd,
)
from protocol.messages import (
    CloseConnection,
    ErrorPacket,
    Joined,
    JoinedGameRoom,
    Left,
    Memento,
    MoveRequest,
    Observed,
    Paused,
    Prepared,
    ResultMessage,
    RoomError,
    WelcomeMessage,
    board_xml,
    state_xml,
)

UUID = "7436c247-5a67-4eca-9b17-fceab576b083"


# --- stream framing (ClientXmlReadTest.clientSendPacketTest) --------------------------------


def test_first_packet_opens_the_document_without_trailing_newline() -> None:
    conn = ServerConnection()
    assert conn.send(CloseConnection()) == b"<protocol>\n  <close/>"
    assert conn.send(Joined(UUID)) == f'\n  <joined roomId="{UUID}"/>'.encode()
    assert conn.close() == b"\n</protocol>"


def test_close_without_any_packet_is_an_empty_root() -> None:
    assert ServerConnection().close() == b"<protocol/>"


def test_sending_after_close_is_our_error() -> None:
    conn = ServerConnection()
    conn.close()
    with pytest.raises(LocalProtocolError):
        conn.send(Left("r"))
    with pytest.raises(LocalProtocolError):
        conn.close()


# --- lobby messages (pycap captures) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "xml"),
    [
        (Joined(UUID), f'<joined roomId="{UUID}"/>'),
        (Observed(UUID), f'<observed roomId="{UUID}"/>'),
        (Left(UUID), f'<left roomId="{UUID}"/>'),
        (JoinedGameRoom("R", 2), '<joinedGameRoom roomId="R" playerCount="2"/>'),
        (CloseConnection(), "<close/>"),
        (Prepared("R", ()), '<prepared roomId="R"/>'),
        (
            Prepared(UUID, ("ab22c238-b702-4992-b89a-c09208460f90", "e3143664-a1bd")),
            f'<prepared roomId="{UUID}">\n'
            "  <reservation>ab22c238-b702-4992-b89a-c09208460f90</reservation>\n"
            "  <reservation>e3143664-a1bd</reservation>\n"
            "</prepared>",
        ),
    ],
)
def test_lobby_messages(message: Joined, xml: str) -> None:
    assert message.to_xml() == xml
    # Inside the stream every line moves in by one level.
    assert message.to_xml(1) == "  " + xml.replace("\n", "\n  ")


# --- room messages (RoomPacketTest, WelcomeMessageTest, pycap) ---------------------------------


def test_move_request_matches_room_packet_test() -> None:
    assert MoveRequest("12345").to_xml() == (
        '<room roomId="12345">\n  <data class="moveRequest"/>\n</room>'
    )


@pytest.mark.parametrize("room_id", ["12345", "", 'a"b<c>&d', "ümläut\t\n", "\x7f\U0001f41f"])
@pytest.mark.parametrize("indent", [0, 1, 3])
def test_move_request_by_string_building_is_the_generic_rendering(
    room_id: str, indent: int
) -> None:
    message = MoveRequest(room_id)
    assert message.to_xml(indent) == render_standalone(message.node(), indent)


def test_paused_matches_room_packet_test() -> None:
    assert Paused("12345", False).to_xml() == (
        '<room roomId="12345">\n  <data class="paused" paused="false"/>\n</room>'
    )
    assert 'paused="true"' in Paused("1", True).to_xml()


def test_welcome_message_in_stream_matches_capture() -> None:
    conn = ServerConnection()
    conn.send(Joined(UUID))
    assert (
        conn.send(WelcomeMessage(UUID, Team.TWO))
        == (
            f'\n  <room roomId="{UUID}">\n    <data class="welcomeMessage" color="TWO"/>\n  </room>'
        ).encode()
    )


# --- board and state (BoardTest, GameStateTest) ------------------------------------------------


def test_one_by_three_board_matches_board_test() -> None:
    rows = [[FieldState.ONE_S, FieldState.ONE_M, FieldState.ONE_L]]
    assert board_xml(rows, 0) == (
        "<board>\n  <row>\n    <field>ONE_S</field>\n    <field>ONE_M</field>\n"
        "    <field>ONE_L</field>\n  </row>\n</board>"
    )


def test_full_board_is_122_lines_and_state_with_first_union_124() -> None:
    state = GameState.initial(seed=7)
    assert len(board_xml(state.rows(), 0).split("\n")) == 122
    union = GameState.from_rows(state.rows(), 0, Team.TWO)
    xml = state_xml(union, 0)
    assert len(xml.split("\n")) == 124
    assert xml.startswith('<state class="state" startTeam="ONE" turn="0" firstUnion="TWO">\n')


def test_memento_layout_first_row_is_y0_and_last_move_before_board() -> None:
    rows = [[FieldState.EMPTY] * 3 for _ in range(2)]
    rows[0][2] = FieldState.TWO_L  # (x=2, y=0)
    rows[1][0] = FieldState.ONE_S  # (x=0, y=1)
    state = GameState.from_rows(rows, 19, None, Move(7, 6, Direction.UP_RIGHT))
    expected = "\n".join(
        [
            '<room roomId="R">',
            '  <data class="memento">',
            '    <state class="state" startTeam="ONE" turn="19">',
            "      <lastMove>",
            '        <from x="7" y="6"/>',
            "        <direction>UP_RIGHT</direction>",
            "      </lastMove>",
            "      <board>",
            "        <row>",
            "          <field>EMPTY</field>",
            "          <field>EMPTY</field>",
            "          <field>TWO_L</field>",
            "        </row>",
            "        <row>",
            "          <field>ONE_S</field>",
            "          <field>EMPTY</field>",
            "          <field>EMPTY</field>",
            "        </row>",
            "      </board>",
            "    </state>",
            "  </data>",
            "</room>",
        ]
    )
    assert Memento("R", state).to_xml() == expected
    # In the stream (depth 1) every line carries two more spaces.
    assert Memento("R", state).to_xml(1) == "  " + expected.replace("\n", "\n  ")


def test_memento_of_the_initial_state_has_no_last_move_and_no_first_union() -> None:
    xml = Memento("R", GameState.initial(seed=3)).to_xml()
    assert '<state class="state" startTeam="ONE" turn="0">' in xml
    assert "lastMove" not in xml and "firstUnion" not in xml


def test_repeated_memento_rendering_is_identical() -> None:
    state = GameState.initial(seed=11)
    first = Memento("A", state).to_xml(1)
    assert Memento("A", state).to_xml(1) == first
    assert Memento("B", state).to_xml(1) == first.replace('roomId="A"', 'roomId="B"')


# --- result (GameResultTest, §3.8) -------------------------------------------------------------


def _result(winner: Team | None, regular: bool, reason: str, names: tuple[str, str]) -> GameResult:
    scores = [
        (PlayerEntry(Team.ONE, names[0]), (0, 2)),
        (PlayerEntry(Team.TWO, names[1]), (2, 5)),
    ]
    return GameResult(scores, winner, regular, reason)


def test_result_matches_the_documented_piranhas_form() -> None:
    reason = "Spieler 2 hat den größeren zusammenhängenden Schwarm"
    result = _result(Team.TWO, True, reason, ("Spieler 1", "Spieler 2"))
    expected = "\n".join(
        [
            '<room roomId="ROOM_ID">',
            '  <data class="result">',
            "    <definition>",
            '      <fragment name="Siegpunkte">',
            "        <aggregation>SUM</aggregation>",
            "        <relevantForRanking>true</relevantForRanking>",
            "      </fragment>",
            '      <fragment name="Schwarmgröße">',
            "        <aggregation>AVERAGE</aggregation>",
            "        <relevantForRanking>true</relevantForRanking>",
            "      </fragment>",
            "    </definition>",
            "    <scores>",
            "      <entry>",
            '        <player name="Spieler 1" team="ONE"/>',
            "        <score>",
            "          <part>0</part>",
            "          <part>2</part>",
            "        </score>",
            "      </entry>",
            "      <entry>",
            '        <player name="Spieler 2" team="TWO"/>',
            "        <score>",
            "          <part>2</part>",
            "          <part>5</part>",
            "        </score>",
            "      </entry>",
            "    </scores>",
            f'    <winner team="TWO" regular="true" reason="{reason}"/>',
            "  </data>",
            "</room>",
        ]
    )
    assert ResultMessage("ROOM_ID", result).to_xml() == expected


def test_result_tie_has_no_team_and_blank_names_are_omitted() -> None:
    tie = _result(None, True, "Beide Spieler sind gleichauf", ("", " "))
    xml = ResultMessage("R", tie).to_xml()
    assert '<winner regular="true" reason="Beide Spieler sind gleichauf"/>' in xml
    assert '<player team="ONE"/>' in xml and '<player team="TWO"/>' in xml


def test_violation_reason_escapes_apostrophes_and_keeps_umlauts_raw() -> None:
    reason = "Regelverletzung von rad: kalkül bei 'TestZug'"
    xml = ResultMessage("R", _result(Team.TWO, False, reason, ("rad", "blues"))).to_xml()
    assert (
        '<winner team="TWO" regular="false" '
        'reason="Regelverletzung von rad: kalkül bei &apos;TestZug&apos;"/>'
    ) in xml
    assert "kalkül".encode() in xml.encode()


# --- errors (§3.9, §3.10) ----------------------------------------------------------------------


def test_errorpacket_echoes_the_request_with_its_alias() -> None:
    message = (
        "sc.server.gaming.UnknownReservationException: "
        "Couldn't find a reservation for the provided token."
    )
    packet = ErrorPacket(message, JoinPrepared("ab22c238-x"))
    assert packet.to_xml(1) == (
        '  <errorpacket message="sc.server.gaming.UnknownReservationException: Couldn&apos;t'
        ' find a reservation for the provided token.">\n'
        '    <originalRequest class="joinPrepared" reservationCode="ab22c238-x"/>\n'
        "  </errorpacket>"
    )


def test_errorpacket_echoes_nested_requests() -> None:
    prepare = Prepare("swc", True, (SlotDescriptor("a", True, False),))
    assert ErrorPacket("m", prepare).to_xml() == (
        '<errorpacket message="m">\n'
        '  <originalRequest class="prepare" gameType="swc" pause="true">\n'
        '    <slot displayName="a" canTimeout="true" reserved="false"/>\n'
        "  </originalRequest>\n"
        "</errorpacket>"
    )
    move = MovePacket("R", Move(1, 2, Direction.LEFT))
    assert ErrorPacket("m", move).to_xml() == (
        '<errorpacket message="m">\n'
        '  <originalRequest class="room" roomId="R">\n'
        '    <data class="move">\n'
        '      <from x="1" y="2"/>\n'
        "      <direction>LEFT</direction>\n"
        "    </data>\n"
        "  </originalRequest>\n"
        "</errorpacket>"
    )


def test_errorpacket_without_request_still_has_an_end_tag_for_socha() -> None:
    assert ErrorPacket("m", None).to_xml() == '<errorpacket message="m"></errorpacket>'


def test_errorpacket_cannot_echo_the_end_of_a_stream() -> None:
    with pytest.raises(LocalProtocolError):
        ErrorPacket("m", StreamEnd()).to_xml()


def test_room_error_echoes_the_move() -> None:
    message = (
        "Ungueltiger Zug von 'alice'.\nInvalidMoveException(mistake=JUMP_OVER_OPPONENT, "
        "move=Schwimme von [0|1] in Richtung RIGHT)"
    )
    error = RoomError("ROOM_ID", message, Move(0, 1, Direction.RIGHT))
    assert error.to_xml(1) == "\n".join(
        [
            '  <room roomId="ROOM_ID">',
            '    <data class="error" message="Ungueltiger Zug von &apos;alice&apos;.&#xa;'
            "InvalidMoveException(mistake=JUMP_OVER_OPPONENT, "
            'move=Schwimme von [0|1] in Richtung RIGHT)">',
            '      <originalMessage class="move">',
            '        <from x="0" y="1"/>',
            "        <direction>RIGHT</direction>",
            "      </originalMessage>",
            "    </data>",
            "  </room>",
        ]
    )


# --- client packets (GameProtocolTest, SlotDescriptorTest, DirectionTest) ----------------------


def test_client_packets_serialise_like_the_official_sdk() -> None:
    assert Join().to_xml() == "<join/>"
    assert Join("Häschen").to_xml() == '<join gameType="Häschen"/>'
    assert Prepare(
        "testgame", False, (SlotDescriptor("p1", True, False), SlotDescriptor("p2", True, True))
    ).to_xml() == (
        '<prepare gameType="testgame" pause="false">\n'
        '  <slot displayName="p1" canTimeout="true" reserved="false"/>\n'
        '  <slot displayName="p2" canTimeout="true" reserved="true"/>\n'
        "</prepare>"
    )
    assert render_slot_descriptor() == (
        '<slotDescriptor displayName="name" canTimeout="false" reserved="true"/>'
    )
    assert "<direction>LEFT</direction>" in MovePacket("R", Move(0, 0, Direction.LEFT)).to_xml()
    assert StepRequest("x", False).to_xml() == '<step roomId="x" forced="false"/>'
    assert PauseRequest("x", True).to_xml() == '<pause roomId="x" pause="true"/>'
    assert Observe("x").to_xml() == '<observe roomId="x"/>'
    assert CancelRequest("x").to_xml() == '<cancel roomId="x"/>'
    assert JoinRoom("x").to_xml() == '<joinRoom roomId="x"/>'
    assert Authenticate("pw").to_xml() == '<authenticate password="pw"/>'
    assert CloseRequest().to_xml() == "<close/>"


def render_slot_descriptor() -> str:
    from protocol._xml import render

    return render(SlotDescriptor("name", False, True).node("slotDescriptor"))


def test_java_repr_is_the_kotlin_to_string() -> None:
    assert Observe("abc").java_repr() == "ObservationRequest(roomId=abc)"
    assert Observe(None).java_repr() == "ObservationRequest(roomId=null)"
    assert StepRequest("r", True).java_repr() == "StepRequest(roomId=r, forced=true)"
    assert PauseRequest("r", False).java_repr() == "PauseGameRequest(roomId=r, pause=false)"
    assert CancelRequest("r").java_repr() == "CancelRequest(roomId=r)"
    assert Join(None).java_repr() == "JoinGameRequest(gameType=null)"
    assert Prepare("g", True, (SlotDescriptor("a", True, False),)).java_repr() == (
        "PrepareGameRequest(gameType=g, slotDescriptors=[SlotDescriptor(displayName=a, "
        "canTimeout=true, reserved=false)], pause=true)"
    )
    assert MovePacket("R", Move(0, 1, Direction.RIGHT)).java_repr() == (
        "RoomPacket(roomId=R, data=Schwimme von [0|1] in Richtung RIGHT)"
    )
    assert CloseRequest().java_repr() == "CloseConnection"


# --- escaping table (§1.2) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "attribute", "text"),
    [
        ("a&b", "a&amp;b", "a&amp;b"),
        ("<x>", "&lt;x&gt;", "&lt;x&gt;"),
        ('"', "&quot;", "&quot;"),
        ("it's", "it&apos;s", "it&apos;s"),
        ("a\rb", "a&#xd;b", "a&#xd;b"),
        ("a\nb", "a&#xa;b", "a\nb"),
        ("a\tb", "a&#x9;b", "a\tb"),
        ("\x01\x1f\x7f\x85", "&#x1;&#x1f;&#x7f;&#x85;", "&#x1;&#x1f;&#x7f;&#x85;"),
        ("\x00", "&#x0;", "&#x0;"),
        ("größe ß 日本 😀", "größe ß 日本 😀", "größe ß 日本 😀"),
        ("\ufffe", "&#xfffe;", "&#xfffe;"),
        ("plain-id_123", "plain-id_123", "plain-id_123"),
    ],
)
def test_escaping_table(raw: str, attribute: str, text: str) -> None:
    assert escape_attr(raw) == attribute
    assert escape_text(raw) == text


def test_non_ascii_goes_out_as_raw_utf8() -> None:
    conn = ServerConnection()
    data = conn.send(Joined("räum-ß"))
    assert data == '<protocol>\n  <joined roomId="räum-ß"/>'.encode()


# --- socha framing (docs/clients.md) ------------------------------------------------------------

SOCHA_FRAME = re.compile(
    rb"<((room[\s\S]+?</room>)|(errorpacket[\s\S]+?</errorpacket>)|(prepared[\s\S]+?</prepared>)"
    rb"|(joined|left|join|observe|pause|step|cancel|creatGame|authenticate)[\s\S]*?/>)"
)


@pytest.mark.parametrize(
    "message",
    [
        Joined("r"),
        Left("r"),
        ErrorPacket("m", Join()),
        ErrorPacket("m", None),
        MoveRequest("r"),
        WelcomeMessage("r", Team.ONE),
        Prepared("r", ("a",)),
        RoomError("r", "m", Move(0, 0, Direction.UP)),
    ],
)
def test_every_frame_socha_needs_is_matched_whole(message: Joined) -> None:
    data = ServerConnection().send(message)
    match = SOCHA_FRAME.search(data)
    assert match is not None
    assert match.group() == data[data.index(b"<", 1) :]


def test_states_differing_only_in_rendered_attributes_render_differently() -> None:
    rows = GameState.initial(seed=5).rows()
    plain = GameState.from_rows(rows, 2)
    moved = GameState.from_rows(rows, 2, None, Move(0, 1, Direction.UP))
    united = GameState.from_rows(rows, 2, Team.ONE)
    later = GameState.from_rows(rows, 4)
    rendered = {Memento("R", s).to_xml() for s in (plain, moved, united, later, plain)}
    assert len(rendered) == 4


@pytest.mark.parametrize("indent", [0, 1, 3])
@pytest.mark.parametrize(
    "result",
    [
        _result(Team.ONE, False, "x 'y'", ("a", "")),
        _result(None, True, "", ("  ", 'a"<b>&\t')),
        _result(Team.TWO, True, "ümläut\n\x7f", ("\U0001f41f", "b")),
        GameResult([], None, False, "none"),
    ],
)
def test_result_fast_path_equals_the_generic_rendering(indent: int, result: GameResult) -> None:
    message = ResultMessage("R&", result)
    assert message.to_xml(indent) == render_standalone(message.node(), indent)


@pytest.mark.parametrize("room_id", ["12345", "", 'a"b<c>&d', "ümläut\t\n", "\x7f\U0001f41f"])
@pytest.mark.parametrize("indent", [0, 1, 3])
def test_per_game_messages_by_string_building_are_the_generic_rendering(
    room_id: str, indent: int
) -> None:
    # Joined, welcome, prepared, left: built as strings (once a game each), never otherwise.
    messages = [
        Joined(room_id),
        Left(room_id),
        WelcomeMessage(room_id, Team.ONE),
        WelcomeMessage(room_id, Team.TWO),
        Prepared(room_id),
        Prepared(room_id, (room_id, "", "c0de")),
    ]
    for message in messages:
        assert message.to_xml(indent) == render_standalone(message.node(), indent), message


def test_lone_surrogates_cannot_break_sending() -> None:
    # Java's encoder writes '?' for an unpaired surrogate; we must never raise instead.
    data = ServerConnection().send(ErrorPacket("bad \ud800 name", Join("x\udfffy")))
    assert b"bad ? name" in data and b'gameType="x?y"' in data


def test_a_memento_made_by_its_own_init_is_the_dataclass_it_was() -> None:
    """Memento's __init__ sets the slots itself (the per-move construction): still frozen,
    equal and hashed by its fields, keywords, replace, copy and pickle as before."""
    state = GameState.initial(7)
    memento = Memento("r", state)
    assert memento == Memento(room_id="r", state=state) and memento.state is state
    assert hash(memento) == hash(Memento("r", state))
    assert memento != Memento("other", state)
    assert dataclasses.replace(memento, room_id="x") == Memento("x", state)
    assert copy.copy(memento) == memento == pickle.loads(pickle.dumps(memento))
    with pytest.raises(dataclasses.FrozenInstanceError):
        memento.room_id = "y"  # type: ignore[misc]
    assert [field.name for field in dataclasses.fields(Memento)] == ["room_id", "state"]
