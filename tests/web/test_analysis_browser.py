"""The replay viewer's move list, jumps, keys, flip, advantage graph and best-move arrow, and
"play from here", in a real browser (headless chromium)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import trio

from engine import GameState, Move, PlayerEntry, Team, game_result
from protocol.messages import Memento, ResultMessage
from protocol.replay import write_replay

from .conftest import BrowserThread, Running
from .test_browser import dom_board, engine_board

pytestmark = pytest.mark.browser


def random_game(seed: int = 5, moves: int | None = None) -> tuple[list[GameState], list[Move]]:
    rng = random.Random(seed)
    state = GameState.initial(17)
    states: list[GameState] = [state]
    played: list[Move] = []
    while not state.is_over and (moves is None or len(played) < moves):
        move = rng.choice(state.legal_moves())
        state = state.apply(move)
        states.append(state)
        played.append(move)
    return states, played


def replay_file(directory: Path, states: list[GameState], name: str = "game.xml") -> Path:
    entries = [PlayerEntry(Team.ONE, "alpha"), PlayerEntry(Team.TWO, "beta")]
    packets: list[Any] = [Memento("r", state) for state in states]
    if states[-1].is_over:
        packets.append(ResultMessage("r", game_result(states[-1], entries)))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(write_replay("r", packets))
    return path


async def test_the_move_list_jumps_on_a_click_and_steps_with_the_keys(
    running: Running, browser: BrowserThread
) -> None:
    states, moves = random_game()
    path = replay_file(running.viewer.settings.replay_dir, states)
    with trio.fail_after(60):
        page = await browser.new_page()
        await browser.run(lambda: page.goto(f"{running.url}/replays#file={path.name}"))
        await browser.run(lambda: page.wait_for_selector("#move-list tr.move"))
        rows = await browser.run(
            lambda: page.eval_on_selector_all(
                "#move-list tr.move", "rows => rows.map(r => r.children[2].textContent)"
            )
        )
        # One row per move, in order, each naming the move played.
        assert rows == [str(move) for move in moves]
        # A click on move 20 shows the position after it.
        await browser.run(lambda: page.click('#move-list tr[data-index="20"]'))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="20"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(states[20])
        assert (
            await browser.run(lambda: page.get_attribute("#move-list tr.current", "data-index"))
            == "20"
        )
        # Arrow keys step from there, both ways.
        steps = (("ArrowRight", 21), ("ArrowDown", 22), ("ArrowLeft", 21), ("ArrowUp", 20))
        for key, index in steps:
            await browser.run(page.keyboard.press, key)
            await browser.run(page.wait_for_selector, f'svg#board[data-index="{index}"]')
            assert await browser.run(lambda: dom_board(page)) == engine_board(states[index])
            assert await browser.run(
                lambda: page.get_attribute("#move-list tr.current", "data-index")
            ) == str(index)
        # Flipped, the same fields are shown turned by 180°: (0, 0) at the top right.
        await browser.run(lambda: page.click("#flip"))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-flipped="1"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(states[20])
        transform = await browser.run(
            lambda: page.get_attribute('g.cell[data-x="0"][data-y="0"]', "transform")
        )
        width = states[20].width
        assert transform == f"translate({width - 1} 0)"
        # The download is the file itself.
        href = await browser.run(lambda: page.get_attribute("#download", "href"))
        assert href == f"/api/replays/{path.name}/download"
