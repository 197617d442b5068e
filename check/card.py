"""The report card: items grouped in the issue's seven sections, each PASS, WARN, FAIL, SKIP or
INFO with what was found and, when it failed, how to fix it. Rendered with rich on a terminal,
as plain lines otherwise, as JSON and as a standalone HTML page.

A card is ready (exit 0) when no item FAILs; WARN never blocks.
"""

from __future__ import annotations

import enum
import html
import json
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

SECTIONS = {
    1: "The upload as the contest reads it",
    2: "Run as the contest runs it",
    3: "The contest's clock",
    4: "The contest's test",
    5: "Byte-stream stress suite",
    6: "Resources",
    7: "Robustness",
}


class Status(enum.Enum):
    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    SKIP = "SKIP"
    INFO = "INFO"


@dataclass
class Item:
    """One line of the card. `key` is stable (tests and JSON readers select by it):
    `upload.crlf`, `run.long-options`, `stress.one-segment`, ..."""

    section: int
    key: str
    title: str
    status: Status
    detail: str = ""  # what was found
    fix: str = ""  # how to fix it (for FAIL and WARN)
    figures: dict[str, Any] = field(default_factory=dict)
    bot_bytes: str = ""  # the last bytes the bot sent (stress cases)
    log_tail: str = ""  # the end of the bot's output

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return {name: value for name, value in data.items() if value not in ("", {})}


@dataclass
class Card:
    """Everything the check found about one bot."""

    bot: str
    isolation: str = ""  # which isolation applied, in words
    items: list[Item] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, item: Item) -> Item:
        self.items.append(item)
        return item

    def item(self, key: str) -> Item | None:
        return next((item for item in self.items if item.key == key), None)

    def failed(self) -> list[Item]:
        return [item for item in self.items if item.status is Status.FAIL]

    @property
    def ready(self) -> bool:
        return not self.failed()

    def to_json(self) -> dict[str, Any]:
        return {
            "bot": self.bot,
            "ready": self.ready,
            "isolation": self.isolation,
            "notes": self.notes,
            "sections": {str(number): title for number, title in SECTIONS.items()},
            "items": [item.to_json() for item in self.items],
        }

    def write_json(self, stream: TextIO) -> None:
        json.dump(self.to_json(), stream, indent=2, ensure_ascii=False)
        stream.write("\n")

    # ---- plain text --------------------------------------------------------------------

    def plain(self) -> str:
        lines = [f"piranhas-check: {self.bot}", f"isolation: {self.isolation or 'none'}"]
        lines += [f"note: {note}" for note in self.notes]
        for number, title in SECTIONS.items():
            items = [item for item in self.items if item.section == number]
            if not items:
                continue
            lines.append("")
            lines.append(f"{number}. {title}")
            for item in items:
                lines.append(f"  {item.status.value:<4}  {item.title}")
                if item.detail:
                    lines += [f"        {line}" for line in item.detail.splitlines()]
                if item.fix and item.status in (Status.FAIL, Status.WARN):
                    lines += [f"        fix: {line}" for line in item.fix.splitlines()]
                if item.status is Status.FAIL:
                    if item.bot_bytes:
                        lines.append(f"        bot's last bytes: {item.bot_bytes}")
                    if item.log_tail:
                        lines.append("        bot's log (tail):")
                        lines += [f"          | {line}" for line in item.log_tail.splitlines()]
        lines.append("")
        failed = self.failed()
        if failed:
            lines.append(
                f"NOT READY: {len(failed)} item(s) failed: "
                + ", ".join(item.key for item in failed)
            )
        else:
            lines.append("READY for the contest (no item failed)")
        return "\n".join(lines) + "\n"

    # ---- rich ----------------------------------------------------------------------------

    def print_rich(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        console = Console(file=stream)
        colours = {
            Status.PASS: "green",
            Status.WARN: "yellow",
            Status.FAIL: "bold red",
            Status.SKIP: "dim",
            Status.INFO: "cyan",
        }
        console.print(Text(f"piranhas-check: {self.bot}", style="bold"))
        console.print(f"isolation: {self.isolation or 'none'}")
        for note in self.notes:
            console.print(f"note: {note}", style="dim")
        for number, title in SECTIONS.items():
            items = [item for item in self.items if item.section == number]
            if not items:
                continue
            table = Table(
                title=f"{number}. {title}", title_justify="left", show_header=False, expand=True
            )
            table.add_column(width=4)
            table.add_column(ratio=1)
            for item in items:
                body = Text(item.title, style="bold")
                if item.detail:
                    body.append("\n" + item.detail)
                if item.fix and item.status in (Status.FAIL, Status.WARN):
                    body.append("\nfix: " + item.fix, style="yellow")
                if item.status is Status.FAIL and item.bot_bytes:
                    body.append("\nbot's last bytes: " + item.bot_bytes, style="dim")
                if item.status is Status.FAIL and item.log_tail:
                    body.append("\nbot's log (tail):\n" + item.log_tail, style="dim")
                table.add_row(Text(item.status.value, style=colours[item.status]), body)
            console.print(table)
        failed = self.failed()
        if failed:
            console.print(f"NOT READY: {len(failed)} item(s) failed", style="bold red")
        else:
            console.print("READY for the contest (no item failed)", style="bold green")

    # ---- HTML ----------------------------------------------------------------------------

    def html(self) -> str:
        """A standalone page (inline style, no scripts) the web viewer can serve as it is."""
        out = [
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>piranhas-check: {html.escape(self.bot)}</title>",
            "<style>body{font-family:sans-serif;max-width:60em;margin:1em auto}"
            "td{vertical-align:top;padding:.2em .5em}.PASS{color:#070}.FAIL{color:#b00;"
            "font-weight:bold}.WARN{color:#a60}.SKIP{color:#888}.INFO{color:#06a}"
            "pre{background:#f4f4f4;padding:.3em;white-space:pre-wrap}</style></head><body>",
            f"<h1>piranhas-check: {html.escape(self.bot)}</h1>",
            f"<p>isolation: {html.escape(self.isolation or 'none')}</p>",
        ]
        verdict = "READY for the contest" if self.ready else "NOT READY"
        out.append(f"<p class='{'PASS' if self.ready else 'FAIL'}'>{verdict}</p>")
        for number, title in SECTIONS.items():
            items = [item for item in self.items if item.section == number]
            if not items:
                continue
            out.append(f"<h2>{number}. {html.escape(title)}</h2><table>")
            for item in items:
                cell = [f"<b>{html.escape(item.title)}</b>"]
                if item.detail:
                    cell.append(f"<div>{html.escape(item.detail)}</div>")
                if item.fix and item.status in (Status.FAIL, Status.WARN):
                    cell.append(f"<div>fix: {html.escape(item.fix)}</div>")
                if item.bot_bytes and item.status is Status.FAIL:
                    cell.append(f"<pre>{html.escape(item.bot_bytes)}</pre>")
                if item.log_tail and item.status is Status.FAIL:
                    cell.append(f"<pre>{html.escape(item.log_tail)}</pre>")
                status = item.status.value
                out.append(f"<tr><td class='{status}'>{status}</td><td>{''.join(cell)}</td></tr>")
            out.append("</table>")
        out.append("</body></html>\n")
        return "\n".join(out)
