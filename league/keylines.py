"""Where is a key of a league file? The line numbers of its tables and keys, for error messages
(`liga.toml:7: teams[1].command: …`); league.config's errors and checks use them."""

from __future__ import annotations

import re

__all__ = ["KeyLines", "dotted"]

_TABLE = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(
    r"^\s*((?:[A-Za-z0-9_\-]+|\"[^\"]*\")(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|\"[^\"]*\"))*)\s*="
)


class KeyLines:
    """Line numbers of tables and keys, found by scanning the text (enough for the flat
    documents a league file is: top-level keys, `[table]`s and `[[teams]]` blocks).

    Paths are tuples: ("name",), ("timeouts", "soft"), ("teams", 2, "image"). Unknown paths
    fall back to the nearest known parent, so an error always gets some line.
    """

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[str | int, ...], int] = {}
        counts: dict[str, int] = {}
        prefix: tuple[str | int, ...] = ()
        for number, line in enumerate(text.splitlines(), start=1):
            table = _TABLE.match(line)
            if table:
                name = table.group(2).strip().strip('"')
                if table.group(1) == "[[":
                    index = counts.get(name, 0)
                    counts[name] = index + 1
                    prefix = (name, index)
                    self.lines.setdefault((name,), number)
                else:
                    prefix = tuple(name.split("."))
                self.lines.setdefault(prefix, number)
                continue
            key = _KEY.match(line)
            if key:
                # Dotted keys (`timeouts.soft = 2`) name their table too.
                parts = tuple(part.strip().strip('"') for part in key.group(1).split("."))
                for end in range(1, len(parts) + 1):
                    self.lines.setdefault((*prefix, *parts[:end]), number)

    def line(self, path: tuple[str | int, ...]) -> int | None:
        """The line of `path`, else of its nearest known parent (None: not even that)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


def dotted(path: tuple[str | int, ...]) -> str:
    """A key path as the error messages write it: `teams[1].command`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out
