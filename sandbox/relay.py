"""The network relay of one sandboxed bot (stdlib only: it runs in the relay container's python3).

The relay container has no network (`--network none`: only `lo`); the bot's container shares
its network namespace (`--network container:<relay>`). The relay listens on
127.0.0.1:PORT inside that namespace and forwards every connection to the game server's Unix
socket, bind-mounted into the relay container: the bot reaches the game server at
`gameserver:13050` and nothing else (docs/sandbox.md).

    python3 relay.py UNIX_SOCKET [PORT]

It prints `relay ready` once it listens (the launcher waits for that line before it starts
the bot) and runs until it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

CHUNK = 65536


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the half-close on (the protocol's goodbye is a
    `</protocol>` followed by closing one direction)."""
    try:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


async def forward(
    socket_path: str, bot_reader: asyncio.StreamReader, bot_writer: asyncio.StreamWriter
) -> None:
    """One bot connection: a fresh connection to the server's Unix socket, both directions
    copied until both ended."""
    try:
        server_reader, server_writer = await asyncio.open_unix_connection(socket_path)
    except OSError as error:
        print(f"relay: cannot reach the game server: {error}", file=sys.stderr, flush=True)
        bot_writer.close()
        return
    try:
        await asyncio.gather(pump(bot_reader, server_writer), pump(server_reader, bot_writer))
    finally:
        for writer in (bot_writer, server_writer):
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()


async def main(socket_path: str, port: int) -> None:
    """Listen on 127.0.0.1:port and forward to `socket_path` until stopped."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await forward(socket_path, reader, writer)

    # asyncio sets TCP_NODELAY on the accepted sockets: every move leaves at once.
    server = await asyncio.start_server(handle, "127.0.0.1", port)
    print("relay ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if not 1 <= len(arguments) <= 2:
        sys.exit("usage: relay.py UNIX_SOCKET [PORT]")
    asyncio.run(main(arguments[0], int(arguments[1]) if len(arguments) == 2 else 13050))
