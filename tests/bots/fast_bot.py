"""A minimal bot on this repository's own protocol and engine: answers every move request at
once with a random legal move, so a whole game takes a fraction of a second (a socha game
takes about 6 s). For the piranhas-match tests.

Started like every contest bot: `fast_bot.py --host H --port P --reservation CODE` (or
`-h/-p/-r`). Options that make it misbehave on purpose:

  --crash-after N   exit with status 3 after N moves, in the middle of the game
  --hang            never answer a move request (and keep the connection open)

It prints its process id first, so a test can check that it was killed, and exits 0 after
the server's `<left>`.
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

from engine import GameState
from protocol import ClientConnection, NeedData
from protocol.events import JoinPrepared, MovePacket
from protocol.messages import Left, Memento, MoveRequest, ServerMessage


def main() -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-h", "--host", default="localhost")
    parser.add_argument("-p", "--port", type=int, default=13050)
    parser.add_argument("-r", "--reservation", required=True)
    parser.add_argument("--crash-after", type=int, default=None)
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--seed", type=int, default=None)
    options = parser.parse_args()
    print(f"fast_bot pid={os.getpid()}", flush=True)

    chooser = random.Random(options.seed)
    connection = ClientConnection()
    with socket.create_connection((options.host, options.port)) as sock:
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
                move = chooser.choice(state.legal_moves())
                sock.sendall(connection.send(MovePacket(message.room_id, move)))
                moves += 1
            elif isinstance(message, Left):
                print(f"fast_bot: game over after {moves} moves", flush=True)
                return 0


def receive(sock: socket.socket, connection: ClientConnection) -> ServerMessage:
    while True:
        event = connection.next_event()
        if not isinstance(event, NeedData):
            return event
        connection.receive_data(sock.recv(65536))


if __name__ == "__main__":
    sys.exit(main())
