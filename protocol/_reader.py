"""Incremental reading of one endless XML document: bytes in, completed packets out.

The prolog (BOM, XML declaration, comments, PIs up to the root start tag) is checked here,
byte by byte, so that a DOCTYPE is refused before libxml2 ever sees it: without a DTD no
entity can be declared, so only the five predefined entities and character references
exist (no XXE, no expansion bombs). Everything from the prolog on goes through lxml's pull
parser; each depth-1 element is handed out as soon as its end tag is parsed.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Final

from lxml import etree

from protocol.errors import RemoteProtocolError
from protocol.limits import ProtocolLimits

_BOM: Final = b"\xef\xbb\xbf"
_NON_WHITESPACE: Final = re.compile(rb"[^ \t\r\n]")
# Bytes XML 1.0 allows nowhere (C0 controls but tab, LF, CR), in any ASCII-compatible encoding.
# libxml2's push parser holds character data back until the next "<", so without this check a
# peer that sends a little binary garbage and then waits would never hear why nothing happens.
_FORBIDDEN: Final = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
# Feeding in bounded slices lets the size limit trip after at most one slice of a
# runaway packet, whatever size the caller's chunks have.
_MAX_SLICE: Final = 16384


def _strip_namespaces(packet: etree._Element) -> None:
    """Rename every element of `packet` to its local name (attributes without a prefix
    have no namespace anyway)."""
    for element in packet.iter(etree.Element):
        tag = str(element.tag)
        if tag[0] == "{":
            element.tag = tag.rpartition("}")[2]


class EndOfDocument:
    """Marker in the packet queue: the peer closed its root element."""

    __slots__ = ()


END_OF_DOCUMENT: Final = EndOfDocument()


class _Prolog:
    """Incremental check of the bytes before the root start tag.

    Scanning resumes where it stopped, so a peer trickling the prolog byte by byte costs
    linear time, not quadratic."""

    __slots__ = ("_pos", "_search_from", "buffer")

    def __init__(self) -> None:
        self.buffer = bytearray()
        self._pos = -1  # -1: the BOM check is still due
        self._search_from = 0  # where to resume looking for the end of an unfinished item

    def feed(self, chunk: bytes) -> bool:
        """Add bytes; True once the root start tag has begun. Raises RemoteProtocolError
        for a DOCTYPE (or any other declaration) and for bytes that cannot start a
        document."""
        buffer = self.buffer
        buffer += chunk
        size = len(buffer)
        if self._pos < 0:
            if size < 3 and _BOM.startswith(buffer):
                return False
            self._pos = 3 if buffer.startswith(_BOM) else 0
        while True:
            found = _NON_WHITESPACE.search(buffer, self._pos)
            if found is None:
                self._pos = size
                return False
            pos = self._pos = found.start()
            if buffer[pos] != 0x3C:  # '<'
                got = bytes(buffer[pos : pos + 20])
                raise RemoteProtocolError(f"broken XML: expected the root start tag, got {got!r}")
            if size - pos < 2:
                return False
            marker = buffer[pos + 1]
            if marker == 0x3F:  # '<?': XML declaration or processing instruction
                terminator, skip = b"?>", 2
            elif marker == 0x21:  # '<!'
                if size - pos < 4 and b"<!--".startswith(buffer[pos:]):
                    return False
                if buffer[pos : pos + 4] != b"<!--":
                    raise RemoteProtocolError(
                        "DOCTYPE and other markup declarations are refused "
                        f"(got {bytes(buffer[pos : pos + 20])!r})"
                    )
                terminator, skip = b"-->", 4
            else:
                return True
            end = buffer.find(terminator, max(pos + skip, self._search_from))
            if end < 0:
                self._search_from = size - len(terminator) + 1
                return False
            self._pos = end + len(terminator)
            self._search_from = 0


class PacketReader:
    """Turns a byte stream into completed depth-1 elements, in order.

    `feed` only queues bytes; `next_packet` parses as far as needed and raises
    RemoteProtocolError for broken XML or an exceeded limit. After an error every further
    call raises the same error."""

    def __init__(
        self, limits: ProtocolLimits, check_packet_name: Callable[[str], None] | None = None
    ) -> None:
        """`check_packet_name` sees each packet's tag as soon as its start tag is parsed
        and may raise RemoteProtocolError: XStream resolves the class on the start tag,
        so the official server rejects `<yarr>` before any end tag arrives."""
        self._limits = limits
        self._check_packet_name = check_packet_name
        self._slice = max(1, min(_MAX_SLICE, limits.max_packet_bytes))
        self._incoming: deque[bytes | memoryview] = deque()
        self._prolog: _Prolog | None = _Prolog()
        self._parser: etree.XMLPullParser | None = None
        self._depth = 0
        self._namespaced = False  # an element of the current packet has a namespace
        self._root: etree._Element | None = None
        self._pending_bytes = 0  # fed since the last completed packet
        self._packets: deque[etree._Element | EndOfDocument] = deque()
        self._document_ended = False
        self._eof = False
        self._error: RemoteProtocolError | None = None

    @property
    def document_ended(self) -> bool:
        return self._document_ended

    @property
    def eof(self) -> bool:
        return self._eof

    def feed(self, data: bytes) -> None:
        if not data:
            self._eof = True
        elif not self._document_ended:
            # After the peer's end of document nothing it sends can mean anything.
            self._incoming.append(bytes(data))

    def fail(self, error: RemoteProtocolError) -> RemoteProtocolError:
        """Kill the stream now (queued packets are dropped) and return the error to raise:
        `error`, or the one that killed it before."""
        self._packets.clear()
        self._incoming.clear()
        if self._error is None:
            self._error = error
        return self._error

    def next_packet(self) -> etree._Element | EndOfDocument | None:
        """The next completed packet, END_OF_DOCUMENT, or None when more bytes are needed."""
        while True:
            if self._packets:
                return self._packets.popleft()
            if self._error is not None:
                raise self._error
            if not self._incoming:
                return None
            pending = self._incoming.popleft()
            if len(pending) > self._slice:
                # A view of the rest, so a huge chunk is not copied once per slice.
                view = memoryview(pending)
                self._incoming.appendleft(view[self._slice :])
                chunk = bytes(view[: self._slice])
            else:
                chunk = bytes(pending)
            try:
                self._consume(chunk)
            except RemoteProtocolError as error:
                # Packets completed before the error still count, as they do officially:
                # they stay queued ahead of it.
                self._incoming.clear()
                self._error = error

    def _consume(self, chunk: bytes) -> None:
        if self._parser is None:
            assert self._prolog is not None
            if not self._prolog.feed(chunk):
                if len(self._prolog.buffer) > self._limits.max_packet_bytes:
                    raise RemoteProtocolError(
                        f"no root start tag within {self._limits.max_packet_bytes} bytes"
                    )
                return
            chunk = bytes(self._prolog.buffer)
            self._prolog = None
            self._parser = etree.XMLPullParser(
                events=("start", "end"),
                # Safe only because the prolog check refuses every DOCTYPE: no entity
                # can be declared, and an undefined one must be an error rather than
                # libxml2 silently stalling the stream (which it does with False).
                resolve_entities=True,
                load_dtd=False,
                no_network=True,
                huge_tree=False,
                remove_comments=True,
                remove_pis=True,
            )
        forbidden = _FORBIDDEN.search(chunk)
        if forbidden is not None:
            # Packets completed before it still count, as after any other broken XML.
            self._feed(chunk[: forbidden.start()])
            if self._document_ended:
                return  # the byte is after the peer's end of document
            code = chunk[forbidden.start()]
            raise RemoteProtocolError(f"broken XML: character 0x{code:02X} is not allowed in XML")
        self._feed(chunk)

    def _feed(self, chunk: bytes) -> None:
        self._pending_bytes += len(chunk)
        parser = self._parser
        assert parser is not None
        try:
            parser.feed(chunk)
        except etree.XMLSyntaxError as error:
            self._collect(parser)
            if self._document_ended:
                return  # the error is in bytes after the peer's end of document
            raise RemoteProtocolError(f"broken XML: {error}") from None
        self._collect(parser)
        if self._pending_bytes > self._limits.max_packet_bytes and not self._document_ended:
            raise RemoteProtocolError(
                f"packet exceeds {self._limits.max_packet_bytes} bytes without being completed"
            )

    def _collect(self, parser: etree.XMLPullParser) -> None:
        max_depth = self._limits.max_depth
        for event, item in parser.read_events():
            # Only start/end events are requested: the item is always an element.
            element: etree._Element = item  # type: ignore[assignment]
            if event == "start":
                self._depth += 1
                tag = str(element.tag)
                if tag[0] == "{":
                    # XStream compares local names: a default namespace on the root
                    # (<protocol xmlns="…">) must not make every packet unknown.
                    self._namespaced = True
                    tag = tag.rpartition("}")[2]
                if self._depth == 1:
                    self._root = element
                elif self._depth == 2 and self._check_packet_name is not None:
                    self._check_packet_name(tag)
                if self._depth > max_depth + 1:  # +1: the root is depth 0
                    raise RemoteProtocolError(
                        f"<{element.tag}> nested deeper than {max_depth} levels"
                    )
                continue
            self._depth -= 1
            if self._depth == 1:
                root = self._root
                if root is not None:
                    # Detach the packet and drop the whitespace collected between
                    # packets: an endless stream must not grow the root.
                    root.remove(element)
                    root.text = None
                if self._namespaced:
                    _strip_namespaces(element)
                    self._namespaced = False
                self._packets.append(element)
                self._pending_bytes = 0
            elif self._depth == 0:
                self._packets.append(END_OF_DOCUMENT)
                self._document_ended = True
                self._incoming.clear()
                self._pending_bytes = 0
