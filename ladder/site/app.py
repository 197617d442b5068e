"""The ladder's web service: pages, forms and the API (Starlette on hypercorn's trio worker),
in a process of its own — never inside a game server's.

Rule: every state-changing request proves it comes from this site — a browser form with the
session's CSRF token (field `csrf`, or header `X-CSRF-Token` for the viewer's scripts) and an
Origin of this site when the browser sends one, or an API call with a team's bearer token
(not ambient, so no CSRF). Every body has a bound (`ladder.site.forms`). What a reader may see
is decided in `ladder.site.access` alone. The store is used from one thread of its own
(`league.asyncstore.AsyncStore`): a request waits for a query, never for a game.

The replay viewer, its board and its analysis are the web viewer's own pages and endpoints
(`web/static/replays.html`, `web.replays.ReplayRoutes`, `web.analysis.AnalysisJobs`), here
given the ladder's replay files behind the access rule.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

import structlog
import trio
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from analysis import Settings as AnalysisSettings
from ladder.site import access
from ladder.site.forms import UPLOAD_SECONDS, UPLOAD_SLACK, bounded_form, text_field
from ladder.site.pages import esc, form, page, panel, rating_graph, table, when
from ladder.site.sessions import (
    LadderSession,
    Sessions,
    hash_password,
    lockout,
    password_problem,
    username_problem,
    verify_password,
)
from ladder.site.uploads import (
    DEFAULT_MAX_UPLOAD,
    UploadRefused,
    discard,
    place,
    receive_upload,
    upload_path,
)
from ladder.store import (
    ChallengeLimitError,
    InviteError,
    LadderError,
    LadderStore,
    Member,
    Team,
    Version,
)
from league.asyncstore import AsyncStore
from league.store import LeagueStore
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
    same_origin,
    set_session_cookie,
)
from web.http import (
    BodyTimeout,
    BodyTooLarge,
    client_gone,
    error,
    json_body,
    refuse_slow_body,
)
from web.replays import ReplayRoutes

log = structlog.get_logger("ladder.site")

STATIC = Path(str(resources.files("ladder.site") / "static"))
SIGN_IN_FAILURE_DELAY = 1.0
MAX_CHALLENGE_GAMES = 10
NO_DOCKER = (
    "This ladder runs bots as jailed processes (--no-docker), not in the contest's containers:"
    " a card's test games and the ladder's games ran that way."
)
REPLAY_NAME = re.compile(r"^([0-9]{1,12})-([0-9]{1,3})\.xml\.gz$")
MAX_LOG_BYTES = 4 * 1024 * 1024  # launching.botlog bounds what a worker writes; this bounds a read
MESSAGES = {
    "uploaded": "Upload received: it is queued for the check.",
    "activated": "Version activated: it plays on the ladder from now on.",
    "token": "Token revoked.",
    "challenge": "Challenge queued: its games appear below once played.",
    "team": "Team created.",
    "suspended": "Done.",
    "frozen": "Season frozen.",
}

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class Reader:
    """Who is asking: the browser's session (if any) and its signed-in member (if any)."""

    session: LadderSession | None
    member: Member | None
    team: Team | None  # the member's team (None for an admin or a visitor)

    @property
    def team_id(self) -> int | None:
        return self.team.id if self.team is not None else None

    @property
    def admin(self) -> bool:
        return self.member is not None and self.member.is_admin

    @property
    def name(self) -> str | None:
        return self.member.username if self.member is not None else None


class LadderSite:
    """The site over one ladder store and data directory (see the module docstring)."""

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
        self.data_dir = data_dir
        self.max_upload = max_upload
        self.docker = docker
        # The store's thread (an SQLite connection belongs to its thread); AsyncStore is the
        # league's, typed for its store but calling any function on that thread.
        self.db = AsyncStore(cast(Callable[[], LeagueStore], store_factory))
        self.store = cast(LadderStore, self.db.store)
        self.sessions = Sessions()
        self.logins = logins if logins is not None else lockout()
        self.failure_delay = failure_delay
        self._nursery: trio.Nursery | None = None
        self.replays = ReplayRoutes(data_dir / "replays")
        self.analyses = AnalysisJobs(self._script_guard, self._spawn)
        if analysis_nodes is not None:
            self.analyses.settings = AnalysisSettings(nodes=analysis_nodes)
        self.app = self._build_app()

    async def call(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a store function on the store's thread."""
        return await self.db.call(function, *args, **kwargs)

    def use_nursery(self, nursery: trio.Nursery) -> None:
        """Where background work of requests (analyses) runs."""
        self._nursery = nursery

    def close(self) -> None:
        """Close the store."""
        self.db.close()

    def _spawn(self, task: Callable[[], Awaitable[None]]) -> None:
        assert self._nursery is not None, "requests are served only while running"
        self._nursery.start_soon(task)

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
                Route("/team/{team_id:int}", self.team_page),
                Route("/team/{team_id:int}/upload", self.upload_form, methods=["POST"]),
                Route("/team/{team_id:int}/activate", self.activate_form, methods=["POST"]),
                Route("/team/{team_id:int}/tokens", self.token_form, methods=["POST"]),
                Route(
                    "/team/{team_id:int}/tokens/{token_id:int}/revoke",
                    self.revoke_form,
                    methods=["POST"],
                ),
                Route("/team/{team_id:int}/challenge", self.challenge_form, methods=["POST"]),
                Route("/team/{team_id:int}/versions/{version_id:int}/card", self.card),
                Route("/team/{team_id:int}/versions/{version_id:int}/bot.zip", self.bot_zip),
                Route("/team/{team_id:int}/logs/{match_id:int}/{number:int}", self.bot_log),
                Route("/game/{match_id:int}/{number:int}", self.game_page),
                Route("/replays", self.viewer_page),
                Route("/admin", self.admin_page),
                Route("/admin/team", self.admin_team, methods=["POST"]),
                Route("/admin/invite", self.admin_invite, methods=["POST"]),
                Route("/admin/suspend", self.admin_suspend, methods=["POST"]),
                Route("/admin/freeze", self.admin_freeze, methods=["POST"]),
                # The viewer's scripts (common.js, replays.js, moves.js) ask these.
                Route("/api/session", self.session_info),
                Route("/api/config", self.config),
                Route("/api/replays", self.replay_listing),
                Route("/api/replays/upload", self.replays.upload, methods=["POST"]),
                Route("/api/replays/{name}/download", self.replay_download),
                Route("/api/replays/{name}", self.replay),
                *self.analyses.routes(),
                # The API (docs/ladder.md).
                Route("/api/standings", self.api_standings),
                Route("/api/versions", self.api_versions),
                Route("/api/upload", self.api_upload, methods=["POST"]),
                Route("/api/activate", self.api_activate, methods=["POST"]),
                Route("/api/challenge", self.api_challenge, methods=["POST"]),
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

    # ------------------------------------------------------------------ who is asking

    def _session(self, request: Request) -> LadderSession | None:
        return self.sessions.get(request.cookies.get(COOKIE))

    async def reader(self, request: Request) -> Reader:
        """The session and, read again from the store, its member and team."""
        session = self._session(request)
        if session is None or session.member_id is None:
            return Reader(session, None, None)
        member_id = session.member_id

        def look() -> tuple[Member | None, Team | None]:
            member = self.store.member(member_id)
            if member is None or member.is_admin or member.team_id is None:
                return member, None
            return member, self.store.team(member.team_id)

        member, team = await self.call(look)
        if member is None:
            self.sessions.sign_out(session)
            return Reader(None, None, None)
        return Reader(session, member, team)

    def _from_this_site(self, request: Request) -> bool:
        return same_origin(
            request.headers.get("origin"), request.headers.get("host"), request.url.scheme
        )

    async def _checked_form(
        self,
        request: Request,
        *,
        limit: int | None = None,
        files: int = 0,
        member: bool = True,
    ) -> tuple[Reader, Any] | Response:
        """A state-changing form: this site's Origin, a session (a signed-in one when
        `member`) — both before a byte of the body is read — then the bounded form and its
        CSRF token."""
        if not self._from_this_site(request):
            return self._refused("a cross-site request is refused")
        reader = await self.reader(request)
        if reader.session is None:
            return self._refused("no session: open the page again")
        if member and reader.member is None:
            return self._refused("sign in first")
        if limit is None:
            form_data = await bounded_form(request)
        else:
            form_data = await bounded_form(request, limit, files=files, seconds=UPLOAD_SECONDS)
        if not csrf_ok(reader.session, text_field(form_data, "csrf")):
            return self._refused("missing or wrong CSRF token: open the page again")
        return reader, form_data

    @staticmethod
    def _refused(message: str, status: int = 403) -> Response:
        return page("Refused", "", status=status, failure=message)

    def _page(self, reader: Reader, title: str, body: str, **options: Any) -> Response:
        session = reader.session
        return page(
            title,
            body,
            who=reader.name,
            csrf=session.csrf if session is not None else "",
            admin=reader.admin,
            **options,
        )

    def _with_session(self, request: Request, reader: Reader) -> tuple[Reader, bool]:
        """The reader with a session (a new anonymous one when it had none: forms need a
        CSRF token); True when the cookie must be set."""
        if reader.session is not None:
            return reader, False
        return Reader(self.sessions.create(), None, None), True

    def _send(self, response: Response, request: Request, session: Session | None) -> Response:
        if session is not None:
            set_session_cookie(response, session, request)
        return response

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
        return self._page(reader, "Ladder", body)

    async def team_page(self, request: Request, **notice: Any) -> Response:
        """A team's page: the public part, and for its members the private part."""
        reader = await self.reader(request)
        team_id = int(request.path_params["team_id"])
        mine = reader.team_id == team_id
        view = await self.call(self._team_view, team_id, reader.team_id)
        if view is None:
            return self._page(reader, "No such team", "", status=404, failure="no such team")
        team, active, history, games = view
        parts = [
            f'<h2 id="team-name">{esc(team.name)}</h2>',
            '<p class="error">This team is suspended: its bot does not play.</p>'
            if team.suspended
            else "",
            f'<p id="active-version">Active version: {_number(active)}</p>',
            panel("Rating", rating_graph(history)),
            panel("Games", self._games_table(games, team_id if mine else None), name="games"),
        ]
        if mine:
            parts.append(await self._private_part(reader, team))
        key = request.query_params.get("done", "")
        notice.setdefault("message", MESSAGES.get(key, ""))
        return self._page(reader, team.name, "".join(parts), **notice)

    def _team_view(
        self, team_id: int, reader_team: int | None
    ) -> tuple[Team, Version | None, list[tuple[int, float, float]], list[dict[str, Any]]] | None:
        store = self.store
        team = store.team(team_id)
        if team is None:
            return None
        active = next((v for v in store.versions(team_id) if v.active), None)
        history = store.rating_history(active.id) if active is not None else []
        games: list[dict[str, Any]] = []
        for full in store.matches(team_id=team_id, limit=50):
            if not access.match_visible(store, full, reader_team):
                continue
            names = {}
            for version_id in (full.version_a, full.version_b):
                version = store.version(version_id)
                owner = store.team(version.team_id) if version is not None else None
                names[version_id] = f"{owner.name} v{version.number}" if owner and version else "?"
            for result in full.results:
                first = result.first_version
                second = full.version_b if first == full.version_a else full.version_a
                points = (
                    (result.points_a, result.points_b)
                    if first == full.version_a
                    else (result.points_b, result.points_a)
                )
                games.append(
                    {
                        "match": full.id,
                        "number": result.number,
                        "ranked": full.ranked,
                        "first": names.get(first, "?"),
                        "second": names.get(second, "?"),
                        "points": points,
                        "finished": full.finished,
                    }
                )
        return team, active, history, games

    @staticmethod
    def _games_table(games: list[dict[str, Any]], own_team: int | None) -> str:
        if not games:
            return '<p class="empty">No games yet.</p>'
        rows = []
        for game in games:
            link = f'<a class="game" href="/game/{game["match"]}/{game["number"]}">watch</a>'
            if own_team is not None:
                link += (
                    f' · <a class="log" href="/team/{own_team}/logs/{game["match"]}/'
                    f'{game["number"]}">our log</a>'
                )
            rows.append(
                [
                    str(game["match"]),
                    esc(game["first"]),
                    esc(game["second"]),
                    f"{game['points'][0]}:{game['points'][1]}",
                    "ranked" if game["ranked"] else "challenge",
                    when(game["finished"]),
                    link,
                ]
            )
        return table(["match", "first", "second", "points", "kind", "finished", ""], rows)

    async def _private_part(self, reader: Reader, team: Team) -> str:
        assert reader.session is not None
        csrf = reader.session.csrf
        versions, tokens, members, standings = await self.call(
            lambda: (
                self.store.versions(team.id),
                self.store.api_tokens(team.id),
                self.store.members(team.id),
                self.store.standings(),
            )
        )
        base = f"/team/{team.id}"
        rows = []
        for version in sorted(versions, key=lambda v: -v.number):
            action = ""
            if version.state == "passed" and not version.active:
                action = form(
                    f"{base}/activate",
                    csrf,
                    f'<input type="hidden" name="version" value="{version.id}">'
                    f'<button type="submit" class="activate" data-version="{version.number}">'
                    "Activate</button>",
                )
            rows.append(
                [
                    f"v{version.number}",
                    esc(version.label),
                    f'<span class="state" data-version="{version.number}">'
                    f"{esc(version.state)}</span>" + (" (active)" if version.active else ""),
                    esc(version.card_summary or "–"),
                    f'<a class="card" href="{base}/versions/{version.id}/card">card</a> · '
                    f'<a href="{base}/versions/{version.id}/bot.zip">zip</a>',
                    when(version.created),
                    action,
                ]
            )
        upload = form(
            f"{base}/upload",
            csrf,
            '<label>label <input name="label" maxlength="100"></label> '
            '<input type="file" name="bot" accept=".zip" required> '
            '<button type="submit">Upload</button>',
            upload=True,
            name="upload",
        )
        token_rows = [
            [
                str(t.id),
                when(t.created),
                esc(t.created_by),
                "revoked"
                if t.revoked
                else form(
                    f"{base}/tokens/{t.id}/revoke",
                    csrf,
                    '<button type="submit">Revoke</button>',
                ),
            ]
            for t in tokens
        ]
        opponents = "".join(
            f'<option value="{s.version_id}">{esc(s.team_name)} (v. {s.version_id})</option>'
            for s in standings
            if s.team_id != team.id
        )
        challenge = (
            form(
                f"{base}/challenge",
                csrf,
                f'<label>against <select name="opponent">{opponents}</select></label> '
                '<label>games <input name="games" type="number" min="2" '
                f'max="{MAX_CHALLENGE_GAMES}" value="2" step="2"></label> '
                '<button type="submit">Challenge</button>',
            )
            if opponents
            else '<p class="empty">No other active bot to challenge.</p>'
        )
        mode = "" if self.docker else f'<p class="small">{NO_DOCKER}</p>'
        inner = "".join(
            [
                panel(
                    "Upload a version",
                    upload + f'<p class="small">A ZIP of at most {self.max_upload >> 20} MiB; '
                    "or from CI: see docs/ladder.md.</p>",
                ),
                panel(
                    "Versions",
                    mode
                    + table(
                        ["version", "label", "state", "card", "", "uploaded", ""],
                        rows,
                        name="versions",
                    ),
                ),
                panel(
                    "API tokens",
                    table(["id", "created", "by", ""], token_rows, name="tokens")
                    + form(f"{base}/tokens", csrf, '<button type="submit">New token</button>'),
                ),
                panel("Challenge", challenge),
                panel("Members", ", ".join(esc(m.username) for m in members)),
            ]
        )
        return f'<div class="private" id="private">{inner}</div>'

    async def game_page(self, request: Request) -> Response:
        """A game in the web viewer's replay page (its board, moves and analysis)."""
        reader = await self.reader(request)
        match_id = int(request.path_params["match_id"])
        number = int(request.path_params["number"])
        if not await self.call(self._game_visible, match_id, number, reader.team_id):
            return self._page(reader, "No such game", "", status=404, failure="no such game")
        return RedirectResponse(f"/replays#file={match_id}-{number}.xml.gz", status_code=303)

    def _game_visible(self, match_id: int, number: int, team_id: int | None) -> bool:
        match = self.store.match(match_id)
        return (
            match is not None
            and access.match_visible(self.store, match, team_id)
            and any(r.number == number for r in match.results)
        )

    async def viewer_page(self, request: Request) -> Response:
        """The web viewer's replay page as it is."""
        return FileResponse(VIEWER_STATIC / "replays.html", headers=_page_headers())

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
        """A game's replay as the replay page's JSON."""
        checked = await self._visible_replay(request)
        if isinstance(checked, Response):
            return checked
        return await self.replays.replay(checked)

    async def replay_download(self, request: Request) -> Response:
        """A game's replay file."""
        checked = await self._visible_replay(request)
        if isinstance(checked, Response):
            return checked
        return await self.replays.download(checked)

    async def replay_listing(self, request: Request) -> Response:
        """The replay page's list: the reader's visible games, newest first (one page)."""
        reader = await self.reader(request)

        def listing() -> list[dict[str, Any]]:
            entries = []
            for full in self.store.matches(limit=100):
                if access.match_visible(self.store, full, reader.team_id):
                    for result in full.results:
                        entries.append(
                            {
                                "name": f"{full.id}-{result.number}.xml.gz",
                                "size": 0,
                                "mtime": (full.finished or 0) / 1000,
                            }
                        )
            return entries

        entries = await self.call(listing)
        return JSONResponse(
            {
                "replays": entries,
                "total": len(entries),
                "offset": 0,
                "next": None,
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
            }
        )
        return self._send(response, request, reader.session if fresh else None)

    async def config(self, request: Request) -> Response:
        """The viewer's configuration JSON (no league link, no game port)."""
        return JSONResponse({"league": False, "softTimeoutMs": 2000, "gamePort": 0})

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
                or not self._from_this_site(request)
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
        return self._page(reader, "Sign in", body, failure=failure, status=status)

    async def login(self, request: Request) -> Response:
        """Sign in (the lockout first, then the password)."""
        checked = await self._checked_form(request, member=False)
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
        checked = await self._checked_form(request, member=False)
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
        return self._page(reader, "Join", body, failure=failure, status=status)

    async def accept_invite(self, request: Request) -> Response:
        """Sign up through an invite: a member of its team, signed in at once."""
        checked = await self._checked_form(request, member=False)
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

    # ------------------------------------------------------------------ a team's forms

    async def _team_form(
        self, request: Request, **options: Any
    ) -> tuple[Reader, Any, Team] | Response:
        """A form of a team's private part: its own member, a team not suspended."""
        team_id = int(request.path_params["team_id"])
        if not self._from_this_site(request):
            return self._refused("a cross-site request is refused")
        reader = await self.reader(request)
        # Checked before the body is read: nobody else makes the site read an upload.
        if reader.team is None or reader.team.id != team_id:
            return self._refused("not a member of this team", 404)
        if reader.team.suspended:
            return self._refused("this team is suspended")
        checked = await self._checked_form(request, **options)
        if isinstance(checked, Response):
            return checked
        return checked[0], checked[1], reader.team

    async def upload_form(self, request: Request) -> Response:
        """An upload from the team page."""
        checked = await self._team_form(request, limit=self.max_upload + UPLOAD_SLACK, files=1)
        if isinstance(checked, Response):
            return checked
        reader, form_data, team = checked
        bot = form_data.get("bot")
        label = text_field(form_data, "label", 100).strip()
        if not isinstance(bot, UploadFile):
            return await self.team_page(request, failure="choose the bot's ZIP", status=400)
        result = await self._accept_upload(team.id, bot, label or (bot.filename or ""), reader.name)
        if isinstance(result, str):
            return await self.team_page(request, failure=result, status=400)
        return RedirectResponse(f"/team/{team.id}?done=uploaded", status_code=303)

    async def _accept_upload(
        self, team_id: int, bot: UploadFile, label: str, by: str | None
    ) -> Version | str:
        """Check and store an upload; the version, or why it was refused."""
        label = "".join(c for c in label if c.isprintable())[:100] or "upload"
        try:
            received = await receive_upload(bot.file, self.data_dir, self.max_upload)
        except UploadRefused as failure:
            return str(failure)
        finally:
            await bot.close()
        try:
            version_id = await self.call(
                self.store.add_version,
                team_id,
                size=received.size,
                sha256=received.sha256,
                label=label,
            )
        except (LadderError, ValueError) as failure:
            # A quota refusal (QuotaError), a suspended team, a label the store refuses.
            discard(received)
            return f"not accepted: {failure}"
        place(received, self.data_dir, team_id, version_id)
        log.info("ladder upload", team=team_id, version=version_id, size=received.size, by=by)
        version = await self.call(self.store.version, version_id)
        assert version is not None
        return version

    async def activate_form(self, request: Request) -> Response:
        """Activate a passed version."""
        checked = await self._team_form(request)
        if isinstance(checked, Response):
            return checked
        reader, form_data, team = checked
        failure = await self._activate(team.id, text_field(form_data, "version", 20), reader)
        if failure is not None:
            return await self.team_page(request, failure=failure, status=400)
        return RedirectResponse(f"/team/{team.id}?done=activated", status_code=303)

    async def _activate(self, team_id: int, version: object, reader: Reader | None) -> str | None:
        try:
            version_id = int(str(version))
        except ValueError:
            return "version: a version id"
        try:
            await self.call(self.store.activate, team_id, version_id)
        except (LadderError, ValueError) as failure:
            return str(failure)
        actor = reader.name if reader is not None else f"token of team {team_id}"
        await self.call(self.store.audit, actor or "?", "activate", f"team {team_id} v{version_id}")
        return None

    async def token_form(self, request: Request) -> Response:
        """A new API token, shown once."""
        checked = await self._team_form(request)
        if isinstance(checked, Response):
            return checked
        reader, _, team = checked
        token = await self.call(self.store.create_api_token, team.id, by=reader.name or "?")
        shown = (
            "New API token (shown once; keep it as a CI secret): "
            f'<code class="token" id="new-token">{esc(token)}</code>'
        )
        response = await self.team_page(request)
        body = bytes(response.body).replace(
            b"<main>", f'<main><p class="notice">{shown}</p>'.encode(), 1
        )
        return Response(body, media_type="text/html", headers=_page_headers())

    async def revoke_form(self, request: Request) -> Response:
        """Revoke one of the team's API tokens."""
        checked = await self._team_form(request)
        if isinstance(checked, Response):
            return checked
        reader, _, team = checked
        token_id = int(request.path_params["token_id"])
        done = await self.call(
            self.store.revoke_api_token, team.id, token_id, by=reader.name or "?"
        )
        if not done:
            return await self.team_page(request, failure="no such token", status=404)
        return RedirectResponse(f"/team/{team.id}?done=token", status_code=303)

    async def challenge_form(self, request: Request) -> Response:
        """An unranked challenge of N games against an active bot."""
        checked = await self._team_form(request)
        if isinstance(checked, Response):
            return checked
        _, form_data, team = checked
        failure = await self._challenge(
            team.id, text_field(form_data, "opponent", 20), text_field(form_data, "games", 5)
        )
        if failure is not None:
            return await self.team_page(request, failure=failure, status=400)
        return RedirectResponse(f"/team/{team.id}?done=challenge", status_code=303)

    async def _challenge(self, team_id: int, opponent: object, games: object) -> str | None:
        try:
            opponent_version, count = int(str(opponent)), int(str(games))
        except ValueError:
            return "opponent: a version id; games: a number"
        if not 2 <= count <= MAX_CHALLENGE_GAMES or count % 2:
            return f"games: an even number from 2 to {MAX_CHALLENGE_GAMES} (paired boards)"

        def create() -> str | None:
            target = self.store.version(opponent_version)
            # Only an active bot of another team: a challenge never reveals another version.
            if target is None or not target.active or target.team_id == team_id:
                return "opponent: the active version of another team"
            self.store.create_challenge(team_id, opponent_version, count)
            return None

        try:
            return await self.call(create)
        except ChallengeLimitError as failure:
            return f"not now: {failure}"
        except (LadderError, ValueError) as failure:
            return str(failure)

    # ------------------------------------------------------------------ a team's files

    async def _own_version(self, request: Request) -> tuple[Reader, Version] | Response:
        reader = await self.reader(request)
        team_id = int(request.path_params["team_id"])
        if reader.team_id != team_id:
            return error(404, "not found")
        version = await self.call(
            access.owns_version, self.store, int(request.path_params["version_id"]), team_id
        )
        if version is None:
            return error(404, "not found")
        return reader, version

    async def card(self, request: Request) -> Response:
        """A version's check card (its team only)."""
        owned = await self._own_version(request)
        if isinstance(owned, Response):
            return owned
        path = self.data_dir / "cards" / f"{owned[1].id}.json"
        data = await trio.to_thread.run_sync(_read_bounded, path, MAX_LOG_BYTES)
        if data is None:
            return error(404, "no card yet: the check has not finished")
        return Response(data, media_type="application/json", headers=_file_headers())

    async def bot_zip(self, request: Request) -> Response:
        """A version's upload as it was sent (its team only)."""
        owned = await self._own_version(request)
        if isinstance(owned, Response):
            return owned
        path = upload_path(self.data_dir, owned[1].team_id, owned[1].id)
        if not path.is_file():
            return error(404, "not found")
        return FileResponse(
            path,
            media_type="application/zip",
            filename=f"v{owned[1].number}.zip",
            headers=_file_headers(),
        )

    async def bot_log(self, request: Request) -> Response:
        """A bot's stdout/stderr of one game (its team only)."""
        reader = await self.reader(request)
        team_id = int(request.path_params["team_id"])
        match_id, number = int(request.path_params["match_id"]), int(request.path_params["number"])
        if reader.team_id != team_id:
            return error(404, "not found")
        path = self.data_dir / "logs" / str(team_id) / f"{match_id}-{number}.log"
        data = await trio.to_thread.run_sync(_read_bounded, path, MAX_LOG_BYTES)
        if data is None:
            return error(404, "no log of this game")
        return Response(data, media_type="text/plain; charset=utf-8", headers=_file_headers())

    # ------------------------------------------------------------------ admin

    async def admin_page(self, request: Request, **notice: Any) -> Response:
        """Teams, invites, suspension, the season freeze, the audit log."""
        reader = await self.reader(request)
        if not reader.admin:
            return self._page(reader, "Admin", "", status=404, failure="sign in as an admin")
        assert reader.session is not None
        csrf = reader.session.csrf
        teams, audit = await self.call(lambda: (self.store.teams(), self.store.audit_log(100)))
        rows = [
            [
                str(t.id),
                f'<a href="/team/{t.id}">{esc(t.name)}</a>',
                "suspended" if t.suspended else "active",
                form(
                    "/admin/invite",
                    csrf,
                    f'<input type="hidden" name="team" value="{t.id}">'
                    '<button type="submit">Invite link</button>',
                )
                + " "
                + form(
                    "/admin/suspend",
                    csrf,
                    f'<input type="hidden" name="team" value="{t.id}">'
                    f'<input type="hidden" name="suspend" value="{0 if t.suspended else 1}">'
                    f'<button type="submit">{"Reinstate" if t.suspended else "Suspend"}</button>',
                ),
            ]
            for t in teams
        ]
        body = "".join(
            [
                panel(
                    "Teams",
                    table(["id", "team", "state", ""], rows, name="teams")
                    + form(
                        "/admin/team",
                        csrf,
                        '<label>new team <input name="name" maxlength="64" required></label> '
                        '<button type="submit">Create</button>',
                        name="new-team",
                    ),
                ),
                panel(
                    "Season",
                    form(
                        "/admin/freeze",
                        csrf,
                        '<label>season name <input name="name" maxlength="64" required></label> '
                        '<button type="submit">Freeze the active versions into a league</button>',
                    ),
                ),
                panel(
                    "Audit log",
                    table(
                        ["when", "who", "action", "detail"],
                        [[when(a.time), esc(a.actor), esc(a.action), esc(a.detail)] for a in audit],
                        name="audit",
                    ),
                ),
            ]
        )
        return self._page(reader, "Admin", body, **notice)

    async def _admin_form(self, request: Request) -> tuple[Reader, Any] | Response:
        if not self._from_this_site(request):
            return self._refused("a cross-site request is refused")
        reader = await self.reader(request)
        if not reader.admin:
            return self._refused("sign in as an admin", 404)
        return await self._checked_form(request)

    async def admin_team(self, request: Request) -> Response:
        """Create a team."""
        checked = await self._admin_form(request)
        if isinstance(checked, Response):
            return checked
        reader, form_data = checked
        name = text_field(form_data, "name", 64).strip()
        try:
            team_id = await self.call(self.store.create_team, name)
        except (LadderError, ValueError) as failure:
            return await self.admin_page(request, failure=str(failure), status=400)
        await self.call(self.store.audit, reader.name or "?", "create-team", f"{team_id} {name}")
        return RedirectResponse("/admin", status_code=303)

    async def admin_invite(self, request: Request) -> Response:
        """An invite link for a team, shown once."""
        checked = await self._admin_form(request)
        if isinstance(checked, Response):
            return checked
        reader, form_data = checked
        try:
            team_id = int(text_field(form_data, "team", 20))
            token = await self.call(self.store.create_invite, team_id, by=reader.name or "?")
        except (LadderError, ValueError) as failure:
            return await self.admin_page(request, failure=str(failure), status=400)
        link = f"{request.url.scheme}://{request.headers.get('host', '')}/invite/{token}"
        return await self.admin_page(
            request, message=f"Invite link for team {team_id} (shown once): {link}"
        )

    async def admin_suspend(self, request: Request) -> Response:
        """Suspend or reinstate a team."""
        checked = await self._admin_form(request)
        if isinstance(checked, Response):
            return checked
        reader, form_data = checked
        try:
            team_id = int(text_field(form_data, "team", 20))
            suspend = text_field(form_data, "suspend", 2) == "1"
            await self.call(self.store.set_suspended, team_id, suspend, by=reader.name or "?")
        except (LadderError, ValueError) as failure:
            return await self.admin_page(request, failure=str(failure), status=400)
        return RedirectResponse("/admin", status_code=303)

    async def admin_freeze(self, request: Request) -> Response:
        """Freeze the active versions into a league season (`ladder.season.freeze`)."""
        try:
            freeze = importlib.import_module("ladder.season").freeze
        except (ModuleNotFoundError, AttributeError):
            return await self.admin_page(request, failure="seasons are not available", status=503)
        checked = await self._admin_form(request)
        if isinstance(checked, Response):
            return checked
        _, form_data = checked
        name = text_field(form_data, "name", 64).strip()
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        if not slug:
            return await self.admin_page(request, failure="a season needs a name", status=400)
        path = self.data_dir / "seasons" / f"{slug}.toml"
        try:
            written = await self.call(freeze, self.store, path, name)
        except (LadderError, ValueError, OSError) as failure:
            return await self.admin_page(request, failure=str(failure), status=400)
        return await self.admin_page(
            request,
            message=f"Season {name} written to {written}: run piranhas-league run {written}",
        )

    # ------------------------------------------------------------------ the API

    async def _api_team(self, request: Request, *, state_changing: bool) -> int | Response:
        """The team of a bearer token, or of a signed-in member (with CSRF header and
        Origin when `state_changing`)."""
        header = request.headers.get("authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return error(401, "Authorization: Bearer <team token>")
            team_id = await self.call(self.store.team_for_token, token.strip())
            if team_id is None:
                return error(401, "unknown or revoked token")
            team = await self.call(self.store.team, team_id)
            if team is None:
                return error(401, "unknown or revoked token")
            if state_changing and team.suspended:
                return error(403, "this team is suspended")
            return team_id
        reader = await self.reader(request)
        if reader.team is None or reader.session is None:
            return error(401, "a team token (Authorization: Bearer …) or a member's session")
        if state_changing:
            if not csrf_ok(reader.session, request.headers.get(CSRF_HEADER)) or (
                not self._from_this_site(request)
            ):
                return error(403, "cross-site request or missing CSRF token refused")
            if reader.team.suspended:
                return error(403, "this team is suspended")
        return reader.team.id

    async def api_standings(self, request: Request) -> Response:
        """The public ladder table."""
        standings = await self.call(self.store.standings)
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
        versions = await self.call(self.store.versions, team_id)
        return JSONResponse({"versions": [_version_json(v) for v in versions]})

    async def api_upload(self, request: Request) -> Response:
        """`curl -F bot=@bot.zip -H 'Authorization: Bearer …' …/api/upload`."""
        team_id = await self._api_team(request, state_changing=True)
        if isinstance(team_id, Response):
            return team_id
        form_data = await bounded_form(
            request, self.max_upload + UPLOAD_SLACK, files=1, seconds=UPLOAD_SECONDS
        )
        bot = form_data.get("bot")
        if not isinstance(bot, UploadFile):
            return error(400, "send the bot's ZIP as the multipart field bot (-F bot=@bot.zip)")
        label = text_field(form_data, "label", 100).strip() or (bot.filename or "")
        result = await self._accept_upload(team_id, bot, label, f"token of team {team_id}")
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
        failure = await self._activate(team_id, body.get("version"), None)
        if failure is not None:
            return error(400, failure)
        return JSONResponse({"ok": True})

    async def api_challenge(self, request: Request) -> Response:
        """`{"opponent": version id, "games": n}`: an unranked challenge."""
        team_id = await self._api_team(request, state_changing=True)
        if isinstance(team_id, Response):
            return team_id
        body = await json_body(request)
        failure = await self._challenge(team_id, body.get("opponent"), body.get("games", 2))
        if failure is not None:
            return error(429 if failure.startswith("not now") else 400, failure)
        return JSONResponse({"ok": True}, status_code=201)


def create_app(
    store_factory: Callable[[], LadderStore], data_dir: Path, **options: Any
) -> LadderSite:
    """The site (its `.app` is the ASGI app); options as `LadderSite`."""
    return LadderSite(store_factory, data_dir, **options)


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


def _page_headers() -> dict[str, str]:
    from web.http import PAGE_HEADERS

    return dict(PAGE_HEADERS)


def _file_headers() -> dict[str, str]:
    # A team's file is data, never a page of this site: no sniffing, no caching elsewhere.
    return {"X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-store"}


def _read_bounded(path: Path, limit: int) -> bytes | None:
    """A regular file's first `limit` bytes (None if there is none)."""
    try:
        if not path.is_file() or path.is_symlink():
            return None
        with path.open("rb") as file:
            return file.read(limit)
    except OSError:
        return None


def _number(version: Version | None) -> str:
    return f"v{version.number}" if version is not None else "none"


def _credentials(autocomplete: str) -> str:
    return (
        '<p><label>username <input name="username" autocomplete="username" required>'
        "</label></p><p><label>password "
        f'<input name="password" type="password" autocomplete="{autocomplete}" required>'
        "</label></p>"
    )
