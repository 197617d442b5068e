"""The league pages in a real browser: the table as `league.standings` ranks it, and a game of
a match opened from its page in the replay viewer, stepped to a turn, shows the engine's board."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from engine import GameState
from league.records import read_record, write_record
from league.standings import compute_standings
from league.store import LeagueStore
from server.config import Settings

from .conftest import BrowserThread, Running
from .leagues import League, make_league
from .test_browser import dom_board, engine_board

pytestmark = pytest.mark.browser


@pytest.fixture
def league(tmp_path: Path) -> League:
    league = make_league(tmp_path, games=4)
    league.play_next(18)  # 6 matches of 4 games: four complete, the fifth half played
    return league


@pytest.fixture
def settings(tmp_path: Path, league: League) -> Settings:
    return Settings(
        port=0, replay_dir=tmp_path / "replays", password="secret-pw", web_league=league.file
    )


def state_at_turn(record_xml: str, turn: int) -> GameState:
    record = read_record(record_xml.encode())
    state = GameState.initial(record.seed)
    for recorded in record.moves[:turn]:
        state = state.apply(recorded.move)
    return state


async def test_standings_then_a_game_of_a_match_in_the_replay_viewer(
    running: Running,
    browser: BrowserThread,
    screenshot: Callable[[Any, str], None],
    league: League,
) -> None:
    store = LeagueStore.sqlite(league.database)
    try:
        finished = store.finished_games()
    finally:
        store.close()
    standings = compute_standings(league.config, league.matches, finished)
    with trio.fail_after(60):
        page = await browser.new_page()
        errors: list[str] = []  # uncaught script errors
        await browser.run(page.on, "pageerror", lambda error: errors.append(str(error)))
        await browser.run(page.goto, running.url + "/league")
        await browser.run(page.wait_for_selector, "#standings tbody tr")
        rows = await browser.run(
            page.eval_on_selector_all,
            "#standings tbody tr",
            "rows => rows.map(r => [r.dataset.team, ...[...r.cells].map(c => c.textContent)])",
        )
        assert [row[0] for row in rows] == [row.team_id for row in standings.rows]
        for shown, row in zip(rows, standings.rows, strict=True):
            assert shown[1:8] == [
                str(row.rank),
                row.name,
                str(row.matches),
                str(row.won),
                str(row.drawn),
                str(row.lost),
                str(row.match_points),
            ]
        assert await browser.run(page.is_visible, 'header nav a[data-nav="league"]')
        await browser.run(lambda: screenshot(page, "league"))
        assert errors == []

        # The match's page, then its second game in the replay viewer.
        await browser.run(page.click, '#matches tr[data-match="1"] a')
        await browser.run(page.wait_for_selector, '#games a[data-game="2"]')
        await browser.run(page.click, '#games a[data-game="2"]')
        await browser.run(page.wait_for_selector, "#viewer:not([hidden])")
        assert "#league=1-2" in await browser.run(lambda: page.url)
        info = await browser.run(page.text_content, "#record-info")
        assert info is not None and "match 1, game 2" in info
        assert await browser.run(page.is_hidden, "#discrepancies")
        record = next(
            f.outcome.record for f in finished if (f.game.match_id, f.game.number) == (1, 2)
        )
        assert record is not None
        for turn in (0, 9, 10):
            await browser.run(page.fill, "#turn", str(turn))
            await browser.run(lambda: page.press("#turn", "Enter"))
            await browser.run(page.wait_for_selector, f'svg#board[data-turn="{turn}"]')
            assert await browser.run(lambda: dom_board(page)) == engine_board(
                state_at_turn(record, turn)
            )

        # A record whose result differs from the engine's, opened as a file: the page says so.
        stored = read_record(record.encode())
        tampered = write_record(
            dataclasses.replace(
                stored, result=dataclasses.replace(stored.result, reason="erfunden")
            )
        )
        await browser.run(
            lambda: page.set_input_files(
                "#file",
                files=[{"name": "x.xml", "mimeType": "application/xml", "buffer": tampered}],
            )
        )
        await browser.run(page.wait_for_selector, "#discrepancies:not([hidden])")
        text = await browser.run(page.text_content, "#discrepancies")
        assert text is not None and "reason" in text and "erfunden" in text
        await browser.run(lambda: screenshot(page, "league-record"))
        # The turn named in the address (10) stays: the same game, with the page's warning.
        assert await browser.run(page.get_attribute, "svg#board", "data-turn") == "10"
        assert await browser.run(lambda: dom_board(page)) == engine_board(state_at_turn(record, 10))
