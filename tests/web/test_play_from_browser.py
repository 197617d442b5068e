""" "Play from here" in a real browser (headless chromium): from a replay's position, against a
bot command the operator configured, in a real room of the game server."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from server.config import Settings
from tests.helpers.process import TEST_BOTS

from .conftest import BrowserThread, Running
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
