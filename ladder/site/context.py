"""What every part of the ladder's site works in (ladder.site.app's pages and the route
classes of ladder.site.team, .admin and .api): the store on its thread, the sessions, who is
asking (`Reader`), the checks of a state-changing form and the page frame. Apart from
ladder.site.app so that the route classes build on it while the app builds on them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import trio
from starlette.requests import Request
from starlette.responses import Response

from ladder.site.forms import UPLOAD_SECONDS, bounded_form, text_field
from ladder.site.pages import page
from ladder.site.sessions import LadderSession, Sessions, lockout
from ladder.site.uploads import DEFAULT_MAX_UPLOAD
from ladder.store import LadderStore, Member, Team
from league.asyncstore import StoreThread
from server.logins import Logins
from web.auth import COOKIE, Session, csrf_ok, same_origin, set_session_cookie

__all__ = ["SIGN_IN_FAILURE_DELAY", "Reader", "SiteContext"]

SIGN_IN_FAILURE_DELAY = 1.0

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


class SiteContext:
    """The shared state and helpers of the site's parts (see the module docstring)."""

    def __init__(
        self,
        store_factory: Callable[[], LadderStore],
        data_dir: Path,
        *,
        max_upload: int = DEFAULT_MAX_UPLOAD,
        docker: bool = True,
        logins: Logins | None = None,
        failure_delay: float = SIGN_IN_FAILURE_DELAY,
    ) -> None:
        self.data_dir = data_dir
        self.max_upload = max_upload
        self.docker = docker
        # The store's own thread (an SQLite connection belongs to its thread).
        self.db = StoreThread(store_factory, name="ladder-site-store")
        self.store = self.db.store
        self.sessions = Sessions()
        self.logins = logins if logins is not None else lockout()
        self.failure_delay = failure_delay
        self._nursery: trio.Nursery | None = None

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

    def from_this_site(self, request: Request) -> bool:
        return same_origin(
            request.headers.get("origin"), request.headers.get("host"), request.url.scheme
        )

    async def checked_form(
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
        if not self.from_this_site(request):
            return self.refused("a cross-site request is refused")
        reader = await self.reader(request)
        if reader.session is None:
            return self.refused("no session: open the page again")
        if member and reader.member is None:
            return self.refused("sign in first")
        if limit is None:
            form_data = await bounded_form(request)
        else:
            form_data = await bounded_form(request, limit, files=files, seconds=UPLOAD_SECONDS)
        if not csrf_ok(reader.session, text_field(form_data, "csrf")):
            return self.refused("missing or wrong CSRF token: open the page again")
        return reader, form_data

    @staticmethod
    def refused(message: str, status: int = 403) -> Response:
        return page("Refused", "", status=status, failure=message)

    def render(self, reader: Reader, title: str, body: str, **options: Any) -> Response:
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
