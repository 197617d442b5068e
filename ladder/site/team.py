"""A team's page: the public part (name, active version, rating graph, its public games) and
its members' part (upload, versions with state and card, activate, logs, API tokens,
challenges), with the forms and files behind it. What a reader may see: `ladder.site.access`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
import trio
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ladder.site import access
from ladder.site.forms import UPLOAD_SLACK, text_field
from ladder.site.pages import NO_DOCKER, esc, form, panel, rating_graph, table, when
from ladder.site.times import Profile, figures_text, histogram, limit_bar, times_table
from ladder.site.times import profile as times_profile
from ladder.site.uploads import UploadRefused, discard, place, receive_upload
from ladder.store import ChallengeLimitError, LadderError, Team, Version
from ladder.work import card_path, game_log_path, upload_path
from web.http import error

if TYPE_CHECKING:
    from ladder.site.context import Reader, SiteContext

log = structlog.get_logger("ladder.site")

MAX_CHALLENGE_GAMES = 10
TEAM_PAGE_GAMES = 50  # games on one page of a team's games (older ones: the next page)
MAX_FILE_BYTES = 4 * 1024 * 1024  # launching.botlog bounds what a worker writes; this bounds a read
MESSAGES = {
    "uploaded": "Upload received: it is queued for the check.",
    "activated": "Version activated: it plays on the ladder from now on.",
    "token": "Token revoked.",
    "challenge": "Challenge queued: its games appear below once played.",
}


@dataclass(frozen=True)
class TeamView:
    """What a reader may see of a team (read on the store's thread)."""

    team: Team
    active: Version | None
    # released versions: (version, rating history, time profile of the games the reader sees)
    public: list[tuple[Version, list[tuple[int, float, float]], Profile]]
    own_profiles: list[tuple[Version, Profile]]  # every version's (its own members only)
    games: list[dict[str, Any]]
    next_games: int | None  # the cursor of the next page of games


class TeamRoutes:
    """`/team/<id>...` of the site (a `ladder.site.context.SiteContext`)."""

    def __init__(self, site: SiteContext) -> None:
        self.site = site

    def routes(self) -> list[Route]:
        """The team pages' routes."""
        return [
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
            Route("/team/{team_id:int}/versions/{version_id:int}/times", self.times),
            Route("/team/{team_id:int}/logs/{match_id:int}/{number:int}", self.bot_log),
        ]

    async def team_page(
        self, request: Request, *, new_token: str | None = None, **notice: Any
    ) -> Response:
        """A team's page: the public part, and for its members the private part."""
        reader = await self.site.reader(request)
        team_id = int(request.path_params["team_id"])
        mine = reader.team_id == team_id
        try:
            before = int(request.query_params.get("before", "0")) or None
        except ValueError:
            before = None
        view = await self.site.call(self._team_view, team_id, reader.team_id, before)
        if view is None:
            return self.site.render(reader, "No such team", "", status=404, failure="no such team")
        team, active = view.team, view.active
        parts = [
            f'<h2 id="team-name">{esc(team.name)}</h2>',
            '<p class="error">This team is suspended: its bot does not play.</p>'
            if team.suspended
            else "",
            f'<p id="active-version">Active version: {_number(active)}</p>',
            panel("Rating and move times", self._released_part(view), name="released"),
            panel(
                "Games",
                self._games_table(view.games, team_id if mine else None)
                + _older_link(team_id, view.next_games),
                name="games",
            ),
        ]
        if mine:
            if new_token is not None:
                parts.insert(
                    0,
                    '<p class="notice">New API token (shown once; keep it as a CI secret): '
                    f'<code class="token" id="new-token">{esc(new_token)}</code></p>',
                )
            parts.append(await self._private_part(reader, team, view.own_profiles))
        key = request.query_params.get("done", "")
        notice.setdefault("message", MESSAGES.get(key, ""))
        return self.site.render(reader, team.name, "".join(parts), **notice)

    def _team_view(
        self, team_id: int, reader_team: int | None, before: int | None
    ) -> TeamView | None:
        store = self.site.store
        team = store.team(team_id)
        if team is None:
            return None
        versions = store.versions(team_id)
        active = next((v for v in versions if v.active), None)
        # The public part: every released version (the active one first), its rating
        # history and the move times of its games the reader may see.
        released = sorted(
            (v for v in versions if access.released(store, v)),
            key=lambda v: (not v.active, -v.number),
        )
        public = []
        for version in released:
            times = access.visible_move_times(store, version, reader_team) or []
            public.append((version, store.rating_history(version.id), times_profile(times)))
        own: list[tuple[Version, Profile]] = []
        if reader_team == team_id:
            for version in sorted(versions, key=lambda v: -v.number):
                times = access.visible_move_times(store, version, reader_team) or []
                own.append((version, times_profile(times)))
        matches, following = access.visible_matches(
            store, reader_team, of_team=team_id, before=before, games=TEAM_PAGE_GAMES
        )
        games: list[dict[str, Any]] = []
        for full in matches:
            names = {}
            for version_id in (full.version_a, full.version_b):
                side = store.version(version_id)
                owner = store.team(side.team_id) if side is not None else None
                names[version_id] = f"{owner.name} v{side.number}" if owner and side else "?"
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
        return TeamView(team, active, public, own, games, following)

    @staticmethod
    def _released_part(view: TeamView) -> str:
        if not view.public:
            return '<p class="empty">No version on the ladder yet.</p>'
        parts = []
        for version, history, times in view.public:
            name = "rating-graph" if version.active else f"rating-graph-v{version.number}"
            title = f"v{version.number}" + (" (active)" if version.active else "")
            parts.append(
                f'<div class="version-profile" data-version="{version.number}">'
                f"<h3>{esc(title)}</h3>"
                f"{rating_graph(history, name=name)}"
                f"<h4>Move times ({times.moves} moves in {times.games} games)</h4>"
                f"{histogram(times, name=f'time-histogram-v{version.number}')}"
                + (
                    f'<p class="small time-figures">{figures_text(times)} {limit_bar(times)}</p>'
                    if times.moves
                    else ""
                )
                + "</div>"
            )
        return "".join(parts)

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

    async def _private_part(
        self, reader: Reader, team: Team, profiles: list[tuple[Version, Profile]]
    ) -> str:
        assert reader.session is not None
        csrf = reader.session.csrf
        versions, tokens, members, standings = await self.site.call(
            lambda: (
                self.site.store.versions(team.id),
                self.site.store.api_tokens(team.id),
                self.site.store.members(team.id),
                self.site.store.standings(),
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
        mode = "" if self.site.docker else f'<p class="small">{NO_DOCKER}</p>'
        inner = "".join(
            [
                panel(
                    "Upload a version",
                    upload + f'<p class="small">A ZIP of at most {self.site.max_upload >> 20} MiB; '
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
                panel("Move times of every version", times_table(base, profiles)),
                panel("Challenge", challenge),
                panel("Members", ", ".join(esc(m.username) for m in members)),
            ]
        )
        return f'<div class="private" id="private">{inner}</div>'

    # ------------------------------------------------------------------ a team's forms

    async def _team_form(
        self, request: Request, **options: Any
    ) -> tuple[Reader, Any, Team] | Response:
        """A form of a team's private part: its own member, a team not suspended."""
        team_id = int(request.path_params["team_id"])
        if not self.site.from_this_site(request):
            return self.site.refused("a cross-site request is refused")
        reader = await self.site.reader(request)
        # Checked before the body is read: nobody else makes the site read an upload.
        if reader.team is None or reader.team.id != team_id:
            return self.site.refused("not a member of this team", 404)
        if reader.team.suspended:
            return self.site.refused("this team is suspended")
        checked = await self.site.checked_form(request, **options)
        if isinstance(checked, Response):
            return checked
        return checked[0], checked[1], reader.team

    async def upload_form(self, request: Request) -> Response:
        """An upload from the team page."""
        checked = await self._team_form(request, limit=self.site.max_upload + UPLOAD_SLACK, files=1)
        if isinstance(checked, Response):
            return checked
        reader, form_data, team = checked
        bot = form_data.get("bot")
        label = text_field(form_data, "label", 100).strip()
        if not isinstance(bot, UploadFile):
            return await self.team_page(request, failure="choose the bot's ZIP", status=400)
        result = await self.accept_upload(team.id, bot, label or (bot.filename or ""), reader.name)
        if isinstance(result, str):
            return await self.team_page(request, failure=result, status=400)
        return RedirectResponse(f"/team/{team.id}?done=uploaded", status_code=303)

    async def accept_upload(
        self, team_id: int, bot: UploadFile, label: str, by: str | None
    ) -> Version | str:
        """Check and store an upload; the version, or why it was refused."""
        label = "".join(c for c in label if c.isprintable())[:100] or "upload"
        try:
            received = await receive_upload(bot.file, self.site.data_dir, self.site.max_upload)
        except UploadRefused as failure:
            return str(failure)
        finally:
            await bot.close()
        try:
            version_id = await self.site.call(
                self.site.store.add_version,
                team_id,
                size=received.size,
                sha256=received.sha256,
                label=label,
            )
        except (LadderError, ValueError) as failure:
            # A quota refusal (QuotaError), a suspended team, a label the store refuses.
            discard(received)
            return f"not accepted: {failure}"
        place(received, self.site.data_dir, team_id, version_id)
        log.info("ladder upload", team=team_id, version=version_id, size=received.size, by=by)
        version = await self.site.call(self.site.store.version, version_id)
        assert version is not None
        return version

    async def activate_form(self, request: Request) -> Response:
        """Activate a passed version."""
        checked = await self._team_form(request)
        if isinstance(checked, Response):
            return checked
        reader, form_data, team = checked
        failure = await self.activate(team.id, text_field(form_data, "version", 20), reader)
        if failure is not None:
            return await self.team_page(request, failure=failure, status=400)
        return RedirectResponse(f"/team/{team.id}?done=activated", status_code=303)

    async def activate(self, team_id: int, version: object, reader: Reader | None) -> str | None:
        try:
            version_id = int(str(version))
        except ValueError:
            return "version: a version id"
        try:
            await self.site.call(self.site.store.activate, team_id, version_id)
        except (LadderError, ValueError) as failure:
            return str(failure)
        actor = reader.name if reader is not None else f"token of team {team_id}"
        await self.site.call(
            self.site.store.audit, actor or "?", "activate", f"team {team_id} v{version_id}"
        )
        return None

    async def token_form(self, request: Request) -> Response:
        """A new API token, shown once."""
        checked = await self._team_form(request)
        if isinstance(checked, Response):
            return checked
        reader, _, team = checked
        token = await self.site.call(
            self.site.store.create_api_token, team.id, by=reader.name or "?"
        )
        return await self.team_page(request, new_token=token)

    async def revoke_form(self, request: Request) -> Response:
        """Revoke one of the team's API tokens."""
        checked = await self._team_form(request)
        if isinstance(checked, Response):
            return checked
        reader, _, team = checked
        token_id = int(request.path_params["token_id"])
        done = await self.site.call(
            self.site.store.revoke_api_token, team.id, token_id, by=reader.name or "?"
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
        failure = await self.challenge(
            team.id, text_field(form_data, "opponent", 20), text_field(form_data, "games", 5)
        )
        if failure is not None:
            return await self.team_page(request, failure=failure, status=400)
        return RedirectResponse(f"/team/{team.id}?done=challenge", status_code=303)

    async def challenge(self, team_id: int, opponent: object, games: object) -> str | None:
        try:
            opponent_version, count = int(str(opponent)), int(str(games))
        except ValueError:
            return "opponent: a version id; games: a number"
        if not 2 <= count <= MAX_CHALLENGE_GAMES or count % 2:
            return f"games: an even number from 2 to {MAX_CHALLENGE_GAMES} (paired boards)"

        def create() -> str | None:
            target = self.site.store.version(opponent_version)
            # Only an active bot of another team: a challenge never reveals another version.
            if target is None or not target.active or target.team_id == team_id:
                return "opponent: the active version of another team"
            self.site.store.create_challenge(team_id, opponent_version, count)
            return None

        try:
            return await self.site.call(create)
        except ChallengeLimitError as failure:
            return f"not now: {failure}"
        except (LadderError, ValueError) as failure:
            return str(failure)

    # ------------------------------------------------------------------ a team's files

    async def _own_version(self, request: Request) -> tuple[Reader, Version] | Response:
        reader = await self.site.reader(request)
        team_id = int(request.path_params["team_id"])
        if reader.team_id != team_id:
            return error(404, "not found")
        version = await self.site.call(
            access.owns_version, self.site.store, int(request.path_params["version_id"]), team_id
        )
        if version is None:
            return error(404, "not found")
        return reader, version

    async def card(self, request: Request) -> Response:
        """A version's check card (its team only)."""
        owned = await self._own_version(request)
        if isinstance(owned, Response):
            return owned
        path = card_path(self.site.data_dir, owned[1].id)
        data = await trio.to_thread.run_sync(_read_bounded, path, MAX_FILE_BYTES)
        if data is None:
            return error(404, "no card yet: the check has not finished")
        return Response(data, media_type="application/json", headers=_file_headers())

    async def bot_zip(self, request: Request) -> Response:
        """A version's upload as it was sent (its team only)."""
        owned = await self._own_version(request)
        if isinstance(owned, Response):
            return owned
        path = upload_path(self.site.data_dir, owned[1].team_id, owned[1].id)
        if not path.is_file():
            return error(404, "not found")
        return FileResponse(
            path,
            media_type="application/zip",
            filename=f"v{owned[1].number}.zip",
            headers=_file_headers(),
        )

    async def times(self, request: Request) -> Response:
        """A version's time profile as JSON: a released version's for everyone (its public
        games), any of the team's own versions for its members; 404 otherwise."""
        reader = await self.site.reader(request)
        team_id = int(request.path_params["team_id"])
        version_id = int(request.path_params["version_id"])

        def look() -> tuple[Version, Profile] | None:
            store = self.site.store
            version = store.version(version_id)
            if version is None or version.team_id != team_id:
                return None
            times = access.visible_move_times(store, version, reader.team_id)
            return None if times is None else (version, times_profile(times))

        found = await self.site.call(look)
        if found is None:
            return error(404, "not found")
        version, times = found
        body = {"team": team_id, "version": version.number, **times.to_json()}
        return JSONResponse(body, headers={"Cache-Control": "private, no-store"})

    async def bot_log(self, request: Request) -> Response:
        """A bot's stdout/stderr of one game (its team only)."""
        reader = await self.site.reader(request)
        team_id = int(request.path_params["team_id"])
        match_id, number = int(request.path_params["match_id"]), int(request.path_params["number"])
        if reader.team_id != team_id:
            return error(404, "not found")
        path = game_log_path(self.site.data_dir, team_id, match_id, number)
        data = await trio.to_thread.run_sync(_read_bounded, path, MAX_FILE_BYTES)
        if data is None:
            return error(404, "no log of this game")
        return Response(data, media_type="text/plain; charset=utf-8", headers=_file_headers())


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


def _older_link(team_id: int, cursor: int | None) -> str:
    if cursor is None:
        return ""
    return (
        f'<p><a id="older-games" href="/team/{team_id}?before={cursor}#games">older games</a></p>'
    )


def _number(version: Version | None) -> str:
    return f"v{version.number}" if version is not None else "none"
