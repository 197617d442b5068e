"""What every handler module of the web viewer shares: JSON errors, bounded JSON bodies,
the page headers."""

from __future__ import annotations

import json
from typing import Any

import structlog
import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

log = structlog.get_logger("web.http")

# A JSON request body of the pages is a few hundred bytes (a password, two names).
MAX_JSON_BODY = 16 * 1024
# A whole request body must arrive within this (a body sent a byte at a time holds a
# connection otherwise, for as long as the sender likes).
BODY_SECONDS = 15.0

PAGE_HEADERS = {
    # No framing by other sites (clickjacking the admin buttons), no inline script.
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "Cache-Control": "no-cache",
}


class BodyTooLarge(Exception):
    """A request body over its bound (answered 413)."""


class BodyTimeout(Exception):
    """A request body slower than BODY_SECONDS (answered 408)."""


def error(status: int, message: str) -> Response:
    """`{"error": message}` with `status`."""
    return JSONResponse({"error": message}, status_code=status)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, at most `limit` bytes: BodyTooLarge as soon as the declared length
    or the bytes received say it is longer (nothing beyond the bound is read)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise BodyTooLarge(f"a request body here may have at most {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    with trio.move_on_after(BODY_SECONDS) as deadline:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"a request body here may have at most {limit} bytes")
            chunks.append(chunk)
    if deadline.cancelled_caught:
        raise BodyTimeout(f"the request body did not arrive within {BODY_SECONDS:g} s")
    return b"".join(chunks)


async def json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object ({} for anything else); BodyTooLarge over MAX_JSON_BODY."""
    try:
        body = json.loads(await read_body(request, MAX_JSON_BODY) or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


async def refuse_large_body(request: Request, exc: Exception) -> Response:
    """The app's handler of BodyTooLarge: 413 with the bound."""
    return error(413, str(exc))


async def refuse_slow_body(request: Request, exc: Exception) -> Response:
    """The app's handler of BodyTimeout: 408, and the connection closes."""
    return JSONResponse({"error": str(exc)}, status_code=408, headers={"Connection": "close"})


async def client_gone(request: Request, exc: Exception) -> Response:
    """The app's handler of ClientDisconnect (a client that left in the middle of its
    request body): one log line, no traceback; the answer goes nowhere."""
    log.info("client left before sending its whole request", path=request.url.path)
    return Response(status_code=400)
