"""Instructions per game of the game server alone (callgrind): what `bench.server`'s games
cost the server beyond their moves' share, the admin's `<prepare>`, two fresh TCP
connections with their `<protocol>` and `<joinPrepared>`, the start, the result, the closes.

`bench.server_instructions` counts the server and the clients in one process, per move; a
game's set-up and end are spread over its ~58 moves there and lost in that count's noise
(±4k a move, ±240k a game). Here the server (`cli.server`'s main, as the real one runs,
logging at info into a file) runs alone under `valgrind --tool=callgrind`, PYTHONHASHSEED,
the log flusher's wake-ups and trio's task shuffling fixed as in `bench.server_instructions`;
this process plays `GAMES` prepared games of `bench.server`'s first-legal-move clients
against it, one game at a time (no batching of several games' packets in one wake-up, which
would move the count with the timing), then stops it with SIGINT. Every game is played on
the relay's board, so every run and checkout plays the same games. The count is
(instructions(long) - instructions(short)) / (games(long) - games(short)): start-up, imports
and the shutdown cancel. The moves' own work is in it too (the same for every checkout that
does not change the move path); `bench.move_path_instructions` counts that alone.

Run:  .venv/bin/python -m bench.game_instructions [--games 40] [--checkout OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import trio

from bench._callgrind import collected
from bench.serverprocess import PASSWORD, free_port, wait_until_listening

REPO = Path(__file__).resolve().parents[1]


async def _play_games(port: int, games: int) -> int:
    """`games` games, one after the other, against the server on `port`; the moves played."""
    from bench.relay import BOARD_SEED
    from bench.server import Game, Stats, play
    from client import open_session
    from protocol.events import SlotDescriptor

    stats = Stats(start=-math.inf, deadline=math.inf)
    slots = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))
    async with open_session("127.0.0.1", port, password=PASSWORD) as admin:
        for _ in range(games):
            prepared = await admin.prepare(slots, seed=BOARD_SEED, timeout=600)
            first, second = prepared.reservations
            game = Game()
            async with trio.open_nursery() as pair:
                pair.start_soon(play, port, first, game, stats)
                pair.start_soon(play, port, second, game, stats)
    return stats.moves


def _count(root: Path, games: int) -> tuple[int, int]:
    """(instructions, moves) of a server under callgrind (its code from checkout `root`) that
    served `games` games."""
    with tempfile.TemporaryDirectory(prefix="bench-game-instructions-") as scratch:
        workdir = Path(scratch)
        (workdir / "server.properties").write_text(f"password={PASSWORD}\n", encoding="utf-8")
        # Move timeouts far beyond any run: under callgrind a move can take a second.
        port = free_port()
        arguments = ["--port", str(port)]
        arguments += ["--soft-timeout", "3600", "--hard-timeout", "7200"]
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
        # What would make the count depend on the wall clock (and so on the load), fixed as
        # bench.server_instructions does: the log flusher's wake-ups every FLUSH_SECONDS
        # (here only FLUSH_LINES flushes) and trio's shuffling of each batch of tasks.
        run = (
            "import sys, trio; from server import logs; logs.FLUSH_SECONDS = 3600.0; "
            "trio._core._run._r.seed(2026); from cli.server import main; "
            f"sys.exit(main({arguments!r}))"
        )
        command += [sys.executable, "-c", run]
        environment = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED="0")
        # The server's log (its stderr) into a file, as a real server's; valgrind's own
        # report (the count) into another. (A pipe would fill up and stop the server.)
        log = workdir / "server.log"
        report = workdir / "callgrind.log"
        command.insert(1, f"--log-file={report}")
        with (
            log.open("wb") as log_file,
            subprocess.Popen(
                command,
                cwd=workdir,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
            ) as server,
        ):
            try:
                # (Its log is buffered: not read. Under callgrind the start takes a while.)
                wait_until_listening(port, server, seconds=600)
                moves = trio.run(_play_games, port, games)
            finally:
                server.send_signal(signal.SIGINT)
                server.wait(timeout=600)
        output = report.read_bytes()
    return collected(output), moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=40, help="games of the longer run")
    parser.add_argument("--checkout", type=Path, help="also count this checkout's server")
    args = parser.parse_args()
    short = max(1, args.games // 4)
    targets = [("this", REPO)]
    if args.checkout is not None:
        targets.append(("old", args.checkout.resolve()))
    for label, root in targets:
        low, low_moves = _count(root, short)
        high, high_moves = _count(root, args.games)
        if low_moves * args.games != high_moves * short:
            # Every game is the same game: a run whose games differ was cut short.
            raise SystemExit(
                f"{label}: {low_moves} moves in {short} games but {high_moves} in {args.games}"
            )
        each = (high - low) / (args.games - short)
        moves = high_moves // args.games
        print(
            f"{label:>5}: {each:,.0f} instructions a game of {moves} moves "
            f"({each / moves:,.0f} a move; runs of {short} and {args.games} games)"
        )


if __name__ == "__main__":
    main()
