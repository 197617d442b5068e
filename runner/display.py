"""Live output of piranhas-match and piranhas-league run: a progress bar with the game lines
above it on a terminal (rich), plain lines otherwise (a log file, CI, a pipe), where a block of
figures (the match) or the standings (the league) every N games stands in for the bar, as
fastchess prints them."""

from __future__ import annotations

from types import TracebackType
from typing import TextIO


class Display:
    """Where the runner's lines go. Plain: straight to `out`."""

    live = False  # a bar: no plain figures or standings needed in between

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __enter__(self) -> Display:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.out.flush()

    def line(self, text: str) -> None:
        """Print one line."""
        self.out.write(text + "\n")
        self.out.flush()

    def progress(self, done: int, total: int, summary: str) -> None:
        """A game ended: `done` of `total`; `summary` is the score so far (bar only)."""


class LiveDisplay(Display):
    """On a terminal: a rich progress bar at the bottom, the lines scrolling above it."""

    live = True

    def __init__(self, out: TextIO, total: int, done: int = 0, label: str = "games") -> None:
        # Imported here: rich is a sixth of the command's start-up, and only a terminal needs it.
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        super().__init__(out)
        self.console = Console(file=out, highlight=False)
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[summary]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,  # the final table replaces it
        )
        self.task = self.bar.add_task(label, total=total, completed=done, summary="")

    def __enter__(self) -> LiveDisplay:
        self.bar.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.bar.stop()
        super().__exit__(kind, error, traceback)

    def line(self, text: str) -> None:
        """Print one line above the bar."""
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def progress(self, done: int, total: int, summary: str) -> None:
        """Move the bar."""
        self.bar.update(self.task, completed=done, total=total, summary=summary)


def display_for(out: TextIO, total: int, done: int = 0, label: str = "games") -> Display:
    """A LiveDisplay (its bar named `label`) when `out` is a terminal, else a plain one."""
    isatty = getattr(out, "isatty", None)
    if isatty is not None and isatty():
        return LiveDisplay(out, total, done, label)
    return Display(out)
