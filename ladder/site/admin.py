"""The admin page: teams (create, invite link, suspend), the season freeze, the audit log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from ladder.season import freeze, season_path
from ladder.site.forms import text_field
from ladder.site.pages import esc, form, panel, table, when
from ladder.store import LadderError

if TYPE_CHECKING:
    from ladder.site.context import Reader, SiteContext


class AdminRoutes:
    """`/admin...` of the site (`SiteContext`): admins only; anyone else gets 404."""

    def __init__(self, site: SiteContext) -> None:
        self.site = site

    def routes(self) -> list[Route]:
        """The admin page's routes."""
        return [
            Route("/admin", self.admin_page),
            Route("/admin/team", self.admin_team, methods=["POST"]),
            Route("/admin/invite", self.admin_invite, methods=["POST"]),
            Route("/admin/suspend", self.admin_suspend, methods=["POST"]),
            Route("/admin/freeze", self.admin_freeze, methods=["POST"]),
        ]

    # ------------------------------------------------------------------ admin

    async def admin_page(self, request: Request, **notice: Any) -> Response:
        """Teams, invites, suspension, the season freeze, the audit log."""
        reader = await self.site.reader(request)
        if not reader.admin:
            return self.site.render(reader, "Admin", "", status=404, failure="sign in as an admin")
        assert reader.session is not None
        csrf = reader.session.csrf
        teams, audit = await self.site.call(
            lambda: (self.site.store.teams(), self.site.store.audit_log(100))
        )
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
        return self.site.render(reader, "Admin", body, **notice)

    async def _admin_form(self, request: Request) -> tuple[Reader, Any] | Response:
        if not self.site.from_this_site(request):
            return self.site.refused("a cross-site request is refused")
        reader = await self.site.reader(request)
        if not reader.admin:
            return self.site.refused("sign in as an admin", 404)
        return await self.site.checked_form(request)

    async def admin_team(self, request: Request) -> Response:
        """Create a team."""
        checked = await self._admin_form(request)
        if isinstance(checked, Response):
            return checked
        reader, form_data = checked
        name = text_field(form_data, "name", 64).strip()
        try:
            team_id = await self.site.call(self.site.store.create_team, name)
        except (LadderError, ValueError) as failure:
            return await self.admin_page(request, failure=str(failure), status=400)
        await self.site.call(
            self.site.store.audit, reader.name or "?", "create-team", f"{team_id} {name}"
        )
        return RedirectResponse("/admin", status_code=303)

    async def admin_invite(self, request: Request) -> Response:
        """An invite link for a team, shown once."""
        checked = await self._admin_form(request)
        if isinstance(checked, Response):
            return checked
        reader, form_data = checked
        try:
            team_id = int(text_field(form_data, "team", 20))
            token = await self.site.call(
                self.site.store.create_invite, team_id, by=reader.name or "?"
            )
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
            await self.site.call(
                self.site.store.set_suspended, team_id, suspend, by=reader.name or "?"
            )
        except (LadderError, ValueError) as failure:
            return await self.admin_page(request, failure=str(failure), status=400)
        return RedirectResponse("/admin", status_code=303)

    async def admin_freeze(self, request: Request) -> Response:
        """Freeze the active versions into a league season (`ladder.season.freeze`: the
        league file DIR/seasons/<name>.toml and its folder, audit-logged)."""
        checked = await self._admin_form(request)
        if isinstance(checked, Response):
            return checked
        reader, form_data = checked
        name = text_field(form_data, "name", 64).strip()
        try:
            path = season_path(self.site.data_dir, name)
            # On the store's thread (it reads the store); unpacking the uploads is the
            # bulk of it, seconds at most for a class's worth of teams.
            written = await self.site.call(
                freeze,
                self.site.store,
                path,
                name,
                by=reader.name or "admin",
                docker=self.site.docker,
            )
        except (LadderError, ValueError, OSError) as failure:
            return await self.admin_page(request, failure=str(failure), status=400)
        return await self.admin_page(
            request,
            message=f"Season {name} written to {written}: piranhas-league run {written} plays it",
        )
