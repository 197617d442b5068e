"""Instructions per move of the server's Python path alone (callgrind): the real `Connection`,
`Lobby` and `Room`, with transports that hand the moves over in memory (no sockets, no other
process), one game at a time on the relay's board.

`bench.server_instructions` counts the whole server with its clients and sockets; runs of one
tree move by ±3k there. Here there is no kernel and no client but the move's bytes (made once
per move by a `ClientConnection`, the same for every checkout), so a change of a few hundred
instructions on the move's path shows: with PYTHONHASHSEED fixed, runs of one tree agree
within ±0.3k. The count is (instructions(long) - instructions(short)) / (moves difference).

Run:  .venv/bin/python -m bench.move_path_instructions [--checkout OLD_CHECKOUT]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]


async def _play(games: int) -> int:
    """`games` games, one at a time, through two in-memory connections each; the moves."""
    from bench.relay import BOARD_SEED
    from engine import GameState, Move
    from protocol import ClientConnection
    from protocol.events import Join, MovePacket
    from server.config import load_settings
    from server.connection import Connection
    from server.lobby import Lobby

    start = GameState.initial(BOARD_SEED)
    moves: list[Move] = []
    state = start
    while not state.is_over:
        moves.append(state.legal_moves()[0])
        state = state.apply(moves[-1])

    class Game:
        def __init__(self) -> None:
            self.played = 0
            self.room: str | None = None

    class MemoryTransport:
        """Answers each moveRequest with the game's next move; ends after the result."""

        def __init__(self, game: Game) -> None:
            self.game = game
            self.client = ClientConnection()
            self.inbox = [self.client.send(Join())]
            self.lot = trio.lowlevel.ParkingLot()
            self.done = False

        async def receive(self) -> tuple[bytes, float]:
            while not self.inbox:
                if self.done:
                    return b"", trio.current_time()
                await self.lot.park()
            await trio.lowlevel.checkpoint()
            return self.inbox.pop(0), trio.current_time()

        def try_write(self, data: bytes | memoryview) -> int:
            data = bytes(data)
            if b'class="moveRequest"' in data:
                game = self.game
                if game.room is None:
                    game.room = data.split(b'roomId="', 1)[1].split(b'"', 1)[0].decode()
                self.inbox.append(self.client.send(MovePacket(game.room, moves[game.played])))
                game.played += 1
                self.lot.unpark_all()
            if b'class="result"' in data:
                self.done = True
                self.lot.unpark_all()
            return len(data)

        async def send_all(self, data: bytes) -> None:
            self.try_write(data)

        async def aclose(self) -> None:
            pass

    timeouts = ["--soft-timeout", "3600", "--hard-timeout", "7200"]
    with tempfile.TemporaryDirectory(prefix="bench-move-path-") as workdir:
        settings = load_settings(["--port", "0", *timeouts], Path(workdir))
        settings = dataclasses.replace(settings, start_state=start)
        lobby = Lobby(settings)
        played = 0
        async with trio.open_nursery() as nursery:
            await nursery.start(lobby.run)
            for _ in range(games):
                game = Game()
                async with trio.open_nursery() as pair:
                    for _ in range(2):
                        transport = MemoryTransport(game)
                        connection = Connection(
                            None,  # the transport is given
                            lobby,
                            settings,
                            transport=transport,
                        )
                        pair.start_soon(connection.run)
                if game.played != len(moves):
                    raise SystemExit(f"a game ended after {game.played} of {len(moves)} moves")
                played += game.played
            nursery.cancel_scope.cancel()
    return played


def _inner(games: int) -> None:
    from server import logs

    trio._core._run._r.seed(2026)  # trio's scheduler shuffles each batch of tasks
    logs.FLUSH_SECONDS = 3600.0
    with open(os.devnull, "w") as sink, logs.ServerLog(sink, "info").serving():
        moves = trio.run(_play, games)
    print(f"moves {moves}")


def _count(root: Path, games: int) -> tuple[int, int]:
    """(instructions, moves) of one run under callgrind, the code from checkout `root`."""
    # Here, not at the top: the inner run imports this file from `root`, which may predate
    # bench._callgrind.
    from bench._callgrind import count_in_checkout, reported

    instructions, output = count_in_checkout(__file__, ["--inner", str(games)], root)
    return instructions, reported(output, "moves")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=8, help="games of the longer run")
    parser.add_argument("--checkout", type=Path, help="also count this checkout")
    parser.add_argument("--inner", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:
        _inner(args.inner)
        return
    short = max(1, args.games // 4)
    targets = [("this", REPO)]
    if args.checkout is not None:
        targets.append(("old", args.checkout.resolve()))
    for label, root in targets:
        low, low_moves = _count(root, short)
        high, high_moves = _count(root, args.games)
        per_move = (high - low) / max(1, high_moves - low_moves)
        print(
            f"{label:>5}: {per_move:,.0f} instructions per move "
            f"({high_moves - low_moves} moves between runs of {short} and {args.games} games)"
        )


if __name__ == "__main__":
    main()
