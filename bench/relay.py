"""The socket floor of a game server: a bare trio relay that does a server's socket work per
move and nothing else, for `bench.server --relay` to compare the real server with.

It speaks just enough of the protocol, at the byte level, for bench.server's clients: an
admin's `<prepare>` gets a `<prepared>` with two reservations, each `<joinPrepared>` a
`<joined>`; once both joined, each player gets a welcomeMessage, both the start memento, and
ONE a moveRequest. Per move it reads the move packet (found by its `</room>`, never parsed),
writes the memento to both players and a moveRequest to the other one, as the server does,
each connection's bytes in one `send` (the server's writer also hands a connection's queued
messages to the kernel at once). No XML, rules, clock, limits or logs: the memento is the
real start board's, rendered once (the size a server writes), and a game ends with a result
after as many moves as the first-legal-move game on that board lasts, so the clients (which
track the state themselves) never run out of moves.

Reads and writes go straight to the descriptor, as the server's SocketTransport does:
`wait_readable`, then a non-blocking `recv` (reading first would cost a failed `recv` for
almost every packet at 100 games, a system call the server does not make); a write that does
not fit goes to a per-connection backlog that a writer task drains.

Run:  .venv/bin/python -m bench.relay --port 13099   (bench.server --relay starts it itself)
"""

from __future__ import annotations

import argparse
import socket
import uuid
from dataclasses import dataclass, field

import trio

from engine import GameResult, GameState, PlayerEntry, Team, game_result
from protocol import ServerConnection
from protocol.messages import (
    Joined,
    Left,
    Memento,
    MoveRequest,
    Prepared,
    ResultMessage,
    WelcomeMessage,
)

BOARD_SEED = 2026
RECEIVE_BYTES = 65536
_ROOM = "ROOM-ID-PLACEHOLDER"


def _render(message: object) -> bytes:
    connection = ServerConnection()
    connection.send(Joined("x"))  # the <protocol> opening goes with the first message
    return connection.send(message)  # type: ignore[arg-type]


def _game_length(state: GameState) -> tuple[int, GameResult]:
    moves = 0
    while not state.is_over:
        state = state.apply(state.legal_moves()[0])
        moves += 1
    players = [PlayerEntry(Team.ONE, "a"), PlayerEntry(Team.TWO, "b")]
    return moves, game_result(state, players)


START = GameState.initial(BOARD_SEED)
GAME_MOVES, RESULT = _game_length(START)
# Templates: the room id is put in per room (once per game, not per move).
MEMENTO = _render(Memento(_ROOM, START))
MOVE_REQUEST = _render(MoveRequest(_ROOM))
RESULT_BYTES = _render(ResultMessage(_ROOM, RESULT))
LEFT = _render(Left(_ROOM))
JOINED = _render(Joined(_ROOM))
WELCOME = {team: _render(WelcomeMessage(_ROOM, team)) for team in Team}
PREPARED = _render(Prepared(_ROOM, ("RESERVATION-ONE", "RESERVATION-TWO")))
OPENING = b"<protocol>"


@dataclass(eq=False)
class Peer:
    sock: socket.socket
    backlog: list[bytes] = field(default_factory=list)
    wake: trio.Event = field(default_factory=trio.Event)
    room: Room | None = None
    index: int = 0
    greeted: bool = False  # the server's stream opens with <protocol>, sent with the first bytes

    def write(self, data: bytes) -> None:
        if not self.greeted:
            self.greeted = True
            data = OPENING + data
        if not self.backlog:
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError:
                return
            if sent == len(data):
                return
            data = data[sent:]
            self.wake.set()
        self.backlog.append(data)

    async def writer(self) -> None:
        while True:
            await self.wake.wait()
            self.wake = trio.Event()
            while self.backlog:
                await trio.lowlevel.wait_writable(self.sock)
                data = b"".join(self.backlog)
                self.backlog.clear()
                try:
                    sent = self.sock.send(data)
                except BlockingIOError:
                    sent = 0
                if sent < len(data):
                    self.backlog.insert(0, data[sent:])


@dataclass(eq=False)
class Room:
    id: bytes
    memento: bytes
    request: bytes
    players: list[Peer | None] = field(default_factory=lambda: [None, None])
    moves: int = 0

    def move(self, mover: Peer) -> None:
        self.moves += 1
        one, two = self.players
        assert one is not None and two is not None
        other = two if mover is one else one
        if self.moves >= GAME_MOVES:
            end = self.memento + self.fill(RESULT_BYTES) + self.fill(LEFT)
            mover.write(end)
            other.write(end)
            return
        mover.write(self.memento)
        other.write(self.memento + self.request)

    def fill(self, template: bytes) -> bytes:
        return template.replace(_ROOM.encode(), self.id)


class Relay:
    def __init__(self) -> None:
        self.reservations: dict[bytes, tuple[Room, int]] = {}

    def prepare(self) -> bytes:
        room_id = str(uuid.uuid4()).encode()
        room = Room(
            room_id,
            MEMENTO.replace(_ROOM.encode(), room_id),
            MOVE_REQUEST.replace(_ROOM.encode(), room_id),
        )
        codes = []
        for index in range(2):
            code = str(uuid.uuid4()).encode()
            self.reservations[code] = (room, index)
            codes.append(code)
        return (
            PREPARED.replace(_ROOM.encode(), room_id)
            .replace(b"RESERVATION-ONE", codes[0])
            .replace(b"RESERVATION-TWO", codes[1])
        )

    def join(self, peer: Peer, code: bytes) -> None:
        room, index = self.reservations.pop(code)
        room.players[index] = peer
        peer.room, peer.index = room, index
        peer.write(JOINED.replace(_ROOM.encode(), room.id))
        if all(player is not None for player in room.players):
            # Welcome (templated per room) and the start memento to each, ONE asked first.
            for slot, player in enumerate(room.players):
                assert player is not None
                team = Team.ONE if slot == 0 else Team.TWO
                player.write(room.fill(WELCOME[team]) + room.memento)
            one = room.players[0]
            assert one is not None
            one.write(room.request)

    async def serve_connection(self, stream: trio.SocketStream) -> None:
        raw = stream.socket
        sock = socket.socket(fileno=raw.fileno())  # a stdlib view of the same descriptor
        sock.setblocking(False)
        peer = Peer(sock)
        buffer = b""
        opened = False
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(peer.writer)
                while True:
                    # Waiting first, as the server's SocketTransport.receive does: at 100 games
                    # the next packet is almost never there yet, and reading first costs a
                    # failed recv a packet.
                    await trio.lowlevel.wait_readable(sock)
                    try:
                        data = sock.recv(RECEIVE_BYTES)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        nursery.cancel_scope.cancel()
                        return
                    buffer += data
                    if not opened:
                        start = buffer.find(OPENING)
                        if start < 0:
                            continue
                        buffer = buffer[start + len(OPENING) :]
                        opened = True
                    rest = self.packets(peer, buffer)
                    if rest is None:
                        nursery.cancel_scope.cancel()
                        return
                    buffer = rest
        finally:
            sock.detach()  # the trio socket owns the descriptor
            await stream.aclose()

    def packets(self, peer: Peer, buffer: bytes) -> bytes | None:
        """Act on every complete packet in `buffer`; the rest, or None at the stream's end."""
        while True:
            buffer = buffer.lstrip()
            if buffer.startswith(b"<room"):
                end = buffer.find(b"</room>")
                if end < 0:
                    return buffer
                if peer.room is not None:
                    peer.room.move(peer)
                buffer = buffer[end + 7 :]
            elif buffer.startswith(b"<prepare"):
                end = buffer.find(b"</prepare>")
                if end < 0:
                    return buffer
                peer.write(self.prepare())
                buffer = buffer[end + 10 :]
            elif buffer.startswith(b"</protocol>"):
                return None
            else:
                end = buffer.find(b"/>")
                if end < 0:
                    return buffer
                packet, buffer = buffer[: end + 2], buffer[end + 2 :]
                if packet.startswith(b"<joinPrepared"):
                    self.join(peer, packet.split(b'"')[1])
                elif packet.startswith(b"<close"):
                    return None


async def serve(port: int) -> None:
    relay = Relay()
    await trio.serve_tcp(relay.serve_connection, port, host="127.0.0.1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    # bench.serverprocess starts every server with these: accepted, not used.
    parser.add_argument("--password")
    parser.add_argument("--log-level")
    args, _ = parser.parse_known_args()
    trio.run(serve, args.port)


if __name__ == "__main__":
    main()
