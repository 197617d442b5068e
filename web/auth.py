"""Browser sessions: an anonymous session per browser (for its CSRF token), admin after login.

Cookies are HttpOnly and SameSite=Strict; every state-changing request must carry the
session's CSRF token in a header and, when the browser sends one, an Origin of this site.
The password is only ever compared (in constant time), never stored in a session or logged.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket

from server.limits import address_key

COOKIE = "piranhas_session"
CSRF_HEADER = "x-csrf-token"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 10_000  # anonymous ones (a CSRF token each); the oldest make room
MAX_ADMIN_SESSIONS = 100  # logged-in ones, in a table of their own


@dataclass
class Session:
    """One browser's session."""

    token: str
    csrf: str
    expires: float
    admin: bool = False


class Sessions:
    """In-memory sessions (a restart logs everybody out, which is fine for a game server).

    Anonymous sessions and logged-in ones live in separate tables: anyone can make the first
    kind by the thousand (a GET each), so its overflow evicts only its own oldest; a
    visitor never displaces an admin. Admin sessions need the password, and the oldest of
    them makes room for a new login beyond MAX_ADMIN_SESSIONS."""

    def __init__(self, password: str | None) -> None:
        self._password = password
        self._anonymous: dict[str, Session] = {}
        self._admins: dict[str, Session] = {}

    def get(self, token: str | None) -> Session | None:
        """The live session for a cookie value, if any."""
        if not token:
            return None
        session = self._admins.get(token) or self._anonymous.get(token)
        if session is None or session.expires < time.time():
            return None
        return session

    def create(self) -> Session:
        """A new anonymous session."""
        return self._add(self._anonymous, MAX_SESSIONS, admin=False)

    def login(self, session: Session, password: str) -> Session | None:
        """A fresh admin session (new token: no session fixation) if `password` is right."""
        if not self.password_ok(password):
            return None
        self.logout(session)
        return self._add(self._admins, MAX_ADMIN_SESSIONS, admin=True)

    def password_ok(self, password: str) -> bool:
        """Whether `password` is the admin password (constant time)."""
        expected = self._password
        return expected is not None and hmac.compare_digest(
            password.encode("utf-8"), expected.encode("utf-8")
        )

    def logout(self, session: Session) -> None:
        """Forget the session."""
        self._anonymous.pop(session.token, None)
        self._admins.pop(session.token, None)

    @staticmethod
    def _add(table: dict[str, Session], cap: int, *, admin: bool) -> Session:
        session = Session(
            secrets.token_urlsafe(32),
            secrets.token_urlsafe(32),
            time.time() + SESSION_SECONDS,
            admin,
        )
        return admit(table, cap, session)


SessionT = TypeVar("SessionT", bound=Session)


def admit(table: dict[str, SessionT], cap: int, session: SessionT) -> SessionT:
    """Put a new `session` into a table of at most `cap`: when it is full the expired ones go
    first, then the oldest (a dict keeps the order of insertion)."""
    if len(table) >= cap:
        now = time.time()
        for token in [t for t, s in table.items() if s.expires < now]:
            del table[token]
        while len(table) >= cap:
            del table[next(iter(table))]
    table[session.token] = session
    return session


def csrf_ok(session: Session, given: str | None) -> bool:
    """Whether a request carries the session's CSRF token."""
    return given is not None and hmac.compare_digest(given.encode(), session.csrf.encode())


def same_origin(origin: str | None, host: str | None, scheme: str) -> bool:
    """No Origin header (a non-browser client) is fine; otherwise it must be this site."""
    if origin is None:
        return True
    return host is not None and origin == f"{scheme}://{host}"


def is_secure(request: Request) -> bool:
    """Whether the browser sees https (behind a trusted proxy: its X-Forwarded-Proto)."""
    return request.url.scheme == "https"


def set_session_cookie(response: Response, session: Session, request: Request) -> None:
    """The session cookie: HttpOnly, SameSite=Strict, Secure on https."""
    response.set_cookie(
        COOKIE,
        session.token,
        max_age=SESSION_SECONDS,
        path="/",
        httponly=True,
        samesite="strict",
        secure=is_secure(request),
    )


def client_address(connection: Request | WebSocket) -> str:
    """The peer's address as the per-address limits count it."""
    client = connection.client
    return address_key(client.host) if client is not None else ""
