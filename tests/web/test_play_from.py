""" "Play from here" without a browser: a real room of the game server from the posted position,
the person against a bot process (built-in or a configured command, never one from the page),
bounded per viewer and per address; a bot that cannot start or join ends the game with a
reason, and the bot process never outlives its game."""

from __future__ import annotations

import random
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from engine import GameState
from protocol.replay import read_replay
from server.config import Settings
from tests.helpers.process import TEST_BOTS
from web.sc import HumanPlayer

from .conftest import Running
from .httpclient import Browser
from .test_analysis_browser import random_game

FAST_BOT = shlex.join([sys.executable, str(TEST_BOTS / "fast_bot.py")])


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        port=0,
        replay_dir=tmp_path / "replays",
        save_replay=True,
        password="secret-pw",
        web_play_bots=(
            ("fast", FAST_BOT),
            ("hanging", f"{FAST_BOT} --hang"),
            ("quitter", shlex.join([sys.executable, "-c", "pass"])),
            ("missing", "/nonexistent/bot --fast"),
        ),
        web_play_max_games=3,
    )


def position(state: GameState, **extra: Any) -> dict[str, Any]:
    return {
        "board": [[field.name for field in row] for row in state.rows()],
        "turn": state.turn,
        "firstUnion": state.first_union.name if state.first_union is not None else None,
        "lastMove": (
            {"x": state.last_move.x, "y": state.last_move.y, "dir": state.last_move.direction.name}
            if state.last_move is not None
            else None
        ),
        **extra,
    }


async def start(running: Running, state: GameState, **extra: Any) -> tuple[Browser, HumanPlayer]:
    browser = Browser(running.url)
    await browser.session()
    status, answer = await browser.post("/api/play/from", position(state, **extra))
    assert status == 200, answer
    return browser, running.viewer.humans[answer["token"]]


async def until(condition: Any) -> None:
    while not condition():
        await trio.sleep(0.01)


async def cancel_all(running: Running) -> None:
    """End every game now (an admin's <cancel>): the bots stop with them, not at teardown."""
    await until(lambda: all(human.room_id for human in running.viewer.humans.values()))
    for human in running.viewer.humans.values():
        assert human.room_id is not None
        await running.viewer._cancel_room(human.room_id)
    await until(lambda: not running.viewer.play.games)


async def test_a_game_from_the_position_against_a_configured_bot_plays_to_its_result(
    running: Running,
) -> None:
    states, _ = random_game(seed=4)
    begin = states[21]  # TWO to move: the person plays TWO
    chooser = random.Random(3)
    with trio.fail_after(30):
        status, config = await Browser(running.url).get("/api/config")
        assert status == 200
        assert config["playBots"][:3] == ["random", "greedy", "search"]
        assert "fast" in config["playBots"]
        _browser, player = await start(running, begin, bot="fast")
        await until(lambda: player.state is not None)
        assert (
            begin.last_move is not None
            and player.state == begin
            and player.team is begin.current_team
        )
        (room_id,) = running.viewer.hub.games
        assert player.room_id == room_id
        assert running.viewer.hub.games[room_id].states[0] == begin
        bot = running.viewer.play.bots[player.token]
        while not player.ended:
            if player.my_turn and player.state is not None:
                assert await player.move(chooser.choice(player.state.legal_moves())) is None
            await trio.sleep(0.005)
        assert player.result is not None and player.result.regular
        # The bot is gone with the game, and so is its count.
        await until(lambda: not running.viewer.play.games)
        assert bot.returncode is not None and not running.viewer.play.bots
    (path,) = running.viewer.settings.replay_dir.iterdir()
    replay = read_replay(path.read_bytes())
    assert replay.states[0] == begin and replay.result == player.result


@pytest.mark.parametrize(
    ("bot", "why"),
    [("missing", "could not start"), ("quitter", "ended (status 0)")],
)
async def test_a_bot_that_cannot_start_or_quits_before_joining_ends_the_game(
    running: Running, bot: str, why: str
) -> None:
    states, _ = random_game(seed=4)
    with trio.fail_after(30):
        _browser, player = await start(running, states[8], bot=bot)
        await until(lambda: player.ended)
        assert any(why in error for error in player.errors), player.errors
        await until(lambda: not running.viewer.play.games)
        # The room was cancelled (the hub keeps the finished game for the lobby page).
        assert all(view.result is not None for view in running.viewer.hub.games.values())


async def test_a_bot_that_hangs_is_stopped_when_the_game_is_cancelled(running: Running) -> None:
    states, _ = random_game(seed=4)
    begin = states[10]
    with trio.fail_after(30):
        # The bot moves first and never answers; an admin cancels the game.
        _browser, player = await start(
            running, begin, bot="hanging", team=begin.current_team.opponent.name
        )
        await until(lambda: player.state is not None)
        bot = running.viewer.play.bots[player.token]
        assert bot.returncode is None
        assert player.room_id is not None
        await running.viewer._cancel_room(player.room_id)
        await until(lambda: player.ended and not running.viewer.play.games)
        assert bot.returncode is not None


async def test_play_from_here_is_guarded_checks_the_position_and_counts_the_games(
    running: Running,
) -> None:
    states, _ = random_game(seed=4)
    browser = Browser(running.url)
    await browser.session()
    begin = position(states[7], bot="hanging")
    fish = states[7].legal_moves()[0]  # its start holds a fish of the side to move
    empty = next(x for x in range(10) if states[7].field(x, 9).name == "EMPTY")
    with trio.fail_after(30):
        stranger = Browser(running.url)
        await stranger.session()
        stranger.csrf = "wrong"
        assert (await stranger.post("/api/play/from", begin))[0] == 403
        bad = [
            ({**begin, "board": begin["board"][:9]}, "board"),
            ({**begin, "board": [["FISH"] * 10] * 10}, "unknown field"),
            ({**begin, "turn": 61}, "turn"),
            ({**begin, "turn": "3"}, "turn"),
            ({**begin, "firstUnion": "THREE"}, "firstUnion"),
            ({**begin, "lastMove": {"x": 1, "y": 2}}, "lastMove"),
            ({**begin, "lastMove": {"x": 10, "y": 2, "dir": "UP"}}, "lastMove"),
            ({**begin, "lastMove": "UP"}, "lastMove"),
            # A last move that cannot have led to the board (the engine's rules say so).
            ({**begin, "lastMove": {"x": fish.x, "y": fish.y, "dir": "UP"}}, "lastMove: its"),
            ({**begin, "lastMove": {"x": empty, "y": 9, "dir": "UP"}}, "lastMove: no fish"),
            ({**begin, "bot": "stockfish"}, "bot"),
            # A page names a bot; it never gives a command.
            ({**begin, "bot": FAST_BOT}, "bot"),
            ({**begin, "bot": ["fast"]}, "bot"),
            ({**begin, "team": "RED"}, "team"),
            (position(states[-1]), "over"),
        ]
        for body, word in bad:
            status, answer = await browser.post("/api/play/from", body)
            assert status == 400 and word in answer["error"], (word, answer)
        assert not running.viewer.hub.games and not running.viewer.play.games
        # Two games at once without a login, the third is refused.
        for _ in range(2):
            status, answer = await browser.post("/api/play/from", begin)
            assert status == 200 and answer["token"] in running.viewer.humans
        status, answer = await browser.post("/api/play/from", begin)
        assert status == 429 and "without a login" in answer["error"]
        # webPlayMaxGames (3) for everyone together.
        other = Browser(running.url)
        await other.session()
        assert (await other.post("/api/play/from", begin))[0] == 200
        status, answer = await other.post("/api/play/from", begin)
        assert status == 429 and "games against bots are running" in answer["error"]
        await cancel_all(running)


async def test_games_per_address_are_limited(running: Running) -> None:
    running.viewer.play.limit_loopback = True  # as perAddressLimitOnLoopback
    states, _ = random_game(seed=4)
    begin = position(states[7], bot="hanging")
    with trio.fail_after(30):
        first, second = Browser(running.url), Browser(running.url)
        await first.session()
        await second.session()
        assert (await first.post("/api/play/from", begin))[0] == 200
        status, answer = await second.post("/api/play/from", begin)
        assert status == 429 and "per address" in answer["error"]
        await cancel_all(running)
