"""The chaos clients: well-behaved bots, bad movers, stream breakers, slow readers, idlers,
pests and admins, and their weights in a run (BEHAVIOURS)."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable

import trio

from engine import Direction, GameResult, GameState, Move, Team
from protocol.events import (
    GAME_TYPE,
    Authenticate,
    CancelRequest,
    ClientPacket,
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
    ServerMessage,
)

# ---------------------------------------------------------------------------- players
from tests.server.chaos.world import MAX_PACKET, NAMES, PASSWORD, Bot, World


def legal_move(rng: random.Random, state: GameState) -> Move:
    moves = state.legal_moves()
    assert moves, f"a move was requested in a state without legal moves:\n{state}"
    return rng.choice(moves)


def illegal_move(rng: random.Random, state: GameState) -> Move:
    if rng.random() < 0.2:  # far off the board
        return Move(rng.choice([-1000, 10, 99, 2**31 - 1]), rng.randint(-50, 50), Direction.UP)
    while True:
        move = Move(rng.randint(-2, 11), rng.randint(-2, 11), rng.choice(list(Direction)))
        if state.check_move(move) is not None:
            return move


async def join(bot: Bot, rng: random.Random) -> bool:
    """Join a game (a fresh reservation code if there is one); False if none was joined."""
    world = bot.world
    if world.codes and rng.random() < 0.5:
        code = world.codes.pop(rng.randrange(len(world.codes)))
        if not await bot.send(JoinPrepared(code)):
            return False
        answer = await bot.until(lambda m: isinstance(m, Joined | ErrorPacket))
        world.used_codes.append(code)
        if isinstance(answer, Joined):
            return True
        if answer is None:
            assert world.stopping, f"{bot!r}: closed while joining"
            return False
        # The room expired or was cancelled meanwhile: its codes are gone.
        assert isinstance(answer, ErrorPacket), answer
        assert "Couldn't find a reservation" in answer.message, answer
    if not await bot.send(Join(rng.choice([None, GAME_TYPE]))):
        return False
    answer = await bot.until(lambda m: isinstance(m, Joined | ErrorPacket))
    if isinstance(answer, Joined):
        return True
    assert world.stopping, f"{bot!r}: join refused: {answer!r}"
    return False


async def play(bot: Bot, rng: random.Random, until: Callable[[ServerMessage], bool]) -> bool:
    """Answer every move request with a legal move until `until(message)`; False if the server
    ended the stream first. Only one move per turn: an admin's step may repeat a request."""
    strict = bot.kind != "greedy"  # its moves count for its first slot, whoever is asked
    while True:
        message = await bot.receive()
        if message is None:
            return False
        assert not (strict and isinstance(message, RoomError)), f"{bot!r}: legal moves refused"
        if isinstance(message, ErrorPacket) and strict:
            # Only a move that arrived after its game had ended may be refused.
            assert isinstance(message.original_request, MovePacket), message
            ended = {m.room_id for m in bot.messages if isinstance(m, ResultMessage)}
            assert message.original_request.room_id in ended, message
        if until(message):
            return True  # a request that ends the play is left for the caller to answer
        if isinstance(message, MoveRequest):
            room_id = message.room_id
            state = bot.states[room_id]
            team = bot.teams[room_id]
            assert state.current_team is team or bot.kind == "greedy", f"{bot!r}: not my turn"
            if bot.fresh_request(message):
                bot.moved[room_id] = state.turn
                if not await bot.send(MovePacket(room_id, legal_move(rng, state))):
                    return False


def all_left(bot: Bot) -> Callable[[ServerMessage], bool]:
    def done(message: ServerMessage) -> bool:
        return isinstance(message, Left) and left_everywhere(bot)

    return done


def left_everywhere(bot: Bot) -> bool:
    left = Counter(m.room_id for m in bot.messages if isinstance(m, Left))
    return all(left[room_id] >= n for room_id, n in Counter(bot.joined).items())


async def stay_to_the_end(bot: Bot, rng: random.Random) -> bool:
    """Play on until every room of the bot has ended; False if the server closed first."""
    return left_everywhere(bot) or await play(bot, rng, all_left(bot))


async def finish(bot: Bot, rng: random.Random) -> None:
    """Leave after the game: politely, abruptly, or by staying until the server stops."""
    choice = rng.random()
    if choice < 0.5:
        await bot.close_politely()
    elif choice < 0.8:
        await bot.abort()
    else:
        while await bot.receive() is not None:
            pass
        assert bot.cleanly_ended


async def good_bot(world: World, rng: random.Random) -> None:
    bot = await Bot.connect(world, "good")
    while True:
        if not await join(bot, rng):
            break
        if not await play(bot, rng, all_left(bot)):
            assert world.stopping, f"{bot!r}: the server closed a well-behaved bot"
            break
        if world.stop_spawning.is_set() or rng.random() < 0.5:
            break
    bot.check_rooms()
    await finish(bot, rng)


async def greedy_bot(world: World, rng: random.Random) -> None:
    """One connection in two slots (official: allowed; moves count for the first slot)."""
    bot = await Bot.connect(world, "greedy")
    for _ in range(2):
        if not await join(bot, rng):
            break
    if not await stay_to_the_end(bot, rng):
        assert world.stopping, f"{bot!r}: the server closed it"
        return
    bot.check_rooms()
    await finish(bot, rng)


async def bad_mover(world: World, rng: random.Random, kind: str) -> None:
    """Play legally for a while, then send one bad move; it must be answered with an error
    (or, for a move that came too late, the game ends with this bot's soft timeout)."""
    bot = await Bot.connect(world, kind)
    if not await join(bot, rng):
        return await bot.abort()
    room_id = bot.joined[0]
    good_moves = rng.randint(0, 6)

    def misbehave_now(message: ServerMessage) -> bool:
        return isinstance(message, Left) or (
            bot.fresh_request(message) and _count(bot) > good_moves
        )

    if not await play(bot, rng, misbehave_now):
        world.stats[f"{kind}:closed_first"] += 1
        return
    if isinstance(bot.messages[-1], Left):  # the game ended before the bot could misbehave
        world.stats[f"{kind}:ended_first"] += 1
        bot.check_rooms()
        return await finish(bot, rng)
    state = bot.states[room_id]
    team = bot.teams[room_id]
    if kind == "illegal":
        packets = [MovePacket(room_id, illegal_move(rng, state))]
        bad = packets[0]
    elif kind == "out_of_turn":
        # A legal move and at once another one: the second is not this bot's turn.
        after = state.apply(legal_move(rng, state))
        extra = rng.choice(after.legal_moves() or [Move(0, 0, Direction.UP)])
        packets = [MovePacket(room_id, legal_move(rng, state)), MovePacket(room_id, extra)]
        bad = packets[1]
    else:  # a move for a room it does not play in, then its own move
        other = rng.choice([r for r in world.rooms if r != room_id] or [str(uuid.uuid4())])
        bad = MovePacket(other, legal_move(rng, state))
        packets = [bad, MovePacket(room_id, legal_move(rng, state))]
    bot.moved[room_id] = state.turn
    if not await bot.send(*packets):
        assert world.stopping
        return

    def answered(message: ServerMessage) -> bool:
        if isinstance(message, RoomError):
            assert message.room_id == bad.room_id and message.original_move == bad.move, message
            return True
        if isinstance(message, ErrorPacket):
            if message.original_request != bad:  # the legal move sent with it came too late
                assert message.original_request in packets, message
                return False
            if kind != "foreign_move":
                # Refused because its game had ended: the result came first.
                assert bad.room_id in {
                    m.room_id for m in bot.messages if isinstance(m, ResultMessage)
                }
            return True
        if isinstance(message, ResultMessage) and kind == "illegal":
            # Too late: the move is not looked at, officially without an error.
            reason = message.result.reason
            mine = _name(message.result, team) or team.name
            return "laenger als" in reason and reason.startswith(mine)
        return False

    answer = await bot.until(answered)
    assert answer is not None or world.stopping, f"{bot!r}: no answer to the bad move {bad!r}"
    if isinstance(answer, RoomError):
        world.stats[f"{kind}:room_error"] += 1
        result = await bot.until(lambda m: isinstance(m, ResultMessage) and m.room_id == room_id)
        if result is not None:
            assert isinstance(result, ResultMessage)
            expected = "Regelverletzung" if kind == "illegal" else "Missachtung des Spielablaufs"
            assert result.result.reason.startswith(expected), result
            assert result.result.winner is team.opponent and not result.result.regular, result
    elif isinstance(answer, ErrorPacket):
        world.stats[f"{kind}:error_packet"] += 1
    elif answer is not None:
        world.stats[f"{kind}:too_late"] += 1
    if answer is None:
        return
    # The game goes on (foreign move) or ends; this bot stays to the end of its room.
    if await stay_to_the_end(bot, rng):
        bot.check_rooms()
        await finish(bot, rng)
    else:
        assert world.stopping, f"{bot!r}: the server closed it"


def _count(bot: Bot) -> int:
    return sum(1 for m in bot.messages if isinstance(m, MoveRequest))


def _name(result: GameResult, team: Team) -> str:
    for entry, _ in result.scores:
        if entry.team is team:
            return entry.name.strip()
    return ""


# ---------------------------------------------------------------------------- broken streams

# Each is refused at once with a protocol error (the connection is closed after an errorpacket).
GARBAGE = [
    b"<>/I-do/>NOT<CARE",
    b"<yarr/>",
    b"<move/>",
    b'<room roomId="x"><data class="bogus"/></room>',
    b'<room roomId="r"><data class="move"><from x="1" y="1"/><direction>NORTH</direction>'
    b"</data></room>",
    b'<room roomId="r"><data class="move"><from x="a" y="1"/><direction>UP</direction>'
    b"</data></room>",
    b"<join></joinx>",
    b'<join gameType="&undefined;"/>',
    b"<join>" + b"<x>" * 20,
    b'<join a="1" a="2"/>',
    b"<join>\xff\xfe</join>",
    b"\x00\x01\x02",
    b"\x1b[2J\x07",
]


# The same for the first bytes of a connection. (A first packet without `<protocol>` would be
# the root element itself: `<join/>` alone is a complete, empty document, as officially.)
FIRST_GARBAGE = [
    b"hello",
    b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello
    b"<!DOCTYPE protocol [<!ENTITY a 'b'>]><protocol>",
    b"\xff\xfe<\x00p\x00",
    b"<protocol><yarr/>",
    b"<protocol><protocol>",
]


def garbage(rng: random.Random, first: bool) -> bytes:
    if first:
        return rng.choice(FIRST_GARBAGE)
    if rng.random() < 0.3:
        # Binary garbage: with a byte XML allows nowhere. (Printable text between packets is
        # only judged when the next "<" comes: libxml2 holds character data back until then.)
        data = bytearray(rng.randbytes(rng.randint(0, 64)))
        data.insert(rng.randint(0, len(data)), rng.choice(b"\x00\x01\x08\x0b\x1b\x1f"))
        return bytes(data)
    return rng.choice(GARBAGE)


def huge(rng: random.Random, first: bool) -> bytes:
    # The limit bounds the bytes of an unfinished packet, checked per slice of the limit's
    # size: a packet is surely refused beyond twice the limit. (Not much more: the server
    # stops reading at the error, and unread bytes would make its close a reset.)
    size = rng.randint(2 * MAX_PACKET + 1, 3 * MAX_PACKET)
    prefix = b"<protocol>" if first else b""
    return prefix + rng.choice(
        [
            b'<join gameType="' + b"x" * size + b'"/>',
            b'<authenticate password="' + b"p" * size,
            b"<prepare>" + b'<slot displayName="n"/>' * (size // 20) + b"</prepare>",
            b"<join>" + b" " * size,
        ]
    )


PARTIAL = [b"<jo", b'<join gameType="swc_', b'<room roomId="', b"<authenticate password="]


async def stream_breaker(world: World, rng: random.Random, kind: str) -> None:
    """Misbehave on the byte level at a random point: before joining, after joining, mid-game,
    after the result, after <left>."""
    bot = await Bot.connect(world, kind)
    point = rng.choice(["connect", "protocol", "joined", "game", "result", "left"])
    if point == "protocol":
        await bot.send_raw(b"<protocol>")
    elif point != "connect":
        if not await join(bot, rng):
            return await bot.abort()
        stop_at: dict[str, Callable[[ServerMessage], bool]] = {
            "joined": lambda m: True,
            "game": lambda m: (
                isinstance(m, Left) or (isinstance(m, Memento) and rng.random() < 0.3)
            ),
            "result": lambda m: isinstance(m, ResultMessage),
            "left": lambda m: isinstance(m, Left),
        }
        if point != "joined" and not await play(bot, rng, stop_at[point]):
            return
    bad: dict[str, Callable[[random.Random, bool], bytes]] = {
        "garbage": garbage,
        "huge": huge,
        "truncated": lambda r, first: (b"<protocol>" if first else b"") + r.choice(PARTIAL),
        "half_written": lambda r, first: (b"<protocol>" if first else b"") + r.choice(PARTIAL),
    }
    if kind == "disconnect":
        how = rng.random()
        if how < 0.6:
            return await bot.abort()
        if how < 0.8 and point != "connect":
            await bot.send_raw(b"\n</protocol>")
        else:
            await bot.send_raw((b"" if point != "connect" else b"<protocol>") + b"<close/>")
        return await bot.abort()
    data = bad[kind](rng, point == "connect")
    sent = await bot.send_raw(data)
    if kind == "truncated":
        return await bot.abort()
    if kind == "half_written":
        # Silence: the server must still close it (idle timeout out of a room, or shutdown),
        # after the result and <left> of a game it was in.
        while await bot.receive() is not None:
            pass
        assert bot.cleanly_ended, f"{bot!r}: {bytes(bot.raw[-80:])!r}"
        bot.check_rooms()
        return
    # garbage / huge: an errorpacket saying what was wrong, nothing after it, </protocol>.
    assert sent or world.stopping, f"{bot!r}: the server cut the connection before the error"
    # (An errorpacket for a move that came after its game had ended may come first.)
    error = await bot.until(lambda m: isinstance(m, ErrorPacket) and m.original_request is None)
    if error is None:
        assert world.stopping, f"{bot!r} at {point}: no errorpacket for {data[:60]!r}"
        return
    assert isinstance(error, ErrorPacket) and error.original_request is None and error.message
    world.stats[f"{kind}:errorpacket"] += 1
    trailing = await bot.receive()
    assert trailing is None, f"{bot!r}: {trailing!r} after the protocol error"
    assert bot.cleanly_ended, f"{bot!r}: {bytes(bot.raw[-80:])!r}"


async def slow_reader(world: World, rng: random.Random) -> None:
    """Never reads: as a player (times out) or as an admin observing busy rooms."""
    bot = await Bot.connect(world, "slow_reader", receive_buffer=4096)
    if rng.random() < 0.4:
        await bot.send(Join())
    else:
        packets: list[ClientPacket] = [Authenticate(PASSWORD)]
        packets += [Observe(room) for room in world.rooms[-20:]]
        await bot.send(*packets)
    with trio.move_on_after(rng.uniform(0.2, 3.0)):
        await world.stop_spawning.wait()
    await bot.abort()


async def idler(world: World, rng: random.Random) -> None:
    """Connects and falls silent (maybe after a refused request) for a random while: its
    connection must stay open and usable, since it never reaches the idle timeout."""
    bot = await Bot.connect(world, "idler")
    if rng.random() < 0.5 and not await ask_refused(bot, JoinRoom(str(uuid.uuid4()))):
        return
    with trio.move_on_after(rng.uniform(0.2, 3.0)):
        await world.stop_spawning.wait()
    if await ask_refused(bot, JoinRoom(str(uuid.uuid4()))):
        world.stats["idler:still_open"] += 1
        await bot.close_politely()


async def ask_refused(bot: Bot, request: ClientPacket) -> bool:
    """Send a request the server must refuse; its errorpacket must echo it. False if the
    connection was closed (allowed only while the server stops)."""
    if await bot.send(request):
        answer = await bot.receive()
        if answer is not None:
            assert isinstance(answer, ErrorPacket), f"{bot!r}: {answer!r} for {request!r}"
            assert answer.original_request == request, (answer, request)
            return True
    assert bot.world.stopping, f"{bot!r}: an idle connection was closed"
    return False


# ---------------------------------------------------------------------------- admins and pests


def refused_requests(world: World, rng: random.Random, admin: bool) -> list[ClientPacket]:
    """Requests the server must refuse with an errorpacket, the connection staying open."""
    unknown = str(uuid.uuid4())
    options: list[ClientPacket] = [
        JoinPrepared(str(uuid.uuid4())),
        JoinPrepared(None),
        Join("swc_2025_unknown"),
        JoinRoom(unknown),
        MovePacket(unknown, Move(0, 1, Direction.RIGHT)),
        Authenticate("wrong"),
    ]
    if world.used_codes:
        options.append(JoinPrepared(rng.choice(world.used_codes)))
    if admin:
        options += [
            Observe(unknown),
            PauseRequest(unknown, rng.random() < 0.5),
            StepRequest(unknown, rng.random() < 0.5),
            CancelRequest(unknown),
            CancelRequest(None),
            Prepare("swc_2025_unknown", False, (SlotDescriptor("a", True, True),)),
            Prepare(None, False, ()),
            Prepare(None, False, (SlotDescriptor("a", True, True),) * 3),
        ]
    else:
        room = rng.choice(world.rooms) if world.rooms else unknown
        options += [
            Observe(room),
            PauseRequest(room, False),
            StepRequest(room, True),
            CancelRequest(room),
            Prepare(None, True, (SlotDescriptor("a", True, True),)),
        ]
    return [rng.choice(options) for _ in range(rng.randint(1, 6))]


async def pest(world: World, rng: random.Random) -> None:
    """Refused requests, each answered by an errorpacket echoing it, in order; then it leaves
    or, its connection unharmed, plays a game."""
    bot = await Bot.connect(world, "pest")
    requests = refused_requests(world, rng, admin=False)
    if not await bot.send(*requests):
        assert world.stopping
        return
    for request in requests:
        answer = await bot.receive()
        if answer is None:
            assert world.stopping, f"{bot!r}: closed after {request!r}"
            return
        assert isinstance(answer, ErrorPacket), f"{bot!r}: {answer!r} for {request!r}"
        assert answer.original_request == request, (answer, request)
        world.stats["pest:errorpacket"] += 1
    if rng.random() < 0.4 and await join(bot, rng):
        if await play(bot, rng, all_left(bot)):
            bot.check_rooms()
        else:
            assert world.stopping
            return
    await finish(bot, rng)


async def admin(world: World, rng: random.Random) -> None:
    """Logs in (maybe after a wrong password), prepares rooms, observes, pauses, steps and
    cancels at random, and sends requests that must be refused; reads all the time."""
    bot = await Bot.connect(world, "admin")
    refused: list[ClientPacket] = []
    if rng.random() < 0.3:
        refused.append(Authenticate("not-the-password"))
    prepared: list[str] = []
    requests = [*refused, Authenticate(PASSWORD)]
    if not await bot.send(*requests):
        return
    deadline = trio.current_time() + rng.uniform(0.3, 3.0)

    async def act() -> None:
        while trio.current_time() < deadline and not world.stop_spawning.is_set():
            await trio.sleep(rng.uniform(0.005, 0.08))
            if world.stop_spawning.is_set():
                break
            rooms = prepared + world.rooms[-30:]
            action = rng.random()
            packets: list[ClientPacket]
            if action < 0.25 or not rooms:
                slots = tuple(
                    SlotDescriptor(rng.choice(NAMES), rng.random() < 0.8, rng.random() < 0.8)
                    for _ in range(rng.choice([1, 2, 2, 2]))
                )
                packets = [Prepare(rng.choice([None, GAME_TYPE]), rng.random() < 0.5, slots)]
            elif action < 0.45:
                packets = [Observe(rng.choice(rooms))]
            elif action < 0.6:
                packets = [PauseRequest(rng.choice(rooms), rng.random() < 0.4)]
            elif action < 0.8:
                packets = [StepRequest(rng.choice(rooms), rng.random() < 0.3)]
            elif action < 0.87:
                packets = [CancelRequest(rng.choice(rooms))]
            else:
                packets = refused_requests(world, rng, admin=True)
                refused.extend(packets)
            requests.extend(packets)
            if not await bot.send(*packets):
                return

    async def read() -> None:
        while (message := await bot.receive()) is not None:
            if isinstance(message, Prepared):
                prepared.append(message.room_id)
                world.codes.extend(message.reservations)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await act()
        if rng.random() < 0.7:
            await bot.send(CloseRequest())
        else:
            await bot.abort()
    if not bot.cleanly_ended:
        return  # aborted by itself: what it was sent last is unknown
    # Every request that had to be refused was, with an errorpacket echoing it; any other
    # errorpacket echoes a request about a room that has ended meanwhile.
    if world.stopping:
        return  # requests may have met the shutdown
    errors = [m for m in bot.messages if isinstance(m, ErrorPacket)]
    echoed = Counter(e.original_request for e in errors)
    for request, count in Counter(refused).items():
        assert echoed[request] >= count, f"{bot!r}: {request!r} was not refused"
    for error in errors:
        assert error.original_request in requests, error
        if error.original_request not in refused:
            assert "Couldn't find a room" in error.message, error
    world.stats["admin:errorpacket"] += len(errors)
    prepares = sum(1 for r in requests if isinstance(r, Prepare) and r not in refused)
    assert sum(1 for m in bot.messages if isinstance(m, Prepared)) == prepares
    kinds = {type(m) for m in bot.messages}
    allowed = {
        ErrorPacket,
        Prepared,
        Observed,
        Memento,
        Paused,
        RoomError,
        ResultMessage,
        Left,
        JoinedGameRoom,
        CloseConnection,
    }
    assert kinds <= allowed, kinds - allowed


BEHAVIOURS: list[tuple[float, Callable[[World, random.Random], Awaitable[None]]]] = [
    (5, good_bot),
    (1, greedy_bot),
    (2, lambda w, r: bad_mover(w, r, "illegal")),
    (1.5, lambda w, r: bad_mover(w, r, "out_of_turn")),
    (1, lambda w, r: bad_mover(w, r, "foreign_move")),
    (1.5, lambda w, r: stream_breaker(w, r, "garbage")),
    (1, lambda w, r: stream_breaker(w, r, "huge")),
    (1, lambda w, r: stream_breaker(w, r, "truncated")),
    (1, lambda w, r: stream_breaker(w, r, "half_written")),
    (2, lambda w, r: stream_breaker(w, r, "disconnect")),
    (1, slow_reader),
    (1.5, admin),
    (1.5, pest),
    (1, idler),
]
