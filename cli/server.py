"""`piranhas-server`: the game server, and the web viewer wired in when --web-port is set (the
composition root: the game server core never imports the viewer; it sees the lobby through
`server.feed`)."""

from __future__ import annotations

import functools
import gc
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import structlog
import trio

from server.config import ConfigError, parse_settings
from server.exits import ExitCode, find_exception
from server.logs import configure_logging, flush_logs


def main(argv: Sequence[str] | None = None) -> int:
    """`piranhas-server`: load the settings, configure logging and serve until a signal;
    the process's exit status (`ExitCode`)."""
    try:
        return _main(argv)
    finally:
        flush_logs()  # the last lines: the daemon thread that flushes them dies with us


def _main(argv: Sequence[str] | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        settings, warnings = parse_settings(arguments, Path.cwd())
    except ConfigError as error:
        print(f"piranhas-server: error: {error}", file=sys.stderr)
        return ExitCode.USAGE
    except SystemExit as exit_request:  # --help
        return exit_request.code if isinstance(exit_request.code, int) else ExitCode.USAGE

    configure_logging(settings.log_format, settings.log_level)
    log = structlog.get_logger("server")
    for warning in warnings:
        log.warning(warning)

    from server.app import serve
    from server.feed import Companion

    companion: Companion | None = None
    if settings.web_port is not None:
        from web.process import WebProcess

        companion = WebProcess(settings)

    tune_garbage_collection()
    stop = trio.Event()  # set once a signal started the graceful shutdown
    _ignore_late_signals(stop)
    try:
        trio.run(functools.partial(serve, settings, companion=companion, stop=stop))
    except BaseException as error:  # reported as a clean message below
        if stop.is_set() and find_exception(error, KeyboardInterrupt) is not None:
            # A Ctrl+C after the shutdown (serve gives SIGINT back to trio when done).
            _ignore_stop_signals()
            return ExitCode.OK
        if find_exception(error, KeyboardInterrupt) is not None:
            # A signal that came before the server could handle it gracefully.
            log.warning("interrupted before a graceful shutdown")
            return ExitCode.INTERRUPTED
        os_error = find_exception(error, OSError)
        if os_error is None:
            raise
        log.error(
            "server failed",
            host=settings.host,
            port=settings.port,
            error=os_error.strerror or str(os_error),
        )
        return ExitCode.FAILURE
    if stop.is_set():
        _ignore_stop_signals()
    return ExitCode.OK


def _ignore_late_signals(stop: trio.Event) -> None:
    """A SIGTERM once the graceful shutdown has begun changes nothing: `serve` takes the
    signals while it runs, but gives them back before it returns, and the default action
    would end a server that stopped cleanly with -15 (its last log lines unwritten). Before
    the shutdown, a SIGTERM still ends the process at once, as by default."""

    def on_sigterm(signum: int, frame: object) -> None:
        if stop.is_set():
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)


def _ignore_stop_signals() -> None:
    """The server has stopped: what is left (the last log lines) runs to its end, status 0."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


# Allocations (minus deallocations) of container objects between two collections of the
# youngest generation; Python's default is 700. A move allocates many short-lived objects and
# a game's keep living for its ≈ 30 moves: at 700 the collector ran every ≈ 100 moves and
# took ≈ 4 % of the server's CPU at 100 games (bench.server); at 10,000 it is below 1 %, and
# those objects are at most a few MB. The older generations keep their defaults.
GC_YOUNG_THRESHOLD = 10_000


def tune_garbage_collection() -> None:
    """What the server loaded at start lives as long as the process: frozen, the collector
    never looks at it again (gc.freeze); then the youngest generation's threshold is raised."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


if __name__ == "__main__":
    raise SystemExit(main())
