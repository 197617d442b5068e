"""Admin requests (§2, §4.2, §5.2, §5.4, §5.9): authenticate, prepare, observe, pause,
step, cancel, and the errors they give."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Team, ViolationKind
from protocol.events import (
    GAME_TYPE,
    Authenticate,
    CancelRequest,
    ClientPacket,
    Join,
    JoinPrepared,
    JoinRoom,
    Observe,
    PauseRequest,
    Prepare,
    SlotDescriptor,
    StepRequest,
)
from protocol.messages import (
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
    WelcomeMessage,
)
from server.lobby import DisconnectCause
from tests.helpers.lobby import FakePeer, Harness, HarnessFactory

PASSWORD = "secret"


async def admin_harness(make_harness: HarnessFactory, **settings: Any) -> tuple[Harness, FakePeer]:
    harness: Harness = await make_harness(password=PASSWORD, **settings)
    admin = harness.peer("admin")
    harness.send(admin, Authenticate(PASSWORD))
    assert admin.messages == []  # no answer on success
    return harness, admin


def prepare(
    harness: Harness, admin: FakePeer, *, pause: bool = False, names: tuple[str, ...] = ("a", "b")
) -> tuple[str, tuple[str, ...]]:
    slots = tuple(SlotDescriptor(name, True, True) for name in names)
    harness.send(admin, Prepare(GAME_TYPE, pause, slots))
    prepared = admin.messages[-1]
    assert isinstance(prepared, Prepared)
    return prepared.room_id, prepared.reservations


async def test_wrong_password_is_refused_and_connection_stays_usable(
    make_harness: HarnessFactory,
) -> None:
    # Answered at once here; the delay of failed logins is tested in test_limits.py.
    harness: Harness = await make_harness(password=PASSWORD, login_failure_delay=0)
    peer = harness.peer("p")
    harness.send(peer, Authenticate("wrong"))
    harness.send(peer, Authenticate(None))
    assert [message for message in peer.messages] == [
        ErrorPacket(
            "sc.server.network.AuthenticationFailedException: "
            "Failed to authenticate as administrator",
            Authenticate("wrong"),
        ),
        ErrorPacket(
            "sc.server.network.AuthenticationFailedException: "
            "Failed to authenticate as administrator",
            Authenticate(None),
        ),
    ]
    harness.send(peer, Observe("x"))
    assert peer.messages[-1] == ErrorPacket(
        "sc.server.network.UnauthenticatedException: "
        "Request ObservationRequest(roomId=x) requires authentication",
        Observe("x"),
    )


async def test_without_a_configured_password_nobody_is_admin(make_harness: HarnessFactory) -> None:
    harness: Harness = await make_harness(password=None, login_failure_delay=0)
    peer = harness.peer("p")
    harness.send(peer, Authenticate("examplepassword"))
    assert isinstance(peer.messages[0], ErrorPacket)
    assert not harness.lobby.is_busy(peer)


@pytest.mark.parametrize(
    "request_packet",
    [
        Prepare(GAME_TYPE, False, (SlotDescriptor("a", True, True),)),
        Observe("r"),
        PauseRequest("r", True),
        StepRequest("r", True),
        CancelRequest("r"),
    ],
)
async def test_admin_requests_need_authentication(
    make_harness: HarnessFactory, request_packet: ClientPacket
) -> None:
    harness: Harness = await make_harness(password=PASSWORD)
    peer = harness.peer("p")
    harness.send(peer, request_packet)
    (error,) = peer.messages
    assert error == ErrorPacket(
        "sc.server.network.UnauthenticatedException: "
        f"Request {request_packet.java_repr()} requires authentication",
        request_packet,
    )
    assert harness.lobby.rooms == {}


@pytest.mark.parametrize(
    ("packet", "fragment"),
    [
        (Prepare(GAME_TYPE, False, ()), "at least one"),
        (Prepare(GAME_TYPE, False, (SlotDescriptor("a", True, True),) * 3), "at most 2"),
        (Prepare("hase", False, (SlotDescriptor("a", True, True),)), GAME_TYPE),
        (CancelRequest(None), "roomId"),
        (Observe("missing"), "Couldn't find a room with id missing"),
        (PauseRequest("missing", True), "Couldn't find a room with id missing"),
        (StepRequest("missing", True), "Couldn't find a room with id missing"),
        (CancelRequest("missing"), "Couldn't find a room with id missing"),
        (JoinRoom(None), "Couldn't find a room with id null"),
        (JoinPrepared("nope"), "Couldn't find a reservation for the provided token."),
    ],
)
async def test_bad_admin_requests_get_a_clear_errorpacket(
    make_harness: HarnessFactory, packet: ClientPacket, fragment: str
) -> None:
    harness, admin = await admin_harness(make_harness)
    harness.send(admin, packet)
    (error,) = admin.messages
    assert isinstance(error, ErrorPacket)
    assert fragment in error.message
    assert error.original_request == packet
    assert harness.lobby.rooms == {}


async def test_prepare_gives_one_reservation_per_reserved_slot_in_order(
    make_harness: HarnessFactory,
) -> None:
    harness, admin = await admin_harness(make_harness)
    slots = (SlotDescriptor("supreme", False, True), SlotDescriptor("human", True, False))
    harness.send(admin, Prepare(None, False, slots))
    (prepared,) = admin.messages
    assert isinstance(prepared, Prepared)
    assert len(prepared.reservations) == 1
    # The unreserved slot 1 is open for joinRoom (and <join>); slot 0 stays kept.
    human = harness.peer("human")
    harness.send(human, JoinRoom(prepared.room_id))
    assert human.messages == [Joined(prepared.room_id)]
    supreme = harness.peer("supreme")
    harness.send(supreme, JoinPrepared(prepared.reservations[0]))
    assert supreme.of(WelcomeMessage) == [WelcomeMessage(prepared.room_id, Team.ONE)]
    assert human.of(WelcomeMessage) == [WelcomeMessage(prepared.room_id, Team.TWO)]
    # Prepared rooms send no joinedGameRoom.
    assert not admin.of(JoinedGameRoom)


async def test_reservations_map_to_their_slot_whatever_the_join_order(
    make_harness: HarnessFactory,
) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, second) = prepare(harness, admin)
    late, early = harness.peer("late"), harness.peer("early")
    harness.send(early, JoinPrepared(second))
    harness.send(late, JoinPrepared(first))
    assert early.of(WelcomeMessage) == [WelcomeMessage(room_id, Team.TWO)]
    assert late.of(WelcomeMessage) == [WelcomeMessage(room_id, Team.ONE)]
    assert late.messages[-1] == MoveRequest(room_id)


async def test_a_reservation_is_redeemed_once(make_harness: HarnessFactory) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, _) = prepare(harness, admin)
    one, copycat = harness.peer("one"), harness.peer("copycat")
    harness.send(one, JoinPrepared(first))
    harness.send(copycat, JoinPrepared(first))
    assert one.messages == [Joined(room_id)]
    (error,) = copycat.messages
    assert error == ErrorPacket(
        "sc.server.gaming.UnknownReservationException: "
        "Couldn't find a reservation for the provided token.",
        JoinPrepared(first),
    )


async def test_plain_join_never_takes_a_reserved_slot(make_harness: HarnessFactory) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, _ = prepare(harness, admin)
    joiner = harness.peer("joiner")
    harness.send(joiner, Join())
    assert joiner.of(Joined)[0].room_id != room_id


async def test_paused_prepared_game_with_step_and_unpause(make_harness: HarnessFactory) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, second) = prepare(harness, admin, pause=True)
    harness.send(admin, Observe(room_id))
    assert admin.messages[-1] == Observed(room_id)
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, JoinPrepared(first))
    harness.send(two, JoinPrepared(second))
    # Paused start: welcome to players, the first memento to observers only, no request.
    assert one.messages == [Joined(room_id), WelcomeMessage(room_id, Team.ONE)]
    initial = admin.last_state()
    assert admin.messages[-1:] == [Memento(room_id, initial)]

    harness.send(admin, StepRequest(room_id, False))
    assert one.messages[-2:] == [Memento(room_id, initial), MoveRequest(room_id)]
    assert two.messages[-1] == Memento(room_id, initial)
    assert admin.messages[-1:] == [Memento(room_id, initial)]

    harness.move(one, room_id, initial.legal_moves()[0])
    after = admin.last_state()
    assert after.turn == 1
    assert two.messages[-1] == Memento(room_id, initial)  # players wait for the next step
    assert not two.of(MoveRequest)

    harness.send(admin, PauseRequest(room_id, False))
    assert admin.messages[-2:] == [Paused(room_id, False), Memento(room_id, after)]
    assert two.messages[-2:] == [Memento(room_id, after), MoveRequest(room_id)]
    # Unpaused now: the next move goes straight on to ONE.
    harness.move(two, room_id, after.legal_moves()[0])
    assert one.messages[-1] == MoveRequest(room_id)


async def test_pause_while_a_request_is_pending_takes_effect_after_the_move(
    make_harness: HarnessFactory,
) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, second) = prepare(harness, admin)
    harness.send(admin, Observe(room_id))
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, JoinPrepared(first))
    harness.send(two, JoinPrepared(second))
    harness.send(admin, PauseRequest(room_id, True))
    assert admin.messages[-1] == Paused(room_id, True)
    harness.send(admin, PauseRequest(room_id, True))  # no change: ignored silently
    assert admin.messages[-1] == Paused(room_id, True)
    assert len(admin.of(Paused)) == 1
    state = one.last_state()
    harness.move(one, room_id, state.legal_moves()[0])
    assert admin.last_state().turn == 1
    assert two.last_state().turn == 0
    assert not two.of(MoveRequest)


async def test_step_on_a_running_game_is_ignored(make_harness: HarnessFactory) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, second) = prepare(harness, admin)
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, JoinPrepared(first))
    harness.send(two, JoinPrepared(second))
    before = list(one.messages)
    harness.send(admin, StepRequest(room_id, False))
    assert one.messages == before


async def test_forced_step_on_an_empty_prepared_room_ends_it_irregularly(
    make_harness: HarnessFactory,
) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, _) = prepare(harness, admin, pause=True)
    harness.send(admin, Observe(room_id))
    harness.send(admin, StepRequest(room_id, False))  # not forced: nothing happens
    assert admin.messages[-1] == Observed(room_id)
    harness.send(admin, StepRequest(room_id, True))
    result = admin.of(ResultMessage)[0].result
    assert result.winner is None
    assert not result.regular
    assert result.reason == "Alle Spieler hat das Spiel verlassen: NOT_CONNECTED"
    assert [score for _, score in result.scores] == [(0, 0), (0, 0)]
    await harness.settle()
    assert admin.messages[-1:] == [Left(room_id)]
    # The reservation died with the room.
    late = harness.peer("late")
    harness.send(late, JoinPrepared(first))
    assert isinstance(late.messages[0], ErrorPacket)


async def test_cancel_with_one_player_joined_lets_that_player_win(
    make_harness: HarnessFactory,
) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, _) = prepare(harness, admin)
    one = harness.peer("one")
    harness.send(one, JoinPrepared(first))
    harness.send(admin, CancelRequest(room_id))
    result = one.of(ResultMessage)[0].result
    assert result.winner is Team.ONE
    assert not result.regular
    assert result.reason == "b hat das Spiel verlassen: NOT_CONNECTED"
    entries = [entry for entry, _ in result.scores]
    assert entries[1].violation is not None
    assert entries[1].violation.kind is ViolationKind.LEFT
    await harness.settle()
    assert one.messages[-1] == Left(room_id)
    assert not admin.of(Left)  # the admin did not observe this room


async def test_cancel_of_a_running_game_scores_the_current_state(
    make_harness: HarnessFactory,
) -> None:
    harness, admin = await admin_harness(make_harness)
    harness.send(harness.peer("x"), Join())
    one, two = harness.peer("one"), harness.peer("two")
    room_id = next(iter(harness.lobby.rooms))
    harness.send(one, JoinRoom(room_id))
    harness.send(admin, CancelRequest(room_id))
    result = one.of(ResultMessage)[0].result
    # The start board is symmetric: a regular draw.
    assert result.regular
    assert result.winner is None
    assert result.reason == "Beide Spieler sind gleichauf"
    assert two.messages == []


async def test_forced_step_on_a_lone_join_room_gives_a_one_entry_result(
    make_harness: HarnessFactory,
) -> None:
    # backend 26.1.0 (§5.9): the room has one slot, so no violation and a regular tie.
    harness, admin = await admin_harness(make_harness)
    one = harness.peer("one")
    harness.send(one, Join())
    room_id = one.of(Joined)[0].room_id
    harness.send(admin, StepRequest(room_id, True))
    result = one.of(ResultMessage)[0].result
    assert len(result.scores) == 1
    assert result.regular and result.winner is None
    await harness.settle()
    assert one.messages[-1] == Left(room_id)


async def test_joined_game_room_goes_to_every_admin(make_harness: HarnessFactory) -> None:
    harness, admin = await admin_harness(make_harness)
    other_admin = harness.peer("admin2")
    harness.send(other_admin, Authenticate(PASSWORD))
    player = harness.peer("player")
    harness.send(player, Join())
    room_id = player.of(Joined)[0].room_id
    assert admin.messages == other_admin.messages == [JoinedGameRoom(room_id, 1)]


async def test_disconnected_observer_gets_nothing_more(make_harness: HarnessFactory) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, second) = prepare(harness, admin)
    harness.send(admin, Observe(room_id))
    harness.lobby.disconnect(admin, DisconnectCause.LOST_CONNECTION)
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, JoinPrepared(first))
    harness.send(two, JoinPrepared(second))
    assert admin.messages == [Prepared(room_id, (first, second)), Observed(room_id)]


async def test_player_leaving_a_half_joined_prepared_room_makes_nobody_win(
    make_harness: HarnessFactory,
) -> None:
    harness, admin = await admin_harness(make_harness)
    room_id, (first, _) = prepare(harness, admin)
    harness.send(admin, Observe(room_id))
    one = harness.peer("one")
    harness.send(one, JoinPrepared(first))
    harness.lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    result = admin.of(ResultMessage)[0].result
    assert result.winner is None
    assert not result.regular
    assert result.reason == "Alle Spieler hat das Spiel verlassen: LOST_CONNECTION"
    await harness.settle()
    assert admin.messages[-1] == Left(room_id)


async def test_a_step_while_a_move_is_awaited_sends_no_second_request(
    make_harness: HarnessFactory,
) -> None:
    # Issue 17 item 11: steps faster than the bot answers. 26.1.0 sends a moveRequest per step
    # and then charges the bot "not your turn" for answering the second one; here a step while
    # a move is awaited is ignored, so the bot is never charged for what the server did.
    harness, admin = await admin_harness(make_harness)
    room_id, (first, second) = prepare(harness, admin, pause=True)
    harness.send(admin, Observe(room_id))
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, JoinPrepared(first))
    harness.send(two, JoinPrepared(second))
    initial = admin.last_state()
    for _ in range(3):
        harness.send(admin, StepRequest(room_id, False))
    assert len(one.of(MoveRequest)) == 1
    assert len(one.of(Memento)) == len(two.of(Memento)) == 1  # one step's state, not three
    harness.move(one, room_id, initial.legal_moves()[0])
    assert admin.last_state().turn == 1
    assert not one.of(ResultMessage) and not one.of(ErrorPacket)
    # The next step asks TWO, once; then a pause-and-step while TWO thinks changes nothing.
    harness.send(admin, StepRequest(room_id, False))
    harness.send(admin, StepRequest(room_id, False))
    assert len(two.of(MoveRequest)) == 1
    harness.move(two, room_id, admin.last_state().legal_moves()[0])
    assert admin.last_state().turn == 2 and not two.of(ResultMessage)
    harness.send(admin, PauseRequest(room_id, False))  # unpaused: the game runs on
    assert len(one.of(MoveRequest)) == 2
    harness.send(admin, PauseRequest(room_id, True))  # takes effect after ONE's move
    harness.send(admin, StepRequest(room_id, False))  # ONE's request is still awaited
    assert len(one.of(MoveRequest)) == 2
    harness.move(one, room_id, admin.last_state().legal_moves()[0])
    assert admin.last_state().turn == 3 and not one.of(ResultMessage)
