"""Game records: XML round trip, verification by replay, conversion to official replays."""

from __future__ import annotations

import dataclasses
import random

import pytest

from engine import (
    Direction,
    GameState,
    InvalidMoveError,
    Move,
    PlayerEntry,
    Team,
    Violation,
    ViolationKind,
    game_result,
)
from league.records import (
    GameRecord,
    RecordError,
    RecordMove,
    read_record,
    record_game,
    refused_move,
    to_replay,
    verify,
    write_record,
)
from protocol.messages import Memento, RoomError
from protocol.replay import read_replay

SEED = 4242
NAMES = ("Die Haie", "Flinke Barsche")


def play(seed: int, moves: int | None = None) -> tuple[GameState, list[Move]]:
    """A deterministic random game from the seeded board: to the end, or `moves` moves."""
    rng = random.Random(seed)
    state = GameState.initial(SEED)
    played: list[Move] = []
    while not state.is_over and (moves is None or len(played) < moves):
        move = rng.choice(state.legal_moves())
        state = state.apply(move)
        played.append(move)
    return state, played


def make_record(
    moves: list[Move],
    state: GameState,
    violations: tuple[Violation | None, Violation | None] = (None, None),
) -> GameRecord:
    entries = [
        PlayerEntry(Team.ONE, NAMES[0], violations[0]),
        PlayerEntry(Team.TWO, NAMES[1], violations[1]),
    ]
    return record_game(
        league="Schulliga",
        round=2,
        match=5,
        number=3,
        date="2026-11-30T14:00:00Z",
        seed=SEED,
        team_ids=["haie", "barsche"],
        moves=moves,
        move_ms=[12.5 + i for i in range(len(moves))],
        result=game_result(state, entries),
    )


@pytest.fixture
def finished_record() -> GameRecord:
    state, moves = play(1)
    return make_record(moves, state)


def test_round_trip(finished_record: GameRecord) -> None:
    data = write_record(finished_record)
    assert data.startswith(b"<?xml version='1.0' encoding='UTF-8'?>\n<game>\n  <header>")
    assert b"<name>Die Haie</name>" in data and b"<ms>12.5</ms>" in data
    assert read_record(data) == finished_record


def test_penalties_round_trip() -> None:
    state, moves = play(2, moves=7)
    record = make_record(moves, state, (None, Violation(ViolationKind.SOFT_TIMEOUT, "")))
    data = write_record(record)
    assert b'<penalty kind="SOFT_TIMEOUT"' in data
    again = read_record(data)
    assert again == record
    assert again.players[1].penalty == Violation(ViolationKind.SOFT_TIMEOUT, "")


def test_a_correct_record_verifies(finished_record: GameRecord) -> None:
    assert finished_record.result.regular
    assert verify(finished_record) == []
    assert verify(read_record(write_record(finished_record))) == []


def test_a_timeout_ends_the_game_and_verifies() -> None:
    state, moves = play(3, moves=9)
    record = make_record(moves, state, (Violation(ViolationKind.HARD_TIMEOUT, ""), None))
    assert record.result.winner is Team.TWO and record.result.scores[0] == (0, 0)
    assert verify(record) == []


def test_a_changed_score_is_reported(finished_record: GameRecord) -> None:
    (sp_one, swarm_one), two = finished_record.result.scores
    tampered = dataclasses.replace(
        finished_record,
        result=dataclasses.replace(finished_record.result, scores=((sp_one, swarm_one + 3), two)),
    )
    [discrepancy] = verify(read_record(write_record(tampered)))
    assert discrepancy.item == "Schwarmgröße of ONE"
    assert (discrepancy.recorded, discrepancy.correct) == (str(swarm_one + 3), str(swarm_one))
    assert discrepancy.game == "match 5 game 3"


def test_a_swapped_winner_is_reported(finished_record: GameRecord) -> None:
    result = finished_record.result
    assert result.winner is not None
    swapped = dataclasses.replace(
        result,
        scores=tuple(reversed(result.scores)),
        winner=result.winner.opponent,
    )
    items = {d.item for d in verify(dataclasses.replace(finished_record, result=swapped))}
    assert {"Siegpunkte of ONE", "Siegpunkte of TWO", "winner"} <= items


def test_a_changed_move_is_reported(finished_record: GameRecord) -> None:
    # Move 4 replaced by a move that is illegal on the board of that moment.
    state, _ = play(1, moves=3)
    illegal = next(
        Move(x, y, d)
        for y in range(10)
        for x in range(10)
        for d in Direction
        if state.check_move(Move(x, y, d)) is not None
    )
    moves = list(finished_record.moves)
    moves[3] = RecordMove(illegal, 5.0)
    tampered = dataclasses.replace(finished_record, moves=tuple(moves))
    [discrepancy] = verify(read_record(write_record(tampered)))
    assert discrepancy.item == "move 4"
    assert discrepancy.correct.startswith("illegal: ")


def test_a_different_legal_move_changes_what_follows(finished_record: GameRecord) -> None:
    state, _ = play(1, moves=2)
    alternative = next(m for m in state.legal_moves() if m != finished_record.moves[2].move)
    moves = list(finished_record.moves)
    moves[2] = RecordMove(alternative, None)
    assert verify(dataclasses.replace(finished_record, moves=tuple(moves))) != []


def test_a_rule_violation_as_the_last_move_verifies() -> None:
    state, moves = play(4, moves=6)
    bad = Move(0, 0, Direction.DOWN_LEFT)  # a corner: never a fish of the mover, or off the board
    mistake = state.check_move(bad)
    assert mistake is not None
    detail = str(InvalidMoveError(mistake, bad))
    violation = Violation(ViolationKind.RULE_VIOLATION, detail)
    record = make_record([*moves, bad], state, (violation, None))  # turn 6: ONE moves
    assert record.result.winner is Team.TWO
    assert verify(record) == []
    # The same record claiming a different mistake is reported, with the correct text.
    claimed = Violation(ViolationKind.RULE_VIOLATION, "x")
    wrong_player = dataclasses.replace(record.players[0], penalty=claimed)
    wrong = dataclasses.replace(record, players=(wrong_player, record.players[1]))
    found = verify(wrong)
    assert [d.item for d in found] == ["penalty of ONE"]
    assert found[0].correct == detail


def test_a_rule_violation_without_an_illegal_move_is_reported() -> None:
    state, moves = play(5, moves=6)
    record = make_record(moves, state, (Violation(ViolationKind.RULE_VIOLATION, "made up"), None))
    items = [d.item for d in verify(record)]
    assert "penalty of ONE" in items
    assert "end" in items  # without that penalty the game was not over
    assert "regular" in items  # the violation made it irregular; the moves do not


def test_an_unfinished_game_with_a_regular_result_is_reported() -> None:
    state, moves = play(6, moves=10)
    assert not state.is_over
    items = [d.item for d in verify(make_record(moves, state))]
    assert items[0] == "end"


def test_moves_after_the_end_are_reported(finished_record: GameRecord) -> None:
    extra = RecordMove(finished_record.moves[-1].move, None)
    record = dataclasses.replace(finished_record, moves=(*finished_record.moves, extra))
    [discrepancy] = verify(record)
    assert discrepancy.item == f"move {len(record.moves)}"


def test_records_convert_to_official_replays(finished_record: GameRecord) -> None:
    replay = read_replay(to_replay(finished_record))
    final, moves = play(1)
    assert len(replay.states) == len(moves) + 1
    assert replay.states[0] == GameState.initial(SEED)
    assert replay.states[-1] == final
    assert replay.result is not None
    assert [score for _, score in replay.result.scores] == list(finished_record.result.scores)
    assert [entry.name for entry, _ in replay.result.scores] == list(NAMES)
    assert replay.result.reason == finished_record.result.reason
    assert replay.result.winner is finished_record.result.winner


def test_a_rule_violation_replay_carries_the_room_error() -> None:
    state, moves = play(4, moves=6)
    bad = Move(0, 0, Direction.DOWN_LEFT)
    mistake = state.check_move(bad)
    assert mistake is not None
    violation = Violation(ViolationKind.RULE_VIOLATION, str(InvalidMoveError(mistake, bad)))
    data = to_replay(make_record([*moves, bad], state, (violation, None)))
    assert b'class="error"' in data
    replay = read_replay(data)
    assert replay.states[-1] == state
    assert replay.result is not None and replay.result.winner is Team.TWO
    assert not replay.result.regular


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"<game>", "not well-formed"),
        (b"<partie/>", "<partie>"),
        (b"<game><player/></game>", "no <header>"),
        (b"<!DOCTYPE game [<!ENTITY x SYSTEM 'file:///etc/passwd'>]><game>&x;</game>", "header"),
    ],
)
def test_broken_records_are_refused(data: bytes, words: str) -> None:
    with pytest.raises(RecordError, match=words):
        read_record(data)


def test_broken_fields_name_their_line(finished_record: GameRecord) -> None:
    data = write_record(finished_record).replace(b"<direction>", b"<direction>SIDEWAYS", 1)
    with pytest.raises(RecordError, match=r"line \d+: unknown direction"):
        read_record(data)
    data = write_record(finished_record).replace(b"<seed>4242", b"<seed>lots", 1)
    with pytest.raises(RecordError, match=r"line 9: <seed> is not an integer"):
        read_record(data)


def test_the_documented_example_reads() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "game-records.md").read_text()
    example = text.split("```xml\n", 1)[1].split("```", 1)[0]
    record = read_record(example.encode())
    assert (record.league, record.round, record.match, record.number) == (
        "Schulliga Piranhas 2026", 3, 7, 2
    )  # fmt: skip
    assert record.seed == 8123456789
    assert [p.team_id for p in record.players] == ["barsche", "haie"]
    assert len(record.moves) == 3 and record.moves[0].ms == 171.386
    assert record.result.scores == ((2, 12), (0, 5))
    assert record.result.winner is Team.ONE


def test_the_refused_move_comes_from_the_room_error_of_a_rule_violation() -> None:
    state, moves = play(1, moves=6)
    mover = state.current_team
    illegal = next(
        Move(x, y, direction)
        for y in range(10)
        for x in range(10)
        for direction in Direction
        if state.check_move(Move(x, y, direction)) is not None
    )
    error = InvalidMoveError(state.check_move(illegal), illegal)  # type: ignore[arg-type]
    violation = Violation(ViolationKind.RULE_VIOLATION, str(error))
    violations = (violation, None) if mover is Team.ONE else (None, violation)
    entries = [
        PlayerEntry(Team.ONE, NAMES[0], violations[0]),
        PlayerEntry(Team.TWO, NAMES[1], violations[1]),
    ]
    result = game_result(state, entries)
    packets = [Memento("r", state), RoomError("r", "Ungueltiger Zug", illegal)]
    assert refused_move(result, packets) == illegal
    record = make_record([*moves, illegal], state, violations)
    assert verify(record) == []
    assert verify(make_record(moves, state, violations))  # without it: a discrepancy
    no_violation = game_result(state, [PlayerEntry(Team.ONE, "a"), PlayerEntry(Team.TWO, "b")])
    assert refused_move(no_violation, packets) is None
