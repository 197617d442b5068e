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

COOKIE = "piranhas_session"
CSRF_HEADER = "x-csrf-token"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 10_000


@dataclass
class Session:
    """One browser's session."""

    token: str
    csrf: str
    expires: float
    admin: bool = False


class Sessions:
    """In-memory sessions (a restart logs everybody out, which is fine for a game server)."""

    def __init__(self, password: str | None) -> None:
        self._password = password
        self._sessions: dict[str, Session] = {}

    def get(self, token: str | None) -> Session | None:
        """The live session for a cookie value, if any."""
        session = self._sessions.get(token) if token else None
        if session is None or session.expires < time.time():
            return None
        return session

    def create(self) -> Session:
        """A new anonymous session; the oldest sessions make room beyond MAX_SESSIONS."""
        now = time.time()
        if len(self._sessions) >= MAX_SESSIONS:
            for token in [t for t, s in self._sessions.items() if s.expires < now]:
                del self._sessions[token]
            while len(self._sessions) >= MAX_SESSIONS:
                del self._sessions[next(iter(self._sessions))]
        session = Session(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), now + SESSION_SECONDS
        )
        self._sessions[session.token] = session
        return session

    def login(self, session: Session, password: str) -> Session | None:
        """A fresh admin session (new token: no session fixation) if `password` is right."""
        expected = self._password
        if expected is None or not hmac.compare_digest(
            password.encode("utf-8"), expected.encode("utf-8")
        ):
            return None
        self._sessions.pop(session.token, None)
        admin = self.create()
        admin.admin = True
        return admin

    def logout(self, session: Session) -> None:
        """Forget the session."""
        self._sessions.pop(session.token, None)


def csrf_ok(session: Session, given: str | None) -> bool:
    """Whether a request carries the session's CSRF token."""
    return given is not None and hmac.compare_digest(given.encode(), session.csrf.encode())


def same_origin(origin: str | None, host: str | None, scheme: str) -> bool:
    """No Origin header (a non-browser client) is fine; otherwise it must be this site."""
    if origin is None:
        return True
    return host is not None and origin == f"{scheme}://{host}"
