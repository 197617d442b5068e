"""The runner's scheduling in process: K games really at once, paired boards, the fallback
for a server that ignores the board seed. Players are in-process launchers (trio tasks on
client.ClientSession), which is also how a league plugs other players into the same core."""

from __future__ import annotations

import io
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest
import trio

from client import ClientSession, open_session
from engine import GameState
from launching import MatchError
from protocol.messages import Left, Memento, MoveRequest
from runner.game import Observation, ServerAddress
from runner.options import Options, default_concurrency, parse_options
from runner.schedule import Schedule, board_seed, game_spec
from runner.scores import Scoreboard
from server.app import serve
from server.config import Settings
from server.exits import find_exception

LIMIT = 20
PASSWORD = "pw"
PLAYER = sys.executable  # any executable: these tests never start the commands


def options(tmp_path: Path, *extra: str) -> Options:
    argv = ["--player1", PLAYER, "--player2", PLAYER, "--log-dir", str(tmp_path), *extra]
    return parse_options(argv, threads=64)


class TaskPlayer:
    """A player as a trio task: joins with its code, waits at `gate`, then plays the first
    legal move of every state until `<left>`."""

    def __init__(self, scope: trio.CancelScope) -> None:
        self.scope = scope
        self.done = trio.Event()
        self.returncode: int | None = None

    async def wait(self) -> int:
        await self.done.wait()
        assert self.returncode is not None
        return self.returncode

    async def stop(self) -> bool:
        running = not self.done.is_set()
        self.scope.cancel()
        with trio.CancelScope(shield=True):
            await self.done.wait()
        return running


class TaskLauncher:
    """Launches TaskPlayers in `nursery`. A player starts moving only once `gate_size`
    players were launched: with fewer games at once than that, the run cannot finish."""

    def __init__(self, nursery: trio.Nursery, counter: list[int], gate_size: int) -> None:
        self.nursery = nursery
        self.counter = counter  # shared by both launchers: [launched]
        self.gate_size = gate_size
        self.gate = trio.Event()

    async def launch(
        self, name: str, host: str, port: int, reservation: str, log_path: Path
    ) -> TaskPlayer:
        self.counter[0] += 1
        player = TaskPlayer(trio.CancelScope())
        self.nursery.start_soon(self._play, player, host, port, reservation)
        return player

    async def _play(self, player: TaskPlayer, host: str, port: int, code: str) -> None:
        try:
            with player.scope:
                async with open_session(host, port) as session:
                    await session.join_prepared(code)
                    while self.counter[0] < self.gate_size:
                        await trio.sleep(0.01)
                    await play(session)
                player.returncode = 0
        finally:
            if player.returncode is None:
                player.returncode = -15
            player.done.set()


async def play(session: ClientSession) -> None:
    state: GameState | None = None
    while True:
        message = await session.receive()
        if isinstance(message, Memento):
            state = message.state
        elif isinstance(message, MoveRequest):
            assert state is not None
            await session.send_move(message.room_id, state.legal_moves()[0])
        elif isinstance(message, Left):
            return


@asynccontextmanager
async def in_process_server() -> AsyncIterator[ServerAddress]:
    settings = Settings(host="127.0.0.1", port=0, password=PASSWORD)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve(
                settings, task_status=task_status, stop=stop, handle_signals=False
            )
        )
        yield ServerAddress("127.0.0.1", port, PASSWORD, "test", settings.hard_timeout)
        stop.set()


async def run_schedule(
    run_options: Options, gate_size: int
) -> tuple[Scoreboard, list[Observation], list[int]]:
    match = Scoreboard(run_options.names, run_options.games, out=io.StringIO())
    observed: list[Observation] = []
    launched = [0]

    async def record(observation: Observation) -> None:
        observed.append(observation)

    with trio.fail_after(LIMIT):
        async with in_process_server() as server, trio.open_nursery() as players:
            launcher = TaskLauncher(players, launched, gate_size)
            schedule = Schedule(run_options, match, server, record, (launcher, launcher))
            await schedule.play()
    return match, observed, launched


# ---------------------------------------------------------------------------------------------
# Pure parts


def test_paired_games_share_a_board_with_sides_swapped(tmp_path: Path) -> None:
    run = options(tmp_path, "--seed", "42", "--games", "6")
    specs = [game_spec(run, index) for index in range(6)]
    assert [spec.one for spec in specs] == [0, 1, 0, 1, 0, 1]
    assert [spec.seed for spec in specs] == [board_seed(42, pair) for pair in (0, 0, 1, 1, 2, 2)]
    assert len({spec.seed for spec in specs}) == 3
    assert board_seed(42, 0) != board_seed(43, 0)
    assert board_seed(42, 0) == board_seed(42, 0) < 2**63  # reproducible, a Java long
    unseeded = options(tmp_path, "--games", "2")
    assert [game_spec(unseeded, k).seed for k in range(2)] == [None, None]


def test_concurrency_default_and_limit(tmp_path: Path) -> None:
    assert [default_concurrency(n) for n in (1, 2, 3, 8)] == [1, 1, 1, 4]
    argv = ["--player1", PLAYER, "--player2", PLAYER, "--games", "20"]
    assert parse_options(argv, threads=8).concurrency == 4
    assert parse_options([*argv, "-c", "8"], threads=8).concurrency == 8
    with pytest.raises(MatchError, match="exceeds the 8 hardware threads"):
        parse_options([*argv, "--concurrency", "9"], threads=8)
    assert parse_options([*argv, "-c", "9", "--force-concurrency"], threads=8).concurrency == 9
    with pytest.raises(MatchError, match="at least 1"):
        parse_options([*argv, "-c", "0"], threads=8)
    # Never more workers than games.
    assert parse_options([*argv[:-1], "3", "-c", "8"], threads=8).concurrency == 3


# ---------------------------------------------------------------------------------------------
# Runs in process


async def test_k_games_really_overlap_and_each_is_recorded_once(tmp_path: Path) -> None:
    # No player moves before 3 games (6 players) are under way: this finishes only if the
    # three games run at once.
    run = options(tmp_path, "--games", "5", "--concurrency", "3")
    match, observed, launched = await run_schedule(run, gate_size=6)
    assert launched == [10]
    assert sorted(o.summary.number for o in observed) == [1, 2, 3, 4, 5]
    assert sorted(game.number for game in match.played) == [1, 2, 3, 4, 5]
    assert len({o.summary.room_id for o in observed}) == 5
    assert sum(score.games for score in match.scores) == 10
    for observation in observed:  # sides still alternate by game number
        assert observation.summary.one == (observation.summary.number - 1) % 2


async def test_one_game_at_a_time_cannot_pass_the_gate(tmp_path: Path) -> None:
    # The converse: with K = 1 the gate of 4 players is never reached.
    run = options(tmp_path, "--games", "2", "--concurrency", "1", "--game-timeout", "1")
    with pytest.raises(BaseExceptionGroup) as raised:  # the test's own nurseries wrap it
        await run_schedule(run, gate_size=4)
    error = find_exception(raised.value, MatchError)
    assert error is not None
    assert "game 1 hangs" in str(error)


async def test_seeded_pairs_play_the_same_board_with_sides_swapped(tmp_path: Path) -> None:
    run = options(tmp_path, "--games", "4", "--concurrency", "2", "--seed", "7")
    match, observed, _ = await run_schedule(run, gate_size=0)
    by_number = {o.summary.number: o for o in observed}
    for first, second in ((1, 2), (3, 4)):
        a, b = by_number[first], by_number[second]
        assert a.seeded_board is b.seeded_board is True
        assert a.summary.seed == b.summary.seed == board_seed(7, first // 2)
        board = GameState.initial(a.summary.seed)
        for game in (a, b):
            first_memento = next(p for p in game.packets if isinstance(p, Memento))
            assert first_memento.state == board
        assert (a.summary.one, b.summary.one) == (0, 1)
        assert [e.name for e, _ in a.summary.result.scores] == ["player1", "player2"]
        assert [e.name for e, _ in b.summary.result.scores] == ["player2", "player1"]
    assert by_number[1].summary.seed != by_number[3].summary.seed
    assert "ignores the board seed" not in match.out.getvalue()  # type: ignore[attr-defined]


async def test_listed_boards_are_played_pair_by_pair(tmp_path: Path) -> None:
    path = tmp_path / "boards.txt"
    path.write_text("101\n202\n")
    run = options(tmp_path, "--boards", str(path), "--games", "6", "--concurrency", "2")
    match, observed, _ = await run_schedule(run, gate_size=0)
    by_number = {o.summary.number: o for o in observed}
    for number, seed in zip(range(1, 7), (101, 101, 202, 202, 101, 101), strict=True):
        game = by_number[number]
        assert game.seeded_board is True
        assert game.summary.seed == seed
        first_memento = next(p for p in game.packets if isinstance(p, Memento))
        assert first_memento.state == GameState.initial(seed)
    assert "ignores the board seed" not in match.out.getvalue()  # type: ignore[attr-defined]


async def test_server_without_the_seed_extension_falls_back_to_unpaired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ignores_seed(seed: int) -> GameState:
        """An official server: the seed attribute of <prepare> is not read."""
        return GameState.initial(None)

    # (Where the server makes a seed's board: `GameState.initial` itself is called once per
    # seed, its board kept.)
    monkeypatch.setattr("server.prepare.seeded_start", ignores_seed)
    run = options(tmp_path, "--games", "3", "--concurrency", "1", "--seed", "7")
    match, observed, _ = await run_schedule(run, gate_size=0)
    output = match.out.getvalue()  # type: ignore[attr-defined]
    assert output.count("ignores the board seed") == 1  # said once
    assert observed[0].seeded_board is False
    # After noticing, later games ask for no seed and none is reported.
    assert [o.seeded_board for o in observed[1:]] == [None, None]
    assert all(o.summary.seed is None for o in observed)
    assert len(match.played) == 3  # every game still counts


def test_options_are_replaceable_for_a_league(tmp_path: Path) -> None:
    # The core reads only Options fields; a league builds its own without a command line.
    run = replace(options(tmp_path), games=2, concurrency=2)
    assert (run.games, run.concurrency) == (2, 2)
