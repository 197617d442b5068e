"""The API for a team's CI (docs/ladder.md, "The API"): a team's bearer token, or a signed-in
member's session with its CSRF header for the POSTs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ladder.site.forms import UPLOAD_SECONDS, UPLOAD_SLACK, bounded_form, text_field
from ladder.store import Version
from web.auth import CSRF_HEADER, csrf_ok
from web.http import error, json_body

if TYPE_CHECKING:
    from ladder.site.context import SiteContext
    from ladder.site.team import TeamRoutes


class ApiRoutes:
    """`/api/...` of the site (`SiteContext`); uploads, activations and challenges go through
    the team pages' own code (`TeamRoutes`)."""

    def __init__(self, site: SiteContext, team: TeamRoutes) -> None:
        self.site = site
        self.team = team

    def routes(self) -> list[Route]:
        """The API's routes."""
        return [
            Route("/api/standings", self.api_standings),
            Route("/api/versions", self.api_versions),
            Route("/api/upload", self.api_upload, methods=["POST"]),
            Route("/api/activate", self.api_activate, methods=["POST"]),
            Route("/api/challenge", self.api_challenge, methods=["POST"]),
        ]

    # ------------------------------------------------------------------ the API

    async def _api_team(self, request: Request, *, state_changing: bool) -> int | Response:
        """The team of a bearer token, or of a signed-in member (with CSRF header and
        Origin when `state_changing`)."""
        header = request.headers.get("authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return error(401, "Authorization: Bearer <team token>")
            team_id = await self.site.call(self.site.store.team_for_token, token.strip())
            if team_id is None:
                return error(401, "unknown or revoked token")
            team = await self.site.call(self.site.store.team, team_id)
            if team is None:
                return error(401, "unknown or revoked token")
            if state_changing and team.suspended:
                return error(403, "this team is suspended")
            return team_id
        reader = await self.site.reader(request)
        if reader.team is None or reader.session is None:
            return error(401, "a team token (Authorization: Bearer …) or a member's session")
        if state_changing:
            if not csrf_ok(reader.session, request.headers.get(CSRF_HEADER)) or (
                not self.site.from_this_site(request)
            ):
                return error(403, "cross-site request or missing CSRF token refused")
            if reader.team.suspended:
                return error(403, "this team is suspended")
        return reader.team.id

    async def api_standings(self, request: Request) -> Response:
        """The public ladder table."""
        standings = await self.site.call(self.site.store.standings)
        return JSONResponse(
            {
                "standings": [
                    {
                        "rank": s.rank,
                        "team": s.team_id,
                        "name": s.team_name,
                        "version": s.version_id,
                        "rating": s.rating,
                        "deviation": s.deviation,
                        "games": s.games,
                    }
                    for s in standings
                ]
            }
        )

    async def api_versions(self, request: Request) -> Response:
        """The team's own versions."""
        team_id = await self._api_team(request, state_changing=False)
        if isinstance(team_id, Response):
            return team_id
        versions = await self.site.call(self.site.store.versions, team_id)
        return JSONResponse({"versions": [_version_json(v) for v in versions]})

    async def api_upload(self, request: Request) -> Response:
        """`curl -F bot=@bot.zip -H 'Authorization: Bearer …' …/api/upload`."""
        team_id = await self._api_team(request, state_changing=True)
        if isinstance(team_id, Response):
            return team_id
        form_data = await bounded_form(
            request, self.site.max_upload + UPLOAD_SLACK, files=1, seconds=UPLOAD_SECONDS
        )
        bot = form_data.get("bot")
        if not isinstance(bot, UploadFile):
            return error(400, "send the bot's ZIP as the multipart field bot (-F bot=@bot.zip)")
        label = text_field(form_data, "label", 100).strip() or (bot.filename or "")
        result = await self.team.accept_upload(team_id, bot, label, f"token of team {team_id}")
        if isinstance(result, str):
            status = 409 if result.startswith("not accepted") else 400
            return error(status, result)
        return JSONResponse(
            {"version": _version_json(result), "team": f"/team/{team_id}"}, status_code=201
        )

    async def api_activate(self, request: Request) -> Response:
        """`{"version": id}`: activate a passed version of the team."""
        team_id = await self._api_team(request, state_changing=True)
        if isinstance(team_id, Response):
            return team_id
        body = await json_body(request)
        failure = await self.team.activate(team_id, body.get("version"), None)
        if failure is not None:
            return error(400, failure)
        return JSONResponse({"ok": True})

    async def api_challenge(self, request: Request) -> Response:
        """`{"opponent": version id, "games": n}`: an unranked challenge."""
        team_id = await self._api_team(request, state_changing=True)
        if isinstance(team_id, Response):
            return team_id
        body = await json_body(request)
        failure = await self.team.challenge(team_id, body.get("opponent"), body.get("games", 2))
        if failure is not None:
            return error(429 if failure.startswith("not now") else 400, failure)
        return JSONResponse({"ok": True}, status_code=201)


def _version_json(version: Version) -> dict[str, Any]:
    return {
        "id": version.id,
        "number": version.number,
        "label": version.label,
        "size": version.size,
        "sha256": version.sha256,
        "created": version.created,
        "state": version.state,
        "card": version.card_summary,
        "active": version.active,
    }
