"""A health check that speaks the game protocol: ``python -m server.healthcheck --host H --port P``.

It asks the server to join a room that cannot exist (room ids are UUIDs). A live lobby answers
such a request with an ``<errorpacket>`` and changes nothing (§3.9), so this proves that
the listener accepts, the parser reads and the lobby answers, without creating rooms or
touching games. Exit 0 when healthy, 1 otherwise (Docker's HEALTHCHECK convention).
The server recognises the ``healthcheck-`` room id and logs the probe's connection at debug
only, so a probe every few seconds does not fill the log (``ROOM_PREFIX``, the same as
``server.lobby.HEALTHCHECK_ROOM_PREFIX``; a test keeps them equal).

Only the standard library is used, with blocking sockets, so the check is cheap to start and
cannot be confused by the server's own event loop. Keep it that way: .ci/docker-smoke.sh runs
this file with a bare python3 that has none of the project's dependencies.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
import uuid
from collections.abc import Sequence

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 13050
DEFAULT_TIMEOUT = 5.0
ROOM_PREFIX = "healthcheck-"  # the server logs requests for such rooms at debug only

_ERROR_START = b"<errorpacket"
_ERROR_END = b"</errorpacket>"
# The official server never sends more than a few hundred bytes for this answer.
_MAX_ANSWER = 64 * 1024


class Unhealthy(Exception):
    """The server did not answer the probe as a Software-Challenge server would."""


def probe(host: str, port: int, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Send the probe and return the server's ``<errorpacket …>…</errorpacket>`` text.

    The whole exchange (connect, send, answer) is bounded by ``timeout`` seconds.
    Raises :class:`Unhealthy` with a one-line reason otherwise.
    """
    deadline = time.monotonic() + timeout
    room_id = f"{ROOM_PREFIX}{uuid.uuid4()}"
    request = f'<protocol><joinRoom roomId="{room_id}"/>'.encode()
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(request)
            answer = _read_answer(sock, deadline)
            _close_politely(sock, deadline)
    except TimeoutError as exc:
        raise Unhealthy(f"no answer from {host}:{port} within {timeout:g} s") from exc
    except OSError as exc:
        raise Unhealthy(f"cannot talk to {host}:{port}: {exc}") from exc
    start = answer.find(_ERROR_START)
    end = answer.find(_ERROR_END, start)
    packet = answer[start : end + len(_ERROR_END)].decode("utf-8", "replace")
    if not answer.lstrip().startswith(b"<protocol>"):
        raise Unhealthy(f"answer does not open a <protocol> stream: {answer[:80]!r}")
    if room_id not in packet:
        # Somebody answers with an errorpacket, but not to our request.
        raise Unhealthy(f"errorpacket does not echo the probe: {packet[:200]!r}")
    return packet


def _read_answer(sock: socket.socket, deadline: float) -> bytes:
    """Read until a complete errorpacket arrived; anything else is a failure."""
    buffer = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        sock.settimeout(remaining)
        chunk = sock.recv(4096)
        if not chunk:
            raise Unhealthy(f"connection closed after {len(buffer)} bytes: {buffer[:80]!r}")
        buffer += chunk
        start = buffer.find(_ERROR_START)
        if start >= 0 and buffer.find(_ERROR_END, start) >= 0:
            return buffer
        if len(buffer) > _MAX_ANSWER:
            raise Unhealthy(f"no errorpacket in the first {len(buffer)} bytes")


def _close_politely(sock: socket.socket, deadline: float) -> None:
    """Say goodbye with ``<close/>`` and wait (bounded) for the server's end of stream.

    Closing with unread data in the receive buffer would make the kernel send a reset, which
    the server would log as a lost connection every few seconds.
    """
    try:
        sock.sendall(b"<close/>")
        sock.shutdown(socket.SHUT_WR)
        while (remaining := deadline - time.monotonic()) > 0:
            sock.settimeout(remaining)
            if not sock.recv(4096):
                return
    except OSError:
        # The answer already arrived; how the server ends the stream does not matter here.
        return


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m server.healthcheck`: exit 0 when the server answers the probe, else 1."""
    parser = argparse.ArgumentParser(
        prog="python -m server.healthcheck",
        description="Exit 0 if a Piranhas game server answers the protocol at HOST:PORT.",
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", "-p", type=int, default=DEFAULT_PORT, help="default 13050")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds for the whole exchange, default {DEFAULT_TIMEOUT:g}",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing when healthy")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    try:
        probe(args.host, args.port, args.timeout)
    except Unhealthy as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"healthy: {args.host}:{args.port} answered the protocol")
    return 0


if __name__ == "__main__":
    sys.exit(main())
