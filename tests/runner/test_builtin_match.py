"""Built-in bots through the runner: `piranhas-bot` over the SC protocol (client.ClientSession),
`--player1 builtin:NAME`, and strength ordering search > greedy > random with statistical
significance, measured by the runner itself."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from cli.bot import main as bot_main
from launching import MatchError
from runner.options import parse_options
from server.config import Settings
from tests.helpers.process import environment
from tests.runner.test_match import game_lines, run_match

pytestmark = pytest.mark.timeout(120)


def final_stats(path: Path) -> dict[str, Any]:
    end = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert end["event"] == "run_end" and end["status"] == "done"
    stats: dict[str, Any] = end["stats"]
    return stats


def test_builtin_player_commands() -> None:
    options = parse_options(
        ["--player1", "builtin:search --budget 0.2", "--player2", "builtin:random"], threads=2
    )
    assert options.commands[0] == [
        sys.executable,
        *("-m", "cli.bot", "--bot", "search", "--budget", "0.2"),
    ]
    assert options.commands[1][-2:] == ["--bot", "random"]
    with pytest.raises(MatchError, match="unknown built-in bot 'clever'"):
        parse_options(["--player1", "builtin:clever", "--player2", "builtin:random"], threads=2)


def test_piranhas_bot_options() -> None:
    assert bot_main(["--bot", "greedy", "--budget", "0"]) == 2
    assert bot_main(["--bot", "nobody"]) == 2


async def test_piranhas_bot_plays_a_join_game_over_the_protocol() -> None:
    """Two piranhas-bot processes without reservations join one room and finish the game."""
    from server.app import serve

    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, Settings(port=0, password="x"))
        results: list[Any] = []

        async def bot(name: str) -> None:
            contest = ["-h", "127.0.0.1", "-p", str(port)]
            results.append(
                await trio.run_process(
                    [sys.executable, "-m", "cli.bot", *contest, "--bot", name, "--seed", "1"],
                    env=environment(),
                    capture_stdout=True,
                    capture_stderr=True,
                    check=False,
                )
            )

        with trio.fail_after(60):
            async with trio.open_nursery() as bots:
                bots.start_soon(bot, "greedy")
                bots.start_soon(bot, "random")
        nursery.cancel_scope.cancel()
    for done in results:
        assert done.returncode == 0, done.stderr.decode()
        assert "game over: " in done.stdout.decode()


async def test_greedy_beats_random_significantly(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", "builtin:greedy", "--player2", "builtin:random", "--games", "8"),
        *("--seed", "11", "--concurrency", "2", "--ndjson", "e.jsonl"),
        limit=90,
    )
    assert run.status == 0, run.stderr
    assert len(game_lines(run.stdout)) == 8
    stats = final_stats(tmp_path / "e.jsonl")
    assert stats["los"] >= 0.95, stats  # significant at the 5 % level
    assert stats["wins"] > stats["losses"]


@pytest.mark.slow  # ~12 s; tests/bots/test_strength.py shows it on the engine by default
async def test_search_beats_greedy_significantly(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", "builtin:search --budget 0.05", "--player2", "builtin:greedy"),
        *("--games", "12", "--seed", "11", "--concurrency", "2", "--ndjson", "e.jsonl"),
        limit=110,
    )
    assert run.status == 0, run.stderr
    stats = final_stats(tmp_path / "e.jsonl")
    assert stats["los"] >= 0.95, stats
    assert stats["wins"] > stats["losses"]


async def test_demo_draws_the_board_of_every_move(tmp_path: Path) -> None:
    # --demo with a faster first player than the default search (the drawing is the point).
    run = await run_match(
        tmp_path, "--demo", "--games", "1", "--player1", "builtin:greedy", limit=60
    )
    assert run.status == 0, run.stderr
    assert len(game_lines(run.stdout)) == 1
    turns = [
        int(text.split("turn ")[1].split(":")[0])
        for text in run.stdout.splitlines()
        if text.startswith("board of game 1, turn ")
    ]
    assert turns[0] == 0 and turns == list(range(len(turns)))  # every state, in order
    assert "player1 (ONE) vs greedy (TWO)" in run.stdout  # the default name of the second
    assert "     0   1   2   3   4   5   6   7   8   9" in run.stdout  # bots.render's board
