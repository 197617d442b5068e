"""A run of piranhas-match (`run_match`; the command is `cli.match`): N games between two bots
on the server in this process (runner.inprocess) or on a running one (--port), each recorded
(result line, replay, NDJSON event, move times) and, when a bot lost irregularly, reproduced
(runner.reproduce). Ctrl+C or SIGTERM cancels the games: the bots are stopped, the score so far
is kept.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path

import trio

from engine import GameState, Team
from launching import MatchError
from runner.game import GameSpec, Observation, ServerAddress, Watcher
from runner.inprocess import in_process_server
from runner.launchers import docker_image
from runner.ndjson import EventLog
from runner.options import Options
from runner.reaper import BotReaper
from runner.reproduce import write_reproducer
from runner.schedule import Schedule
from runner.scores import Scoreboard
from runner.timing import TimeReport, irregular_loss
from server.config import ConfigError, load_settings
from server.exits import ExitCode

DEFAULT_HARD_TIMEOUT = 10.0  # the official hard timeout; assumed for a server we did not start
DEFAULT_SOFT_TIMEOUT = 2.0  # the official soft timeout (the 2 s move clock), assumed likewise


LostGames = Callable[[Options, list[Observation], Callable[[str], None]], None]
"""`--analyze`'s work on the games player1 lost (analysis.lost, wired in by the command):
called in a worker thread after the last game."""


async def run_match(
    options: Options,
    match: Scoreboard,
    events: EventLog | None = None,
    analyse_lost: LostGames | None = None,
) -> int:
    """Play the games; returns the exit status. Raises MatchError for the status-2 ends.
    Games already in `match.played` (a resumed run) are not played again. With
    `options.analyze` set, the games player1 lost go to `analyse_lost` at the end."""
    events = events or EventLog(None)
    try:
        options.log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise MatchError(f"cannot create the log directory {options.log_dir}: {error}") from None
    interrupted = trio.Event()
    async with contextlib.AsyncExitStack() as stack:
        reaper = stack.enter_context(BotReaper())
        if options.port is None:
            server = await stack.enter_async_context(start_server(options))
            match.say(
                f"server: 127.0.0.1:{server.port} in this process, "
                f"log {options.log_dir / 'server.log'}"
            )
        else:
            assert options.host is not None
            server = ServerAddress(
                options.host,
                options.port,
                options.password,
                options.password_source,
                DEFAULT_HARD_TIMEOUT,
                DEFAULT_SOFT_TIMEOUT,
            )
            match.say(f"server: {server.host}:{server.port}")
        # The in-process server (outside this nursery) shuts down gracefully once the games
        # and their bots are gone, also after Ctrl+C.
        async with trio.open_nursery() as match_nursery:
            match_nursery.start_soon(cancel_on_signal, match_nursery.cancel_scope, interrupted)
            await play(options, match, events, server, reaper, analyse_lost)
            match_nursery.cancel_scope.cancel()  # the signal watcher
    if interrupted.is_set():
        return ExitCode.INTERRUPTED
    decision = match.sprt_status()
    return ExitCode.OK if decision is None else decision.exit_code


async def play(
    options: Options,
    match: Scoreboard,
    events: EventLog,
    server: ServerAddress,
    reaper: BotReaper,
    analyse_lost: LostGames | None = None,
) -> None:
    """Play the games not played yet on `server`, recording each as it ends."""
    if options.concurrency > 1:
        match.say(f"{options.concurrency} games at once")
    done = frozenset(game.number for game in match.played)
    if done:
        match.say(f"resumed: {len(done)} of {options.games} games already played")

    source = "server" if server.games is not None else "observer"
    times = TimeReport(options.names, server.soft_timeout, source)
    match.times = times

    lost: list[Observation] = []

    async def record(observation: Observation) -> None:
        if (
            analyse_lost
            and options.analyze is not None
            and player1_lost(observation, options.names)
        ):
            lost.append(observation)
        replay = await save(options, observation)
        summary = observation.summary
        game = observation.server_game
        result = summary.result if game is None else game.result
        loss = irregular_loss(result, options.names, summary.one, list(observation.crashed))
        move_ms = observation.move_ms if game is None else list(game.move_ms)
        times.add_game(summary.one, move_ms, options.can_timeout, loss)
        reproducer = None
        if loss is not None and not options.no_reproducers:
            reproducer = await trio.to_thread.run_sync(
                partial(reproducer_for, options, server, observation, loss)
            )
            if reproducer is not None:
                summary.notes.append(f"reproducer: {reproducer}/repro.sh")
        events.game_end(
            summary,
            options.names,
            observation.move_ms,
            replay,
            server_move_ms=None if game is None else list(game.move_ms),
            loss=loss,
            reproducer=reproducer,
            phases=observation.phases,
        )

    schedule = Schedule(
        options,
        match,
        server,
        record,
        done=done,
        counted=events.stats,
        watch=board_drawer(match) if options.show_board else None,
        reaper=reaper,
    )
    await schedule.play()
    if lost and analyse_lost is not None:
        lost.sort(key=lambda observation: observation.summary.number)
        await trio.to_thread.run_sync(analyse_lost, options, lost, match.say)


def player1_lost(observation: Observation, names: tuple[str, str]) -> bool:
    """Whether player1 lost the observed game (a draw is no loss)."""
    winner = observation.summary.result.winner
    if winner is None:
        return False
    player1_team = Team.ONE if observation.summary.one == 0 else Team.TWO
    return winner is not player1_team


def board_drawer(match: Scoreboard) -> Watcher:
    """Draws each observed state with bots.render (the move just made highlighted)."""
    from bots.render import render, use_colour

    colour = use_colour(match.out)
    previous: dict[int, GameState] = {}

    def draw(spec: GameSpec, state: GameState) -> None:
        one, two = spec.names[spec.one], spec.names[1 - spec.one]
        board = render(state, colour=colour, previous=previous.get(spec.number))
        previous[spec.number] = state
        match.say(
            f"board of game {spec.number}, turn {state.turn}: {one} (ONE) vs {two} (TWO)\n{board}"
        )

    return draw


def reproducer_for(
    options: Options, server: ServerAddress, observation: Observation, loss: tuple[int, str]
) -> Path | None:
    """Write the reproducer folder of an irregular loss (runner.reproduce)."""
    player, kind = loss
    try:
        return write_reproducer(
            options.reproducer_dir,
            options.log_dir,
            observation,
            options.names,
            player,
            kind,
            options.commands[player],
            soft_timeout=server.soft_timeout,
            hard_timeout=server.hard_timeout,
            can_timeout=options.can_timeout[player],
        )
    except OSError as error:
        observation.summary.notes.append(f"reproducer not written: {error}")
        return None


async def cancel_on_signal(scope: trio.CancelScope, interrupted: trio.Event) -> None:
    """Ctrl+C (or SIGTERM) cancels the match: the cleanups kill the bots, then the score so
    far is printed."""
    try:
        receiver = trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)
    except RuntimeError:
        return  # not the main thread (embedded in a test): trio's KeyboardInterrupt applies
    with receiver as signals:
        async for _signum in signals:
            interrupted.set()
            scope.cancel()
            return


def start_server(options: Options) -> AbstractAsyncContextManager[ServerAddress]:
    """The game server in this process (runner.inprocess) with the user's settings (a
    server.properties in the working directory), its log in the match's log folder."""
    try:
        settings = load_settings([], Path.cwd())
    except ConfigError as error:
        raise MatchError(f"server settings: {error}") from None
    # The match writes its own results and replays (the same for a server it did not start);
    # the server's would be duplicates.
    settings = replace(settings, results_file=None, save_replay=False)
    return in_process_server(
        settings,
        options.log_dir / "server.log",
        log_level=settings.log_level,
        # Container players reach the server through a relay on its socket (docs/sandbox.md).
        unix_socket=any(docker_image(command) for command in options.commands),
    )


async def save(options: Options, observation: Observation) -> Path | None:
    """Write the game's replay and result line, as asked for; the replay's path."""
    from server.replays import ReplayFiles
    from server.results import ResultsLog, game_record

    summary = observation.summary
    replay = None
    if options.save_replay:
        names = [options.names[summary.one], options.names[1 - summary.one]]
        # The thread only writes: what happened is reported here, by the task that prints the
        # game's line (a line printed from the thread could land inside another on stdout).
        try:
            replay = await trio.to_thread.run_sync(
                ReplayFiles(options.replay_dir).save,
                names,
                summary.room_id,
                observation.packets,
                datetime.now(),
            )
        except OSError as error:
            summary.notes.append(f"replay not saved: {error}")
    if options.results is not None:
        record = game_record(
            summary.room_id,
            summary.result,
            started=observation.started,
            turn=summary.turn,
            replay=replay,
        )
        record["game"] = summary.number
        record["games"] = options.games
        if summary.seed is not None:
            record["seed"] = summary.seed
        if summary.notes:
            record["notes"] = summary.notes
        await trio.to_thread.run_sync(ResultsLog(options.results).append, record)
    return replay
