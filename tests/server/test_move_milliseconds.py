"""A move's milliseconds and its log text, made without `round` and `str` (server/game.py):
the same float and the same text as those builtins give."""

from __future__ import annotations

import math
import random

import structlog
import trio

from engine import Direction, Move
from protocol.events import MovePacket
from server import game
from server.game import move_milliseconds
from tests.helpers.lobby import HarnessFactory, start_game


def _same(a: float, b: float) -> bool:
    """Equal as floats go: the same bits (the sign of a zero, NaN with NaN)."""
    return a.hex() == b.hex() or (math.isnan(a) and math.isnan(b))


def _elapsed_values() -> list[float]:
    """Times a move may take (seconds): random ones over many magnitudes, the neighbours of
    ties (a half thousandth of a millisecond, where `x * 1000` rounds), and the odd ones."""
    rng = random.Random(2026)
    values = [0.0, -0.0, 5e-324, 1e-300, 1e-9, 0.0005, 0.0015, 0.0025, 1e9, 1.1e9, 1e12]
    values += [-0.25, -1e-7, math.inf, -math.inf, math.nan, 2.0**40, 2.0**52, 1e300]
    for _ in range(60_000):
        values.append(rng.random() * 10.0 ** rng.randint(-8, 7))
    for _ in range(30_000):
        # x thousandths and a half: the tie of round(x, 3), and the floats around it.
        thousandths = rng.randint(0, 10 ** rng.randint(1, 12))
        tie = (thousandths + 0.5) / 1e6  # seconds, so that elapsed * 1000 is near the tie
        values.append(tie)
        below = above = tie
        for _ in range(3):
            below = math.nextafter(below, -math.inf)
            above = math.nextafter(above, math.inf)
            values += [below, above]
    for _ in range(20_000):
        # Differences of two readings of a clock, as Room.move makes them.
        start = rng.uniform(0.0, 1e6)
        values.append((start + rng.expovariate(100.0)) - start)
    return values


def test_move_milliseconds_is_round_to_three_decimals() -> None:
    for elapsed in _elapsed_values():
        expected = round(elapsed * 1000, 3)
        assert _same(move_milliseconds(elapsed), expected), (elapsed, expected)


def test_move_milliseconds_takes_the_fast_way_for_usual_times() -> None:
    """The comparison above would pass with `round` itself: the usual times must not reach it."""
    calls = 0
    real_round = round

    def counting_round(number: float, ndigits: int) -> float:
        nonlocal calls
        calls += 1
        return real_round(number, ndigits)

    game.round = counting_round  # type: ignore[attr-defined]
    try:
        assert move_milliseconds(0.123456789) == 123.457
        assert move_milliseconds(0.0421) == 42.1
        assert calls == 0
        assert move_milliseconds(2.5e-6) == 0.003 and calls == 1  # x * 1000 is 2.5 exactly
        assert move_milliseconds(0.0) == 0.0 and calls == 2  # a zero keeps round's sign
    finally:
        del game.round  # type: ignore[attr-defined]


class _OwnText(Move):
    """A Move with a text of its own (none is made in the server; the cache must not hide it)."""

    def __str__(self) -> str:
        return f"own {self.x} {self.y}"


async def test_a_moves_log_line_has_its_official_text(make_harness: HarnessFactory) -> None:
    """The logged move is `str(move)` on the first and on later moves of the same fields (the
    cache), and a Move subclass's own text is logged, not the cached one."""
    game._MOVE_TEXTS.clear()
    sent: list[Move] = []
    with structlog.testing.capture_logs() as logs:
        for _ in range(2):
            harness, one, two, room_id = await start_game(make_harness)
            for peer in (one, two, one):
                move = peer.last_state().legal_moves()[0]
                sent.append(move)
                harness.move(peer, room_id, move)
        harness, one, two, room_id = await start_game(make_harness)
        first = one.last_state().legal_moves()[0]
        move = _OwnText(first.x, first.y, first.direction)
        sent.append(move)
        harness.lobby.handle(one, MovePacket(room_id, move), trio.current_time())
    logged = [entry["move"] for entry in logs if entry["event"] == "move"]
    assert logged == [str(move) for move in sent]
    assert logged[0] == logged[3] and logged[0].startswith("Schwimme von [")
    assert logged[-1] == f"own {first.x} {first.y}"
    assert game._MOVE_TEXTS[(first.x, first.y, first.direction._name_)] == str(first)


def test_the_move_text_cache_is_bounded() -> None:
    game._MOVE_TEXTS.clear()
    for x in range(game._MOVE_TEXTS_SIZE + 10):
        key = (x, 0, "UP")
        assert game._move_text(key, Move(x, 0, Direction.UP)) == str(Move(x, 0, Direction.UP))
        assert len(game._MOVE_TEXTS) <= game._MOVE_TEXTS_SIZE
