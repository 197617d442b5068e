"""Complete games between two bots on the official Python client socha 4.3.9, through the
real server command over TCP. A socha game takes about 6 s of wall time (the client reads
one message per 0.1 s poll), so there are only two games here."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from engine import GameResult, Team
from protocol import GAME_TYPE
from protocol.events import Authenticate, Observe, Prepare, SlotDescriptor
from protocol.messages import Left, Memento, Observed, Prepared, ResultMessage, ServerMessage
from protocol.replay import read_replay
from tests.helpers.process import BIN, TEST_BOTS, environment, server_process
from tests.helpers.rawclient import RawClient

pytest.importorskip("socha")

pytestmark = pytest.mark.socha

BOT = TEST_BOTS / "random_bot.py"
GAME_LIMIT = 60  # seconds for one socha game, which normally takes about 6 s


async def run_bot(port: int, report: Path, seed: int, *extra: str) -> None:
    """Run the socha bot until it exits; it must exit with status 0."""
    env = environment()
    env["BOT_REPORT"] = str(report)
    env["BOT_SEED"] = str(seed)
    result = await trio.run_process(
        [sys.executable, str(BOT), "--host", "127.0.0.1", "--port", str(port), *extra],
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-3000:]


def read_report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return report


def assert_consistent_scores(players: list[dict[str, Any]], winner: str | None) -> None:
    """Siegpunkte of a regular two-player game: 2/0 with a winner, 1/1 on a tie."""
    points = {player["team"]: player["score"] for player in players}
    assert set(points) == {"ONE", "TWO"}
    if winner is None:
        assert points == {"ONE": 1, "TWO": 1}
    else:
        loser = Team[winner].opponent.name
        assert (points[winner], points[loser]) == (2, 0)


def assert_bot_saw_result(report: dict[str, Any], record: dict[str, Any]) -> None:
    assert report["left"] is True
    assert report["errors"] == []
    result = report["result"]
    assert result is not None
    assert result["winner"] == record["winner"]
    assert result["reason"] == record["reason"]
    assert result["regular"] is record["regular"]
    assert [(s["team"], s["parts"]) for s in result["scores"]] == [
        (p["team"], [p["score"], p["swarm"]]) for p in record["players"]
    ]


async def test_join_game_between_two_socha_bots(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    command = [str(BIN / "piranhas-server"), "--results", str(results)]
    with trio.fail_after(GAME_LIMIT):
        async with server_process(command, tmp_path) as server, trio.open_nursery() as nursery:
            nursery.start_soon(run_bot, server.port, tmp_path / "a.json", 1)
            nursery.start_soon(run_bot, server.port, tmp_path / "b.json", 2)

    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 1
    record = records[0]
    assert record["regular"] is True
    assert_consistent_scores(record["players"], record["winner"])
    reports = [read_report(tmp_path / name) for name in ("a.json", "b.json")]
    for report in reports:
        assert_bot_saw_result(report, record)
    # Every move of the game was requested from one of the two bots.
    assert sum(report["moves"] for report in reports) == record["turn"]


async def test_prepared_game_with_observer_and_replay(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    command = [
        sys.executable,
        "-m",
        "cli.server",
        "--password",
        "secret",
        "--results",
        str(results),
        "--saveReplay",
    ]
    with trio.fail_after(GAME_LIMIT):
        async with server_process(command, tmp_path) as server:
            admin = await RawClient.connect(server.port)
            slots = (SlotDescriptor("alice", True, True), SlotDescriptor("bob", True, True))
            await admin.send(Authenticate("secret"))
            await admin.send(Prepare(GAME_TYPE, False, slots))
            prepared = await admin.expect(Prepared)
            assert len(prepared.reservations) == 2
            await admin.send(Observe(prepared.room_id))
            assert await admin.receive() == Observed(prepared.room_id)

            observed: list[ServerMessage] = []
            async with trio.open_nursery() as nursery:
                for index, code in enumerate(prepared.reservations):
                    report = tmp_path / f"{index}.json"
                    nursery.start_soon(run_bot, server.port, report, index, "-r", code)
                while not observed or not isinstance(observed[-1], Left):
                    # The bots start meanwhile: only the game's limit bounds the wait.
                    observed.append(await admin.receive(timeout=GAME_LIMIT))
            await admin.aclose()

    room = prepared.room_id
    assert all(getattr(message, "room_id", room) == room for message in observed)
    result_messages = [m for m in observed if isinstance(m, ResultMessage)]
    assert len(result_messages) == 1
    result: GameResult = result_messages[0].result
    assert [(entry.name, entry.team) for entry, _ in result.scores] == [
        ("alice", Team.ONE),
        ("bob", Team.TWO),
    ]
    final_state = [m for m in observed if isinstance(m, Memento)][-1].state
    assert final_state.is_over

    (record,) = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert record["room"] == room
    assert [p["name"] for p in record["players"]] == ["alice", "bob"]
    assert record["winner"] == (result.winner.name if result.winner else None)
    assert_consistent_scores(record["players"], record["winner"])
    for index in range(2):
        assert_bot_saw_result(read_report(tmp_path / f"{index}.json"), record)

    # The replay has the official name and holds what the observer saw.
    (replay_path,) = (tmp_path / "replays").iterdir()
    assert replay_path.name.startswith("replay_swc_2026_piranhas_")
    assert replay_path.name.endswith("_alice_bob.xml")
    assert record["replay"] == str(replay_path)
    replay = read_replay(replay_path.read_bytes())
    assert replay.states[-1] == final_state
    assert replay.result == result
