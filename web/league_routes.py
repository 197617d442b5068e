"""The league pages' endpoints: standings, a match, a game's replay and its record."""

from __future__ import annotations

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from web.http import error
from web.league import LeagueSnapshot, LeagueUnavailable, LeagueView
from web.replays import respond

log = structlog.get_logger("web.league")


class LeagueRoutes:
    """`/api/league...` on a `LeagueView` (None: no league configured, every answer 404)."""

    def __init__(self, view: LeagueView | None) -> None:
        self.view = view

    def routes(self) -> list[Route]:
        """The routes."""
        return [
            Route("/api/league", self.standings),
            Route("/api/league/matches/{match_id:int}", self.match),
            Route("/api/league/records/{match_id:int}/{number:int}", self.replay),
            Route("/api/league/records/{match_id:int}/{number:int}.xml", self.record),
        ]

    async def _snapshot(self) -> LeagueSnapshot | Response:
        if self.view is None:
            return error(404, "no league configured (--web-league FILE.toml)")
        try:
            return await self.view.snapshot()
        except LeagueUnavailable as failure:
            log.warning("league unavailable", error=str(failure))
            return error(503, failure.public)

    async def standings(self, request: Request) -> Response:
        """The standings page's data."""
        snapshot = await self._snapshot()
        if isinstance(snapshot, Response):
            return snapshot
        return JSONResponse(snapshot.to_json())

    async def match(self, request: Request) -> Response:
        """A match page's data."""
        snapshot = await self._snapshot()
        if isinstance(snapshot, Response):
            return snapshot
        match = snapshot.match_json(request.path_params["match_id"])
        if match is None:
            return error(404, "no such match")
        return JSONResponse(match)

    async def _stored_record(self, request: Request) -> str | Response:
        snapshot = await self._snapshot()
        if isinstance(snapshot, Response):
            return snapshot
        record = snapshot.record(request.path_params["match_id"], request.path_params["number"])
        if record is None:
            return error(404, "no record of this game (yet)")
        return record

    async def replay(self, request: Request) -> Response:
        """A game's record as the replay page's JSON."""
        record = await self._stored_record(request)
        if isinstance(record, Response):
            return record
        return await respond(record.encode())

    async def record(self, request: Request) -> Response:
        """A game's record as a download."""
        record = await self._stored_record(request)
        if isinstance(record, Response):
            return record
        name = f"match{request.path_params['match_id']:03d}-game{request.path_params['number']}"
        return Response(
            record,
            media_type="application/xml",
            headers={"Content-Disposition": f'attachment; filename="{name}.xml"'},
        )
