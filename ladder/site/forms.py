"""Bounded request bodies for the site's forms and uploads.

Rule: nothing is read beyond its bound. A body's declared length over the bound is refused
before a byte is read; the bytes received are counted as they arrive (a body without a length,
chunked, is stopped at the bound); the whole body must arrive within its deadline. Over the
bound: `web.http.BodyTooLarge` (413); too slow: `web.http.BodyTimeout` (408). An upload's file
part is spooled to disk by Starlette's multipart parser (python-multipart) as it streams in.
"""

from __future__ import annotations

from typing import Any

import trio
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.types import Message, Receive

from web.http import BODY_SECONDS, BodyTimeout, BodyTooLarge

MAX_FORM_BODY = 16 * 1024  # a sign-in, an invite, an activation: a few hundred bytes
MAX_FORM_FIELDS = 20
# The upload's other fields (label, CSRF token) and the multipart framing around the file.
UPLOAD_SLACK = 64 * 1024
# An upload of the default 64 MiB at 1 MiB/s still arrives; a body trickling slower is cut.
UPLOAD_SECONDS = 120.0


class _CountingReceive:
    def __init__(self, receive: Receive, limit: int) -> None:
        self._receive = receive
        self._limit = limit
        self.size = 0

    async def __call__(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self.size += len(message.get("body", b""))
            if self.size > self._limit:
                raise BodyTooLarge(f"a request body here may have at most {self._limit} bytes")
        return message


async def bounded_form(
    request: Request,
    limit: int = MAX_FORM_BODY,
    *,
    files: int = 0,
    seconds: float = BODY_SECONDS,
) -> FormData:
    """The request's form (urlencoded or multipart), at most `limit` bytes and `files` files."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise BodyTooLarge(f"a request body here may have at most {limit} bytes")
    bounded = Request(request.scope, _CountingReceive(request.receive, limit))
    with trio.move_on_after(seconds) as deadline:
        form = await bounded.form(
            max_files=files, max_fields=MAX_FORM_FIELDS, max_part_size=MAX_FORM_BODY
        )
    if deadline.cancelled_caught:
        raise BodyTimeout(f"the request body did not arrive within {seconds:g} s")
    return form


def text_field(form: FormData, name: str, limit: int = 200) -> str:
    """A text field of `form` ('' when missing or a file), at most `limit` characters."""
    value: Any = form.get(name)
    return value[:limit] if isinstance(value, str) else ""
