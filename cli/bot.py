"""`piranhas-bot`: a built-in bot (`random`, `greedy`, `search`) as a contest client.

    piranhas-bot -h HOST -p PORT -r CODE --bot search --budget 1.5

The contest convention (`-h/--host`, `-p/--port`, `-r/--reservation`, as `start.sh`): with a
reservation it takes its reserved slot (`<joinPrepared>`), without one it joins any open
game (`<join>`). It speaks the SC protocol through `client.ClientSession` (the project's one
client session) and thinks in a worker thread, so the connection stays served while it
searches. `piranhas-match --player2 builtin:greedy` starts it for a match.

Exit status: 0 after the game's `<left>`, 1 when the connection is lost or refused first,
2 for bad options.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import trio

from bots.contest import play
from bots.players import BOT_NAMES, DEFAULT_BUDGET, make_bot
from client import ConnectionClosed, ServerRefused

PROGRAM = "piranhas-bot"


def build_parser() -> argparse.ArgumentParser:
    """The command line (no -h for help: -h is the host, as in the contest)."""
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__, add_help=False)
    parser.add_argument("--help", action="help", help="show this help and exit")
    parser.add_argument("-h", "--host", default="localhost", help="server host")
    parser.add_argument("-p", "--port", type=int, default=13050, help="server port")
    parser.add_argument("-r", "--reservation", default=None, help="reservation code")
    parser.add_argument("--bot", choices=BOT_NAMES, default="search", help="which bot")
    parser.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        help=f"seconds to think per move (default {DEFAULT_BUDGET:g})",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the bot's choices")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `piranhas-bot` command."""
    parser = build_parser()
    try:
        options = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2
    if not options.budget > 0:
        print(f"{PROGRAM}: --budget must be positive", file=sys.stderr)
        return 2
    bot = make_bot(options.bot, options.seed)
    try:
        reason = trio.run(
            play, bot, options.host, options.port, options.reservation, options.budget
        )
    except (OSError, ConnectionClosed, ServerRefused) as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 1
    print(f"{PROGRAM} ({bot.name}): game over: {reason}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
