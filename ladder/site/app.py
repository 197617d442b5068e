"""The ladder's web service: pages, forms and the API (Starlette on hypercorn's trio worker),
in a process of its own — never inside a game server's.

Rule: every state-changing request proves it comes from this site — a browser form with the
session's CSRF token (field `csrf`, or header `X-CSRF-Token` for the viewer's scripts) and an
Origin of this site when the browser sends one, or an API call with a team's bearer token
(not ambient, so no CSRF). Every body has a bound (`ladder.site.forms`). What a reader may see
is decided in `ladder.site.access` alone. The store is used from one thread of its own
(`league.asyncstore.StoreThread`): a request waits for a query, never for a game.

The replay viewer, its board and its analysis are the web viewer's own pages and endpoints
(`web/static/replays.html`, `web.replays.ReplayRoutes`, `web.analysis.AnalysisJobs`), here
given the ladder's replay files behind the access rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import structlog
import trio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from analysis import AnalysisError
from analysis import Settings as AnalysisSettings
from ladder.site import access
from ladder.site.admin import AdminRoutes
from ladder.site.api import ApiRoutes
from ladder.site.context import SIGN_IN_FAILURE_DELAY, Reader, SiteContext
from ladder.site.forms import text_field
from ladder.site.pages import NO_DOCKER, TITLE, esc, form, page, panel, table, when
from ladder.site.sessions import (
    hash_password,
    password_problem,
    username_problem,
    verify_password,
)
from ladder.site.team import TeamRoutes
from ladder.site.uploads import (
    DEFAULT_MAX_UPLOAD,
)
from ladder.store import (
    InviteError,
    LadderMatch,
    LadderStore,
)
from server.logins import Logins
from web.analysis import AnalysisJobs
from web.app import STATIC as VIEWER_STATIC
from web.auth import (
    COOKIE,
    CSRF_HEADER,
    Session,
    client_address,
    csrf_ok,
    is_secure,
)
from web.http import (
    PAGE_HEADERS,
    BodyTimeout,
    BodyTooLarge,
    client_gone,
    error,
    refuse_slow_body,
)
from web.replays import ReplayRoutes

log = structlog.get_logger("ladder.site")

STATIC = Path(str(resources.files("ladder.site") / "static"))
REPLAY_NAME = re.compile(r"^([0-9]{1,12})-([0-9]{1,3})\.xml\.gz$")

P = ParamSpec("P")
T = TypeVar("T")


class LadderSite(SiteContext):
    """The site over one ladder store and data directory (see the module docstring): the
    context (ladder.site.context) with its routes, its own pages and the Starlette app."""

    def __init__(
        self,
        store_factory: Callable[[], LadderStore],
        data_dir: Path,
        *,
        max_upload: int = DEFAULT_MAX_UPLOAD,
        docker: bool = True,
        analysis_nodes: int | None = None,
        logins: Logins | None = None,
        failure_delay: float = SIGN_IN_FAILURE_DELAY,
    ) -> None:
        super().__init__(
            store_factory,
            data_dir,
            max_upload=max_upload,
            docker=docker,
            logins=logins,
            failure_delay=failure_delay,
        )
        self.replays = ReplayRoutes(data_dir / "replays")
        self.analyses = AnalysisJobs(self._script_guard, self._spawn)
        if analysis_nodes is not None:
            try:
                self.analyses.settings = AnalysisSettings(nodes=analysis_nodes)
            except AnalysisError as failure:
                raise ValueError(f"analysis nodes: {failure}") from None
        self.team = TeamRoutes(self)
        self.admin = AdminRoutes(self)
        self.api = ApiRoutes(self, self.team)
        self.app = self._build_app()

    # ------------------------------------------------------------------ app

    def _build_app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/", self.ladder_page),
                Route("/login", self.login_page),
                Route("/login", self.login, methods=["POST"]),
                Route("/logout", self.logout, methods=["POST"]),
                Route("/invite/{token}", self.invite_page),
                Route("/invite/{token}", self.accept_invite, methods=["POST"]),
                *self.team.routes(),
                Route("/match/{match_id:int}", self.match_page),
                Route("/game/{match_id:int}/{number:int}", self.game_page),
                Route("/replays", self.viewer_page),
                *self.admin.routes(),
                # The viewer's scripts (common.js, replays.js, moves.js) ask these.
                Route("/api/session", self.session_info),
                Route("/api/config", self.config),
                Route("/api/replays", self.replay_listing),
                Route("/api/replays/upload", self.replays.upload, methods=["POST"]),
                Route("/api/replays/{name}/download", self.replay_download),
                Route("/api/replays/{name}", self.replay),
                *self.analyses.routes(),
                # The API (docs/ladder.md).
                *self.api.routes(),
                Mount("/static", StaticFiles(directory=VIEWER_STATIC), name="static"),
                Mount("/ladder-static", StaticFiles(directory=STATIC), name="ladder-static"),
            ],
            exception_handlers={
                BodyTooLarge: self._too_large,
                BodyTimeout: refuse_slow_body,
                ClientDisconnect: client_gone,
            },
        )

    async def _too_large(self, request: Request, exc: Exception) -> Response:
        # The connection closes: the rest of the body is never read.
        headers = {"Connection": "close"}
        if "text/html" in request.headers.get("accept", ""):
            response = page("Too large", "", status=413, failure=str(exc))
            response.headers.update(headers)
            return response
        return JSONResponse({"error": str(exc)}, status_code=413, headers=headers)

    # ------------------------------------------------------------------ public pages

    async def ladder_page(self, request: Request) -> Response:
        """The ladder table."""
        reader = await self.reader(request)
        standings = await self.call(self.store.standings)
        rows = [
            [
                str(s.rank),
                f'<a href="/team/{s.team_id}">{esc(s.team_name)}</a>',
                f"{s.rating:.0f} ± {s.deviation:.0f}",
                str(s.games),
            ]
            for s in standings
        ]
        body = panel(
            "Ladder",
            table(["#", "team", "rating", "games"], rows, name="standings")
            if rows
            else '<p class="empty">No active bots yet.</p>',
        )
        if not self.docker:
            body += f'<p class="small">{NO_DOCKER}</p>'
        return self.render(reader, "Ladder", body)

    async def game_page(self, request: Request) -> Response:
        """A game in the web viewer's replay page (its board, moves and analysis)."""
        reader = await self.reader(request)
        match_id = int(request.path_params["match_id"])
        number = int(request.path_params["number"])
        if not await self.call(self._game_visible, match_id, number, reader.team_id):
            return self.render(reader, "No such game", "", status=404, failure="no such game")
        return RedirectResponse(f"/replays#file={match_id}-{number}.xml.gz", status_code=303)

    def _game_visible(self, match_id: int, number: int, team_id: int | None) -> bool:
        match = self.store.match(match_id)
        return (
            match is not None
            and access.match_visible(self.store, match, team_id)
            and any(r.number == number for r in match.results)
        )

    async def match_page(self, request: Request) -> Response:
        """A match: its two versions and its games (each opened in the replay page)."""
        reader = await self.reader(request)
        match_id = int(request.path_params["match_id"])

        def look() -> tuple[LadderMatch, dict[int, tuple[str, int]]] | None:
            match = self.store.match(match_id)
            if match is None or not access.match_visible(self.store, match, reader.team_id):
                return None
            return match, self._sides(match)

        found = await self.call(look)
        if found is None:
            return self.render(reader, "No such match", "", status=404, failure="no such match")
        match, sides = found

        def side(version_id: int) -> str:
            name, team_id = sides[version_id]
            return f'<a href="/team/{team_id}">{esc(name)}</a>'

        rows = []
        for result in match.results:
            second = match.version_b if result.first_version == match.version_a else match.version_a
            points = (
                (result.points_a, result.points_b)
                if result.first_version == match.version_a
                else (result.points_b, result.points_a)
            )
            rows.append(
                [
                    str(result.number),
                    side(result.first_version),
                    side(second),
                    f"{points[0]}:{points[1]}",
                    f'<a class="game" href="/game/{match.id}/{result.number}">watch</a>',
                ]
            )
        kind = "ranked" if match.ranked else "challenge (unranked)"
        body = panel(
            f"Match {match.id}",
            f"<p>{side(match.version_a)} against {side(match.version_b)} · {kind} · "
            f"finished {when(match.finished)}</p>"
            + table(["game", "first", "second", "points", ""], rows, name="match-games"),
            name="match",
        )
        return self.render(reader, f"Match {match.id}", body)

    def _sides(self, match: LadderMatch) -> dict[int, tuple[str, int]]:
        """Each version of a visible match: its display name and team."""
        sides = {}
        for version_id in (match.version_a, match.version_b):
            version = self.store.version(version_id)
            team = self.store.team(version.team_id) if version is not None else None
            if version is not None and team is not None:
                sides[version_id] = (f"{team.name} v{version.number}", team.id)
            else:
                sides[version_id] = ("?", 0)
        return sides

    async def viewer_page(self, request: Request) -> Response:
        """The web viewer's replay page as it is."""
        return FileResponse(VIEWER_STATIC / "replays.html", headers=PAGE_HEADERS)

    # ------------------------------------------------------------------ replays

    def _replay_request(self, request: Request) -> tuple[int, int] | None:
        found = REPLAY_NAME.match(request.path_params["name"])
        return (int(found[1]), int(found[2])) if found else None

    async def _visible_replay(self, request: Request) -> Request | Response:
        """The request for the viewer's replay routes, once the reader may see the game
        (the file's name is rebuilt from the ids)."""
        reader = await self.reader(request)
        ids = self._replay_request(request)
        if ids is None or not await self.call(self._game_visible, *ids, reader.team_id):
            return error(404, "no such replay")
        scope = dict(request.scope)
        scope["path_params"] = {"name": f"{ids[0]}-{ids[1]}.xml.gz"}
        return Request(scope, request.receive)

    async def replay(self, request: Request) -> Response:
        """A game's replay as the replay page's JSON, with the ladder's links of the game
        (`links`: its match and both teams; the replay page shows them above the board)."""
        checked = await self._visible_replay(request)
        if isinstance(checked, Response):
            return checked
        answer = await self.replays.replay(checked)
        ids = self._replay_request(checked)
        match = await self.call(self.store.match, ids[0]) if ids is not None else None
        if answer.status_code != 200 or match is None:
            return answer
        sides = await self.call(self._sides, match)
        links = [{"label": f"match {match.id}", "href": f"/match/{match.id}"}]
        links += [
            {"label": name, "href": f"/team/{team_id}"}
            for name, team_id in (sides[match.version_a], sides[match.version_b])
            if team_id
        ]
        data = json.loads(bytes(answer.body))
        data["links"] = links
        return JSONResponse(data, headers={"Cache-Control": "no-store"})

    async def replay_download(self, request: Request) -> Response:
        """A game's replay file."""
        checked = await self._visible_replay(request)
        if isinstance(checked, Response):
            return checked
        return await self.replays.download(checked)

    async def replay_listing(self, request: Request) -> Response:
        """The replay page's list: a page of the reader's visible games, newest first.
        `?offset=` is the `next` of the page before (a match id: the viewer's script sends
        it back as it is; absent or 0 for the newest), `?limit=` the games per page (whole
        matches; at most `access.MAX_PAGE_GAMES`)."""
        reader = await self.reader(request)
        try:
            offset = int(request.query_params.get("offset", "0"))
            limit = int(request.query_params.get("limit", str(access.PAGE_GAMES)))
        except ValueError:
            return error(400, "offset and limit: whole numbers")
        if offset < 0 or limit < 1:
            return error(400, "offset: 0 or a listing's next; limit: 1 or more")

        def listing() -> tuple[list[dict[str, Any]], int | None]:
            matches, following = access.visible_matches(
                self.store, reader.team_id, before=offset or None, games=limit
            )
            entries = [
                {
                    "name": f"{full.id}-{result.number}.xml.gz",
                    "size": 0,
                    "mtime": (full.finished or 0) / 1000,
                }
                for full in matches
                for result in full.results
            ]
            return entries, following

        entries, following = await self.call(listing)
        return JSONResponse(
            {
                "replays": entries,
                "total": None,  # not counted: the rule is applied page by page
                "offset": offset,
                "next": following,
                "truncated": False,
            }
        )

    # ------------------------------------------------------------------ the viewer's scripts

    async def session_info(self, request: Request) -> Response:
        """The viewer's session JSON (its CSRF token for the analysis)."""
        reader = await self.reader(request)
        reader, fresh = self._with_session(request, reader)
        assert reader.session is not None
        response = JSONResponse(
            {
                "admin": reader.admin,
                "play": False,
                "csrf": reader.session.csrf,
                "member": reader.name,
                # What the viewer's header says of who is reading (its own says "read-only").
                "label": reader.name if reader.name is not None else "not signed in",
            }
        )
        return self._send(response, request, reader.session if fresh else None)

    async def config(self, request: Request) -> Response:
        """The viewer's configuration JSON (no league link, no game port) and its context
        inside the ladder: the ladder's navigation in its header, no "play from here" (the
        ladder has no game server to play on), the ladder's words for an empty listing."""
        reader = await self.reader(request)
        nav = [
            {"label": "Ladder", "href": "/", "name": "ladder"},
            {"label": "Replays", "href": "/replays", "name": "replays"},
        ]
        if reader.team is not None:
            nav.append({"label": "Our team", "href": f"/team/{reader.team.id}", "name": "team"})
        if reader.admin:
            nav.append({"label": "Admin", "href": "/admin", "name": "admin"})
        if reader.member is None:
            nav.append({"label": "Sign in", "href": "/login", "name": "login"})
        context = {
            "title": TITLE,
            "nav": nav,
            "play": False,
            "replaysTitle": "Games of this ladder",
            "noReplays": "No ladder games yet.",
        }
        return JSONResponse(
            {"league": False, "softTimeoutMs": 2000, "gamePort": 0, "context": context},
            headers={"Cache-Control": "no-store"},
        )

    def _script_guard(
        self, handler: Callable[[Request, Session], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """The viewer's state-changing calls (an analysis): a signed-in member's session,
        its CSRF header, this site's Origin."""

        async def guarded(request: Request) -> Response:
            reader = await self.reader(request)
            session = reader.session
            if (
                session is None
                or not csrf_ok(session, request.headers.get(CSRF_HEADER))
                or not self.from_this_site(request)
            ):
                return error(403, "cross-site request or missing CSRF token refused")
            if reader.member is None:
                return error(401, "sign in to analyse games")
            return await handler(request, session)

        return guarded

    # ------------------------------------------------------------------ signing in

    async def login_page(self, request: Request) -> Response:
        """The sign-in form."""
        reader, fresh = self._with_session(request, await self.reader(request))
        return self._send(self._login_form(reader), request, reader.session if fresh else None)

    def _login_form(self, reader: Reader, failure: str = "", status: int = 200) -> Response:
        assert reader.session is not None
        body = panel(
            "Sign in",
            form(
                "/login",
                reader.session.csrf,
                _credentials("current-password") + '<button type="submit">Sign in</button>',
                name="login",
            ),
        )
        return self.render(reader, "Sign in", body, failure=failure, status=status)

    async def login(self, request: Request) -> Response:
        """Sign in (the lockout first, then the password)."""
        checked = await self.checked_form(request, member=False)
        if isinstance(checked, Response):
            return checked
        reader, form_data = checked
        address = client_address(request)
        remaining = self.logins.check(address)
        if remaining > 0:
            return self._login_form(
                reader, f"too many failed sign-ins: try again in {remaining:.0f} s", 429
            )
        username = text_field(form_data, "username", 64).strip().lower()
        password = text_field(form_data, "password", 400)
        member = await self.call(self.store.member_by_name, username)
        ok = await trio.to_thread.run_sync(
            verify_password, member.password_hash if member else None, password
        )
        if member is None or not ok:
            failure = self.logins.fail(address)
            log.info("ladder sign-in failed", address=address, failures=failure.failures)
            await trio.sleep(self.failure_delay)  # slows down guessing
            return self._login_form(reader, "wrong username or password", 403)
        self.logins.succeed(address)
        session = self.sessions.sign_in(reader.session, member.id)
        log.info("ladder sign-in", member=member.username)
        target = "/admin" if member.is_admin else f"/team/{member.team_id}"
        return self._send(RedirectResponse(target, status_code=303), request, session)

    async def logout(self, request: Request) -> Response:
        """Sign out."""
        checked = await self.checked_form(request, member=False)
        if isinstance(checked, Response):
            return checked
        reader, _ = checked
        assert reader.session is not None
        self.sessions.sign_out(reader.session)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(
            COOKIE, path="/", httponly=True, samesite="strict", secure=is_secure(request)
        )
        return response

    async def invite_page(self, request: Request) -> Response:
        """The sign-up form of an invite link."""
        reader, fresh = self._with_session(request, await self.reader(request))
        return self._send(
            self._invite_form(reader, request.path_params["token"]),
            request,
            reader.session if fresh else None,
        )

    def _invite_form(
        self, reader: Reader, token: str, failure: str = "", status: int = 200
    ) -> Response:
        assert reader.session is not None
        body = panel(
            "Join your team",
            form(
                f"/invite/{token[:100]}",
                reader.session.csrf,
                _credentials("new-password") + '<button type="submit">Join</button>',
                name="invite",
            ),
        )
        return self.render(reader, "Join", body, failure=failure, status=status)

    async def accept_invite(self, request: Request) -> Response:
        """Sign up through an invite: a member of its team, signed in at once."""
        checked = await self.checked_form(request, member=False)
        if isinstance(checked, Response):
            return checked
        reader, form_data = checked
        token = request.path_params["token"]
        username = text_field(form_data, "username", 64).strip().lower()
        password = text_field(form_data, "password", 400)
        problem = username_problem(username) or password_problem(password)
        if problem is not None:
            return self._invite_form(reader, token, problem, 400)
        password_hash = await trio.to_thread.run_sync(hash_password, password)
        try:
            member_id = await self.call(self.store.accept_invite, token, username, password_hash)
        except (InviteError, ValueError) as failure:
            return self._invite_form(reader, token, str(failure), 400)
        member = await self.call(self.store.member, member_id)
        assert member is not None
        session = self.sessions.sign_in(reader.session, member_id)
        log.info("ladder sign-up", member=username, team=member.team_id)
        return self._send(
            RedirectResponse(f"/team/{member.team_id}", status_code=303), request, session
        )


def create_app(
    store_factory: Callable[[], LadderStore], data_dir: Path, **options: Any
) -> LadderSite:
    """The site (its `.app` is the ASGI app); options as `LadderSite`."""
    return LadderSite(store_factory, data_dir, **options)


def _credentials(autocomplete: str) -> str:
    return (
        '<p><label>username <input name="username" autocomplete="username" required>'
        "</label></p><p><label>password "
        f'<input name="password" type="password" autocomplete="{autocomplete}" required>'
        "</label></p>"
    )
