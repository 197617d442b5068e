"""The web port: hypercorn's per-connection handler behind the viewer's own admission, and
the reverse-proxy headers believed only from the configured proxies.

hypercorn has no connection cap; its `serve` is a trio accept loop around `TCPServer`, so the
viewer runs that loop itself and refuses a connection over a cap (total, or per remote
address) by closing it at once. The cap is lowered so that `DESCRIPTOR_RESERVE` descriptors
stay free in the viewer's process (`server.limits.connection_cap`, as the game port).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import hypercorn.config
import structlog
import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext

from server.limits import Episode, address_key, is_loopback
from web.fanout import RAW_CONNECTION

log = structlog.get_logger("web.listen")

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


class WebAdmission:
    """Open connections in total and per remote address; loopback and the trusted proxies
    are exempt from the per-address cap unless `limit_loopback` (as the game port)."""

    def __init__(
        self,
        cap: int,
        per_address: int,
        *,
        limit_loopback: bool = False,
        proxies: tuple[str, ...] = (),
    ) -> None:
        self.cap = cap
        self.per_address = per_address
        self.limit_loopback = limit_loopback
        self.proxies = frozenset(address_key(proxy) for proxy in proxies)
        self.total = 0
        self.by_address: dict[str, int] = {}
        self._full = Episode("web viewer connection limit reached: refusing", cap=cap)
        self._address_full = Episode(
            "web viewer connections per address reached: refusing", cap=per_address
        )

    def admit(self, host: str) -> bool:
        """Count a connection from `host`, or False (refused)."""
        key = address_key(host)
        if self.total >= self.cap:
            self._full.hit(address=key)
            return False
        exempt = key in self.proxies or (is_loopback(key) and not self.limit_loopback)
        count = self.by_address.get(key, 0)
        if not exempt and count >= self.per_address:
            self._address_full.hit(address=key)
            return False
        self.total += 1
        self.by_address[key] = count + 1
        return True

    def release(self, host: str) -> None:
        """A counted connection has ended."""
        key = address_key(host)
        self.total -= 1
        count = self.by_address.get(key, 0) - 1
        if count > 0:
            self.by_address[key] = count
        else:
            self.by_address.pop(key, None)
        if self.total < self.cap:
            self._full.relieved()
        if count < self.per_address:
            self._address_full.relieved()


async def serve(
    app: ASGIApp,
    config: hypercorn.config.Config,
    host: str,
    port: int,
    admission: WebAdmission,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept on host:port until cancelled; `task_status.started(url)` once listening."""
    listeners = await trio.open_tcp_listeners(port, host=host, backlog=config.backlog)
    bound = listeners[0].socket.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    wrapped = ASGIWrapper(app)  # type: ignore[arg-type]
    context = WorkerContext(None)

    async def handle(stream: trio.SocketStream) -> None:
        try:
            peer = str(stream.socket.getpeername()[0])
        except OSError:
            await trio.aclose_forcefully(stream)
            return
        if not admission.admit(peer):
            await trio.aclose_forcefully(stream)
            return
        try:
            # The connection's state reaches the app's scope: `web.fanout` writes the live
            # snapshots' frames to the stream itself, under the server's send lock.
            state: dict[str, Any] = {}
            server = TCPServer(wrapped, config, context, state, stream)  # type: ignore[arg-type]
            state[RAW_CONNECTION] = server
            await server
        finally:
            admission.release(peer)

    task_status.started(f"http://{shown}:{bound[1]}")
    await trio.serve_listeners(handle, listeners)


class ProxyHeaders:
    """ASGI middleware: from a trusted proxy only, the client's address is the last entry of
    X-Forwarded-For and the scheme is X-Forwarded-Proto (https/wss), so the Origin check and
    `Secure` cookies see what the browser sees. From anyone else both headers are ignored."""

    def __init__(self, app: ASGIApp, proxies: tuple[str, ...]) -> None:
        self.app = app
        self.proxies = frozenset(address_key(proxy) for proxy in proxies)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        client = scope.get("client")
        if (
            scope["type"] in ("http", "websocket")
            and self.proxies
            and client
            and address_key(str(client[0])) in self.proxies
        ):
            scope = dict(scope)
            headers = {name.lower(): value for name, value in scope.get("headers", [])}
            forwarded_for = headers.get(b"x-forwarded-for")
            if forwarded_for:
                last = forwarded_for.decode("latin-1").split(",")[-1].strip()
                if last:
                    scope["client"] = (last, 0)
            proto = headers.get(b"x-forwarded-proto", b"").decode("latin-1").strip().lower()
            if proto in ("http", "https"):
                secure = proto == "https"
                if scope["type"] == "websocket":
                    scope["scheme"] = "wss" if secure else "ws"
                else:
                    scope["scheme"] = proto
        await self.app(scope, receive, send)


class SendRaceFilter(logging.Filter):
    """hypercorn 0.18's one noisy bug, silenced: it closes a connection (`TCPServer._close`:
    `send_eof`) without taking the send lock its `protocol_send` takes, so an answer still
    being sent when the client leaves (a trickling body's 408: the client stops at the answer's
    first bytes) fails in `protocol_send` with trio's `BusyResourceError`, logged as "Error in
    ASGI Framework" with two tracebacks. That record, and only that one, becomes one info line;
    every other error of hypercorn's is logged as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        """False (dropped, one info line instead) for the race's record; True otherwise."""
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, trio.BusyResourceError) and _raised_in_protocol_send(error):
            log.info("client left while its answer was being sent")
            return False
        return True


def _raised_in_protocol_send(error: BaseException) -> bool:
    frame = error.__traceback__
    while frame is not None:
        code = frame.tb_frame.f_code
        if code.co_name == "protocol_send" and code.co_filename.endswith(_TCP_SERVER):
            return True
        frame = frame.tb_next
    return False


_TCP_SERVER = str(Path("hypercorn", "trio", "tcp_server.py"))


def hypercorn_config() -> hypercorn.config.Config:
    """hypercorn's settings for a web port of ours (the viewer's, the ladder site's): no access
    log (request lines can carry tokens), errors through `error_logger`, no Server header, a
    second to finish open answers on shutdown."""
    config = hypercorn.config.Config()
    config.accesslog = None
    config.errorlog = error_logger()
    config.include_server_header = False
    config.graceful_timeout = 1.0
    return config


def error_logger() -> logging.Logger:
    """hypercorn's error logger for its `Config.errorlog`: through the viewer's own logging
    (the root handler; hypercorn's default adds a handler of its own, so each line came twice),
    with `SendRaceFilter`."""
    logger = logging.getLogger("hypercorn.error")
    if not any(isinstance(known, SendRaceFilter) for known in logger.filters):
        logger.addFilter(SendRaceFilter())
    return logger
