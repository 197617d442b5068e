"""The replay pages' data: the replay directory's listing, one replay as the pages' JSON, an
uploaded replay or league game record parsed (read-only: nothing is stored).

Every request's work is bounded: the listing is one directory scan in a worker thread at
most every `LISTING_SECONDS` however many ask, answered in pages of at most `MAX_PAGE`; a
replay is at most `MAX_REPLAY_BYTES` after gunzip and at most `PARSERS` are parsed at once
(beyond that: 503 at once, nothing queues). Only regular files directly in the replay
directory are served, never through a symbolic link, and an error about a file of the server
never quotes it.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine import Team
from protocol import RemoteProtocolError
from protocol.replay import read_replay
from web.analysis import recorded_analysis
from web.board import state_json
from web.http import error, read_body
from web.hub import result_json
from web.league import RecordError, looks_like_record, record_replay

log = structlog.get_logger("web.replays")

MAX_UPLOAD_BYTES = 1024 * 1024  # an official replay is ~100 KiB, gzipped far less
MAX_REPLAY_BYTES = 2 * 1024 * 1024  # after gunzip (no zip bombs): parsing costs ~0.3 s/MiB
PARSERS = 2  # replays parsed at once (uploads, files, league records)
LISTING_SECONDS = 2.0  # the listing is scanned again at most this often
MAX_LISTED = 100_000  # files of the directory looked at in one scan
PAGE = 100  # listing entries per page by default
MAX_PAGE = 500


class Busy(Exception):
    """Too many replays being parsed: answered 503 (try again)."""


@dataclass(frozen=True)
class Listing:
    """One scan of the replay directory, newest first."""

    files: tuple[dict[str, Any], ...]
    truncated: bool  # more than MAX_LISTED entries: the rest were not looked at


class ReplayRoutes:
    """`/api/replays`: the listing, one file, an upload."""

    def __init__(self, replay_dir: Path) -> None:
        self.replay_dir = replay_dir
        self._listing: Listing | None = None
        self._listed_at = -float("inf")
        self._scan_lock = trio.Lock()

    def routes(self) -> list[Route]:
        """The routes, in the order Starlette must try them."""
        return [
            Route("/api/replays", self.listing),
            Route("/api/replays/upload", self.upload, methods=["POST"]),
            Route("/api/replays/{name}/download", self.download),
            Route("/api/replays/{name}", self.replay),
        ]

    async def listing(self, request: Request) -> Response:
        """A page of the replay files, newest first: `?offset=N&limit=M` (M ≤ MAX_PAGE)."""
        try:
            offset = max(0, int(request.query_params.get("offset", "0")))
            limit = min(MAX_PAGE, max(1, int(request.query_params.get("limit", str(PAGE)))))
        except ValueError:
            return error(400, "offset and limit: whole numbers")
        listing = await self.scan()
        page = listing.files[offset : offset + limit]
        following = offset + len(page)
        return JSONResponse(
            {
                "replays": list(page),
                "total": len(listing.files),
                "offset": offset,
                "next": following if following < len(listing.files) else None,
                "truncated": listing.truncated,
            }
        )

    async def scan(self) -> Listing:
        """The directory's listing, scanned again (in a worker thread, one scan at a time)
        when older than LISTING_SECONDS."""
        async with self._scan_lock:
            if self._listing is None or trio.current_time() - self._listed_at >= LISTING_SECONDS:
                self._listing = await trio.to_thread.run_sync(_scan, self.replay_dir)
                self._listed_at = trio.current_time()
            return self._listing

    async def _file(self, name: str) -> bytes | Response:
        if not is_replay_name(name):
            return error(404, "no such replay")
        try:
            return await trio.to_thread.run_sync(_read_regular, self.replay_dir / name)
        except FileNotFoundError:
            return error(404, "no such replay")
        except _TooLarge:
            return error(413, "replay file too large")
        except OSError as failure:
            log.info("replay not served", name=name, error=failure.strerror or str(failure))
            return error(404, "no such replay")

    async def replay(self, request: Request) -> Response:
        """One replay file of the directory as the pages' JSON."""
        name = request.path_params["name"]
        data = await self._file(name)
        if isinstance(data, Response):
            return data
        # The file's own bytes never go into the answer (it might be anything): its problem
        # goes to the log, the page gets a plain "not a replay".
        return await respond(data, quote=False, name=name)

    async def download(self, request: Request) -> Response:
        """One replay file of the directory as it is (a download; as bounded as `replay`)."""
        name = request.path_params["name"]
        data = await self._file(name)
        if isinstance(data, Response):
            return data
        # The header gets a plain name: a file's name may hold quotes or non-ASCII.
        plain = all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
        fallback = "replay.xml.gz" if name.endswith(".gz") else "replay.xml"
        return Response(
            data,
            media_type="application/gzip" if name.endswith(".gz") else "application/xml",
            headers={
                "Content-Disposition": f'attachment; filename="{name if plain else fallback}"',
                "X-Content-Type-Options": "nosniff",
            },
        )

    async def upload(self, request: Request) -> Response:
        """An uploaded replay or game record (parsing is read-only, so no session needed)."""
        data = await read_body(request, MAX_UPLOAD_BYTES)
        return await respond(data)


# One for the whole viewer: uploads, replay files and league records share the PARSERS slots.
parser_slots = trio.Semaphore(PARSERS)


async def respond(data: bytes, *, quote: bool = True, name: str = "") -> Response:
    """A replay or game record as the pages' JSON, or 400 saying why it is none (`quote`:
    with the parser's words, which may quote the data; else only in the log), 503 when
    PARSERS parse already."""
    try:
        parser_slots.acquire_nowait()
    except trio.WouldBlock:
        return error(503, "the server is parsing other replays: try again in a moment")
    try:
        body = await trio.to_thread.run_sync(replay_json, data)
    except RecordError as failure:
        return _refused("not a game record", failure, quote, name)
    except (RemoteProtocolError, ValueError, zlib.error) as failure:
        return _refused("not a replay file", failure, quote, name)
    finally:
        parser_slots.release()
    return Response(body, media_type="application/json")


def _refused(what: str, failure: Exception, quote: bool, name: str) -> Response:
    if quote:
        return error(400, f"{what}: {failure}")
    log.info("replay file refused", name=name, error=str(failure)[:200])
    return error(400, f"{what} (the server log says why)")


class _TooLarge(Exception):
    pass


def _read_regular(path: Path) -> bytes:
    """A regular file's bytes, never through a symbolic link (O_NOFOLLOW: a link in the
    replay directory could point anywhere) and never more than MAX_REPLAY_BYTES."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as failure:
        if failure.errno == errno.ELOOP:  # a link
            raise FileNotFoundError(str(path)) from None
        raise
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):  # a FIFO, a device, a directory
            raise FileNotFoundError(str(path))
        if info.st_size > MAX_REPLAY_BYTES:
            raise _TooLarge
        data = file.read(MAX_REPLAY_BYTES + 1)
    if len(data) > MAX_REPLAY_BYTES:
        raise _TooLarge
    return data


def _scan(directory: Path) -> Listing:
    """Regular replay files directly in `directory` (no links), newest first."""
    files: list[dict[str, Any]] = []
    truncated = False
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_LISTED:
                    truncated = True
                    break
                if not is_replay_name(entry.name) or entry.is_symlink():
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    files.append({"name": entry.name, "size": info.st_size, "mtime": info.st_mtime})
    except (FileNotFoundError, NotADirectoryError):
        pass
    files.sort(key=lambda entry: (-entry["mtime"], entry["name"]))
    return Listing(tuple(files), truncated)


def replay_json(data: bytes) -> str:
    """The replay page's JSON of a replay (gzipped or not) or a league game record."""
    if data[:2] == b"\x1f\x8b":
        # Inflate here with a ceiling: gzip.decompress would inflate a bomb without one.
        inflater = zlib.decompressobj(wbits=31)
        data = inflater.decompress(data, MAX_REPLAY_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError(f"more than {MAX_REPLAY_BYTES} bytes uncompressed")
    extra: dict[str, Any] = {}
    original = data
    if looks_like_record(data):
        # A league game record: replayed by the engine into an official replay, and checked.
        record, data, discrepancies = record_replay(data)
        extra = {
            "record": {
                "league": record.league,
                "round": record.round,
                "match": record.match,
                "number": record.number,
                "date": record.date,
            },
            "discrepancies": discrepancies,
            # An annotated record (piranhas-analyze --annotate) shows its analysis at once.
            "analysis": recorded_analysis(original),
        }
    replay = read_replay(data)
    if not replay.states:
        raise ValueError("no game state in it")
    states = [
        state_json(state, replay.states[index - 1] if index else None)
        for index, state in enumerate(replay.states)
    ]
    names = ["Team ONE", "Team TWO"]
    if replay.result is not None:
        for entry, _points in replay.result.scores:
            if entry.name:
                names[0 if entry.team is Team.ONE else 1] = entry.name
    return json.dumps(
        {"states": states, "result": result_json(replay.result), "names": names, **extra},
        separators=(",", ":"),
    )


def is_replay_name(name: str) -> bool:
    """A replay file's name as the listing shows them: `*.xml` or `*.xml.gz`, no path."""
    return (
        not name.startswith(".")
        and "/" not in name
        and "\\" not in name
        and (name.endswith(".xml") or name.endswith(".xml.gz"))
    )
