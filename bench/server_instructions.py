"""Instructions per move (callgrind), which the machine's load does not move: the game server
and `bench.server`'s clients in ONE process, against the same clients on `bench.relay`.

`bench.server --relay` times the server in its own process, but on a shared machine its CPU
per move moves with the load and with the throughput (more moves per wake-up cost less each);
a change of a few per cent is lost in that. Here the server (`server.app.serve`, logging at
info into /dev/null through a `ServerLog`, as a server logs into a file) or the relay runs
in-process with `GAMES` prepared games of the first-legal-move clients, `--concurrency` at a
time, under `valgrind --tool=callgrind`. Two runs of different lengths cancel start-up and
imports: (instructions(long) - instructions(short)) / (moves(long) - moves(short)). The count
includes the clients' work (the same for every target; every game is played on the relay's
board, so every run and checkout plays the same games), so compare the server's figure with
the relay's *difference*, and an old checkout's with this one's.

Run:  .venv/bin/python -m bench.server_instructions [--games 20] [--checkout OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]


async def _play_games(games: int, concurrency: int, relay: bool) -> int:
    """`games` games against an in-process server (or relay); the moves played."""
    from bench.relay import BOARD_SEED
    from bench.server import Game, Stats, play
    from client import open_session
    from protocol.events import SlotDescriptor

    password = "bench"
    stats = Stats(start=-math.inf, deadline=math.inf)
    slots = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))
    async with trio.open_nursery() as nursery:
        if relay:
            from bench.relay import Relay

            handler = Relay().serve_connection
            listeners = await nursery.start(
                lambda task_status: trio.serve_tcp(
                    handler, 0, host="127.0.0.1", task_status=task_status
                )
            )
            port = listeners[0].socket.getsockname()[1]
        else:
            from server.app import serve
            from server.config import load_settings

            # Removed when this function returns (the object's finalizer), after the server
            # stopped: the server writes its results log there.
            scratch = tempfile.TemporaryDirectory(prefix="bench-instructions-")
            workdir = Path(scratch.name)
            # Move timeouts far beyond any run: under callgrind on a loaded machine a move can
            # take seconds, and a timeout would end the game early (other games, other counts).
            timeouts = ["--soft-timeout", "3600", "--hard-timeout", "7200"]
            settings = load_settings(["--port", "0", "--password", password, *timeouts], workdir)
            port = await nursery.start(
                lambda task_status: serve(settings, task_status=task_status, handle_signals=False)
            )
        left = games
        async with open_session("127.0.0.1", port, password=password) as admin:
            lock = trio.Lock()

            async def loop() -> None:
                nonlocal left
                while left > 0:
                    left -= 1
                    async with lock:
                        # Every game on the relay's board: the same games in every run,
                        # whichever checkout, so the counts differ only by the code.
                        prepared = await admin.prepare(slots, seed=BOARD_SEED)
                        first, second = prepared.reservations
                    game = Game()
                    async with trio.open_nursery() as pair:
                        pair.start_soon(play, port, first, game, stats)
                        pair.start_soon(play, port, second, game, stats)

            async with trio.open_nursery() as loops:
                for _ in range(concurrency):
                    loops.start_soon(loop)
        nursery.cancel_scope.cancel()
    return stats.moves


def _inner(games: int, concurrency: int, relay: bool) -> None:
    from server import logs

    # What would make the count depend on the wall clock (and so on the load): trio's
    # scheduler shuffles each batch of tasks (its private generator, seeded here), and the
    # log's flusher thread wakes every FLUSH_SECONDS (here only the FLUSH_LINES rule flushes).
    trio._core._run._r.seed(2026)
    logs.FLUSH_SECONDS = 3600.0
    with open(os.devnull, "w") as sink, logs.ServerLog(sink, "info").serving():
        moves = trio.run(_play_games, games, concurrency, relay)
    print(f"moves {moves}")


def _count(root: Path, games: int, concurrency: int, relay: bool) -> tuple[int, int]:
    """(instructions, moves) of one run under callgrind, the code from checkout `root`."""
    # Here, not at the top: the inner run imports this file from `root`, which may predate
    # bench._callgrind.
    from bench._callgrind import count_in_checkout, reported

    arguments = ["--inner", str(games), "--concurrency", str(concurrency)]
    arguments += ["--relay"] if relay else []
    instructions, output = count_in_checkout(__file__, arguments, root, hash_seed=None)
    return instructions, reported(output, "moves")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20, help="games of the longer run")
    parser.add_argument("--concurrency", type=int, default=10, help="games at a time")
    parser.add_argument("--checkout", type=Path, help="also count this checkout's server")
    parser.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--relay", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:
        _inner(args.inner, args.concurrency, args.relay)
        return
    short = max(args.concurrency, args.games // 4)
    if args.games <= short:
        # The count is the difference of a short and a long run: it needs the long one longer.
        parser.error(f"--games {args.games}: more than --concurrency ({args.concurrency}) needed")
    targets = [("server", REPO, False)]
    if args.checkout is not None:
        targets.append(("old", args.checkout.resolve(), False))
    targets.append(("relay", REPO, True))
    figures: dict[str, float] = {}
    for label, root, relay in targets:
        low, low_moves = _count(root, short, args.concurrency, relay)
        high, high_moves = _count(root, args.games, args.concurrency, relay)
        if low_moves * args.games != high_moves * short:
            # Every game is the same game: a run whose games differ in length was cut short
            # (a timeout, an error) and its count compares with nothing.
            raise SystemExit(
                f"{label}: {low_moves} moves in {short} games but {high_moves} in {args.games}"
            )
        figures[label] = (high - low) / max(1, high_moves - low_moves)
        print(
            f"{label:>6}: {figures[label]:,.0f} instructions per move, clients included "
            f"({high_moves - low_moves} moves between runs of {short} and {args.games} games)"
        )
    for label in figures:
        if label != "relay":
            print(
                f"{label:>6}: {figures[label] - figures['relay']:,.0f} instructions per move "
                "more than the relay"
            )


if __name__ == "__main__":
    main()
