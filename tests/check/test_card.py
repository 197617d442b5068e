"""The report card (check/card.py) and the command's exits (cli/check.py): plain lines off a
terminal, rich on one, JSON and an HTML page; 0 ready, 1 not, 2 bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from check.card import Card, Item, Status
from cli.check import main


def sample_card() -> Card:
    card = Card("bot.zip", isolation="process")
    card.add(
        Item(
            1,
            "upload.crlf",
            "LF line endings",
            Status.FAIL,
            "start.sh has 3 CRLF",
            "sed -i 's/\\r$//' start.sh",
        )
    )
    card.add(
        Item(
            5,
            "stress.one-segment",
            "one segment",
            Status.FAIL,
            "no move <in> 10 s",
            "read whole packets",
            bot_bytes='<joinPrepared reservationCode="x"/>',
            log_tail="Traceback ...\nKeyError: 'moveRequest'",
        )
    )
    card.add(Item(6, "resources.threads", "Threads", Status.INFO, "at most 3 threads"))
    return card


def test_plain_card_says_what_failed_and_how_to_fix_it() -> None:
    text = sample_card().plain()
    assert "FAIL  LF line endings" in text
    assert "fix: sed -i" in text
    assert "bot's last bytes: <joinPrepared" in text
    assert "| KeyError: 'moveRequest'" in text
    assert text.rstrip().endswith("NOT READY: 2 item(s) failed: upload.crlf, stress.one-segment")


def test_rich_card_on_a_terminal() -> None:
    out = io.StringIO()
    sample_card().print_rich(out)
    assert "LF line endings" in out.getvalue() and "NOT READY" in out.getvalue()


def test_json_and_html() -> None:
    card = sample_card()
    out = io.StringIO()
    card.write_json(out)
    data = json.loads(out.getvalue())
    assert data["ready"] is False
    assert [item["key"] for item in data["items"]] == [
        "upload.crlf",
        "stress.one-segment",
        "resources.threads",
    ]
    assert data["items"][0]["status"] == "FAIL" and data["items"][0]["fix"]
    page = card.html()
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert "no move &lt;in&gt; 10 s" in page  # escaped


def test_a_card_without_failures_is_ready() -> None:
    card = Card("bot")
    card.add(Item(2, "run.startup", "Start-up", Status.WARN, "6 s"))
    assert card.ready and "READY for the contest" in card.plain()


@pytest.mark.parametrize(
    "arguments",
    [
        ["/no/such/bot"],
        ["./start.sh", "--only", "8"],
        ["./start.sh", "--cases", "nonsense"],
        ["./start.sh", "--speed-factor", "0"],
        ["no-such-command-anywhere --flag"],
    ],
)
def test_bad_input_exits_2(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(arguments) == 2
    assert "piranhas-check: error:" in capsys.readouterr().err


def test_a_broken_upload_exits_1_with_its_card(tmp_path: Path) -> None:
    folder = tmp_path / "bot"
    folder.mkdir()
    (folder / "README").write_text("no start file here")
    report, page = tmp_path / "card.json", tmp_path / "card.html"
    assert main([str(folder), "--json", str(report), "--html", str(page)]) == 1
    data = json.loads(report.read_text())
    assert data["ready"] is False
    assert [item["key"] for item in data["items"] if item["status"] == "FAIL"] == [
        "upload.start-file"
    ]
    assert "start.sh" in page.read_text()
