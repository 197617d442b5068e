"""The `piranhas-server` command (also `python -m server`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import structlog
import trio

from server.config import ConfigError, parse_settings
from server.logs import configure_logging

# Exit statuses: 2 for a configuration error (as argparse does), 1 when the server fails.
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONFIG = 2


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        settings, warnings = parse_settings(arguments, Path.cwd())
    except ConfigError as error:
        print(f"piranhas-server: error: {error}", file=sys.stderr)
        return EXIT_CONFIG
    except SystemExit as exit_request:  # --help
        return exit_request.code if isinstance(exit_request.code, int) else EXIT_CONFIG

    configure_logging(settings.log_format, settings.log_level)
    log = structlog.get_logger("server")
    for warning in warnings:
        log.warning(warning)

    from server.app import serve

    try:
        trio.run(serve, settings)
    except KeyboardInterrupt:
        log.warning("interrupted before a graceful shutdown")
        return 130
    except BaseException as error:  # reported as a clean message below
        os_error = _find_os_error(error)
        if os_error is None:
            raise
        log.error(
            "server failed",
            host=settings.host,
            port=settings.port,
            error=os_error.strerror or str(os_error),
        )
        return EXIT_FAILURE
    return EXIT_OK


def _find_os_error(error: BaseException) -> OSError | None:
    """The OSError behind a failure (e.g. port in use), also inside exception groups."""
    if isinstance(error, OSError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _find_os_error(inner)
            if found is not None:
                return found
    return None
