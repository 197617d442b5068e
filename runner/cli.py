"""`piranhas-match`: let a server start two bots, play N games between them and count.

The model is the official TestClient (protocol §9): an admin connection prepares each game
with two reserved slots, observes it, starts both player commands with the contest options
`--host H --port P --reservation CODE`, and reads the result as an observer. The starting side
alternates: in game k (0-based) player1 holds slot 0 (team ONE, moves first) when k is even.
Scores are aggregated per player like the official client: Siegpunkte summed, Schwarmgröße as
a running mean.

Without --port the server runs in this process (on a free loopback port, with a random admin
password); with --port the games are played on a running server. `--concurrency K` plays K
games at once (one admin connection each); `--seed S` pairs the boards (runner.schedule).

A bot that crashes, times out or breaks the rules loses that game (irregularly) and the run
goes on; a folder per such loss reproduces it (runner.reproduce). The move times come from
the server in this process (runner.timing).

Exit status: 0 when every game was played; with --sprt 0 = H1 accepted, 1 = H0 accepted,
3 = inconclusive. 2 for bad options, a missing player command, an unreachable server, a wrong
password, a player process that ends before its game did, or a game that hangs (as the
official client); 130 after Ctrl+C.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path

import trio

from engine import GameState
from launching import MatchError
from runner.display import Display, display_for
from runner.exceptions import find_exception
from runner.game import GameSpec, Observation, ServerAddress, Watcher
from runner.inprocess import in_process_server
from runner.launchers import docker_image
from runner.ndjson import EventLog, read_resume
from runner.options import PROGRAM, Options, parse_options
from runner.reproduce import write_reproducer
from runner.schedule import Schedule
from runner.scores import Match
from runner.timing import TimeReport, irregular_loss
from server.cli import ExitCode
from server.config import ConfigError, load_settings

DEFAULT_HARD_TIMEOUT = 10.0  # the official hard timeout; assumed for a server we did not start
DEFAULT_SOFT_TIMEOUT = 2.0  # the official soft timeout (the 2 s move clock), assumed likewise


async def run(options: Options, match: Match, events: EventLog | None = None) -> int:
    """Play the games; returns the exit status. Raises MatchError for the status-2 ends.
    Games already in `match.played` (a resumed run) are not played again."""
    events = events or EventLog(None)
    try:
        options.log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise MatchError(f"cannot create the log directory {options.log_dir}: {error}") from None
    interrupted = trio.Event()
    async with contextlib.AsyncExitStack() as stack:
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
            await play(options, match, events, server)
            match_nursery.cancel_scope.cancel()  # the signal watcher
    if interrupted.is_set():
        return ExitCode.INTERRUPTED
    decision = match.sprt_status()
    return ExitCode.OK if decision is None else decision.exit_code


async def play(options: Options, match: Match, events: EventLog, server: ServerAddress) -> None:
    """Play the games not played yet on `server`, recording each as it ends."""
    if options.concurrency > 1:
        match.say(f"{options.concurrency} games at once")
    done = frozenset(game.number for game in match.played)
    if done:
        match.say(f"resumed: {len(done)} of {options.games} games already played")

    source = "server" if server.games is not None else "observer"
    times = TimeReport(options.names, server.soft_timeout, source)
    match.times = times

    async def record(observation: Observation) -> None:
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
    )
    await schedule.play()


def board_drawer(match: Match) -> Watcher:
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
    from server.replays import save_replay
    from server.results import ResultsLog, game_record

    summary = observation.summary
    replay = None
    if options.save_replay:
        names = [options.names[summary.one], options.names[1 - summary.one]]
        replay = await trio.to_thread.run_sync(
            save_replay,
            options.replay_dir,
            names,
            summary.room_id,
            observation.packets,
            datetime.now(),
        )
        if replay is None:
            summary.notes.append("replay not saved (see the log)")
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


def main(argv: Sequence[str] | None = None) -> int:
    """The `piranhas-match` command."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["reproduce"]:
        from runner import reproduce

        return reproduce.main(arguments[1:])
    try:
        options = parse_options(arguments)
    except MatchError as error:
        return fail(error)
    except SystemExit as exit_request:  # argparse: --help or a usage error (already printed)
        return exit_request.code if isinstance(exit_request.code, int) else ExitCode.USAGE
    match = Match(
        options.names,
        options.games,
        paired=options.seed is not None,
        report_every=options.report_every,
        sprt=options.sprt,
    )
    events = EventLog(options.ndjson)
    try:
        if options.resume is not None:
            for game in read_resume(options.resume, options).games:
                match.restore(game)
        events.open()
    except MatchError as error:
        return fail(error)
    events.run_start(options, resumed=len(match.played))
    status: int = ExitCode.USAGE
    error_text: str | None = None
    try:
        with display_for(match.out, options.games, len(match.played)) as display:
            match.display = display
            status = trio.run(run, options, match, events)
    except BaseException as error:
        match_error = find_exception(error, MatchError)
        if match_error is not None:
            error_text = str(match_error)
            status = fail(match_error)
        elif find_exception(error, KeyboardInterrupt) is not None:
            # Ctrl+C outside the graceful window (start-up): the bots are in cleanups already.
            status = ExitCode.INTERRUPTED
        else:
            raise
    finally:
        match.display = Display(match.out)  # the bar is gone: the table prints plainly
        if error_text is not None:
            outcome = "error"
        elif status == ExitCode.INTERRUPTED:
            outcome = "interrupted"
        else:
            outcome = "done"
        events.run_end(outcome, len(match.played), error_text, match=match)
        events.close()
    if match.played or status == ExitCode.INTERRUPTED:
        match.print_table()
        if match.played:
            match.out.write(match.final_figures() + "\n")
            if match.times is not None:
                match.out.write(match.times.table() + "\n")
            match.out.flush()
    if status == ExitCode.INTERRUPTED:
        match.say(f"interrupted after {len(match.played)} of {options.games} games")
    return int(status)


def fail(error: MatchError) -> int:
    """Print the error; the official TestClient's status for every failure."""
    print(f"{PROGRAM}: error: {error}", file=sys.stderr)
    return ExitCode.USAGE


if __name__ == "__main__":
    raise SystemExit(main())
