""" "Play from here" in a real browser (headless chromium): from a replay's position against a
bot command the operator configured, and from a position of a game the server is playing
against a built-in bot, each in a real room of the game server."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from analysis import Analyser
from analysis import Settings as AnalysisSettings
from analysis.sources import game_from_replay
from engine import GameState
from protocol.messages import Memento
from protocol.replay import read_replay, write_replay
from server.config import Settings
from tests.helpers.process import TEST_BOTS

from .conftest import BrowserThread, Running
from .players import random_bot
from .test_analysis_browser import random_game, replay_file
from .test_browser import dom_board, engine_board

pytestmark = pytest.mark.browser

FAST_BOT = shlex.join([sys.executable, str(TEST_BOTS / "fast_bot.py")])


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        port=0,
        replay_dir=tmp_path / "replays",
        save_replay=True,
        password="secret-pw",
        web_play_bots=(("quick", FAST_BOT),),
    )


async def test_play_from_a_replay_position_against_a_configured_bot_command(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None]
) -> None:
    states, _ = random_game(seed=21)
    path = replay_file(running.viewer.settings.replay_dir, states)
    with trio.fail_after(90):
        page = await browser.new_page()
        await browser.run(lambda: page.goto(f"{running.url}/replays#file={path.name}"))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="0"]'))
        # Step to a position with the keys; the configured bot is offered by its name.
        for _ in range(15):
            await browser.run(lambda: page.keyboard.press("ArrowRight"))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="15"]'))
        await browser.run(
            lambda: page.wait_for_selector('#play-bot option[value="quick"]', state="attached")
        )
        await browser.run(lambda: page.select_option("#play-bot", "quick"))
        await browser.run(lambda: page.click("#play-here"))
        start = states[15]
        await browser.run(
            lambda: page.wait_for_selector(f'svg#board[data-turn="{start.turn}"][data-my-turn="1"]')
        )
        assert await browser.run(lambda: dom_board(page)) == engine_board(start)
        opponent = start.current_team.opponent.name
        assert await browser.run(lambda: page.text_content(f"#p-{opponent} .name")) == "Bot: quick"
        (player,) = running.viewer.humans.values()
        # A real room of the game server, the bot a process of the configured command.
        room_id = player.room_id
        assert room_id is not None and room_id in running.viewer.hub.games
        # It starts from the position shown, its last move included.
        assert running.viewer.hub.games[room_id].states[0] == start
        assert player.team is start.current_team
        assert player.token in running.viewer.play.bots
        # A move by clicks; the bot answers.
        await browser.run(lambda: page.click("g.cell.selectable"))
        await browser.run(lambda: page.click("g.cell.target"))
        await browser.run(
            lambda: page.wait_for_selector(
                f'svg#board[data-turn="{start.turn + 2}"][data-my-turn="1"]'
            )
        )
        assert player.state is not None and player.state.turn == start.turn + 2
        assert await browser.run(lambda: dom_board(page)) == engine_board(player.state)
        await browser.run(lambda: screenshot(page, "play-from-here-bot-command"))
        assert player.room_id is not None
        await running.viewer._cancel_room(player.room_id)
        while running.viewer.play.games:
            await trio.sleep(0.01)


async def test_play_from_a_live_game_position_against_a_built_in_bot(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None]
) -> None:
    # Two bots play a game on the server, a move each time the test lets one through: it is
    # running (never over) while its page is watched.
    moves, gate = trio.open_memory_channel[None](60)
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: random_bot(running.port, seed=31, gate=gate))
            nursery.start_soon(lambda: random_bot(running.port, seed=32, gate=gate))
            for _ in range(12):
                await moves.send(None)
            while not running.viewer.hub.games:
                await trio.sleep(0.01)
            ((room_id, live),) = running.viewer.hub.games.items()
            while live.turn < 12:
                await trio.sleep(0.01)
            page = await browser.new_page()
            await browser.run(lambda: page.goto(f"{running.url}/game/{room_id}"))
            await browser.run(
                lambda: page.wait_for_selector('svg#board[data-index="12"][data-status="running"]')
            )
            # Watched live: the next move shows up by itself.
            await moves.send(None)
            await browser.run(lambda: page.wait_for_selector('svg#board[data-index="13"]'))
            # Back to move 8 by a click, then a key steps to move 9.
            await browser.run(lambda: page.click('#moves tr[data-index="8"]'))
            await browser.run(lambda: page.wait_for_selector('svg#board[data-index="8"]'))
            await browser.run(page.keyboard.press, "ArrowRight")
            await browser.run(lambda: page.wait_for_selector('svg#board[data-index="9"]'))
            start = live.states[9]
            assert await browser.run(lambda: dom_board(page)) == engine_board(start)
            # Play from there against the built-in random bot (a piranhas-bot process).
            await browser.run(lambda: page.select_option("#play-bot", "random"))
            await browser.run(lambda: page.click("#play-here"))
            await browser.run(
                lambda: page.wait_for_selector(
                    f'svg#board[data-turn="{start.turn}"][data-my-turn="1"]'
                )
            )
            assert "/play#game=" in await browser.run(lambda: page.url)
            assert await browser.run(lambda: dom_board(page)) == engine_board(start)
            (player,) = running.viewer.humans.values()
            assert player.team is start.current_team and player.room_id != room_id
            assert player.room_id is not None
            # A room of its own from that position, its last move included.
            assert running.viewer.hub.games[player.room_id].states[0] == start
            # A move by clicks; the bot answers.
            await browser.run(lambda: page.click("g.cell.selectable"))
            await browser.run(lambda: page.click("g.cell.target"))
            await browser.run(
                lambda: page.wait_for_selector(
                    f'svg#board[data-turn="{start.turn + 2}"][data-my-turn="1"]'
                )
            )
            assert player.state is not None and player.state.turn == start.turn + 2
            assert await browser.run(lambda: dom_board(page)) == engine_board(player.state)
            await browser.run(lambda: screenshot(page, "play-from-live-game"))
            # The watched game was left alone: still running at move 13.
            assert live.turn == 13 and live.result is None
            await running.viewer._cancel_room(player.room_id)
            while running.viewer.play.games:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()


async def test_play_from_a_position_whose_last_move_cannot_have_led_there_says_why(
    running: Running, browser: BrowserThread
) -> None:
    states, _ = random_game(seed=21)
    # A replay file whose turn 15 names a last move that did not happen: its start holds a
    # fish of the side to move.
    shown = states[15]
    wrong = GameState.from_rows(shown.rows(), shown.turn, shown.first_union, shown.legal_moves()[0])
    path = replay_file(running.viewer.settings.replay_dir, [*states[:15], wrong])
    with trio.fail_after(60):
        page = await browser.new_page()
        await browser.run(lambda: page.goto(f"{running.url}/replays#file={path.name}&turn=15"))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="15"]'))
        await browser.run(lambda: page.select_option("#play-bot", "random"))
        await browser.run(lambda: page.click("#play-here"))
        await browser.run(lambda: page.wait_for_selector("#play-here-error:not(:empty)"))
        said = await browser.run(lambda: page.text_content("#play-here-error"))
        assert said is not None and said.startswith("lastMove: its start"), said
        # Nothing was started, and the page stays where it was.
        assert not running.viewer.humans and not running.viewer.hub.games
        assert "/replays" in await browser.run(lambda: page.url)


async def play_two_moves_against_the_quick_bot(running: Running, browser: BrowserThread) -> Any:
    """A replay's first position played on against the quick bot: two moves of the person by
    clicks, the bot answering each. Returns the page; the bot's second answer is not awaited."""
    states, _ = random_game(seed=21)
    path = replay_file(running.viewer.settings.replay_dir, states)
    page = await browser.new_page()
    await browser.run(lambda: page.goto(f"{running.url}/replays#file={path.name}&turn=0"))
    await browser.run(lambda: page.wait_for_selector('svg#board[data-index="0"]'))
    await browser.run(
        lambda: page.wait_for_selector('#play-bot option[value="quick"]', state="attached")
    )
    await browser.run(lambda: page.select_option("#play-bot", "quick"))
    await browser.run(lambda: page.click("#play-here"))
    for turn in (0, 2):
        await browser.run(
            page.wait_for_selector, f'svg#board[data-turn="{turn}"][data-my-turn="1"]'
        )
        await browser.run(lambda: page.click("g.cell.selectable"))
        await browser.run(lambda: page.click("g.cell.target"))
    return page


async def test_the_play_page_lists_the_moves_looks_back_flips_and_downloads(
    running: Running, browser: BrowserThread
) -> None:
    with trio.fail_after(60):
        page = await play_two_moves_against_the_quick_bot(running, browser)
        await browser.run(
            lambda: page.wait_for_selector('svg#board[data-turn="4"][data-my-turn="1"]')
        )
        (player,) = running.viewer.humans.values()
        assert player.room_id is not None
        played = running.viewer.hub.games[player.room_id].states
        # The list names the four moves played, in order.
        await browser.run(lambda: page.wait_for_selector('#move-list tr.move[data-index="4"]'))
        rows = await browser.run(
            lambda: page.eval_on_selector_all(
                "#move-list tr.move", "rows => rows.map(r => r.children[2].textContent)"
            )
        )
        assert rows == [str(state.last_move) for state in played[1:5]]
        # A click on the first move shows the position after it; no move is possible there.
        await browser.run(lambda: page.click('#move-list tr[data-index="1"]'))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="1"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(played[1])
        assert await browser.run(lambda: page.query_selector("g.cell.selectable")) is None
        await browser.run(lambda: page.click('g.cell[data-field^="ONE_"]'))
        why = await browser.run(lambda: page.text_content("#why"))
        assert why is not None and "earlier position" in why
        assert player.state is not None and player.state.turn == 4 and player.my_turn
        # A key steps on; back to the current position, where moves are offered again.
        await browser.run(page.keyboard.press, "ArrowRight")
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="2"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(played[2])
        await browser.run(lambda: page.click("#current"))
        await browser.run(
            lambda: page.wait_for_selector('svg#board[data-turn="4"][data-my-turn="1"]')
        )
        assert await browser.run(lambda: page.query_selector("g.cell.selectable")) is not None
        # Flipped: the same fields turned by 180°.
        await browser.run(lambda: page.click("#flip"))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-flipped="1"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(player.state)

        # The download is the game so far as an official replay: the room's states.
        def download() -> bytes:
            with page.expect_download() as started:
                page.click("#download")
            return Path(started.value.path()).read_bytes()

        assert read_replay(await browser.run(download)).states == played[:5]
        await running.viewer._cancel_room(player.room_id)
        while running.viewer.play.games:
            await trio.sleep(0.01)


async def test_the_play_page_analyses_the_game_so_far_marks_and_graph(
    running: Running, browser: BrowserThread
) -> None:
    running.viewer.analyses.settings = AnalysisSettings(nodes=1000)
    with trio.fail_after(60):
        page = await play_two_moves_against_the_quick_bot(running, browser)
        await browser.run(lambda: page.wait_for_selector('#move-list tr.move[data-index="4"]'))
        assert await browser.run(lambda: page.is_hidden("#advantage"))
        (player,) = running.viewer.humans.values()
        assert player.room_id is not None
        played = running.viewer.hub.games[player.room_id].states[:5]
        # The same analysis the page must show (deterministic).
        game = game_from_replay(write_replay("r", [Memento("r", state) for state in played]))
        with Analyser(AnalysisSettings(nodes=1000)) as analyser:
            expected = analyser.analyse(game)
        await browser.run(lambda: page.click("#analyse"))
        await browser.run(lambda: page.wait_for_selector("svg#graph[data-points]"))
        shown = await browser.run(
            lambda: page.eval_on_selector_all(
                "#move-list tr.move",
                "rows => rows.map(r => [r.children[3].textContent, r.children[3].title])",
            )
        )
        # Every move carries its analysis: the mark and its loss (hover).
        assert [mark for mark, _ in shown] == [move.mark or "" for move in expected.moves]
        assert all(title.startswith("loss ") for _, title in shown), shown
        points = await browser.run(lambda: page.get_attribute("svg#graph", "data-points"))
        assert points == str(len(expected.graph))
        # The best move as a second arrow where it was not played; a click on the graph jumps.
        missed = next((m for m in expected.moves if m.best != m.played), None)
        if missed is not None:
            await browser.run(page.click, f'#move-list tr[data-index="{missed.number}"]')
            await browser.run(page.wait_for_selector, f'svg#board[data-index="{missed.number}"]')
            best = await browser.run(page.query_selector, "svg#board line.arrow.best")
            assert best is not None
        await browser.run(lambda: page.click("svg#graph", position={"x": 2, "y": 10}))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-index="0"]'))
        await running.viewer._cancel_room(player.room_id)
        while running.viewer.play.games:
            await trio.sleep(0.01)
