"""The web viewer in a real browser (headless chromium): what a person sees matches the engine."""

from __future__ import annotations

import json
import random
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from engine import GameState
from protocol.events import Prepare, SlotDescriptor
from protocol.replay import read_replay
from web.sc import admin_request

from .conftest import BrowserThread, Running
from .players import random_bot

pytestmark = pytest.mark.browser


def dom_board(page: Any) -> list[list[str]]:
    """rows[y][x] of FieldState names, read from the cells' data attributes."""
    cells = page.eval_on_selector_all(
        "svg#board g.cell",
        "cells => cells.map(c => [+c.dataset.x, +c.dataset.y, c.dataset.field])",
    )
    width = max(x for x, _, _ in cells) + 1
    height = max(y for _, y, _ in cells) + 1
    rows = [[""] * width for _ in range(height)]
    for x, y, field in cells:
        rows[y][x] = field
    return rows


def engine_board(state: GameState) -> list[list[str]]:
    return [[field.name for field in row] for row in state.rows()]


async def login(browser: BrowserThread, page: Any, running: Running) -> None:
    def do() -> None:
        page.goto(running.url + "/admin")
        page.fill("#password", "secret-pw")
        page.click("#login button")
        page.wait_for_selector("#admin-panels:not([hidden])")

    await browser.run(do)


async def test_lobby_shows_a_game_two_bots_play(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None]
) -> None:
    with trio.fail_after(60):
        page = await browser.new_page()
        await browser.run(page.goto, running.url + "/")
        # Two named games (prepared like a tournament runner does) and one <join> game.
        codes: list[str] = []
        for names in (("Alice", "Bob"), ("greedy", "random")):
            slots = tuple(SlotDescriptor(name, True, True) for name in names)
            reply = await admin_request(running.port, "secret-pw", [Prepare(None, False, slots)])
            codes += reply.prepared[0].reservations
        async with trio.open_nursery() as nursery:
            for seed, code in enumerate(codes):
                nursery.start_soon(
                    partial(random_bot, running.port, seed=seed, reservation=code, think=0.05)
                )
            nursery.start_soon(lambda: random_bot(running.port, seed=7, think=0.05))
            nursery.start_soon(lambda: random_bot(running.port, seed=8, think=0.05))

            def running_rows() -> list[dict[str, str]]:
                page.wait_for_function(
                    "() => [...document.querySelectorAll('#rooms tr[data-status=running] td.num')]"
                    ".filter((cell, i) => i % 3 === 0 && +cell.textContent >= 6).length >= 3"
                )
                screenshot(page, "lobby")
                rows: list[dict[str, str]] = page.eval_on_selector_all(
                    "#rooms tr[data-room]",
                    "rows => rows.map(r => ({room: r.dataset.room, text: r.innerText}))",
                )
                return rows

            rows = await browser.run(running_rows)
        texts = " ".join(row["text"] for row in rows)
        assert len(rows) == 3
        for name in ("Alice", "Bob", "greedy", "random", "Team ONE", "Team TWO"):
            assert name in texts
        # Updates without reload: the same page now shows every game over.
        await browser.run(
            page.wait_for_function,
            "() => document.querySelectorAll('#rooms tr[data-status=over]').length === 3",
        )
        for row in rows:
            assert running.viewer.hub.games[row["room"]].result is not None


async def test_game_page_board_equals_the_engine_after_every_move(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None]
) -> None:
    with trio.fail_after(120):
        page = await browser.new_page()
        states: list[GameState] = []
        # The bots move only when the test says so: the page is checked at every turn.
        send_go, receive_go = trio.open_memory_channel[None](0)

        async def gated_bot(seed: int, record: bool) -> None:
            await random_bot(
                running.port, seed=seed, states=states if record else None, gate=receive_go
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(gated_bot, 3, True)
            nursery.start_soon(gated_bot, 4, False)
            while not running.viewer.hub.games or not states:
                await trio.sleep(0.01)
            room_id = next(iter(running.viewer.hub.games))
            await browser.run(lambda: page.goto(f"{running.url}/game/{room_id}"))
            checked = 0
            while True:
                state = states[-1]
                await browser.run(page.wait_for_selector, f'svg#board[data-turn="{state.turn}"]')
                assert await browser.run(lambda: dom_board(page)) == engine_board(state)
                checked += 1
                if state.turn == 20:
                    await browser.run(lambda: screenshot(page, "game"))
                if state.is_over:
                    break
                count = len(states)
                await send_go.send(None)
                while len(states) == count:
                    await trio.sleep(0.005)
            await browser.run(lambda: page.wait_for_selector("#result:not([hidden])"))
            result_text = await browser.run(lambda: page.inner_text("#result"))
            moves = await browser.run(
                lambda: page.eval_on_selector_all("#moves tr", "r => r.length")
            )
            await browser.run(lambda: screenshot(page, "game-over"))
        assert checked == states[-1].turn + 1
        assert moves == states[-1].turn
        view = running.viewer.hub.games[room_id]
        assert view.result is not None and view.result.reason in result_text


async def test_replay_stepped_to_turn_n_shows_the_engine_board(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None], tmp_path: Path
) -> None:
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: random_bot(running.port, seed=5))
            nursery.start_soon(lambda: random_bot(running.port, seed=6))
        replay_dir = running.viewer.settings.replay_dir
        while not list(replay_dir.glob("*.xml")):
            await trio.sleep(0.02)
        path = next(replay_dir.glob("*.xml"))
        replay = read_replay(path.read_bytes())
        page = await browser.new_page()
        # A link to turn 37 opens the replay there.
        await browser.run(lambda: page.goto(f"{running.url}/replays#file={path.name}&turn=37"))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-turn="37"]'))
        assert await browser.run(lambda: dom_board(page)) == engine_board(replay.state_at_turn(37))
        await browser.run(lambda: screenshot(page, "replay"))
        # Keyboard: two steps forward, one back.
        for key, turn in (("ArrowRight", 38), ("ArrowRight", 39), ("ArrowLeft", 38)):
            await browser.run(page.keyboard.press, key)
            await browser.run(page.wait_for_selector, f'svg#board[data-turn="{turn}"]')
            assert await browser.run(lambda: dom_board(page)) == engine_board(
                replay.state_at_turn(turn)
            )
        # Jump to a turn by typing it; the URL names the turn shown.
        await browser.run(lambda: page.fill("#turn", "12"))
        await browser.run(lambda: page.press("#turn", "Enter"))
        await browser.run(lambda: page.wait_for_selector('svg#board[data-turn="12"]'))
        assert "turn=12" in await browser.run(lambda: page.url)
        assert await browser.run(lambda: dom_board(page)) == engine_board(replay.state_at_turn(12))

        # An official file dropped on the page (here: chosen in the file input), gzipped.
        gzipped = tmp_path / "game.xml.gz"
        import gzip

        gzipped.write_bytes(gzip.compress(path.read_bytes()))
        upload_page = await browser.new_page()
        await browser.run(lambda: upload_page.goto(f"{running.url}/replays"))
        await browser.run(lambda: upload_page.set_input_files("#file", str(gzipped)))
        await browser.run(lambda: upload_page.wait_for_selector('svg#board[data-turn="0"]'))
        assert await browser.run(lambda: dom_board(upload_page)) == engine_board(replay.states[0])
        # Played at 20 turns a second, it reaches the end by itself and shows the result.
        await browser.run(upload_page.select_option, "#speed", "50")
        await browser.run(upload_page.click, "#play")
        last = replay.states[-1]
        await browser.run(
            lambda: upload_page.wait_for_selector(f'svg#board[data-turn="{last.turn}"]')
        )
        assert await browser.run(lambda: dom_board(upload_page)) == engine_board(last)
        assert await browser.run(lambda: upload_page.is_visible("#result"))


async def test_a_person_clicks_a_whole_game_against_a_random_bot(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None]
) -> None:
    with trio.fail_after(120):
        page = await browser.new_page()
        await login(browser, page, running)

        def open_room() -> None:
            page.goto(running.url + "/play")
            page.fill("#name", "Ada")
            page.click("#go")
            page.wait_for_selector("#game:not([hidden])")

        await browser.run(open_room)
        while not running.viewer.hub.games:
            await trio.sleep(0.01)
        room_id = next(iter(running.viewer.hub.games))
        chooser = random.Random(7)
        async with trio.open_nursery() as nursery:
            # The bot takes the open slot with a plain <join>.
            nursery.start_soon(lambda: random_bot(running.port, seed=8, think=0.01))

            def play() -> int:
                clicks = 0
                while True:
                    page.wait_for_selector(
                        'svg#board[data-my-turn="1"] g.cell.selectable, body[data-over="1"]'
                    )
                    if page.get_attribute("body", "data-over") == "1":
                        return clicks
                    turn = page.get_attribute("svg#board", "data-turn")
                    fish = page.query_selector_all("g.cell.selectable")
                    chooser.choice(fish).click()
                    page.wait_for_selector("g.cell.selected")
                    targets = page.query_selector_all("g.cell.target")
                    assert targets, "a selectable fish offers targets"
                    if clicks == 8:
                        screenshot(page, "play")
                    chooser.choice(targets).click()
                    clicks += 1
                    page.wait_for_selector(f'svg#board:not([data-turn="{turn}"])')

            clicks = await browser.run(play)
        await browser.run(lambda: page.wait_for_selector("#result:not([hidden])"))
        await browser.run(lambda: screenshot(page, "play-over"))
        view = running.viewer.hub.games[room_id]
        assert view.result is not None
        # Every click was a legal move: the game ended by the rules, nobody violated.
        assert view.result.regular, view.result.reason
        assert all(entry.violation is None for entry, _ in view.result.scores)
        assert clicks == (view.turn + 1) // 2
        assert view.names()[0] == "Ada"


async def test_a_visitor_plays_on_a_loopback_viewer_and_a_wrong_click_says_why(
    running: Running, browser: BrowserThread
) -> None:
    with trio.fail_after(90):
        page = await browser.new_page()  # no login: the viewer listens on loopback only

        def open_room() -> None:
            page.goto(running.url + "/play")
            page.wait_for_selector("#go:not([disabled])")
            assert page.is_hidden("#login-first")
            page.click("#go")
            page.wait_for_selector("#game:not([hidden])")

        await browser.run(open_room)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: random_bot(running.port, seed=3, think=0.01))

            def wrong_then_right() -> tuple[str, str, str]:
                page.wait_for_selector('svg#board[data-my-turn="1"] g.cell.selectable')
                turn = page.get_attribute("svg#board", "data-turn") or ""
                page.click('g.cell[data-field="EMPTY"]:not(.selectable)')
                empty = page.text_content("#why") or ""
                page.click('g.cell[data-field^="TWO_"]')
                theirs = page.text_content("#why") or ""
                # The game goes on: a legal move after the wrong clicks.
                page.click("g.cell.selectable")
                page.click("g.cell.target")
                page.wait_for_selector(f'svg#board:not([data-turn="{turn}"])')
                return empty, theirs, page.text_content("#why") or ""

            empty, theirs, after = await browser.run(wrong_then_right)
            nursery.cancel_scope.cancel()
        assert "empty" in empty and "bot's fish" in theirs and after == ""


def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


async def test_admin_pause_and_step_work_and_are_refused_without_login(
    running: Running, browser: BrowserThread, screenshot: Callable[[Any, str], None]
) -> None:
    with trio.fail_after(90):
        page = await browser.new_page()
        await login(browser, page, running)

        def prepare() -> list[str]:
            page.fill("#name1", "Alpha")
            page.fill("#name2", "Beta")
            page.check("#paused")
            page.click("#prepare button")
            page.wait_for_selector("#prepared:not([hidden])")
            screenshot(page, "admin")
            codes: list[str] = page.eval_on_selector_all(
                "#codes code", "codes => codes.map(c => c.textContent)"
            )
            return codes

        codes = await browser.run(prepare)
        assert len(codes) == 2
        room_id = next(iter(running.viewer.hub.games))
        view = running.viewer.hub.games[room_id]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: random_bot(running.port, seed=9, reservation=codes[0]))
            nursery.start_soon(lambda: random_bot(running.port, seed=10, reservation=codes[1]))
            await browser.run(lambda: page.goto(f"{running.url}/game/{room_id}"))
            await browser.run(lambda: page.wait_for_selector('svg#board[data-status="paused"]'))
            assert view.turn == 0
            # Without login: no buttons, and the endpoints refuse.
            anonymous = await browser.new_page()
            await browser.run(lambda: anonymous.goto(f"{running.url}/game/{room_id}"))
            await browser.run(lambda: anonymous.wait_for_selector('svg#board[data-turn="0"]'))
            assert not await browser.run(lambda: anonymous.is_visible("#step"))
            # The request runs in a thread: this test's thread is the server's.
            status, _ = await trio.to_thread.run_sync(
                post, f"{running.url}/api/admin/step", {"room": room_id}, {}
            )
            assert status == 403
            refused = await browser.run(
                lambda: anonymous.evaluate(
                    "async room => { await Web.loadSession();"
                    " try { await Web.post('/api/admin/step', {room}); return 'ok'; }"
                    " catch (e) { return e.message; } }",
                    room_id,
                )
            )
            assert refused == "log in as admin first"
            await trio.sleep(0.2)
            assert view.turn == 0
            # Logged in: each step is one move.
            for turn in (1, 2, 3):
                await browser.run(lambda: page.click("#step"))
                await browser.run(page.wait_for_selector, f'svg#board[data-turn="{turn}"]')
            assert view.turn == 3 and view.status == "paused"
            await browser.run(lambda: page.click("#resume"))
            await browser.run(lambda: page.wait_for_selector('svg#board[data-status="over"]'))
            await browser.run(lambda: screenshot(page, "game-admin"))
        assert view.result is not None and view.result.regular
