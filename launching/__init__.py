"""How a player is started for one game and stopped after it: the two small interfaces every
launcher implements (local processes in `runner.processes`, containers in `sandbox`) and the
error of a match that cannot go on. A leaf: it imports none of our packages, so the runner and
the sandbox both build on it without importing each other.

A launcher starts a player that connects with the contest options `--host H --port P
--reservation CODE`; a running player can be waited for and stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

__all__ = ["MatchError", "PlayerLauncher", "RunningPlayer", "exit_description"]


class MatchError(Exception):
    """A match (or one of its games) that cannot go on: a player that cannot start, a hang, an
    unreachable server. Ends piranhas-match with status 2; the message says what happened."""


class RunningPlayer(Protocol):
    """One started player."""

    @property
    def returncode(self) -> int | None:
        """Its exit status once it ended, else None."""

    async def wait(self) -> int:
        """Wait until it ends; its exit status."""

    async def stop(self) -> bool:
        """Make sure it is gone (terminate, then kill); True if it was still running.
        Must work in a cancelled scope: a player never outlives the run."""


class PlayerLauncher(Protocol):
    """Starts a player for one game."""

    async def launch(
        self, name: str, host: str, port: int, reservation: str, log_path: Path
    ) -> RunningPlayer:
        """Start the player; its output goes to `log_path`. Raises MatchError."""


def exit_description(running: RunningPlayer) -> str:
    """How a player ended, for the match report: "status 3"; a launcher that knows more (a
    container's OOM kill) gives its players an `exit_reason` attribute, which is appended:
    "status 137, killed: out of memory (1536 MiB)"."""
    status = f"status {running.returncode}"
    reason = getattr(running, "exit_reason", None)
    return f"{status}, {reason}" if reason else status
