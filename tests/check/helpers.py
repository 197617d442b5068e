"""Shared pieces of the piranhas-check tests: our bots (tests/check/bots), broken variants of
the shell bot made in a temporary folder, and running the command to its JSON card."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from check.isolation import detect
from cli.check import main

BOTS = Path(__file__).resolve().parent / "bots"
SHELL_BOT = BOTS / "shell"
FAULTY = BOTS / "faulty.py"


def run_check(tmp_path: Path, bot: str, *arguments: str) -> tuple[int, dict[str, Any]]:
    """`piranhas-check BOT ARGUMENTS --json ...` in process mode; its status and card."""
    report = tmp_path / "card.json"
    status = main([bot, "--mode", "process", "--json", str(report), "--plain", *arguments])
    card: dict[str, Any] = json.loads(report.read_text()) if report.exists() else {}
    return status, card


def statuses(card: dict[str, Any]) -> dict[str, str]:
    """Item key -> status."""
    return {item["key"]: item["status"] for item in card["items"]}


def failed(card: dict[str, Any]) -> set[str]:
    return {key for key, status in statuses(card).items() if status == "FAIL"}


def require_isolation() -> None:
    """Skip unless the check can make cgroups and network namespaces (root here)."""
    isolation = detect()
    if isolation.cgroup is None or not isolation.netns:
        pytest.skip("needs root: cgroups and network namespaces (process-mode isolation)")


def shell_variant(root: Path, fault: str) -> Path:
    """A copy of the shell bot in `root`/`fault` with one fault: crlf, no-run-bit, no-args,
    short-only (parses only the short options, with getopts)."""
    folder = root / fault
    shutil.copytree(SHELL_BOT, folder)
    start = folder / "start.sh"
    if fault == "crlf":
        start.write_bytes(start.read_bytes().replace(b"\n", b"\r\n"))
    elif fault == "no-run-bit":
        start.chmod(0o644)
    elif fault == "no-args":
        start.write_text('#!/bin/sh\nexec bash "$(dirname "$0")/bot.sh"\n')
    elif fault == "short-only":
        bot = folder / "bot.sh"
        text = bot.read_text()
        begin, end = text.index("while [ $# -gt 0 ]"), text.index("exec 3<>")
        getopts = (
            'while getopts "h:p:r:" option; do\n'
            "    case $option in\n"
            "        h) host=$OPTARG ;; p) port=$OPTARG ;; r) reservation=$OPTARG ;;\n"
            "    esac\n"
            "done\n"
        )
        bot.write_text(text[:begin] + getopts + text[end:])
    else:
        raise ValueError(fault)
    return folder


def faulty(fault: str) -> str:
    """The command of tests/check/bots/faulty.py with `fault`, on this interpreter."""
    return f"{sys.executable} {FAULTY} --fault {fault}"


def java_jar(root: Path) -> Path:
    """tests/check/bots/java/Bot.java compiled with Debian's javac into a jar with Main-Class."""
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        pytest.skip("no JDK (javac, jar)")
    classes = root / "classes"
    classes.mkdir()
    subprocess.run([javac, "-d", str(classes), str(BOTS / "java" / "Bot.java")], check=True)
    target = root / "upload" / "bot.jar"
    target.parent.mkdir()
    subprocess.run(
        [jar, "--create", "--file", str(target), "--main-class", "Bot", "-C", str(classes), "."],
        check=True,
    )
    return target


def zip_folder(folder: Path, target: Path, *, mode: int | None = None) -> Path:
    """The folder zipped as a Linux zip tool does (Unix modes kept)."""
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(folder.rglob("*")):
            info = zipfile.ZipInfo(str(path.relative_to(folder)))
            info.create_system = 3
            file_mode = (
                mode if mode is not None and path.name == "start.sh" else path.stat().st_mode
            )
            info.external_attr = (stat.S_IFREG | (file_mode & 0o777)) << 16
            archive.writestr(info, path.read_bytes())
    return target
