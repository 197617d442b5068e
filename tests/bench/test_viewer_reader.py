"""The lean WebSocket reader of `bench.viewer`'s browser stand-in reads what the web viewer
sends (`web.fanout.text_frame`), however the bytes are cut, without ever waiting."""

from __future__ import annotations

import itertools
import random
import zlib

import pytest
import trio

from bench.viewer import LeanSocket
from web.fanout import deflate, text_frame
from web.wsclient import WebSocketClosed

SIZES = [0, 1, 125, 126, 127, 65535, 65536, 70000]


async def test_frames_of_every_length_class_in_any_cut(nursery: trio.Nursery) -> None:
    texts = ["é" * (size // 2) + "x" * (size % 2) for size in SIZES]
    data = b"".join(text_frame(text.encode()) for text in texts)
    ours, theirs = trio.socket.socketpair()
    server, client = trio.SocketStream(ours), trio.SocketStream(theirs)
    cuts = [0, *sorted(random.Random(7).sample(range(1, len(data)), 40)), len(data)]
    pieces = [data[start:stop] for start, stop in itertools.pairwise(cuts)]

    async def send_the_rest() -> None:
        for piece in pieces[1:]:
            await server.send_all(piece)
            await trio.sleep(0)
        await server.send_all(b"\x88\x00")  # a close frame

    reader = LeanSocket(client, pieces[0])  # the first piece came with the handshake
    nursery.start_soon(send_the_rest)
    received: list[str] = []
    with pytest.raises(WebSocketClosed, match="frame 0x88"):
        while True:  # as the sweep reads: whatever has arrived, never waiting
            received += reader.ready_texts()
            await trio.sleep(0.001)
    assert received == texts


async def test_a_closed_connection_ends_the_reading() -> None:
    ours, theirs = trio.socket.socketpair()
    server, client = trio.SocketStream(ours), trio.SocketStream(theirs)
    reader = LeanSocket(client, b"")
    assert reader.ready_texts() == []  # nothing yet: no wait, no error
    await server.send_all(text_frame(b"last"))
    assert reader.ready_texts() == ["last"]
    await server.aclose()
    with pytest.raises(WebSocketClosed, match="closed"):
        reader.ready_texts()


async def test_deflated_frames_in_any_cut_with_one_context_per_connection(
    nursery: trio.Nursery,
) -> None:
    # As a browser that offered permessage-deflate: the web viewer's snapshots, each from a
    # fresh compressor (web.fanout.deflate), then messages of a compressor that keeps its
    # context (as wsproto's own), whose later messages refer back to earlier ones.
    texts = [f'{{"turn":{turn},"board":"{"1s 2m XX " * 40}"}}' for turn in range(8)]
    fresh = [text_frame(deflate(text.encode(), 15), compressed=True) for text in texts[:4]]
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    kept = [
        text_frame(
            (compressor.compress(text.encode()) + compressor.flush(zlib.Z_SYNC_FLUSH))[:-4],
            compressed=True,
        )
        for text in texts[4:]
    ]
    data = b"".join([*fresh, text_frame(b"plain"), *kept])
    assert len(data) < len("".join(texts)) // 3  # deflated: what the socket carries
    ours, theirs = trio.socket.socketpair()
    server, client = trio.SocketStream(ours), trio.SocketStream(theirs)
    cuts = [0, *sorted(random.Random(3).sample(range(1, len(data)), 30)), len(data)]

    async def send_the_rest() -> None:
        for start, stop in itertools.pairwise(cuts):
            await server.send_all(data[start:stop])
            await trio.sleep(0)
        await server.aclose()

    reader = LeanSocket(client, b"", inflate=True)
    nursery.start_soon(send_the_rest)
    received: list[str] = []
    with pytest.raises(WebSocketClosed, match="closed"):
        while True:
            received += reader.ready_texts()
            await trio.sleep(0.001)
    assert received == [*texts[:4], "plain", *texts[4:]]


async def test_a_deflated_frame_without_the_extension_ends_the_reading() -> None:
    ours, theirs = trio.socket.socketpair()
    server, client = trio.SocketStream(ours), trio.SocketStream(theirs)
    reader = LeanSocket(client, b"")  # the server did not accept permessage-deflate
    await server.send_all(text_frame(deflate(b"{}", 15), compressed=True))
    with pytest.raises(WebSocketClosed, match="frame 0xc1"):
        reader.ready_texts()
