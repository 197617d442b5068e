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
from typing import ClassVar, Final

from lxml import etree

from protocol.errors import LocalProtocolError, RemoteProtocolError
from protocol.limits import ProtocolLimits

_BOM: Final = b"\xef\xbb\xbf"
_NON_WHITESPACE: Final = re.compile(rb"[^ \t\r\n]")
# Bytes XML 1.0 allows nowhere (C0 controls but tab, LF, CR), in any ASCII-compatible encoding.
# libxml2's push parser holds character data back until the next "<", so without this check a
# peer that sends a little binary garbage and then waits would never hear why nothing happens.
_FORBIDDEN: Final = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
# The same bytes for bytes.translate, which tells whether a chunk holds any of them about
# four times faster than the regex search (which then only runs to find the first).
_FORBIDDEN_BYTES: Final = bytes(range(0x09)) + b"\x0b\x0c" + bytes(range(0x0E, 0x20))
# Feeding in bounded slices bounds the work of one step, whatever size the caller's
# chunks have.
_MAX_SLICE: Final = 16384
_LT: Final = 0x3C  # '<'
_SLASH: Final = 0x2F
_QUESTION: Final = 0x3F
_BANG: Final = 0x21
# Names as _Framing reads them: anything but the bytes that end or separate XML names.
# Wider than XML's Name on purpose: a bad name is libxml2's to report.
_TAG_NAME: Final = re.compile(rb"<[^\s/>=\"'<&!?][^\s/>=\"'<&]*")
# After a tag's name or a complete attribute: the next attribute up to its opening quote,
# or the end of the tag.
_ATTRIBUTE_START: Final = re.compile(rb"\s+[^\s/>=\"'<&]+\s*=\s*[\"']")
_TAG_END: Final = re.compile(rb"\s*(/?)>")
# What can still grow into an attribute or the end of the tag.
_TAG_REST_SO_FAR: Final = re.compile(rb"\s*/?|\s+[^\s/>=\"'<&]+\s*(?:=\s*)?")
# Tags as _Framing reads them. Atomic groups and possessive quantifiers keep a failed
# match linear.
_NAME: Final = rb"[^\s/>=\"'<&!?][^\s/>=\"'<&]*+"
_ATTRIBUTES: Final = rb"(?>(?:\s+[^\s/>=\"'<&]+\s*=\s*(?:\"[^\"]*+\"|'[^']*+'))*\s*)"


def _content_pattern(levels: int) -> bytes:
    """Text and complete plain elements with at most `levels - 1` levels inside them."""
    if levels == 0:
        return rb"[^<]*+"
    return rb"(?:[^<]*+" + _element_pattern(levels - 1) + rb")*+[^<]*+"


def _element_pattern(levels: int) -> bytes:
    """A complete plain element (tags only, no comments, CDATA or PIs) with at most
    `levels` levels of elements inside it."""
    return rb"(?><" + _NAME + _ATTRIBUTES + rb"(?:/>|>" + _content_pattern(levels) + rb"</[^>]*+>))"


def _token_pattern(levels: int) -> re.Pattern[bytes]:
    """The common case in one match: text, then a complete end tag (group 1), or a
    complete start tag: of an empty element (group 2), of an element whose content (at
    most `levels` deep) and end tag follow (group 3), or else of an element that stays
    open. Anything else takes the careful path."""
    return re.compile(
        rb"[^<]*+(?:<(/)[^>]*+>|<"
        + _NAME
        + _ATTRIBUTES
        + rb"(?:(/)>|>(?:"
        + _content_pattern(levels)
        + rb"</[^>]*+(>))?))"
    )


# In a packet, whole small subtrees (a <row> of <field>s) are one token. Outside the root
# only leaves are, so that every packet of a document sent in one chunk is seen on its own.
_TOKEN: Final = _token_pattern(2)
_ROOT_TOKEN: Final = _token_pattern(0)
# The commonest case of all: a whole packet in one match (with the text before it).
_PACKET_LEVELS: Final = 8
_PACKET: Final = re.compile(rb"[^<]*+" + _element_pattern(_PACKET_LEVELS))
# Only these bytes can complete or break an unfinished start tag: looking at it again only
# when one arrives keeps a trickled tag linear.
_TAG_PROGRESS: Final = re.compile(rb"[>\"'=]")
# A declared encoding other than these may give ASCII bytes another meaning: no shortcut
# (`PacketReader.take_whole`) in such a document.
# `take_whole` hands the whitespace of this many skipped lines to the parser at once.
_MAX_SKIPPED_LINES: Final = 4096
_FOREIGN_ENCODING: Final = re.compile(rb"encoding\s*=\s*[\"'](?!(?i:utf-8|us-ascii)[\"'])")
# A prolog libxml2 reads without a word (a BOM, `<?xml version="1.0"?>` with at most a UTF-8
# encoding, whitespace): before it a shortcut may take packets with no parser made, which
# would otherwise have reported anything unusual there first.
_PLAIN_PROLOG: Final = (
    rb"(?:\xef\xbb\xbf)?"
    rb"(?:<\?xml version=(?:\"1\.0\"|'1\.0')(?: encoding=(?:\"(?i:utf-8)\"|'(?i:utf-8)'))?\?>)?"
    rb"[ \t\r\n]*"
)
_PLAIN_PROLOG_AT: Final = re.compile(_PLAIN_PROLOG)
_PLAIN_OPENING: Final = re.compile(_PLAIN_PROLOG + rb"<protocol>")


def _strip_namespaces(packet: etree._Element) -> None:
    """Rename every element of `packet` to its local name (attributes without a prefix
    have no namespace anyway)."""
    for element in packet.iter(etree.Element):
        tag = str(element.tag)
        if tag[0] == "{":
            element.tag = tag.rpartition("}")[2]


class _Oversized(Exception):
    """A packet needs more than max_packet_bytes."""


class _Framing:
    """A cheap tokenizer over the bytes from the root start tag on, for two things
    libxml2's push parser cannot tell us:

    * exact packet boundaries, so `max_packet_bytes` holds to the byte whatever the
      chunking: a packet's bytes run from the end of the previous packet (or of the root
      start tag) to the `>` completing it, whitespace between packets included;
    * start tags that can never become well-formed while libxml2 keeps waiting: its
      look-ahead for a tag's `>` counts quotes naively, so after
      `<join gameType="a"'b"/>` it waits forever for a closing `'`.

    It knows tags, comments, CDATA and PIs, nothing more, and is lenient everywhere else:
    well-formedness stays libxml2's job (its errors come first). Every unfinished token is
    resumed where it stopped, so trickled input costs linear time."""

    # The fast paths; tests switch them off to check that they change nothing.
    _whole_packets: ClassVar[bool] = True  # see _complete_packets
    _token: ClassVar[re.Pattern[bytes]] = _TOKEN  # _ROOT_TOKEN: tag by tag

    __slots__ = (
        "_base",
        "_buffer",
        "_checked",
        "_depth",
        "_ended",
        "_max",
        "_packet_start",
        "_pos",
        "_quote",
        "_tag_open",
        "_wait",
    )

    def __init__(self, max_packet_bytes: int) -> None:
        self._max = max_packet_bytes
        self._buffer = bytearray()  # the unfinished token (everything before is dropped)
        self._base = 0  # stream offset of _buffer[0]
        self._pos = 0  # where scanning resumes, in _buffer
        self._checked = 0  # where looking for progress resumes, in _buffer
        self._depth = 0
        self._packet_start = 0  # stream offset where the current packet's bytes begin
        self._ended = False
        self._wait: bytes | None = None  # terminator of an unfinished comment, PI, end tag …
        self._tag_open = False  # in a start tag; _pos is after its complete part
        self._quote = 0  # in that tag's attribute value, delimited by this byte

    def feed(self, chunk: bytes) -> tuple[int, RemoteProtocolError | None]:
        """Scan `chunk`: how many of its bytes libxml2 may see, and the error to raise
        once it has (None: all of them, no error)."""
        if self._ended:
            return len(chunk), None
        consumed = 0
        if (
            self._whole_packets
            and not self._buffer
            and self._depth == 1
            and not self._tag_open
            and self._wait is None
        ):
            consumed = self._complete_packets(chunk)
            if consumed == len(chunk):
                return consumed, None
            chunk = chunk[consumed:]
        cut, error = self._feed_tokens(chunk)
        return consumed + cut, error

    def _complete_packets(self, chunk: bytes) -> int:
        """Fast path between packets: skip the whole packets `chunk` begins with, in one
        regex match each. Returns how many bytes they take; the rest (an unfinished or
        unusual packet, one over the limit) is left to the token-wise scan, which also
        reports the error."""
        match = _PACKET.match
        base = self._base
        pos = 0
        while (packet := match(chunk, pos)) is not None:
            end = packet.end()
            if base + end - self._packet_start > self._max:
                break
            self._packet_start = base + end
            pos = end
        if chunk.find(b"<", pos) < 0 and base + len(chunk) - self._packet_start <= self._max:
            pos = len(chunk)  # text between packets, which counts toward the next packet
        self._base = base + pos
        return pos

    def _feed_tokens(self, chunk: bytes) -> tuple[int, RemoteProtocolError | None]:
        """`feed` token by token: resumes any unfinished token."""
        chunk_start = self._base + len(self._buffer)
        self._buffer += chunk
        error: RemoteProtocolError | None = None
        oversized = False
        try:
            self._scan()
        except _Oversized:
            oversized = True
        except RemoteProtocolError as broken:
            error = broken
        if not self._ended and error is None and not oversized:
            oversized = self._base + len(self._buffer) - self._packet_start > self._max
        if self._pos:
            del self._buffer[: self._pos]
            self._base += self._pos
            self._checked = max(self._checked - self._pos, 0)
            self._pos = 0
        if oversized:
            # libxml2 sees the packet's allowed bytes only: it cannot complete in them.
            error = RemoteProtocolError(f"packet exceeds {self._max} bytes")
            return max(0, self._packet_start + self._max - chunk_start), error
        return len(chunk), error

    @property
    def idle(self) -> bool:
        """Between two packets inside the root, nothing unfinished: the next bytes start
        afresh."""
        return (
            not self._buffer
            and self._depth == 1
            and not self._tag_open
            and self._wait is None
            and not self._ended
        )

    def skip_packet(self, packet_end: int, size: int) -> bool:
        """Account for `size` bytes holding one whole packet that ends at `packet_end`
        (followed by text only), seen by the caller instead of `feed`: False, and nothing
        changed, if the packet or the text after it would exceed the limit."""
        end = self._base + packet_end
        if end - self._packet_start > self._max or size - packet_end > self._max:
            return False
        self._packet_start = end
        self._base += size
        return True

    def _scan(self) -> None:
        buffer = self._buffer
        end = len(buffer)
        while True:
            if self._tag_open:
                if not self._scan_start_tag(buffer, end):
                    return
            elif self._wait is not None:
                found = buffer.find(self._wait, self._checked)
                if found < 0:
                    self._checked = max(self._pos, end - len(self._wait) + 1)
                    return
                after = found + len(self._wait)
                end_tag = self._wait == b">"
                self._wait = None
                self._pos = self._checked = after
                if end_tag:
                    self._depth -= 1
                    self._closed(after)
            else:
                if self._scan_simple(buffer):
                    return
                pos = buffer.find(_LT, self._pos)
                if pos < 0:
                    self._pos = end
                    return
                self._pos = pos
                if end - pos < 2:
                    return
                marker = buffer[pos + 1]
                if marker == _SLASH:
                    self._wait, self._checked = b">", pos + 2
                elif marker == _QUESTION:
                    self._wait, self._checked = b"?>", pos + 2
                elif marker == _BANG:
                    if buffer.startswith(b"<!--", pos):
                        self._wait, self._checked = b"-->", pos + 4
                    elif buffer.startswith(b"<![CDATA[", pos):
                        self._wait, self._checked = b"]]>", pos + 9
                    elif b"<!--".startswith(buffer[pos:]) or b"<![CDATA[".startswith(buffer[pos:]):
                        return
                    else:
                        raise RemoteProtocolError(
                            f"broken XML: markup declaration in content ({_excerpt(buffer, pos)})"
                        )
                else:
                    name = _TAG_NAME.match(buffer, pos)
                    if name is None:
                        raise RemoteProtocolError(
                            f"broken XML: invalid start tag ({_excerpt(buffer, pos)})"
                        )
                    if name.end() == end:
                        return  # the name may go on
                    self._tag_open = True
                    self._pos = self._checked = name.end()
            if self._ended:
                return

    def _scan_simple(self, buffer: bytearray) -> bool:
        """Consume complete plain tags fast; True once the document ended."""
        pos = self._pos
        while (
            token := (self._token if self._depth > 0 else _ROOT_TOKEN).match(buffer, pos)
        ) is not None:
            pos = token.end()
            if token.group(1) is not None:  # end tag
                self._depth -= 1
            elif token.group(2) is None and token.group(3) is None:  # start tag
                self._depth += 1
                if self._depth == 1:
                    self._packet_start = self._base + pos
                continue
            if self._depth <= 1:
                self._pos = pos
                self._closed(pos)
                if self._ended:
                    return True
        self._pos = pos
        return False

    def _scan_start_tag(self, buffer: bytearray, end: int) -> bool:
        """Advance through an open start tag; False when more bytes are needed."""
        if self._quote:
            close = buffer.find(self._quote, self._checked)
            if close < 0:
                self._checked = end
                return False
            self._quote = 0
            self._pos = self._checked = close + 1
        if _TAG_PROGRESS.search(buffer, self._checked) is None:
            self._checked = end
            return False
        pos = self._pos
        attribute = _ATTRIBUTE_START.match(buffer, pos)
        if attribute is not None:
            self._quote = buffer[attribute.end() - 1]
            self._pos = self._checked = attribute.end()
            return True
        tag_end = _TAG_END.match(buffer, pos)
        if tag_end is not None:
            after = tag_end.end()
            self._tag_open = False
            self._pos = self._checked = after
            if not tag_end.group(1):
                self._depth += 1
                if self._depth == 1:
                    self._packet_start = self._base + after
            else:
                self._closed(after)
            return True
        if _TAG_REST_SO_FAR.fullmatch(buffer, pos) is not None:
            self._checked = end
            return False
        raise RemoteProtocolError(
            f"broken XML: malformed start tag, unexpected {_excerpt(buffer, pos)}"
        )

    def _closed(self, after: int) -> None:
        """An element ended just before `after`; _depth is its parent's depth."""
        if self._depth == 1:
            end = self._base + after
            if end - self._packet_start > self._max:
                raise _Oversized
            self._packet_start = end
        elif self._depth <= 0:
            self._ended = True


def _unraised(error: RemoteProtocolError) -> RemoteProtocolError:
    """A copy of `error` without its traceback and context: the error kept to raise again
    is never raised itself, so it holds no frame (a raised one would hold the reader's and
    its connection's frames: a cycle only the garbage collector frees, two a game)."""
    copy = RemoteProtocolError(error.message, eof=error.eof)
    copy.__dict__.update(error.__dict__)
    return copy


def _excerpt(buffer: bytearray, pos: int) -> str:
    return repr(bytes(buffer[pos : pos + 20]))


class EndOfDocument:
    """Marker in the packet queue: the peer closed its root element."""

    __slots__ = ()


END_OF_DOCUMENT: Final = EndOfDocument()


_ROOT = b"<protocol>"


class _Prolog:
    """Incremental check of the bytes before the root start tag.

    Scanning resumes where it stopped, so a peer trickling the prolog byte by byte costs
    linear time, not quadratic."""

    __slots__ = ("_pos", "_search_from", "buffer")

    def __init__(self) -> None:
        self.buffer = bytearray()
        self._pos = -1  # -1: the BOM check is still due
        self._search_from = 0  # where to resume looking for the end of an unfinished item

    @property
    def root_at(self) -> int:
        """Where the root start tag begins in `buffer` (once `feed` returned True)."""
        return self._pos

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
        self._parser: etree.XMLPullParser | None = None  # made once more than <protocol> came
        self._unparsed = bytearray()  # bytes for the parser until it is made
        self._root_at = 0  # where the root start tag begins in them
        self._depth = 0
        self._namespaced = False  # an element of the current packet has a namespace
        self._root: etree._Element | None = None
        self._framing = _Framing(limits.max_packet_bytes)
        self._packets: deque[etree._Element | EndOfDocument] = deque()
        self._document_ended = False
        self._eof = False
        self._error: RemoteProtocolError | None = None
        self._ascii = False  # the document's bytes are ASCII-compatible (known after the prolog)
        self._plain_prolog = False  # _PLAIN_PROLOG (known after the prolog)
        # What `take_whole` took, as libxml2 counts positions: newlines, then columns after
        # the last. Their whitespace goes to the parser before its next bytes, so the line
        # and column in its error messages are those of the whole stream.
        self._skipped_lines = 0
        self._skipped_columns = 0

    @property
    def document_ended(self) -> bool:
        return self._document_ended

    @property
    def eof(self) -> bool:
        return self._eof

    @property
    def starved(self) -> bool:
        """Nothing queued, no error, no end of the stream: `next_packet` would return None
        and the stream is still open."""
        return not self._incoming and not self._packets and self._error is None and not self._eof

    def feed(self, data: bytes) -> None:
        """Queue `data`; b"" is the end of the stream (repeating it is harmless). Bytes after
        that end are the caller's bug: LocalProtocolError (checked here, not by each caller
        through `eof`: once per packet read)."""
        if not data:
            self._eof = True
        elif self._eof:
            raise LocalProtocolError("receive_data after EOF")
        elif not self._document_ended:
            # After the peer's end of document nothing it sends can mean anything.
            self._incoming.append(bytes(data))

    def fail(self, error: RemoteProtocolError) -> RemoteProtocolError:
        """Kill the stream now (queued packets are dropped) and return the error to raise:
        `error`, or (a copy of) the one that killed it before."""
        self._packets.clear()
        self._incoming.clear()
        if self._error is None:
            self._error = _unraised(error)
        return _unraised(self._error)

    def next_packet(self) -> etree._Element | EndOfDocument | None:
        """The next completed packet, END_OF_DOCUMENT, or None when more bytes are needed."""
        while True:
            if self._packets:
                return self._packets.popleft()
            if self._error is not None:
                raise _unraised(self._error)
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
                self._error = _unraised(error)

    def take_whole(self, pattern: re.Pattern[bytes]) -> re.Match[bytes] | None:
        """A shortcut for the commonest packets: if the next queued chunk is exactly one
        packet that `pattern` fullmatches, with only text after it (the pattern's group
        "packet" ends where the packet does), take the chunk and return the match; libxml2
        never sees it. Otherwise (None) nothing changed: `next_packet` reads it as usual.

        Only for a pattern that matches nothing but plain ASCII elements no limit can refuse
        (no entities, namespaces or comments, nesting within the limit): the packet must
        read exactly as the parser would read it. Taken only where nothing is unfinished,
        in the parser or the framing, so the order of packets and the byte limit hold."""
        if self._packets or self._error is not None or not self._incoming:
            return None
        chunk = self._incoming[0]
        if type(chunk) is not bytes or len(chunk) > self._slice:
            return None
        if self._prolog is not None:
            rest = self._open(chunk)
            if rest is None:
                return None
            chunk = rest
        if (
            # No parser yet: it holds back a plain prolog and <protocol> (the framing is
            # idle only after the root start tag, and any other root makes the parser).
            (self._depth != 1 if self._parser is not None else not self._plain_prolog)
            or not self._ascii
            or not self._framing.idle
        ):
            return None
        match = pattern.fullmatch(chunk)
        if match is None or not self._framing.skip_packet(match.end("packet"), len(chunk)):
            return None
        self._incoming.popleft()
        self._skip(chunk)
        return match

    def take_arriving(self, data: bytes, pattern: re.Pattern[bytes]) -> re.Match[bytes] | None:
        """`feed(data)` then `take_whole(pattern)` in one call when nothing is queued (once
        per move: the chunk is never queued): the match, `data` taken; None, and nothing
        changed (the caller feeds `data`), where `take_whole` would not take it (or `feed`
        would not queue it: the end of the stream, or after it)."""
        if (
            self._incoming
            or self._packets
            or self._error is not None
            or self._eof
            # (As in take_whole.)
            or (self._depth != 1 if self._parser is not None else not self._plain_prolog)
            or not self._ascii
            or not self._framing.idle
            or not data
            or type(data) is not bytes
            or len(data) > self._slice
        ):
            return None
        match = pattern.fullmatch(data)
        if match is None or not self._framing.skip_packet(match.end("packet"), len(data)):
            return None
        self._skip(data)
        return match

    def _open(self, chunk: bytes) -> bytes | None:
        """Before the root: if the queued `chunk` begins the stream with a plain opening
        (`_PLAIN_OPENING`) and goes on, read the opening alone and leave the rest queued,
        for `take_whole` (returned; None: nothing changed). Only the chunking changes: the
        parser, made later, sees the same bytes. (`take_whole` checked the rest: no error,
        nothing parsed waiting, a chunk within a slice.)"""
        prolog = self._prolog
        if prolog is None or prolog.buffer:
            return None
        opening = _PLAIN_OPENING.match(chunk)
        if opening is None or opening.end() == len(chunk):
            return None
        end = opening.end()
        rest = self._incoming[0] = chunk[end:]
        try:
            self._consume(chunk[:end])
        except RemoteProtocolError as error:  # (a plain opening is none: as in next_packet)
            self._incoming.clear()
            self._error = _unraised(error)
            return None
        return rest

    def _skip(self, chunk: bytes) -> None:
        """Count the positions of a chunk the shortcut took, for the parser's messages."""
        lines = chunk.count(b"\n")
        if lines:
            self._skipped_lines += lines
            self._skipped_columns = len(chunk) - chunk.rfind(b"\n") - 1
            if self._skipped_lines > _MAX_SKIPPED_LINES:
                # Bounded: the whitespace stays small, and is dropped (a parser is made for
                # it if there was none: libxml2 must count these lines).
                self._feed(b"", force=True)
                if self._root is not None:
                    self._root.text = None
        else:
            self._skipped_columns += len(chunk)

    def _consume(self, chunk: bytes) -> None:
        root_at = 0  # where the root start tag begins in chunk
        prolog = self._prolog
        if prolog is not None:
            if not prolog.feed(chunk):
                if len(prolog.buffer) > self._limits.max_packet_bytes:
                    raise RemoteProtocolError(
                        f"no root start tag within {self._limits.max_packet_bytes} bytes"
                    )
                return
            chunk = bytes(prolog.buffer)
            root_at = prolog.root_at
            self._ascii = _FOREIGN_ENCODING.search(chunk, 0, root_at) is None
            self._plain_prolog = _PLAIN_PROLOG_AT.fullmatch(chunk, 0, root_at) is not None
            self._prolog = None
            self._root_at = root_at
            self._unparsed = bytearray()
        forbidden = None
        if len(chunk.translate(None, _FORBIDDEN_BYTES)) != len(chunk):
            forbidden = _FORBIDDEN.search(chunk)
        usable = len(chunk) if forbidden is None else forbidden.start()
        cut, error = self._framing.feed(chunk[root_at : max(usable, root_at)])
        cut += root_at
        if error is None and forbidden is not None:
            code = chunk[usable]
            error = RemoteProtocolError(f"broken XML: character 0x{code:02X} is not allowed in XML")
            cut = usable
        # Packets completed before an error still count, as after any other broken XML;
        # libxml2's own errors in the same bytes come first.
        self._feed(chunk[:cut], force=error is not None)
        if error is not None and not self._document_ended:
            raise error

    def _new_parser(self) -> etree.XMLPullParser:
        return etree.XMLPullParser(
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

    def _feed(self, chunk: bytes, *, force: bool = False) -> None:
        parser = self._parser
        if self._skipped_lines or self._skipped_columns:
            # The shortcut's bytes, as whitespace (after <protocol> if the parser is made
            # only now).
            chunk = b"\n" * self._skipped_lines + b" " * self._skipped_columns + chunk
            self._skipped_lines = self._skipped_columns = 0
        if parser is None:
            # libxml2's parser costs about 8 KiB: a connection that said only <protocol>
            # (idle, or a bot not joined yet) does not get one until it sends more.
            unparsed = self._unparsed
            unparsed += chunk
            rest = bytes(unparsed[self._root_at :])
            start = rest.rstrip()
            if not force and (start == _ROOT or (start == rest and _ROOT.startswith(rest))):
                return
            chunk = bytes(unparsed)
            self._unparsed = bytearray()
            parser = self._parser = self._new_parser()
        try:
            parser.feed(chunk)
        except etree.XMLSyntaxError as error:
            self._collect(parser)
            if self._document_ended:
                return  # the error is in bytes after the peer's end of document
            raise RemoteProtocolError(f"broken XML: {error}") from None
        self._collect(parser)

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
            elif self._depth == 0:
                self._packets.append(END_OF_DOCUMENT)
                self._document_ended = True
                self._incoming.clear()
