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

Exit status: 0 when every game was played; 2 for bad options, a missing player command, an
unreachable server, a wrong password, a player process that dies during its game or a game
that hangs (as the official client); 130 after Ctrl+C.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path

import trio

from runner.display import Display, display_for
from runner.game import Observation, Server
from runner.launchers import docker_image
from runner.ndjson import EventLog, read_resume
from runner.options import PROGRAM, MatchError, Options, parse_options
from runner.schedule import Schedule
from runner.scores import Match
from server.cli import ExitCode, find_exception
from server.config import ConfigError, load_settings

DEFAULT_HARD_TIMEOUT = 10.0  # the official hard timeout; assumed for a server we did not start


async def run(options: Options, match: Match, events: EventLog | None = None) -> int:
    """Play the games; returns the exit status. Raises MatchError for the status-2 ends.
    Games already in `match.played` (a resumed run) are not played again."""
    events = events or EventLog(None)
    try:
        options.log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise MatchError(f"cannot create the log directory {options.log_dir}: {error}") from None
    interrupted = trio.Event()
    stop_server = trio.Event()
    with contextlib.ExitStack() as files:
        async with trio.open_nursery() as server_nursery:
            try:
                async with trio.open_nursery() as match_nursery:
                    match_nursery.start_soon(
                        cancel_on_signal, match_nursery.cancel_scope, interrupted
                    )
                    if options.port is None:
                        server = await start_server(
                            server_nursery, files, options, match, stop_server
                        )
                    else:
                        assert options.host is not None
                        server = Server(
                            options.host,
                            options.port,
                            options.password,
                            options.password_source,
                            DEFAULT_HARD_TIMEOUT,
                        )
                        match.say(f"server: {server.host}:{server.port}")
                    if options.concurrency > 1:
                        match.say(f"{options.concurrency} games at once")
                    done = frozenset(game.number for game in match.played)
                    if done:
                        match.say(f"resumed: {len(done)} of {options.games} games already played")

                    async def record(observation: Observation) -> None:
                        replay = await save(options, observation)
                        summary = observation.summary
                        events.game_end(summary, options.names, observation.move_ms, replay)

                    schedule = Schedule(
                        options, match, server, record, done=done, counted=events.stats
                    )
                    await schedule.play()
                    match_nursery.cancel_scope.cancel()  # the signal watcher
            finally:
                # The in-process server shuts down gracefully (it returns at once without
                # rooms); a MatchError cancels it instead, which is as good after the bots
                # are gone.
                stop_server.set()
    return ExitCode.INTERRUPTED if interrupted.is_set() else ExitCode.OK


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


async def start_server(
    nursery: trio.Nursery,
    files: contextlib.ExitStack,
    options: Options,
    match: Match,
    stop: trio.Event,
) -> Server:
    """The game server in this process, on a free loopback port with a random password."""
    from server.app import serve
    from server.logs import configure_logging

    try:
        settings = load_settings([], Path.cwd())
    except ConfigError as error:
        raise MatchError(f"server settings: {error}") from None
    settings = replace(
        settings,
        host="127.0.0.1",
        port=0,
        password=secrets.token_urlsafe(18),
        # The match writes its own results and replays (the same for a server it did not
        # start); the server's would be duplicates.
        results_file=None,
        save_replay=False,
    )
    if any(docker_image(command) for command in options.commands):
        # Container players reach the server through a relay on this socket (docs/sandbox.md).
        socket_dir = files.enter_context(tempfile.TemporaryDirectory(prefix="piranhas-"))
        settings = replace(settings, unix_socket=Path(socket_dir) / "server.sock")
    log_path = options.log_dir / "server.log"
    log_file = files.enter_context(log_path.open("a", encoding="utf-8"))
    # The server logs every move: to a file, not between the match's lines.
    configure_logging("console", settings.log_level, stream=log_file, cache=False)
    try:
        port: int = await nursery.start(partial(serve, settings, stop=stop, handle_signals=False))
    except OSError as error:
        raise MatchError(f"cannot start the server: {error}") from None
    match.say(f"server: 127.0.0.1:{port} in this process, log {log_path}")
    return Server(
        "127.0.0.1",
        port,
        settings.password,
        "random",
        settings.hard_timeout,
        settings.unix_socket,
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
        restore_logging(options)
        outcomes = {int(ExitCode.OK): "done", int(ExitCode.INTERRUPTED): "interrupted"}
        outcome = outcomes.get(status, "error")
        events.run_end(outcome, len(match.played), error_text)
        events.close()
    if match.played or status == ExitCode.INTERRUPTED:
        match.print_table()
    if status == ExitCode.INTERRUPTED:
        match.say(f"interrupted after {len(match.played)} of {options.games} games")
    return int(status)


def fail(error: MatchError) -> int:
    """Print the error; the official TestClient's status for every failure."""
    print(f"{PROGRAM}: error: {error}", file=sys.stderr)
    return ExitCode.USAGE


def restore_logging(options: Options) -> None:
    """The server's log file is closed now; later log calls must not write to it."""
    if options.port is None:
        from server.logs import configure_logging

        configure_logging("console", "warning", cache=False)


if __name__ == "__main__":
    raise SystemExit(main())
