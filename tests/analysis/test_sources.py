"""analysis.sources and piranhas-analyze (cli/analyze.py): every input kind, clear errors for
anything else, and the outputs."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
import trio

from analysis import Game
from analysis.sources import SourceError, load, observe_room
from cli import analyze
from client import ClientSession
from engine import GameState, Move, PlayerEntry, Team, game_result
from league.records import record_game, write_record
from protocol.messages import Memento, ResultMessage
from protocol.replay import write_replay
from tests.helpers.server import PASSWORD, running_server


def random_game(moves: int | None = None) -> tuple[list[GameState], list[Move]]:
    rng = random.Random(5)
    state = GameState.initial(17)
    states: list[GameState] = [state]
    played: list[Move] = []
    while not state.is_over and (moves is None or len(played) < moves):
        move = rng.choice(state.legal_moves())
        state = state.apply(move)
        states.append(state)
        played.append(move)
    return states, played


def replay_bytes() -> bytes:
    states, _ = random_game()
    entries = [PlayerEntry(Team.ONE, "alpha"), PlayerEntry(Team.TWO, "beta")]
    result = game_result(states[-1], entries)
    packets = [Memento("r", state) for state in states]
    return write_replay("r", [*packets, ResultMessage("r", result)])


def record(path: Path) -> Path:
    states, moves = random_game()
    entries = [PlayerEntry(Team.ONE, "alpha"), PlayerEntry(Team.TWO, "beta")]
    data = write_record(
        record_game(
            league="L",
            round=1,
            match=1,
            number=1,
            date="2026-12-01T00:00:00Z",
            seed=17,
            team_ids=["a", "b"],
            moves=moves,
            move_ms=[],
            result=game_result(states[-1], entries),
        )
    )
    path.write_bytes(data)
    return path


def test_a_replay_plain_or_gzip_and_a_record_give_the_same_game(tmp_path: Path) -> None:
    plain = tmp_path / "game.xml"
    plain.write_bytes(replay_bytes())
    packed = tmp_path / "game.xml.gz"
    packed.write_bytes(gzip.compress(replay_bytes()))
    [a], [b], [c] = load(plain), load(packed), load(record(tmp_path / "r1.xml"))
    assert a.game.moves == b.game.moves == c.game.moves
    assert a.game.names == ("alpha", "beta") == c.game.names
    assert c.record_bytes is not None and a.record_bytes is None


def test_an_ndjson_stream_without_replays_is_refused_with_the_reason(tmp_path: Path) -> None:
    stream = tmp_path / "run.ndjson"
    stream.write_text(
        json.dumps({"event": "run_start"})
        + "\n"
        + json.dumps({"event": "game_end", "game": 1, "replay": None})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(SourceError, match=r"hold no moves.*--save-replay"):
        load(stream)
    (tmp_path / "g1.xml").write_bytes(replay_bytes())
    stream.write_text(
        json.dumps({"event": "game_end", "game": 1, "replay": "g1.xml"}) + "\n", encoding="utf-8"
    )
    [loaded] = load(stream)
    assert loaded.game.label == "game 1" and loaded.game.moves


def test_anything_else_gets_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello", encoding="utf-8")
    with pytest.raises(SourceError, match="not an official replay"):
        load(other)
    with pytest.raises(SourceError, match="cannot read"):
        load(tmp_path / "missing.xml")
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"<protocol>" + b" " * (17 * 1024 * 1024)))
    with pytest.raises(SourceError, match="decompressed"):
        load(bomb)
    broken = tmp_path / "broken.xml"
    broken.write_bytes(replay_bytes()[:-200])
    with pytest.raises(SourceError, match="not a readable replay"):
        load(broken)


def test_the_command_writes_json_a_plain_table_and_annotated_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = record(tmp_path / "r1.xml")
    out = tmp_path / "out"
    out.mkdir()
    arguments = [str(path), "--nodes", "1000", "--quiet"]
    assert analyze.main([*arguments, "--format", "json", "--annotate", str(out)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["players"] == {"ONE": "alpha", "TWO": "beta"}
    assert document["sides"]["ONE"]["blunders"] > 0  # random moves
    assert (out / "r1.xml").read_bytes().count(b"<analysis ") == len(document["moves"]) + 3
    assert analyze.main(arguments) == 0
    table = capsys.readouterr().out
    assert "??" in table and "accuracy" in table and "turning point" in table
    suite = tmp_path / "suite.json"
    assert analyze.main([*arguments, "--format", "ndjson", "--export-positions", str(suite)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line) == document
    positions = json.loads(suite.read_text(encoding="utf-8"))["positions"]
    loser = "TWO" if document["winner"] == "ONE" else "ONE"
    assert positions and all(p["side"] == loser and p["mark"] in ("?", "??") for p in positions)
    assert analyze.main([*arguments, str(tmp_path / "nothing.xml")]) == 1
    assert "nothing.xml: cannot read" in capsys.readouterr().err
    assert analyze.main([str(path), "--nodes", "5"]) == 2
    assert analyze.main([]) == 2


async def test_a_room_the_server_is_playing_is_observed_and_analysed() -> None:
    states, _ = random_game(50)
    rng = random.Random(1)
    found: list[Game] = []
    with trio.fail_after(60):
        async with running_server(paused=True, start_state=states[-1]) as server:
            one = ClientSession(await trio.open_tcp_stream("127.0.0.1", server.port))
            two = ClientSession(await trio.open_tcp_stream("127.0.0.1", server.port))
            room = (await one.join()).room_id
            await two.join()

            async def choose(state: GameState) -> Move:
                return rng.choice(state.legal_moves())

            async def watch(task_status: trio.TaskStatus[None]) -> None:
                found.append(
                    await observe_room(
                        "127.0.0.1", server.port, PASSWORD, room, task_status=task_status
                    )
                )

            async with trio.open_nursery() as nursery:
                nursery.start_soon(one.play, choose)
                nursery.start_soon(two.play, choose)
                await nursery.start(watch)
                admin = ClientSession(await trio.open_tcp_stream("127.0.0.1", server.port))
                await admin.authenticate(PASSWORD)
                await admin.pause(room, False)
            for session in (one, two, admin):
                await session.aclose()
    [game] = found
    assert game.label == f"room {room}"
    assert game.start.turn >= 50 and game.moves
    assert game.states()[-1].is_over
    with pytest.raises(SourceError, match="cannot connect"):
        await observe_room("127.0.0.1", 1, None, room)
