"""Replay files in the official format (§8): `<protocol>\\n`, one `<room>` per recorded
message at column 0 followed by a newline, then `</protocol>` (no final newline).

Reading accepts plain or gzip-compressed bytes (detected by the magic bytes), as the
official ReplayLoader accepts `.xml` and `.xml.gz`. A replay may come from anywhere (a
download, a user's disk), so reading is bounded: at most `MAX_REPLAY_BYTES` of XML, however
well the input compresses, and a file cut short is refused rather than half loaded.
"""

from __future__ import annotations

import dataclasses
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
# A whole game of 10x10 mementos is about 0.5 MB of XML; this leaves ample room for any real
# replay while a gzip bomb stops here instead of filling the memory.
MAX_REPLAY_BYTES = 16 * 1024 * 1024
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


def read_replay(data: bytes, *, max_bytes: int = MAX_REPLAY_BYTES) -> Replay:
    """Parse a replay (plain or gzip). Raises RemoteProtocolError for a broken, truncated or
    oversized file: more than `max_bytes` of XML (after decompression), a gzip stream cut
    short, or a document that ends before `</protocol>`."""
    if data[:2] == _GZIP_MAGIC:
        data = gunzip_bounded(data, max_bytes)
    elif len(data) > max_bytes:
        raise RemoteProtocolError(f"replay larger than {max_bytes} bytes")
    reader = PacketReader(REPLAY_LIMITS)
    decoder = ServerDecoder(REPLAY_LIMITS)
    reader.feed(data)
    reader.feed(b"")
    states: list[GameState] = []
    result: GameResult | None = None
    while True:
        element = reader.next_packet()
        if element is None:
            # Every complete replay ends with </protocol> (ours and the official writer's):
            # without it the file was cut short, and its last moves or result are missing.
            raise RemoteProtocolError(
                f"replay is truncated: it ends before </protocol> (after {len(states)} states)"
            )
        if isinstance(element, EndOfDocument):
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


def gunzip_bounded(data: bytes, max_bytes: int) -> bytes:
    """Decompress gzip `data` (one or more members, as `gzip.decompress`), producing at most
    `max_bytes`: the output is never allowed to grow past that, so a small bomb costs no
    more memory than a legitimate replay. Raises RemoteProtocolError."""
    out = bytearray()
    rest = data
    while rest:
        if rest[:2] != _GZIP_MAGIC:
            raise RemoteProtocolError("broken gzip replay: garbage after the compressed data")
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)  # 16+: gzip header and trailer
        pending = rest
        try:
            while pending and not decompressor.eof:
                # max_length > 0 always (0 would mean "unlimited"): the check below raises
                # as soon as the output reaches max_bytes + 1.
                out += decompressor.decompress(pending, max_bytes + 1 - len(out))
                if len(out) > max_bytes:
                    raise RemoteProtocolError(
                        f"replay larger than {max_bytes} bytes after decompression"
                    )
                pending = decompressor.unconsumed_tail
        except zlib.error as error:
            raise RemoteProtocolError(f"broken gzip replay: {error}") from None
        if not decompressor.eof:
            raise RemoteProtocolError("broken gzip replay: the compressed data is truncated")
        rest = decompressor.unused_data
    return bytes(out)
