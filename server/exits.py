"""How the project's commands end: their exit statuses, and our exceptions inside trio's
exception groups (nurseries wrap what their tasks and their body raise, and groups nest) — the
one place the commands, the schedule, the league and the workers look into them."""

from __future__ import annotations

import enum
from typing import TypeVar

E = TypeVar("E", bound=BaseException)

__all__ = ["ExitCode", "find_exception", "first_leaf", "lone_exception"]


class ExitCode(enum.IntEnum):
    """Exit statuses of the project's commands (the server's and the match runner's)."""

    OK = 0
    FAILURE = 1  # the server failed (e.g. its port is taken)
    # Bad options or configuration (as argparse does); also every failure of the match
    # runner, which is the official TestClient's status for all of them.
    USAGE = 2
    INTERRUPTED = 130  # 128 + SIGINT, as shells report it


def find_exception(error: BaseException, kind: type[E]) -> E | None:
    """The first exception of `kind` in `error`, also inside exception groups."""
    if isinstance(error, kind):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = find_exception(inner, kind)
            if found is not None:
                return found
    return None


def first_leaf(error: BaseException) -> BaseException:
    """The first exception of `error` that is no group (following the first member down)."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def lone_exception(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one exception a group holds (groups of one nested), None if it holds several: a
    context manager that hides a nursery re-raises it as the block raised it."""
    while len(group.exceptions) == 1:
        inner = group.exceptions[0]
        if not isinstance(inner, BaseExceptionGroup):
            return inner
        group = inner
    return None
