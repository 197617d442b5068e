"""One connection object per side, sans-IO (like h11): bytes in → events out, messages in →
bytes out. Nothing here touches sockets or clocks."""

from __future__ import annotations

import enum
import re
from typing import ClassVar, Final

from engine.types import Move
from protocol._decode import (
    ClientDecoder,
    ServerDecoder,
    client_decoder,
    move_fields,
    move_packet_pattern,
    packet_pattern,
    shortcut_packet,
)
from protocol._reader import EndOfDocument, PacketReader
from protocol._xml import render_standalone
from protocol.errors import LocalProtocolError, RemoteProtocolError
from protocol.events import ClientPacket, MovePacket, StreamEnd
from protocol.limits import ProtocolLimits
from protocol.messages import ServerMessage


class NeedData(enum.Enum):
    """Sentinel type: `next_event` needs more bytes before it can return an event."""

    NEED_DATA = "NEED_DATA"


NEED_DATA: Final = NeedData.NEED_DATA


class _Writer:
    """The sending half: one never-finished document, official layout (§1.2): the root
    start tag goes out with the first packet, every packet is preceded by "\\n  ", and
    nothing trails it."""

    def __init__(self) -> None:
        self._started = False
        self._closed = False

    def packet(self, xml_at_depth_1: str) -> bytes:
        return self.packet_bytes(xml_at_depth_1.encode())

    def packet_bytes(self, encoded_at_depth_1: bytes) -> bytes:
        if self._closed:
            raise LocalProtocolError("cannot send after the stream was closed")
        prefix = b"\n" if self._started else b"<protocol>\n"
        self._started = True
        return prefix + encoded_at_depth_1

    def close(self) -> bytes:
        if self._closed:
            raise LocalProtocolError("the stream is already closed")
        self._closed = True
        return b"\n</protocol>" if self._started else b"<protocol/>"

    @property
    def closed(self) -> bool:
        return self._closed


# Frozen: one object for every connection made without limits (and one decoder for them).
_DEFAULT_LIMITS: Final = ProtocolLimits()

_last_rendered: tuple[ServerMessage, bytes] | None = None


class ServerConnection:
    """The server's side of one client connection."""

    # A move in its usual layout, alone in its chunk, is read without the XML parser (a
    # sixth of the server's time per move went to parsing it); tests switch it off to check
    # that it changes nothing.
    _move_shortcut: ClassVar[bool] = True
    # So is a prepared game's <joinPrepared>: with it and the moves a player needs no
    # parser at all (most of a connection's set-up was making one and parsing the join).
    _join_shortcut: ClassVar[bool] = True
    # And an admin's <prepare>, once per game.
    _prepare_shortcut: ClassVar[bool] = True

    # The last limits' decoder and patterns, for the class they were made for: a server
    # makes every connection with one ProtocolLimits object, and the cached lookups by its
    # value (a hash of the dataclass each) cost a few thousand instructions a connection.
    _made: ClassVar[
        tuple[
            ProtocolLimits, type, ClientDecoder, re.Pattern[bytes] | None, re.Pattern[bytes] | None
        ]
        | None
    ] = None

    def __init__(self, limits: ProtocolLimits | None = None) -> None:
        limits = self.limits = limits or _DEFAULT_LIMITS
        made = ServerConnection._made
        if made is None or made[0] is not limits or made[1] is not type(self):
            made = ServerConnection._made = (
                limits,
                type(self),
                client_decoder(limits),
                move_packet_pattern(limits) if self._move_shortcut else None,
                packet_pattern(
                    limits, self._move_shortcut, self._join_shortcut, self._prepare_shortcut
                ),
            )
        _, _, self._decoder, self._move_pattern, self._packet_pattern = made
        self._reader = PacketReader(limits, self._decoder.check_packet_name)
        self._writer = _Writer()

    def receive_data(self, data: bytes) -> None:
        """Queue bytes from the peer; b"" means EOF (repeating it is harmless). Parsing
        happens in next_event. Bytes after EOF raise LocalProtocolError."""
        self._reader.feed(data)

    def receive_move(self, data: bytes) -> MovePacket | None:
        """`receive_data(data)` and `next_event()` in one call for the commonest chunk, one
        whole move in its usual layout with nothing queued before it: the move, and nothing
        is left to read. None, and nothing changed: give `data` to `receive_data`."""
        fields = self.receive_move_fields(data)
        return None if fields is None else MovePacket(*fields)

    def receive_move_fields(self, data: bytes) -> tuple[str, Move] | None:
        """`receive_move(data)`'s room id and move, without the packet (the server makes
        it only when it needs it); None, and nothing changed, as there."""
        pattern = self._move_pattern
        if pattern is None:
            return None
        match = self._reader.take_arriving(data, pattern)
        return None if match is None else move_fields(match)

    def next_event(self) -> ClientPacket | NeedData:
        """The next client packet, StreamEnd for `</protocol>`, or NEED_DATA.

        Raises RemoteProtocolError for anything the client got wrong, and (with
        `eof=True`) when its stream ended; after that every call raises again."""
        reader = self._reader
        if reader.starved:
            return NEED_DATA  # (after each packet: as below, without the look at everything)
        if self._packet_pattern is not None:
            match = reader.take_whole(self._packet_pattern)
            if match is not None:
                return shortcut_packet(match)
        try:
            element = reader.next_packet()
            if element is None:
                if reader.eof:
                    raise reader.fail(_eof_error(reader.document_ended))
                return NEED_DATA
            if isinstance(element, EndOfDocument):
                return StreamEnd()
            return self._decoder.decode(element)
        except RemoteProtocolError as error:
            raise reader.fail(error) from None

    def send(self, message: ServerMessage) -> bytes:
        """The bytes to write for `message`."""
        global _last_rendered
        # One message often goes to several connections in a row (a memento to both players
        # and the observers): it is rendered and encoded once. Keyed by identity, holding
        # the message, so the key cannot be reused; one tuple, so threads see either entry.
        # Rendered with the "\n" that precedes it in a started stream (a memento's ~3.6 kB
        # are not copied to put it in front).
        last = _last_rendered
        if last is not None and last[0] is message:
            framed = last[1]
        else:
            framed = message.framed_bytes(1)
            _last_rendered = (message, framed)
        writer = self._writer
        if writer._started and not writer._closed:
            return framed  # packet_bytes' usual case, without the call (every message)
        return writer.packet_bytes(framed[1:])

    def close(self) -> bytes:
        """The bytes that end our document: "\\n</protocol>", or "<protocol/>" if nothing
        was ever sent."""
        return self._writer.close()


class ClientConnection:
    """The client's side: for tests, benchmarks and bots."""

    def __init__(self, limits: ProtocolLimits | None = None) -> None:
        self.limits = limits or ProtocolLimits()
        self._decoder = ServerDecoder(self.limits)
        self._reader = PacketReader(self.limits, self._decoder.check_packet_name)
        self._writer = _Writer()

    def send(self, packet: ClientPacket) -> bytes:
        """The bytes to write for `packet`; the first call also opens the document.
        Sending StreamEnd closes it."""
        if isinstance(packet, StreamEnd):
            return self._writer.close()
        return self._writer.packet(render_standalone(packet.node(), 1))

    def receive_data(self, data: bytes) -> None:
        """Queue bytes from the server; b"" means EOF. Bytes after EOF raise
        LocalProtocolError."""
        self._reader.feed(data)

    def next_event(self) -> ServerMessage | NeedData:
        """The next server message or NEED_DATA. The server's `</protocol>` and EOF both
        raise RemoteProtocolError with `eof=True`: the server is gone."""
        reader = self._reader
        try:
            element = reader.next_packet()
            if element is None:
                if reader.eof:
                    raise reader.fail(_eof_error(reader.document_ended))
                return NEED_DATA
            if isinstance(element, EndOfDocument):
                raise RemoteProtocolError("the server ended its stream", eof=True)
            return self._decoder.decode(element)
        except RemoteProtocolError as error:
            raise reader.fail(error) from None


def _eof_error(document_ended: bool) -> RemoteProtocolError:
    if document_ended:
        return RemoteProtocolError("connection closed after the end of the stream", eof=True)
    return RemoteProtocolError("connection closed before the end of the stream", eof=True)
