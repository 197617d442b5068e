"""The replay pages' data: the replay directory's listing, one replay as the pages' JSON, an
uploaded replay or league game record parsed (read-only: nothing is stored)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine import Team
from protocol import RemoteProtocolError
from protocol.replay import read_replay
from web.board import state_json
from web.http import error, read_body
from web.hub import result_json
from web.league import RecordError, looks_like_record, record_replay

MAX_UPLOAD_BYTES = 4 * 1024 * 1024  # an official replay is ~100 KiB, gzipped far less
MAX_REPLAY_BYTES = 32 * 1024 * 1024  # after gunzip (no zip bombs)


class ReplayRoutes:
    """`/api/replays`: the listing, one file, an upload."""

    def __init__(self, replay_dir: Path) -> None:
        self.replay_dir = replay_dir

    def routes(self) -> list[Route]:
        """The routes, in the order Starlette must try them."""
        return [
            Route("/api/replays", self.listing),
            Route("/api/replays/upload", self.upload, methods=["POST"]),
            Route("/api/replays/{name}", self.replay),
        ]

    async def listing(self, request: Request) -> Response:
        """Every replay file, newest first."""
        directory = self.replay_dir
        files: list[dict[str, Any]] = []
        if directory.is_dir():
            for path in directory.iterdir():
                if path.is_file() and is_replay_name(path.name):
                    stat = path.stat()
                    files.append({"name": path.name, "size": stat.st_size, "mtime": stat.st_mtime})
        files.sort(key=lambda entry: (-entry["mtime"], entry["name"]))
        return JSONResponse({"replays": files})

    async def replay(self, request: Request) -> Response:
        """One replay file of the directory as the pages' JSON."""
        name = request.path_params["name"]
        path = self.replay_dir / name
        if not is_replay_name(name) or "/" in name or not path.is_file():
            return error(404, "no such replay")
        if path.stat().st_size > MAX_REPLAY_BYTES:
            return error(413, "replay file too large")
        data = await trio.to_thread.run_sync(path.read_bytes)
        return await respond(data)

    async def upload(self, request: Request) -> Response:
        """An uploaded replay or game record (parsing is read-only, so no session needed)."""
        data = await read_body(request, MAX_UPLOAD_BYTES)
        return await respond(data)


async def respond(data: bytes) -> Response:
    """A replay or game record as the pages' JSON, or 400 saying why it is none."""
    try:
        body = await trio.to_thread.run_sync(replay_json, data)
    except RecordError as failure:
        return error(400, f"not a game record: {failure}")
    except (RemoteProtocolError, ValueError, zlib.error) as failure:
        return error(400, f"not a replay file: {failure}")
    return Response(body, media_type="application/json")


def replay_json(data: bytes) -> str:
    """The replay page's JSON of a replay (gzipped or not) or a league game record."""
    if data[:2] == b"\x1f\x8b":
        # Inflate here with a ceiling: gzip.decompress would inflate a bomb without one.
        inflater = zlib.decompressobj(wbits=31)
        data = inflater.decompress(data, MAX_REPLAY_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError(f"more than {MAX_REPLAY_BYTES} bytes uncompressed")
    extra: dict[str, Any] = {}
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
