"""A minimal bot on this repository's own protocol and engine: answers every move request at
once with a random legal move, so a whole game takes a fraction of a second (a socha game
takes about 6 s). For the piranhas-match tests.

Started like every contest bot: `fast_bot.py --host H --port P --reservation CODE` (or
`-h/-p/-r`). Options that make it misbehave on purpose:

  --crash-after N   exit with status 3 after N moves, in the middle of the game
  --hang            never answer a move request (and keep the connection open)

and, tied to the state rather than to this process's history (so a reproducer that puts the
bot back into the position meets the same bug), at the first move request with turn >= N:

  --crash-at-turn N    exit with status 3
  --illegal-at-turn N  send a move that breaks the rules (a field without an own fish)
  --stall-at-turn N    sleep --stall SECONDS before answering
  --extra-move-at-turn N  send its move twice (the second is not requested: a protocol error)
  --delay SECONDS      sleep before every answer (a slow bot)

Without --reservation it sends a plain `<join>` (a room opened by a server started with
--loadGameFile).

It prints its process id first, so a test can check that it was killed, and exits 0 after
the server's `<left>`.

Deliberately not on `client.ClientSession` (the project's one client session): the container
tests run this file inside the contest's bot image, which has python3 and lxml but no trio
(tests/sandbox/sandbox_bot.py). So it keeps a blocking socket around the sans-IO
`protocol.ClientConnection`, the core the session wraps too.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import sys
import time
from pathlib import Path

# Run from a checkout without installing: the repository root holds engine/ and protocol/.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine import Direction, GameState, Move
from protocol import ClientConnection, NeedData
from protocol.events import Join, JoinPrepared, MovePacket
from protocol.messages import Left, Memento, MoveRequest, ServerMessage


def main() -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-h", "--host", default="localhost")
    parser.add_argument("-p", "--port", type=int, default=13050)
    parser.add_argument("-r", "--reservation", default=None)
    parser.add_argument("--crash-after", type=int, default=None)
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--crash-at-turn", type=int, default=None)
    parser.add_argument("--illegal-at-turn", type=int, default=None)
    parser.add_argument("--stall-at-turn", type=int, default=None)
    parser.add_argument("--stall", type=float, default=0.0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--extra-move-at-turn", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args()
    print(f"fast_bot pid={os.getpid()}", flush=True)

    chooser = random.Random(options.seed)
    connection = ClientConnection()
    with socket.create_connection((options.host, options.port)) as sock:
        if options.reservation is None:
            sock.sendall(connection.send(Join()))
        else:
            sock.sendall(connection.send(JoinPrepared(options.reservation)))
        state: GameState | None = None
        moves = 0
        while True:
            message = receive(sock, connection)
            if isinstance(message, Memento):
                state = message.state
            elif isinstance(message, MoveRequest):
                if options.hang:
                    while True:  # keeps the socket open until killed
                        time.sleep(1)
                if options.crash_after is not None and moves >= options.crash_after:
                    print("fast_bot: crashing on purpose", flush=True)
                    os._exit(3)  # no goodbye to the server, like a real crash
                assert state is not None, "moveRequest before any memento"
                turn = state.turn
                print(f"fast_bot: move requested at turn {turn}", flush=True)
                if reached(options.crash_at_turn, turn):
                    print(f"fast_bot: crashing on purpose at turn {turn}", flush=True)
                    os._exit(3)
                if options.delay:
                    time.sleep(options.delay)
                if reached(options.stall_at_turn, turn):
                    time.sleep(options.stall)
                move = chooser.choice(state.legal_moves())
                if reached(options.illegal_at_turn, turn):
                    move = illegal_move(state)
                data = connection.send(MovePacket(message.room_id, move))
                if reached(options.extra_move_at_turn, turn):
                    # In the same write: the server reads the second move before the
                    # opponent can answer the first, so it is never a requested move.
                    data += connection.send(MovePacket(message.room_id, move))
                sock.sendall(data)
                moves += 1
            elif isinstance(message, Left):
                print(f"fast_bot: game over after {moves} moves", flush=True)
                return 0


def reached(trigger: int | None, turn: int) -> bool:
    return trigger is not None and turn >= trigger


def illegal_move(state: GameState) -> Move:
    """A move from a field that holds no fish of the team to move (WRONG_START)."""
    own = {(move.x, move.y) for move in state.legal_moves()}
    for y in range(10):
        for x in range(10):
            if (x, y) not in own:
                return Move(x, y, Direction.UP)
    raise AssertionError("every field holds an own fish")


def receive(sock: socket.socket, connection: ClientConnection) -> ServerMessage:
    while True:
        event = connection.next_event()
        if not isinstance(event, NeedData):
            return event
        connection.receive_data(sock.recv(65536))


if __name__ == "__main__":
    sys.exit(main())
