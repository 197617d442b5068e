"""protocol._reader's framing: its fast paths (whole packets in one match, small subtrees as
one token) must decide exactly what the tag-by-tag scan decides, whatever the input and the
chunking."""

from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import GameState
from protocol import NEED_DATA, ServerConnection
from protocol._reader import _PACKET_LEVELS, _ROOT_TOKEN, _Framing
from protocol.errors import RemoteProtocolError
from protocol.messages import Memento


class _TagByTag(_Framing):
    """The framing without its fast paths: the reference."""

    __slots__ = ()
    _whole_packets = False
    _token = _ROOT_TOKEN


def _memento() -> bytes:
    rng = random.Random(7)
    state = GameState.initial(seed=7)
    for _ in range(6):
        state = state.apply(rng.choice(state.legal_moves()))
    conn = ServerConnection()
    memento = Memento("r", state)
    conn.send(memento)  # the first send opens the document
    return conn.send(memento)


MEMENTO = _memento()
MOVE = (
    b'<room roomId="7436c247-5a67-4eca-9b17-fceab576b083">\n  <data class="move">\n'
    b'    <from x="0" y="3"/>\n    <direction>UP_RIGHT</direction>\n  </data>\n</room>\n'
)
# Pieces that leave the fast paths: markup they do not know, tags they refuse, text with ">".
UNUSUAL = [
    b"<!-- \"'<x -->",
    b"<?pi '\"?>",
    b"<![CDATA[\"'<a>]]>",
    b'<join gameType="a\'>b"/>',
    b"<join gameType = 'x\"y' />",
    b"a > b /> c",
    b"</room  >",
    b'<join gameType="a"\'b"/>',
    b"<join 'x'/>",
    b'<jo"in/>',
    b"<!DOCTYPE x>",
    b"<",
    b">",
    b"<a",
    b'<a b="',
]


def _deep(levels: int) -> bytes:
    return b"<d>" * levels + b"x" + b"</d>" * levels


_names = st.sampled_from([b"a", b"room", b"data", b"x:y", b"f-1"])
_attribute = st.builds(
    lambda name, value, quote, space: b" " + name + space + b"=" + space + quote + value + quote,
    _names,
    st.sampled_from([b"", b"v", b"a'b", b"1 2", b"&amp;"]),
    st.sampled_from([b'"', b"'"]),
    st.sampled_from([b"", b" ", b"\n"]),
)
_text = st.sampled_from([b"", b" ", b"\n  ", b"EMPTY", b"1/>2", b"&lt;"])


def _element(children: st.SearchStrategy[list[bytes]]) -> st.SearchStrategy[bytes]:
    return st.builds(
        lambda name, attrs, kids, text, empty: (
            b"<" + name + b"".join(attrs) + b"/>"
            if empty and not kids
            else b"<" + name + b"".join(attrs) + b">" + text + b"".join(kids) + b"</" + name + b">"
        ),
        _names,
        st.lists(_attribute, max_size=2),
        children,
        _text,
        st.booleans(),
    )


_elements = st.recursive(
    _element(st.just([])),
    lambda inner: _element(st.lists(st.one_of(inner, _text), max_size=3)),
    max_leaves=12,
)
_piece = st.one_of(
    _elements,
    _elements,
    st.sampled_from([MOVE, MEMENTO, b"<join/>", _deep(_PACKET_LEVELS), _deep(_PACKET_LEVELS + 2)]),
    st.sampled_from(UNUSUAL),
    _text,
    st.just(b"</protocol>"),
)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


def _state(framing: _Framing) -> tuple[object, ...]:
    return (
        framing._base,
        bytes(framing._buffer),
        framing._pos,
        framing._depth,
        framing._packet_start,
        framing._ended,
        framing._wait,
        framing._tag_open,
        framing._quote,
    )


def _run(framing: _Framing, chunks: list[bytes]) -> list[tuple[object, ...]]:
    """What the framing answers to each chunk and the state it is left in, up to its first
    error (after one the reader never feeds it again)."""
    trace: list[tuple[object, ...]] = []
    for chunk in chunks:
        cut, error = framing.feed(chunk)
        message = None if error is None else error.message
        trace.append((cut, message, *_state(framing)))
        if error is not None:
            break
    return trace


@settings(max_examples=500, deadline=None)
@given(
    pieces=st.lists(_piece, min_size=1, max_size=8),
    near=st.integers(0, 7),
    delta=st.integers(-2, 2),
    cuts=st.lists(st.integers(0, 10**6), max_size=10),
)
def test_fast_paths_agree_with_the_tag_by_tag_scan(
    pieces: list[bytes], near: int, delta: int, cuts: list[int]
) -> None:
    # The limit is near one piece's size, so that packets fit or miss it by a byte or two.
    limit = max(1, len(pieces[near % len(pieces)]) + delta)
    data = b"<protocol>" + b"".join(pieces)
    # Chunks often end between pieces (where the fast path starts), and anywhere else.
    boundaries = list(itertools.accumulate([10, *map(len, pieces)]))
    chunks = _chunks(data, cuts + boundaries[:: 1 + near % 3])
    for framing_limit in (limit, 2**20):
        expected = _run(_TagByTag(framing_limit), chunks)
        assert _run(_Framing(framing_limit), chunks) == expected


def test_whole_packets_take_one_match_and_are_checked_against_the_limit() -> None:
    # Two whole packets in one chunk: the fast path moves the packet start to the end of
    # each; the next packet, two bytes over the limit, fails just as the tag-by-tag scan says.
    limit = len(MOVE)  # the second packet: the first one's "\n", then len(MOVE) - 1 bytes
    for framing in (_Framing(limit), _TagByTag(limit)):
        assert framing.feed(b"<protocol>") == (10, None)
        assert framing.feed(MOVE + MOVE) == (2 * len(MOVE), None)
        assert framing._packet_start == 10 + 2 * len(MOVE) - 1
        cut, error = framing.feed(b"  " + MOVE)
        assert isinstance(error, RemoteProtocolError)
        assert f"exceeds {limit} bytes" in error.message
        assert cut == limit - 1  # the "\n" before the chunk counts toward the packet


def test_fast_path_leaves_an_unfinished_packet_to_the_tag_by_tag_scan() -> None:
    framing = _Framing(2**20)
    framing.feed(b"<protocol>")
    assert framing.feed(MOVE + MEMENTO[:700]) == (len(MOVE) + 700, None)
    assert framing._depth > 1 and framing._packet_start == 10 + len(MOVE) - 1
    assert framing.feed(MEMENTO[700:]) == (len(MEMENTO) - 700, None)
    assert framing._depth == 1 and not framing._buffer


def test_the_xml_parser_is_made_only_once_more_than_protocol_came() -> None:
    # An idle connection (only "<protocol>") holds no libxml2 parser (about 8 KiB each);
    # what follows, in any cut, is read as before.
    from protocol.events import Join

    connection = ServerConnection()
    for part in (b"<?xml version='1.0'?>\n", b"<proto", b"col>", b"\n  "):
        connection.receive_data(part)
        assert connection.next_event() is NEED_DATA
    assert connection._reader._parser is None
    connection.receive_data(b"<jo")
    assert connection.next_event() is NEED_DATA
    assert connection._reader._parser is not None
    connection.receive_data(b'in gameType="swc_2026_piranhas"/>')
    assert connection.next_event() == Join("swc_2026_piranhas")
    # A broken root start tag is still refused at once.
    broken = ServerConnection()
    broken.receive_data(b"<protocol a=>")
    try:
        broken.next_event()
    except RemoteProtocolError:
        pass
    else:
        raise AssertionError("a broken root start tag must be refused")
