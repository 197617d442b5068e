"""An example bot for a distributed league: a seeded random legal move (after `--delay`
seconds), so the same seed on the same board always plays the same game. Replace it with your
teams' bots; it only shows the contest interface every bot has.

Started like every contest bot: `seeded_bot.py --host H --port P --reservation CODE`.
"""

from __future__ import annotations

import argparse
import random
import socket
import sys
import time

from engine import GameState
from protocol import ClientConnection, NeedData
from protocol.events import JoinPrepared, MovePacket
from protocol.messages import Left, Memento, MoveRequest, ServerMessage


def main() -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-h", "--host", default="localhost")
    parser.add_argument("-p", "--port", type=int, default=13050)
    parser.add_argument("-r", "--reservation", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    options = parser.parse_args()
    chooser = random.Random(options.seed)
    connection = ClientConnection()
    with socket.create_connection((options.host, options.port)) as sock:
        sock.sendall(connection.send(JoinPrepared(options.reservation)))
        state: GameState | None = None
        while True:
            message = receive(sock, connection)
            if isinstance(message, Memento):
                state = message.state
            elif isinstance(message, MoveRequest):
                assert state is not None, "moveRequest before any memento"
                time.sleep(options.delay)
                move = chooser.choice(state.legal_moves())
                sock.sendall(connection.send(MovePacket(message.room_id, move)))
            elif isinstance(message, Left):
                return 0


def receive(sock: socket.socket, connection: ClientConnection) -> ServerMessage:
    while True:
        event = connection.next_event()
        if not isinstance(event, NeedData):
            return event
        data = sock.recv(65536)
        if not data:
            sys.exit(0)  # the server is gone
        connection.receive_data(data)


if __name__ == "__main__":
    sys.exit(main())
