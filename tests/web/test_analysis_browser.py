"""The replay viewer's move list, jumps, keys, flip, advantage graph and best-move arrow, and
"play from here", in a real browser (headless chromium)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from analysis import Analyser, Settings
from analysis.sources import game_from_replay
from engine import GameState, Move, PlayerEntry, Team, game_result
from protocol.messages import Memento, ResultMessage
from protocol.replay import read_replay, write_replay

from .conftest import BrowserThread, Running
from .players import random_bot
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


async def test_analyse_this_game_marks_the_moves_draws_the_graph_and_the_best_move(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None]
) -> None:
    states, _ = random_game(seed=3, moves=24)
    path = replay_file(running.viewer.settings.replay_dir, states)
    running.viewer.analyses.settings = Settings(nodes=1000)
    # The page must show what the analysis says (it is deterministic: the same here).
    game = game_from_replay(path.read_bytes())
    with Analyser(Settings(nodes=1000)) as analyser:
        expected = analyser.analyse(game)
    assert any(move.mark in ("?", "??") for move in expected.moves), "random moves blunder"
    with trio.fail_after(90):
        page = await browser.new_page()
        await browser.run(lambda: page.goto(f"{running.url}/replays#file={path.name}&turn=0"))
        await browser.run(lambda: page.wait_for_selector("#move-list tr.move"))
        assert await browser.run(lambda: page.is_hidden("#advantage"))
        await browser.run(lambda: page.click("#analyse"))
        await browser.run(lambda: page.wait_for_selector("svg#graph[data-points]"))
        shown = await browser.run(
            lambda: page.eval_on_selector_all(
                "#move-list tr.move", "rows => rows.map(r => r.children[3].textContent)"
            )
        )
        assert shown == [move.mark or "" for move in expected.moves]
        points = await browser.run(lambda: page.get_attribute("svg#graph", "data-points"))
        assert points == str(len(expected.graph))
        # After each move the best move is a second arrow from the same position, unless
        # the best move was played.
        for analysed in expected.moves:
            index = analysed.number
            await browser.run(page.click, f'#move-list tr[data-index="{index}"]')
            await browser.run(page.wait_for_selector, f'svg#board[data-index="{index}"]')
            best = await browser.run(page.query_selector, "svg#board line.arrow.best")
            if analysed.best == analysed.played:
                assert best is None, index
                continue
            assert best is not None, index
            height = states[0].height
            start = (analysed.best.x + 0.5, height - 1 - analysed.best.y + 0.5)
            drawn = await browser.run(
                lambda b=best: (float(b.get_attribute("x1")), float(b.get_attribute("y1")))
            )
            assert drawn == start, index
            if analysed.mark == "??":
                await browser.run(lambda: screenshot(page, "analysis"))
        # A click on the graph jumps to that position.
        await browser.run(lambda: page.click("svg#graph", position={"x": 2, "y": 10}))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="0"]'))


async def test_play_from_here_starts_a_game_against_a_bot_from_the_position_shown(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None]
) -> None:
    states, _ = random_game(seed=9)
    path = replay_file(running.viewer.settings.replay_dir, states)
    with trio.fail_after(90):
        page = await browser.new_page()
        # No login: this viewer listens on loopback only (as the play page).
        await browser.run(lambda: page.goto(f"{running.url}/replays#file={path.name}"))
        await browser.run(lambda: page.click('#move-list tr[data-index="20"]'))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="20"]'))
        await browser.run(lambda: page.select_option("#play-bot", "random"))
        await browser.run(lambda: page.click("#play-here"))
        start = states[20]
        # The play page shows that very position, the person to move with the side to move.
        await browser.run(
            lambda: page.wait_for_selector(f'svg#board[data-turn="{start.turn}"][data-my-turn="1"]')
        )
        assert "/play#game=" in await browser.run(lambda: page.url)
        assert await browser.run(lambda: dom_board(page)) == engine_board(start)
        (game,) = running.viewer.humans.values()
        assert game.team is start.current_team
        # A move by clicks; the bot answers; the game goes on from there by the rules.
        await browser.run(lambda: page.click("g.cell.selectable"))
        await browser.run(lambda: page.click("g.cell.target"))
        await browser.run(
            lambda: page.wait_for_selector(
                f'svg#board[data-turn="{start.turn + 2}"][data-my-turn="1"]'
            )
        )
        assert game.state is not None and game.state.turn == start.turn + 2
        assert await browser.run(lambda: dom_board(page)) == engine_board(game.state)
        await browser.run(lambda: screenshot(page, "play-from-here"))


async def test_the_live_game_page_jumps_steps_analyses_flips_and_downloads(
    running: Running, browser: BrowserThread
) -> None:
    running.viewer.analyses.settings = Settings(nodes=1000)
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: random_bot(running.port, seed=11))
            nursery.start_soon(lambda: random_bot(running.port, seed=12))
        (room_id,) = running.viewer.hub.games
        states = running.viewer.hub.games[room_id].states
        page = await browser.new_page()
        await browser.run(lambda: page.goto(f"{running.url}/game/{room_id}"))
        last = len(states) - 1
        await browser.run(lambda: page.wait_for_selector(f'svg#board[data-index="{last}"]'))
        # A click on a move shows the position after it; the keys step; "live" comes back.
        await browser.run(lambda: page.click('#moves tr[data-index="10"]'))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="10"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(states[10])
        assert await browser.run(lambda: page.is_visible("#history"))
        await browser.run(page.keyboard.press, "ArrowLeft")
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="9"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(states[9])
        await browser.run(lambda: page.click("#live"))
        await browser.run(lambda: page.wait_for_selector(f'svg#board[data-index="{last}"]'))
        assert await browser.run(lambda: page.is_hidden("#history"))
        # The game analysed from the page: a mark per move as the analysis gives them.
        await browser.run(lambda: page.click("#analyse"))
        await browser.run(lambda: page.wait_for_selector("svg#graph[data-points]"))
        game = game_from_replay(write_replay("r", [Memento("r", state) for state in states]))
        with Analyser(Settings(nodes=1000)) as analyser:
            expected = analyser.analyse(game)
        shown = await browser.run(
            lambda: page.eval_on_selector_all(
                "#moves tr.move",
                "rows => rows.map(r => [+r.dataset.index, r.children[3].textContent])",
            )
        )
        marks = sorted((index, mark) for index, mark in shown)
        assert marks == [(m.number, m.mark or "") for m in expected.moves]
        # The advantage graph has a point per position, and the best move is a second arrow
        # where it was not played.
        points = await browser.run(lambda: page.get_attribute("svg#graph", "data-points"))
        assert points == str(len(expected.graph))
        missed = next(m for m in expected.moves if m.best != m.played)
        await browser.run(page.click, f'#moves tr[data-index="{missed.number}"]')
        await browser.run(page.wait_for_selector, f'svg#board[data-index="{missed.number}"]')
        best = await browser.run(page.query_selector, "svg#board line.arrow.best")
        assert best is not None
        drawn = await browser.run(lambda: (best.get_attribute("x1"), best.get_attribute("y1")))
        height = states[0].height
        assert tuple(map(float, drawn)) == (missed.best.x + 0.5, height - missed.best.y - 0.5)
        # Flipped: the same fields turned by 180°.
        await browser.run(lambda: page.click("#flip"))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-flipped="1"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(states[missed.number])

        # The download is the game as an official replay: the same states.
        def download() -> bytes:
            with page.expect_download() as started:
                page.click("#download")
            return Path(started.value.path()).read_bytes()

        assert read_replay(await browser.run(download)).states == states
