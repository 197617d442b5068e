"""`piranhas-check BOT`: will my bot survive the contest? (docs/check.md)

BOT is a contest upload (the ZIP as uploaded, or its folder), a start.sh, a jar, or any
command. The report card goes to stdout (rich on a terminal, plain lines otherwise); --json
and --html write it to files as well. Exit status: 0 ready for the contest, 1 not ready
(an item failed), 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

from check.run import Options, check
from check.stress import CASE_KEYS
from check.upload import BadInput

PROGRAM = "piranhas-check"
ITEM_NAMES = {
    "upload": 1,
    "run": 2,
    "clock": 3,
    "test": 4,
    "stress": 5,
    "resources": 6,
    "robust": 7,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROGRAM, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("bot", metavar="BOT", help="ZIP, folder, start.sh, jar or a command")
    parser.add_argument(
        "--main",
        help="the start file in the upload (default: start.sh, the only jar, or logic.py/main.py)",
    )
    parser.add_argument(
        "--python", default="python3", help="interpreter for a Python main file (default python3)"
    )
    parser.add_argument(
        "--mode",
        choices=("auto", "process", "docker"),
        default="auto",
        help="docker: the bot in a container as the contest runs it; process: a process "
        "with cgroup, namespace and rlimit limits; auto (default): docker when a daemon and "
        "the bot base image are there and the upload has a start.sh",
    )
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated items to run: 1-7 or upload, run, clock, test, "
        "stress, resources, robust (default: all)",
    )
    parser.add_argument(
        "--cases", default=None, help=f"stress cases (default all): {', '.join(CASE_KEYS)}"
    )
    parser.add_argument(
        "--speed-factor",
        type=float,
        default=None,
        help="how many times slower the contest's thread is than this "
        "machine (default: calibrated)",
    )
    parser.add_argument(
        "--opponent",
        default="greedy",
        choices=("random", "greedy", "search"),
        help="the built-in bot of the 6-game match (default greedy)",
    )
    parser.add_argument("--random-games", type=int, default=2)
    parser.add_argument("--match-games", type=int, default=6)
    parser.add_argument("--clock-games", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the card as JSON to this file")
    parser.add_argument("--html", type=Path, help="write the card as an HTML page to this file")
    parser.add_argument("--log-dir", type=Path, help="keep the bot's logs here")
    parser.add_argument("--plain", action="store_true", help="plain lines even on a terminal")
    return parser


def parse_items(text: str | None) -> frozenset[int]:
    if text is None:
        return frozenset(range(1, 8))
    chosen = set()
    for word in text.split(","):
        word = word.strip()
        if word.isdigit() and 1 <= int(word) <= 7:
            chosen.add(int(word))
        elif word in ITEM_NAMES:
            chosen.add(ITEM_NAMES[word])
        else:
            raise BadInput(f"--only: unknown item {word!r}")
    return frozenset(chosen)


def main(argv: Sequence[str] | None = None) -> int:
    """The `piranhas-check` command."""
    parser = build_parser()
    try:
        arguments = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2
    try:
        cases = CASE_KEYS
        if arguments.cases:
            cases = tuple(c.strip() for c in arguments.cases.split(","))
            unknown = [c for c in cases if c not in CASE_KEYS]
            if unknown:
                raise BadInput(f"--cases: unknown case(s) {', '.join(unknown)}")
        for name in ("random_games", "match_games", "clock_games"):
            if getattr(arguments, name) < 0:
                raise BadInput(f"--{name.replace('_', '-')} must not be negative")
        if arguments.speed_factor is not None and not arguments.speed_factor > 0:
            raise BadInput("--speed-factor must be positive")
        options = Options(
            bot=arguments.bot,
            main=arguments.main,
            mode=arguments.mode,
            python=arguments.python,
            sections=parse_items(arguments.only),
            cases=cases,
            speed_factor=arguments.speed_factor,
            random_games=arguments.random_games,
            match_games=arguments.match_games,
            clock_games=arguments.clock_games,
            opponent=arguments.opponent,
            log_dir=arguments.log_dir,
        )
        card = trio.run(check, options)
    except BadInput as error:
        print(f"{PROGRAM}: error: {error}", file=sys.stderr)
        return 2
    if sys.stdout.isatty() and not arguments.plain:
        card.print_rich(sys.stdout)
    else:
        sys.stdout.write(card.plain())
    try:
        if arguments.json:
            with arguments.json.open("w", encoding="utf-8") as out:
                card.write_json(out)
        if arguments.html:
            arguments.html.write_text(card.html(), encoding="utf-8")
    except OSError as error:
        print(f"{PROGRAM}: error: cannot write the report: {error}", file=sys.stderr)
        return 2
    return 0 if card.ready else 1


if __name__ == "__main__":
    raise SystemExit(main())
