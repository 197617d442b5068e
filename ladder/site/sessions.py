"""Who is asking: browser sessions (anonymous ones for their CSRF token, signed-in ones for a
member), passwords (argon2id through argon2-cffi) and the sign-in lockout.

Rule: a session never holds anything a member could lose — only the member's id. Every request
reads the member again from the store, so a suspended team's members and a removed member are
out at once. Sign-in failures count per remote address with the game server's own rule
(`server.logins.Logins` with its `loginFailures`/`loginFailureWindow`/`loginLockout` defaults):
an address locked out is refused without a look at the password. A wrong username costs the
same argon2 verification as a wrong password, so the answer's timing does not tell which.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from server.config import Settings
from server.logins import Logins
from web.auth import SESSION_SECONDS, Session, admit

MAX_ANONYMOUS = 10_000  # a GET each makes one: the oldest make room
MAX_SIGNED_IN = 2_000
MIN_PASSWORD = 10
MAX_PASSWORD = 200  # argon2 hashes any length; a bound keeps a form small
USERNAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_.-")

# argon2-cffi's defaults (RFC 9106's low-memory profile). The tests swap in
# argon2.profiles.CHEAPEST: a default hash costs ~0.1-0.4 s of a core.
HASHER = PasswordHasher()
_dummy: dict[PasswordHasher, str] = {}


def hash_password(password: str) -> str:
    """The argon2id hash of `password` (what the store keeps)."""
    return HASHER.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """Whether `password` matches `password_hash` (None: an unknown user, checked anyway
    against a dummy hash: the same work as a real member's check)."""
    if password_hash is None:
        password_hash = _dummy.get(HASHER) or _dummy.setdefault(
            HASHER, HASHER.hash(secrets.token_urlsafe(16))
        )
        known = False
    else:
        known = True
    try:
        return HASHER.verify(password_hash, password) and known
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def username_problem(username: str) -> str | None:
    """Why `username` cannot be one (None: it can)."""
    if not 2 <= len(username) <= 32:
        return "a username has 2 to 32 characters"
    if not set(username) <= USERNAME_CHARS:
        return "a username has only a-z, 0-9, '_', '.' and '-'"
    return None


def password_problem(password: str) -> str | None:
    """Why `password` is not allowed (None: it is)."""
    if len(password) < MIN_PASSWORD:
        return f"a password has at least {MIN_PASSWORD} characters"
    if len(password) > MAX_PASSWORD:
        return f"a password has at most {MAX_PASSWORD} characters"
    return None


@dataclass
class LadderSession(Session):
    """A browser's session; `member_id` once signed in."""

    member_id: int | None = None


class Sessions:
    """In-memory sessions (a restart signs everybody out). Anonymous and signed-in sessions
    live in separate tables, so a flood of anonymous GETs never displaces a member."""

    def __init__(self) -> None:
        self._anonymous: dict[str, LadderSession] = {}
        self._signed_in: dict[str, LadderSession] = {}

    def get(self, token: str | None) -> LadderSession | None:
        """The live session of a cookie value, if any."""
        if not token:
            return None
        session = self._signed_in.get(token) or self._anonymous.get(token)
        if session is None or session.expires < time.time():
            return None
        return session

    def create(self) -> LadderSession:
        """A new anonymous session."""
        return self._add(self._anonymous, MAX_ANONYMOUS, None)

    def sign_in(self, session: LadderSession | None, member_id: int) -> LadderSession:
        """A fresh session for `member_id` (a new token: no session fixation)."""
        if session is not None:
            self.sign_out(session)
        return self._add(self._signed_in, MAX_SIGNED_IN, member_id)

    def sign_out(self, session: LadderSession) -> None:
        """Forget the session."""
        self._anonymous.pop(session.token, None)
        self._signed_in.pop(session.token, None)

    def sign_out_member(self, member_id: int) -> None:
        """Forget every session of `member_id`."""
        for token in [t for t, s in self._signed_in.items() if s.member_id == member_id]:
            del self._signed_in[token]

    @staticmethod
    def _add(table: dict[str, LadderSession], cap: int, member_id: int | None) -> LadderSession:
        session = LadderSession(
            secrets.token_urlsafe(32),
            secrets.token_urlsafe(32),
            time.time() + SESSION_SECONDS,
            member_id=member_id,
        )
        return admit(table, cap, session)


def lockout() -> Logins:
    """The sign-in lockout: the game server's rule and defaults (docs/ladder.md)."""
    return Logins.from_settings(Settings(), time.monotonic)
