"""Replay files in the official format (§8): `<protocol>\\n`, one `<room>` per recorded
message at column 0 followed by a newline, then `</protocol>` (no final newline).

Reading accepts plain or gzip-compressed bytes (detected by the magic bytes), as the
official ReplayLoader accepts `.xml` and `.xml.gz`.
"""

from __future__ import annotations

import dataclasses
import gzip
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from protocol._decode import ServerDecoder
from protocol._reader import EndOfDocument, PacketReader
from protocol.errors import RemoteProtocolError
from protocol.limits import ProtocolLimits
from protocol.messages import Memento, ReplayPacket, ResultMessage

if TYPE_CHECKING:
    from engine import GameResult, GameState

_GZIP_MAGIC = b"\x1f\x8b"
# A replay is our own or an official file, not a peer's stream: allow large packets but
# keep a bound against a corrupt file.
REPLAY_LIMITS = ProtocolLimits(max_packet_bytes=16 * 1024 * 1024, max_attribute_bytes=1 << 20)


@dataclass(frozen=True)
class Replay:
    states: list[GameState] = field(default_factory=list)
    result: GameResult | None = None

    def state_at_turn(self, turn: int) -> GameState:
        """The first state with `state.turn >= turn` (the official ReplayLoader.getTurn)."""
        for state in self.states:
            if state.turn >= turn:
                return state
        raise LookupError(f"no game state of turn {turn} in the replay")


def write_replay(room_id: str, packets: Sequence[ReplayPacket]) -> bytes:
    """The replay file's bytes (UTF-8). Every packet is written for `room_id`."""
    parts = ["<protocol>\n"]
    for packet in packets:
        if packet.room_id != room_id:
            packet = dataclasses.replace(packet, room_id=room_id)
        parts.append(packet.to_xml(0))
        parts.append("\n")
    parts.append("</protocol>")
    return "".join(parts).encode()


def read_replay(data: bytes) -> Replay:
    """Parse a replay. Raises RemoteProtocolError for a broken file."""
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise RemoteProtocolError(f"broken gzip replay: {error}") from None
    reader = PacketReader(REPLAY_LIMITS)
    decoder = ServerDecoder(REPLAY_LIMITS)
    reader.feed(data)
    reader.feed(b"")
    states: list[GameState] = []
    result: GameResult | None = None
    while True:
        element = reader.next_packet()
        if element is None or isinstance(element, EndOfDocument):
            break
        if element.tag != "room":
            raise RemoteProtocolError(f"replay: expected <room>, got <{element.tag}>")
        data_element = element.find("data")
        if data_element is None or data_element.get("class") not in ("memento", "result"):
            continue  # the official loader skips other messages (e.g. error) with a warning
        message = decoder.decode(element)
        if isinstance(message, Memento):
            states.append(message.state)
        elif isinstance(message, ResultMessage):
            result = message.result
    return Replay(states, result)
