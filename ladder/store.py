"""The ladder's store: teams, people, uploaded versions, matches, ratings and the audit log, in
the league's one store layer (`league.store.open_backend`: SQLite in WAL mode embedded,
PostgreSQL when distributed; the SQL is `ladder.schema`).

Work is handed out as the league store hands out games (docs/league.md "The store"):

- `claim_check(worker)` / `claim_match(worker)` — the oldest unstarted job (or one whose running
  attempt missed its lease: the worker died or hangs) under a new **attempt** number, the
  fencing token for every later write of that job.
- `heartbeat(claim)` extends the lease; `StaleAttemptError` tells the worker the job was handed
  to a newer attempt (it should stop).
- `record_match(claim, results)` — one transaction: the games written, the match finished, the
  attempt closed and, for a ranked match, the ratings refitted with a history row for both
  versions. Exactly once: the same attempt sending the same results again is a `DUPLICATE`
  that changes nothing; any other attempt is rejected (`StaleAttemptError`); the same attempt
  with different results raises `RecordConflictError`. A finished match is never played again.
- `abandon_match(claim)` gives a match back (a bot could not be started, the worker stops).

Every write that could race on PostgreSQL (READ COMMITTED) is a compare-and-set on the job's
attempt number, or takes the team's row lock first (`_lock_team`) when it counts a team's rows
(quotas, version numbers, the challenge rate).

Tokens (invites, API tokens) are random, handed out once, and stored only as their SHA-256.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ladder import rating, schema
from league.backends import Backend, StoreError, Transaction
from league.store import (
    RecordConflictError,
    RecordStatus,
    StaleAttemptError,
    is_postgres,
    open_backend,
)

__all__ = [
    "ApiToken",
    "AuditEntry",
    "ChallengeLimitError",
    "CheckClaim",
    "GameResultRow",
    "Invite",
    "InviteError",
    "LadderError",
    "LadderMatch",
    "LadderStore",
    "MatchClaim",
    "Member",
    "MoveTimes",
    "QuotaError",
    "RecordConflictError",
    "RecordStatus",
    "StaleAttemptError",
    "Standing",
    "Team",
    "Version",
]

DEFAULT_LEASE_SECONDS = 300.0
DEFAULT_MAX_VERSIONS = 50  # per team, every version ever uploaded
DEFAULT_MAX_TEAM_BYTES = 1 << 30  # per team, the sum of its uploads' sizes
DEFAULT_CHALLENGES = 10  # per team and challenge window
DEFAULT_CHALLENGE_WINDOW = 3600.0  # seconds
MAX_GAMES = 20  # per match (challenges ask for N)
MAX_LABEL = 200
MAX_REASON = 2000
MAX_MOVES = 200  # per side and game: a game has at most 60 turns (30 rounds)
MAX_MOVE_MS = 3_600_000.0  # a move time past this is not a measurement

_NAME = re.compile(r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]{1,64}$")
_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-@]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class LadderError(StoreError):
    """Base of the ladder store's own errors (a refused request; the message says why)."""


class InviteError(LadderError):
    """An invite that is unknown, used, expired, or whose user name cannot be taken."""


class QuotaError(LadderError):
    """A team has too many versions or too many bytes of uploads."""


class ChallengeLimitError(LadderError):
    """A team asked for more challenges than the rate limit allows."""


# ---- values --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Team:
    """A team: `created` in ms since the epoch."""

    id: int
    name: str
    suspended: bool
    created: int


@dataclass(frozen=True)
class Member:
    """A person who signs in: a team's member, or an admin (`team_id` None)."""

    id: int
    team_id: int | None
    username: str
    password_hash: str
    is_admin: bool


@dataclass(frozen=True)
class ApiToken:
    """An API token's public facts (never the token nor its hash)."""

    id: int
    team_id: int
    created: int
    created_by: str
    revoked: bool


@dataclass(frozen=True)
class Invite:
    """An invite's public facts: `used_by` the member who signed up with it."""

    id: int
    team_id: int
    created: int
    expires: int
    used_by: int | None


@dataclass(frozen=True)
class AuditEntry:
    """One admin action."""

    id: int
    time: int
    actor: str
    action: str
    detail: str


@dataclass(frozen=True)
class Version:
    """An upload of a team. `number` counts the team's uploads from 1."""

    id: int
    team_id: int
    number: int
    label: str
    size: int
    sha256: str
    created: int
    state: str  # queued | checking | passed | failed
    card_summary: str | None
    active: bool


@dataclass(frozen=True)
class CheckClaim:
    """A version handed to a worker to check, under `attempt`."""

    version_id: int
    attempt: int


@dataclass(frozen=True)
class MatchClaim:
    """A match handed to a worker under `attempt` (the fencing token of its writes). Game k
    of a pair is played on the board of `board_seed` and pair number; version_a moves first
    in the odd games."""

    match_id: int
    attempt: int
    version_a: int
    version_b: int
    games: int
    ranked: bool
    board_seed: int = 0


@dataclass(frozen=True)
class GameResultRow:
    """One played game of a match: `points_a`/`points_b` are the Siegpunkte of version_a and
    version_b (2/1/0), the reasons what the official result said about each side, `replay`
    the replay's file name under DIR/replays (None if none was written), `move_ms_a` and
    `move_ms_b` each version's move times in ms in move order, as the game server measured
    them (empty when the game was not scored by the server; the store keeps them to 0.1 ms)."""

    number: int
    first_version: int
    points_a: int
    points_b: int
    reason_a: str
    reason_b: str
    replay: str | None = None
    move_ms_a: tuple[float, ...] = ()
    move_ms_b: tuple[float, ...] = ()


@dataclass(frozen=True)
class MoveTimes:
    """One version's move times (ms) in one game of a finished match against `opponent`."""

    match_id: int
    number: int
    version_id: int
    opponent: int
    finished: int
    move_ms: tuple[float, ...]


@dataclass(frozen=True)
class LadderMatch:
    """A match and, once finished, its games."""

    id: int
    version_a: int
    version_b: int
    ranked: bool
    challenge_id: int | None
    games: int
    board_seed: int
    status: str  # pending | running | finished | cancelled
    attempt: int
    created: int
    finished: int | None
    results: tuple[GameResultRow, ...] = ()


@dataclass(frozen=True)
class Standing:
    """A row of the ladder table: an active version of a team that is not suspended."""

    team_id: int
    team_name: str
    version_id: int
    rating: float
    deviation: float
    games: int
    rank: int


SCHEMA_LOCK = 0x70_6C_61_64_64_65_72  # PostgreSQL advisory lock key of the schema's creation


def _on_postgres(backend: Backend) -> bool:
    try:
        from league.postgres import PostgresBackend
    except ImportError:  # no psycopg: not the `distributed` extra, so not PostgreSQL
        return False
    return isinstance(backend, PostgresBackend)


def token_hash(token: str) -> str:
    """How a token is stored: its SHA-256 in hex."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _clean(text: str, limit: int, what: str) -> str:
    if _CONTROL.search(text):
        raise ValueError(f"{what} must not contain control characters")
    if len(text) > limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    return text


_VERSION_COLUMNS = (
    "v.version_id, v.team_id, v.number, v.label, v.size, v.sha256, v.created, v.state, "
    "v.card_summary, v.active"
)


def _version(row: Sequence[Any]) -> Version:
    return Version(
        int(row[0]),
        int(row[1]),
        int(row[2]),
        str(row[3]),
        int(row[4]),
        str(row[5]),
        int(row[6]),
        str(row[7]),
        None if row[8] is None else str(row[8]),
        bool(row[9]),
    )


_MATCH_COLUMNS = (
    "match_id, version_a, version_b, ranked, challenge_id, games, board_seed, status, attempt, "
    "created, finished"
)


def _match(row: Sequence[Any], results: tuple[GameResultRow, ...] = ()) -> LadderMatch:
    return LadderMatch(
        int(row[0]),
        int(row[1]),
        int(row[2]),
        bool(row[3]),
        None if row[4] is None else int(row[4]),
        int(row[5]),
        int(row[6]),
        str(row[7]),
        int(row[8]),
        int(row[9]),
        None if row[10] is None else int(row[10]),
        results,
    )


def _times_text(times: Sequence[float]) -> str:
    return ",".join(repr(ms) for ms in times)


def _parse_times(text: str) -> tuple[float, ...]:
    return tuple(float(part) for part in text.split(",")) if text else ()


def _rounded(row: GameResultRow) -> GameResultRow:
    """The row as it is stored (move times to 0.1 ms), so a duplicate compares equal."""
    return dataclasses.replace(
        row,
        move_ms_a=tuple(round(float(ms), 1) for ms in row.move_ms_a),
        move_ms_b=tuple(round(float(ms), 1) for ms in row.move_ms_b),
    )


def board_seed(match_id: int) -> int:
    """The start board of a match's first pair (a hash of its id: reproducible)."""
    digest = hashlib.sha256(f"piranhas-ladder:{match_id}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def _private_file(path: Path) -> None:
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise LadderError(f"the store {path} is not a regular file")
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if name.exists():
            name.chmod(0o600)


class LadderStore:
    """The ladder's state in a `Backend` (sync; trio code wraps it in `AsyncStore`). `clock`
    returns seconds since the epoch (tests pass a fake one to expire leases at once)."""

    def __init__(
        self,
        backend: Backend,
        *,
        clock: Callable[[], float] = time.time,
        max_versions: int = DEFAULT_MAX_VERSIONS,
        max_team_bytes: int = DEFAULT_MAX_TEAM_BYTES,
        challenges_per_window: int = DEFAULT_CHALLENGES,
        challenge_window: float = DEFAULT_CHALLENGE_WINDOW,
        before_commit: Callable[[str], None] | None = None,
    ) -> None:
        self.backend = backend
        self._clock = clock
        self.max_versions = max_versions
        self.max_team_bytes = max_team_bytes
        self.challenges_per_window = challenges_per_window
        self.challenge_window = challenge_window
        # Fault injection for crash tests: called inside a write right before it commits.
        self._before_commit = before_commit
        with self.backend.transaction() as tx:
            if _on_postgres(backend):
                # CREATE TABLE IF NOT EXISTS is not safe against a concurrent one on PostgreSQL
                # (a unique violation in its catalogue: the site and a worker starting together
                # on a new database); one at a time, until the transaction ends.
                tx.query("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
            for statement in schema.STATEMENTS:
                tx.execute(statement)
            tx.execute(
                "INSERT INTO ladder_meta (meta_key, meta_value) SELECT ?, ? "
                "WHERE NOT EXISTS (SELECT 1 FROM ladder_meta WHERE meta_key = ?)",
                ("schema_version", str(schema.SCHEMA_VERSION), "schema_version"),
            )
            # The ladder's identity (names its Dramatiq queue, ladder.actors.queue_name):
            # made once with the store, so every process of one ladder agrees on it.
            tx.execute(
                "INSERT INTO ladder_meta (meta_key, meta_value) SELECT ?, ? "
                "WHERE NOT EXISTS (SELECT 1 FROM ladder_meta WHERE meta_key = ?)",
                ("ladder_id", secrets.token_hex(16), "ladder_id"),
            )
            for kind in schema.ID_KINDS:
                tx.execute(
                    "INSERT INTO ladder_ids (id_kind, next_id) SELECT ?, 0 "
                    "WHERE NOT EXISTS (SELECT 1 FROM ladder_ids WHERE id_kind = ?)",
                    (kind, kind),
                )
            found = tx.query(
                "SELECT meta_value FROM ladder_meta WHERE meta_key = ?", ("schema_version",)
            )[0][0]
            if str(found) != str(schema.SCHEMA_VERSION):
                raise StoreError(
                    f"this ladder store has schema version {found}; this piranhas-ladder "
                    f"reads version {schema.SCHEMA_VERSION}"
                )

    @classmethod
    def open(cls, database: str, **kwargs: Any) -> LadderStore:
        """The store at `database` (an SQLite file's path or a `postgresql://` URL), its
        tables created if missing. An SQLite file is made this user's alone (0600, and SQLite
        gives its -wal and -shm files the same mode): it holds the password and token hashes
        and every team's unreleased versions, and a --no-docker bot runs as another user."""
        if not is_postgres(database):
            _private_file(Path(database))
        backend = open_backend(database)
        try:
            return cls(backend, **kwargs)
        except BaseException:
            backend.close()
            raise

    def close(self) -> None:
        """Close the backend."""
        self.backend.close()

    def _now(self) -> int:
        return int(self._clock() * 1000)

    def _commit_point(self, operation: str) -> None:
        if self._before_commit is not None:
            self._before_commit(operation)

    @staticmethod
    def _next_id(tx: Transaction, kind: str) -> int:
        # The UPDATE takes the row's lock on PostgreSQL: concurrent writers get distinct ids.
        tx.execute("UPDATE ladder_ids SET next_id = next_id + 1 WHERE id_kind = ?", (kind,))
        return int(tx.query("SELECT next_id FROM ladder_ids WHERE id_kind = ?", (kind,))[0][0])

    @staticmethod
    def _lock_team(tx: Transaction, team_id: int) -> Team:
        """The team, its row locked until the transaction ends (PostgreSQL; SQLite has one
        writer anyway): counting a team's rows and then inserting cannot race."""
        if not tx.execute("UPDATE teams SET suspended = suspended WHERE team_id = ?", (team_id,)):
            raise ValueError(f"there is no team {team_id}")
        row = tx.query(
            "SELECT team_id, name, suspended, created FROM teams WHERE team_id = ?", (team_id,)
        )[0]
        return Team(int(row[0]), str(row[1]), bool(row[2]), int(row[3]))

    @staticmethod
    def _write_audit(tx: Transaction, now: int, actor: str, action: str, detail: str) -> None:
        audit_id = LadderStore._next_id(tx, "audit")
        tx.execute(
            "INSERT INTO audit (audit_id, at, actor, action, detail) VALUES (?, ?, ?, ?, ?)",
            (audit_id, now, actor[:200], action[:64], detail),
        )

    # -- teams and people --

    def create_team(self, name: str) -> int:
        """A new team; ValueError for an empty, too long or taken name."""
        name = name.strip()
        if not _NAME.match(name):
            raise ValueError("a team name is 1-64 characters without control characters")
        with self.backend.transaction() as tx:
            taken = tx.query("SELECT 1 FROM teams WHERE LOWER(name) = LOWER(?)", (name,))
            if taken:
                raise ValueError(f"there is a team named {name!r} already")
            team_id = self._next_id(tx, "teams")
            tx.execute(
                "INSERT INTO teams (team_id, name, suspended, created) VALUES (?, ?, 0, ?)",
                (team_id, name, self._now()),
            )
        return team_id

    def team(self, team_id: int) -> Team | None:
        """The team with this id, or None."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT team_id, name, suspended, created FROM teams WHERE team_id = ?",
                (team_id,),
            )
        return (
            Team(int(rows[0][0]), str(rows[0][1]), bool(rows[0][2]), int(rows[0][3]))
            if rows
            else None
        )

    def teams(self) -> list[Team]:
        """Every team, oldest first."""
        with self.backend.transaction() as tx:
            rows = tx.query("SELECT team_id, name, suspended, created FROM teams ORDER BY team_id")
        return [Team(int(r[0]), str(r[1]), bool(r[2]), int(r[3])) for r in rows]

    def set_suspended(self, team_id: int, suspended: bool, *, by: str) -> None:
        """Suspend a team (its versions leave the ladder, its matches not yet started are
        cancelled, its tokens stop working) or let it back; audit-logged."""
        now = self._now()
        with self.backend.transaction() as tx:
            team = self._lock_team(tx, team_id)
            tx.execute(
                "UPDATE teams SET suspended = ? WHERE team_id = ?", (int(suspended), team_id)
            )
            cancelled = 0
            if suspended:
                cancelled = tx.execute(
                    "UPDATE ladder_matches SET status = 'cancelled', finished = ? "
                    "WHERE status = 'pending' AND (version_a IN (SELECT version_id FROM "
                    "versions WHERE team_id = ?) OR version_b IN (SELECT version_id FROM "
                    "versions WHERE team_id = ?))",
                    (now, team_id, team_id),
                )
            action = "team.suspend" if suspended else "team.unsuspend"
            detail = f"team {team_id} ({team.name})"
            if cancelled:
                detail += f"; {cancelled} pending matches cancelled"
            self._write_audit(tx, now, by, action, detail)

    def create_invite(self, team_id: int, *, by: str, ttl_seconds: float = 7 * 86400.0) -> str:
        """An invite token for `team_id` (shown once; stored as its hash); audit-logged."""
        token = secrets.token_urlsafe(32)
        now = self._now()
        with self.backend.transaction() as tx:
            team = self._lock_team(tx, team_id)
            invite_id = self._next_id(tx, "invites")
            tx.execute(
                "INSERT INTO invites (invite_id, team_id, token_hash, created_by, created, "
                "expires, used_by, used_at) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)",
                (
                    invite_id,
                    team_id,
                    token_hash(token),
                    by[:200],
                    now,
                    now + int(ttl_seconds * 1000),
                ),
            )
            self._write_audit(
                tx, now, by, "invite.create", f"invite {invite_id} for team {team_id} ({team.name})"
            )
        return token

    def accept_invite(self, token: str, username: str, password_hash: str) -> int:
        """Use an invite: a new member of its team, whose id is returned. InviteError when the
        invite is unknown, used or expired, the team suspended, or the name bad or taken."""
        if not _USERNAME.match(username):
            raise InviteError(
                "a user name is 1-64 letters, digits, '_', '.', '-' or '@', starting with a "
                "letter or digit"
            )
        if not password_hash:
            raise InviteError("no password hash")
        now = self._now()
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT invite_id, team_id, expires, used_by FROM invites WHERE token_hash = ?",
                (token_hash(token),),
            )
            if not rows:
                raise InviteError("this invite is not known")
            invite_id, team_id, expires, used_by = rows[0]
            if used_by is not None:
                raise InviteError("this invite was used already")
            if int(expires) < now:
                raise InviteError("this invite has expired")
            team = self._lock_team(tx, int(team_id))
            if team.suspended:
                raise InviteError("this team is suspended")
            if tx.query("SELECT 1 FROM members WHERE LOWER(username) = LOWER(?)", (username,)):
                raise InviteError(f"the user name {username!r} is taken")
            member_id = self._next_id(tx, "members")
            tx.execute(
                "INSERT INTO members (member_id, team_id, username, password_hash, is_admin, "
                "created) VALUES (?, ?, ?, ?, 0, ?)",
                (member_id, int(team_id), username, password_hash, now),
            )
            # Compare-and-set: of two racing sign-ups with one invite only one wins.
            if not tx.execute(
                "UPDATE invites SET used_by = ?, used_at = ? WHERE invite_id = ? "
                "AND used_by IS NULL",
                (member_id, now, int(invite_id)),
            ):
                raise InviteError("this invite was used already")
        return member_id

    def member_by_name(self, username: str) -> Member | None:
        """The member (or admin) with this user name (case-insensitive), or None."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {self._MEMBER_COLUMNS} FROM members WHERE LOWER(username) = LOWER(?)",
                (username,),
            )
        return self._member(rows[0]) if rows else None

    _MEMBER_COLUMNS = "member_id, team_id, username, password_hash, is_admin"

    @staticmethod
    def _member(row: Sequence[Any]) -> Member:
        return Member(
            int(row[0]),
            None if row[1] is None else int(row[1]),
            str(row[2]),
            str(row[3]),
            bool(row[4]),
        )

    def member(self, member_id: int) -> Member | None:
        """The member (or admin) with this id, or None."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {self._MEMBER_COLUMNS} FROM members WHERE member_id = ?", (member_id,)
            )
        return self._member(rows[0]) if rows else None

    def members(self, team_id: int) -> list[Member]:
        """The team's members, oldest first."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {self._MEMBER_COLUMNS} FROM members WHERE team_id = ? ORDER BY member_id",
                (team_id,),
            )
        return [self._member(row) for row in rows]

    def invites(self, team_id: int | None = None) -> list[Invite]:
        """Invites (of one team when given), newest first."""
        where, params = ("WHERE team_id = ?", (team_id,)) if team_id is not None else ("", ())
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT invite_id, team_id, created, expires, used_by FROM invites {where} "
                "ORDER BY invite_id DESC",
                params,
            )
        return [
            Invite(int(r[0]), int(r[1]), int(r[2]), int(r[3]), None if r[4] is None else int(r[4]))
            for r in rows
        ]

    def create_admin(self, username: str, password_hash: str) -> int:
        """An admin account (no team); ValueError for a bad or taken name."""
        if not _USERNAME.match(username):
            raise ValueError("a user name is 1-64 letters, digits, '_', '.', '-' or '@'")
        now = self._now()
        with self.backend.transaction() as tx:
            if tx.query("SELECT 1 FROM members WHERE LOWER(username) = LOWER(?)", (username,)):
                raise ValueError(f"the user name {username!r} is taken")
            member_id = self._next_id(tx, "members")
            tx.execute(
                "INSERT INTO members (member_id, team_id, username, password_hash, is_admin, "
                "created) VALUES (?, NULL, ?, ?, 1, ?)",
                (member_id, username, password_hash, now),
            )
            self._write_audit(tx, now, "cli", "admin.create", f"admin {username}")
        return member_id

    def create_api_token(self, team_id: int, *, by: str) -> str:
        """A new API token of the team (returned once, stored as its SHA-256); audit-logged."""
        token = secrets.token_urlsafe(32)
        now = self._now()
        with self.backend.transaction() as tx:
            self._lock_team(tx, team_id)
            token_id = self._next_id(tx, "tokens")
            tx.execute(
                "INSERT INTO tokens (token_id, team_id, token_hash, created_by, created, "
                "revoked) VALUES (?, ?, ?, ?, ?, 0)",
                (token_id, team_id, token_hash(token), by[:200], now),
            )
            self._write_audit(tx, now, by, "token.create", f"token {token_id} of team {team_id}")
        return token

    def api_tokens(self, team_id: int) -> list[ApiToken]:
        """The team's API tokens, newest first (their facts, never the hashes)."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT token_id, team_id, created, created_by, revoked FROM tokens "
                "WHERE team_id = ? ORDER BY token_id DESC",
                (team_id,),
            )
        return [ApiToken(int(r[0]), int(r[1]), int(r[2]), str(r[3]), bool(r[4])) for r in rows]

    def revoke_api_token(self, team_id: int, token_id: int, *, by: str) -> bool:
        """Revoke one API token of the team; False when it is not that team's or was revoked
        already. Audit-logged."""
        now = self._now()
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE tokens SET revoked = 1 WHERE token_id = ? AND team_id = ? AND revoked = 0",
                (token_id, team_id),
            )
            if changed:
                self._write_audit(
                    tx, now, by, "token.revoke", f"token {token_id} of team {team_id}"
                )
        return changed == 1

    def revoke_api_tokens(self, team_id: int, *, by: str) -> int:
        """Revoke every API token of the team; how many were live. Audit-logged."""
        now = self._now()
        with self.backend.transaction() as tx:
            self._lock_team(tx, team_id)
            count = tx.execute(
                "UPDATE tokens SET revoked = 1 WHERE team_id = ? AND revoked = 0", (team_id,)
            )
            self._write_audit(tx, now, by, "token.revoke", f"{count} tokens of team {team_id}")
        return count

    def team_for_token(self, token: str) -> int | None:
        """The team of a live API token (not revoked, team not suspended), or None."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT t.team_id FROM tokens t JOIN teams m ON m.team_id = t.team_id "
                "WHERE t.token_hash = ? AND t.revoked = 0 AND m.suspended = 0",
                (token_hash(token),),
            )
        return int(rows[0][0]) if rows else None

    def audit(self, actor: str, action: str, detail: str) -> None:
        """Write an audit row (an admin action done outside the store, e.g. a season frozen)."""
        with self.backend.transaction() as tx:
            self._write_audit(tx, self._now(), actor, action, detail)

    def audit_log(self, limit: int = 200) -> list[AuditEntry]:
        """The newest audit rows first."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT audit_id, at, actor, action, detail FROM audit "
                "ORDER BY audit_id DESC LIMIT ?",
                (max(0, int(limit)),),
            )
        return [AuditEntry(int(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in rows]

    # -- uploads and versions --

    def add_version(self, team_id: int, *, size: int, sha256: str, label: str) -> int:
        """Register an upload (queued for its check); its id. QuotaError when the team has
        `max_versions` versions or the upload would pass `max_team_bytes`; LadderError for a
        suspended team; ValueError for bad values."""
        if not _SHA256.match(sha256):
            raise ValueError("sha256 must be 64 lowercase hex digits")
        if size <= 0:
            raise ValueError("an upload has at least one byte")
        label = _clean(label.strip(), MAX_LABEL, "the label")
        now = self._now()
        with self.backend.transaction() as tx:
            team = self._lock_team(tx, team_id)
            if team.suspended:
                raise LadderError(f"team {team.name} is suspended")
            count, used, last = tx.query(
                "SELECT COUNT(*), COALESCE(SUM(size), 0), COALESCE(MAX(number), 0) "
                "FROM versions WHERE team_id = ?",
                (team_id,),
            )[0]
            if int(count) >= self.max_versions:
                raise QuotaError(
                    f"team {team.name} has {count} versions: at most {self.max_versions}"
                )
            if int(used) + size > self.max_team_bytes:
                raise QuotaError(
                    f"team {team.name} would have {int(used) + size} bytes of uploads: at most "
                    f"{self.max_team_bytes}"
                )
            version_id = self._next_id(tx, "versions")
            tx.execute(
                "INSERT INTO versions (version_id, team_id, number, label, size, sha256, "
                "created, state, card_summary, active, check_attempt, check_lease) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', NULL, 0, 0, NULL)",
                (version_id, team_id, int(last) + 1, label, size, sha256, now),
            )
        return version_id

    def versions(self, team_id: int) -> list[Version]:
        """The team's versions, newest first."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {_VERSION_COLUMNS} FROM versions v WHERE v.team_id = ? "
                "ORDER BY v.number DESC",
                (team_id,),
            )
        return [_version(row) for row in rows]

    def version(self, version_id: int) -> Version | None:
        """The version with this id, or None."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {_VERSION_COLUMNS} FROM versions v WHERE v.version_id = ?",
                (version_id,),
            )
        return _version(rows[0]) if rows else None

    def claim_check(
        self, worker: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> CheckClaim | None:
        """The oldest version waiting for its check (or whose check's lease ran out) under a
        new attempt; None when there is none."""
        now = self._now()
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT version_id, check_attempt FROM versions WHERE state = 'queued' "
                "OR (state = 'checking' AND check_lease < ?) ORDER BY version_id LIMIT 5",
                (now,),
            )
            for version_id, previous in rows:
                attempt = int(previous) + 1
                if tx.execute(
                    "UPDATE versions SET state = 'checking', check_attempt = ?, check_lease = ? "
                    "WHERE version_id = ? AND check_attempt = ? "
                    "AND state IN ('queued', 'checking')",
                    (attempt, now + int(lease_seconds * 1000), int(version_id), int(previous)),
                ):
                    self._start_attempt(tx, "check", int(version_id), attempt, worker, now)
                    return CheckClaim(int(version_id), attempt)
        return None

    def heartbeat_check(
        self, claim: CheckClaim, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> None:
        """Extend a check's lease; StaleAttemptError when it is no longer this attempt's."""
        now = self._now()
        with self.backend.transaction() as tx:
            if not tx.execute(
                "UPDATE versions SET check_lease = ? WHERE version_id = ? AND check_attempt = ? "
                "AND state = 'checking'",
                (now + int(lease_seconds * 1000), claim.version_id, claim.attempt),
            ):
                raise StaleAttemptError(
                    f"version {claim.version_id}: check attempt {claim.attempt} is no longer "
                    "the running one"
                )
            self._beat(tx, "check", claim.version_id, claim.attempt, now)

    def set_check_result(
        self, version_id: int, passed: bool, summary: str, *, attempt: int | None = None
    ) -> None:
        """The check's verdict. With `attempt` (a worker's claim) fenced like a match: a stale
        attempt raises StaleAttemptError; without, it sets the verdict outright."""
        summary = summary[:MAX_REASON]
        now = self._now()
        state = "passed" if passed else "failed"
        with self.backend.transaction() as tx:
            if attempt is None:
                changed = tx.execute(
                    "UPDATE versions SET state = ?, card_summary = ?, check_lease = NULL "
                    "WHERE version_id = ?",
                    (state, summary, version_id),
                )
                if not changed:
                    raise ValueError(f"there is no version {version_id}")
                return
            if not tx.execute(
                "UPDATE versions SET state = ?, card_summary = ?, check_lease = NULL "
                "WHERE version_id = ? AND check_attempt = ? AND state = 'checking'",
                (state, summary, version_id, attempt),
            ):
                raise StaleAttemptError(
                    f"version {version_id}: check attempt {attempt} is no longer the running one"
                )
            self._end_attempt(tx, "check", version_id, attempt, "finished", now)

    def activate(self, team_id: int, version_id: int) -> None:
        """Make a passed version of the team its one active version (the previous one's
        ranked matches not yet started are cancelled); ValueError otherwise."""
        with self.backend.transaction() as tx:
            team = self._lock_team(tx, team_id)
            rows = tx.query(
                "SELECT state FROM versions WHERE version_id = ? AND team_id = ?",
                (version_id, team_id),
            )
            if not rows:
                raise ValueError(f"team {team.name} has no version {version_id}")
            if rows[0][0] != "passed":
                raise ValueError(
                    f"version {version_id} is {rows[0][0]}: only a version that passed its "
                    "check can be activated"
                )
            # The ladder plays active versions: ranked matches of the one stepping down that
            # nobody started yet are cancelled (running ones finish and count; challenges stay).
            tx.execute(
                "UPDATE ladder_matches SET status = 'cancelled', finished = ? "
                "WHERE status = 'pending' AND ranked = 1 AND (version_a IN (SELECT version_id "
                "FROM versions WHERE team_id = ? AND active = 1 AND version_id <> ?) OR "
                "version_b IN (SELECT version_id FROM versions WHERE team_id = ? AND active = 1 "
                "AND version_id <> ?))",
                (self._now(), team_id, version_id, team_id, version_id),
            )
            tx.execute("UPDATE versions SET active = 0 WHERE team_id = ?", (team_id,))
            tx.execute("UPDATE versions SET active = 1 WHERE version_id = ?", (version_id,))

    def active_versions(self) -> list[Version]:
        """The active version of every team that is not suspended, by version id."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {_VERSION_COLUMNS} FROM versions v JOIN teams t "
                "ON t.team_id = v.team_id WHERE v.active = 1 AND t.suspended = 0 "
                "ORDER BY v.version_id"
            )
        return [_version(row) for row in rows]

    # -- attempts (both kinds of job) --

    @staticmethod
    def _start_attempt(
        tx: Transaction, kind: str, subject: int, attempt: int, worker: str, now: int
    ) -> None:
        tx.execute(
            "UPDATE attempts SET outcome = 'expired', ended_at = ? "
            "WHERE kind = ? AND subject_id = ? AND outcome = 'running'",
            (now, kind, subject),
        )
        tx.execute(
            "INSERT INTO attempts (kind, subject_id, attempt, worker, started_at, heartbeat_at, "
            "ended_at, outcome) VALUES (?, ?, ?, ?, ?, ?, NULL, 'running')",
            (kind, subject, attempt, worker[:200], now, now),
        )

    @staticmethod
    def _beat(tx: Transaction, kind: str, subject: int, attempt: int, now: int) -> None:
        tx.execute(
            "UPDATE attempts SET heartbeat_at = ? WHERE kind = ? AND subject_id = ? "
            "AND attempt = ?",
            (now, kind, subject, attempt),
        )

    @staticmethod
    def _end_attempt(
        tx: Transaction, kind: str, subject: int, attempt: int, outcome: str, now: int
    ) -> None:
        tx.execute(
            "UPDATE attempts SET outcome = ?, ended_at = ? WHERE kind = ? AND subject_id = ? "
            "AND attempt = ?",
            (outcome, now, kind, subject, attempt),
        )

    def attempts(self, kind: str, subject_id: int) -> list[tuple[int, str, str]]:
        """(attempt, worker, outcome) of every attempt at a check (`kind` "check", subject a
        version id) or a match ("match", a match id), oldest first."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT attempt, worker, outcome FROM attempts WHERE kind = ? AND subject_id = ? "
                "ORDER BY attempt",
                (kind, subject_id),
            )
        return [(int(a), str(w), str(o)) for a, w, o in rows]

    def reset_running(self) -> int:
        """Give back every running check and match (a crashed single-machine run's), how many.
        Only for the store's single user; shared stores rely on the leases running out."""
        now = self._now()
        with self.backend.transaction() as tx:
            tx.execute(
                "UPDATE attempts SET outcome = 'abandoned', ended_at = ? WHERE outcome = 'running'",
                (now,),
            )
            checks = tx.execute(
                "UPDATE versions SET state = 'queued', check_lease = NULL WHERE state = 'checking'"
            )
            matches = tx.execute(
                "UPDATE ladder_matches SET status = 'pending', lease_until = NULL "
                "WHERE status = 'running'"
            )
        return checks + matches

    # -- matches --

    def create_match(
        self,
        version_a: int,
        version_b: int,
        *,
        ranked: bool = True,
        challenge_id: int | None = None,
        games: int = 2,
    ) -> int:
        """A new match (pending); ValueError for unknown versions, versions of one team, or
        a number of games that is odd or outside 2..MAX_GAMES."""
        with self.backend.transaction() as tx:
            return self._create_match(tx, version_a, version_b, ranked, challenge_id, games)

    def _create_match(
        self,
        tx: Transaction,
        version_a: int,
        version_b: int,
        ranked: bool,
        challenge_id: int | None,
        games: int,
    ) -> int:
        if games < 2 or games > MAX_GAMES or games % 2:
            raise ValueError(
                f"a match is an even number of games from 2 to {MAX_GAMES} (paired boards)"
            )
        rows = tx.query(
            "SELECT version_id, team_id FROM versions WHERE version_id IN (?, ?)",
            (version_a, version_b),
        )
        teams = {int(v): int(t) for v, t in rows}
        for version in (version_a, version_b):
            if version not in teams:
                raise ValueError(f"there is no version {version}")
        if teams[version_a] == teams[version_b]:
            raise ValueError("a match needs versions of two different teams")
        match_id = self._next_id(tx, "matches")
        tx.execute(
            f"INSERT INTO ladder_matches ({_MATCH_COLUMNS}, lease_until, finished_attempt) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, NULL, NULL, NULL)",
            (
                match_id,
                version_a,
                version_b,
                int(ranked),
                challenge_id,
                games,
                board_seed(match_id),
                self._now(),
            ),
        )
        return match_id

    def claim_match(
        self, worker: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> MatchClaim | None:
        """The oldest match nobody plays (pending, or running with an expired lease) under a
        new attempt; None when there is none."""
        now = self._now()
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT match_id, attempt, version_a, version_b, games, ranked, board_seed "
                "FROM ladder_matches WHERE status = 'pending' "
                "OR (status = 'running' AND lease_until < ?) ORDER BY match_id LIMIT 5",
                (now,),
            )
            for match_id, previous, a, b, games, ranked, seed in rows:
                attempt = int(previous) + 1
                # Compare-and-set on the attempt: of two racing claimers one changes the row.
                if tx.execute(
                    "UPDATE ladder_matches SET status = 'running', attempt = ?, lease_until = ? "
                    "WHERE match_id = ? AND attempt = ? AND status IN ('pending', 'running')",
                    (attempt, now + int(lease_seconds * 1000), int(match_id), int(previous)),
                ):
                    self._start_attempt(tx, "match", int(match_id), attempt, worker, now)
                    self._commit_point("claim")
                    return MatchClaim(
                        int(match_id), attempt, int(a), int(b), int(games), bool(ranked), int(seed)
                    )
        return None

    def heartbeat(self, claim: MatchClaim, *, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        """Extend the claim's lease; StaleAttemptError when the match is no longer this
        attempt's (handed out again, finished, abandoned, cancelled)."""
        now = self._now()
        with self.backend.transaction() as tx:
            if not tx.execute(
                "UPDATE ladder_matches SET lease_until = ? WHERE match_id = ? AND attempt = ? "
                "AND status = 'running'",
                (now + int(lease_seconds * 1000), claim.match_id, claim.attempt),
            ):
                raise StaleAttemptError(
                    f"match {claim.match_id}: attempt {claim.attempt} is no longer the running "
                    "attempt"
                )
            self._beat(tx, "match", claim.match_id, claim.attempt, now)

    def abandon_match(self, claim: MatchClaim) -> bool:
        """Give the match back for another attempt; False (nothing changed) when this attempt
        was no longer the running one."""
        now = self._now()
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE ladder_matches SET status = 'pending', lease_until = NULL "
                "WHERE match_id = ? AND attempt = ? AND status = 'running'",
                (claim.match_id, claim.attempt),
            )
            if changed:
                self._end_attempt(tx, "match", claim.match_id, claim.attempt, "abandoned", now)
        return changed == 1

    def give_up_match(self, claim: MatchClaim, reason: str) -> bool:
        """End the claimed match without games (status `cancelled`, no ratings; an audit row
        says why): for a match that cannot be played for no bot's fault, again and again (the
        workers give up after a few attempts rather than claim it forever). Fenced like
        `abandon_match`: False when the attempt is no longer the running one."""
        reason = _clean(reason, MAX_REASON, "a reason")
        now = self._now()
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE ladder_matches SET status = 'cancelled', finished = ?, lease_until = NULL "
                "WHERE match_id = ? AND attempt = ? AND status = 'running'",
                (now, claim.match_id, claim.attempt),
            )
            if changed:
                self._end_attempt(tx, "match", claim.match_id, claim.attempt, "abandoned", now)
                self._write_audit(
                    tx, now, "worker", "match given up", f"match {claim.match_id}: {reason}"
                )
        return changed == 1

    @staticmethod
    def _check_results(claim: MatchClaim, results: Sequence[GameResultRow]) -> None:
        numbers = sorted(row.number for row in results)
        if numbers != list(range(1, claim.games + 1)):
            raise ValueError(
                f"match {claim.match_id} has games 1..{claim.games}: got numbers {numbers}"
            )
        first = {row.number: row.first_version for row in results}
        for row in results:
            if row.first_version not in (claim.version_a, claim.version_b):
                raise ValueError(f"game {row.number}: first_version is not one of the match's")
            if row.number % 2 == 0 and first[row.number - 1] == row.first_version:
                raise ValueError(
                    f"games {row.number - 1} and {row.number} are a pair: the sides swap"
                )
            for points in (row.points_a, row.points_b):
                if not isinstance(points, int) or isinstance(points, bool) or not 0 <= points <= 2:
                    raise ValueError(f"game {row.number}: Siegpunkte are 0, 1 or 2")
            _clean(row.reason_a, MAX_REASON, "a reason")
            _clean(row.reason_b, MAX_REASON, "a reason")
            if row.replay is not None:
                _clean(row.replay, 200, "a replay name")
            for times in (row.move_ms_a, row.move_ms_b):
                if len(times) > MAX_MOVES or not all(
                    isinstance(ms, int | float)
                    and not isinstance(ms, bool)
                    and 0.0 <= ms <= MAX_MOVE_MS
                    for ms in times
                ):
                    raise ValueError(
                        f"game {row.number}: move times are at most {MAX_MOVES} numbers "
                        f"from 0 to {MAX_MOVE_MS:.0f} ms"
                    )

    @staticmethod
    def _stored_results(tx: Transaction, match_id: int) -> tuple[GameResultRow, ...]:
        return LadderStore._results_of(tx, [match_id]).get(match_id, ())

    @staticmethod
    def _results_of(tx: Transaction, match_ids: list[int]) -> dict[int, tuple[GameResultRow, ...]]:
        """The games of these matches (one query)."""
        if not match_ids:
            return {}
        marks = ", ".join("?" for _ in match_ids)
        rows = tx.query(
            "SELECT match_id, game_number, first_version, points_a, points_b, reason_a, "
            f"reason_b, replay FROM ladder_games WHERE match_id IN ({marks}) "
            "ORDER BY match_id, game_number",
            match_ids,
        )
        times: dict[tuple[int, int, int], tuple[float, ...]] = {
            (int(m), int(g), int(v)): _parse_times(str(text))
            for m, g, v, text in tx.query(
                "SELECT match_id, game_number, version_id, move_ms FROM ladder_move_times "
                f"WHERE match_id IN ({marks})",
                match_ids,
            )
        }
        sides: dict[int, tuple[int, int]] = {
            int(m): (int(a), int(b))
            for m, a, b in tx.query(
                "SELECT match_id, version_a, version_b FROM ladder_matches "
                f"WHERE match_id IN ({marks})",
                match_ids,
            )
        }
        found: dict[int, list[GameResultRow]] = {}
        for r in rows:
            match_id, number = int(r[0]), int(r[1])
            version_a, version_b = sides[match_id]
            found.setdefault(match_id, []).append(
                GameResultRow(
                    number,
                    int(r[2]),
                    int(r[3]),
                    int(r[4]),
                    str(r[5]),
                    str(r[6]),
                    None if r[7] is None else str(r[7]),
                    times.get((match_id, number, version_a), ()),
                    times.get((match_id, number, version_b), ()),
                )
            )
        return {match_id: tuple(games) for match_id, games in found.items()}

    def _finished_before(
        self, tx: Transaction, claim: MatchClaim, results: tuple[GameResultRow, ...]
    ) -> bool:
        """True when this attempt already recorded these results; raises when the match was
        finished by another attempt (StaleAttemptError) or with other results (conflict)."""
        rows = tx.query(
            "SELECT status, finished_attempt FROM ladder_matches WHERE match_id = ?",
            (claim.match_id,),
        )
        if not rows:
            raise StaleAttemptError(f"there is no match {claim.match_id}")
        status, finished_attempt = rows[0]
        if status != "finished":
            return False
        if int(finished_attempt) != claim.attempt:
            raise StaleAttemptError(
                f"match {claim.match_id} is already recorded by attempt {finished_attempt}; "
                f"attempt {claim.attempt} rejected"
            )
        if self._stored_results(tx, claim.match_id) != results:
            raise RecordConflictError(
                f"match {claim.match_id}: attempt {claim.attempt} already recorded other results"
            )
        return True

    def record_match(self, claim: MatchClaim, results: list[GameResultRow]) -> RecordStatus:
        """Record the match's games for the claim's attempt, in one transaction with the
        ratings' refit (see the module doc). ValueError for results that do not fit the
        match (numbers 1..games, Siegpunkte 0..2)."""
        self._check_results(claim, results)
        ordered = tuple(sorted((_rounded(row) for row in results), key=lambda row: row.number))
        now = self._now()
        with self.backend.transaction() as tx:
            if self._finished_before(tx, claim, ordered):
                return RecordStatus.DUPLICATE
            changed = tx.execute(
                "UPDATE ladder_matches SET status = 'finished', finished_attempt = ?, "
                "finished = ?, lease_until = NULL WHERE match_id = ? AND attempt = ? "
                "AND status = 'running'",
                (claim.attempt, now, claim.match_id, claim.attempt),
            )
            if changed != 1:
                # PostgreSQL: a racing record of the same attempt committed first.
                if self._finished_before(tx, claim, ordered):
                    return RecordStatus.DUPLICATE
                known = tx.query(
                    "SELECT attempt, status FROM ladder_matches WHERE match_id = ?",
                    (claim.match_id,),
                )
                raise StaleAttemptError(
                    f"match {claim.match_id}: attempt {claim.attempt} rejected (the match's "
                    f"attempt is {known[0][0]}, status {known[0][1]})"
                )
            for row in ordered:
                tx.execute(
                    "INSERT INTO ladder_games (match_id, game_number, first_version, points_a, "
                    "points_b, reason_a, reason_b, replay) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        claim.match_id,
                        row.number,
                        row.first_version,
                        row.points_a,
                        row.points_b,
                        row.reason_a,
                        row.reason_b,
                        row.replay,
                    ),
                )
                for version, times in (
                    (claim.version_a, row.move_ms_a),
                    (claim.version_b, row.move_ms_b),
                ):
                    if times:
                        tx.execute(
                            "INSERT INTO ladder_move_times (match_id, game_number, version_id, "
                            "moves, move_ms) VALUES (?, ?, ?, ?, ?)",
                            (claim.match_id, row.number, version, len(times), _times_text(times)),
                        )
            self._end_attempt(tx, "match", claim.match_id, claim.attempt, "finished", now)
            rows = tx.query(
                "SELECT version_a, version_b, ranked FROM ladder_matches WHERE match_id = ?",
                (claim.match_id,),
            )
            version_a, version_b, ranked = (int(value) for value in rows[0])
            if ranked:
                self._add_to_ratings(tx, claim.match_id, version_a, version_b, ordered, now)
            self._commit_point("record")
        return RecordStatus.RECORDED

    def _add_to_ratings(
        self,
        tx: Transaction,
        match_id: int,
        version_a: int,
        version_b: int,
        results: tuple[GameResultRow, ...],
        now: int,
    ) -> None:
        games = 0.0
        score_a = 0.0
        for row in results:
            score = rating.game_score(row.points_a, row.points_b)
            if score is not None:
                games += 1.0
                score_a += score
        self._lock_ratings(tx)
        low, high = sorted((version_a, version_b))
        score_low = score_a if low == version_a else games - score_a
        if games and not tx.execute(
            "UPDATE rating_pairs SET games = games + ?, score_low = score_low + ? "
            "WHERE version_low = ? AND version_high = ?",
            (games, score_low, low, high),
        ):
            tx.execute(
                "INSERT INTO rating_pairs (version_low, version_high, games, score_low) "
                "VALUES (?, ?, ?, ?)",
                (low, high, games, score_low),
            )
        fitted = self._refit(tx, now)
        for version in (version_a, version_b):
            value, deviation = fitted.get(version, (rating.BASE, rating.prior_deviation()))
            tx.execute(
                "INSERT INTO rating_history (version_id, match_id, at, rating, deviation) "
                "VALUES (?, ?, ?, ?, ?)",
                (version, match_id, now, value, deviation),
            )

    @staticmethod
    def _lock_ratings(tx: Transaction) -> None:
        """One refit at a time (PostgreSQL: a row lock held to the commit): two matches
        recorded at once would otherwise insert the same pair's row twice, or update the
        ratings' rows in different orders (a deadlock); and each refit starts from the last."""
        tx.execute(
            "UPDATE ladder_meta SET meta_value = meta_value WHERE meta_key = ?",
            ("schema_version",),
        )

    def recompute_ratings(self) -> int:
        """Rebuild the fit's input from every recorded ranked game and fit from scratch (after
        a change of the rating rules, or to check the running totals); how many versions are
        rated. The history keeps what each match showed at its time."""
        now = self._now()
        with self.backend.transaction() as tx:
            self._lock_ratings(tx)
            rows = tx.query(
                "SELECT m.version_a, m.version_b, g.points_a, g.points_b FROM ladder_games g "
                "JOIN ladder_matches m ON m.match_id = g.match_id "
                "WHERE m.ranked = 1 AND m.status = 'finished'"
            )
            pairs: dict[tuple[int, int], list[float]] = {}
            for a, b, points_a, points_b in rows:
                score = rating.game_score(int(points_a), int(points_b))
                if score is None:
                    continue
                key, own = ((int(a), int(b)), score) if a < b else ((int(b), int(a)), 1 - score)
                entry = pairs.setdefault(key, [0.0, 0.0])
                entry[0] += 1.0
                entry[1] += own
            tx.execute("DELETE FROM rating_pairs")
            tx.execute("DELETE FROM ratings")
            for (low, high), (games, score_low) in sorted(pairs.items()):
                tx.execute(
                    "INSERT INTO rating_pairs (version_low, version_high, games, score_low) "
                    "VALUES (?, ?, ?, ?)",
                    (low, high, games, score_low),
                )
            return len(self._refit(tx, now))

    def _refit(self, tx: Transaction, now: int) -> dict[int, tuple[float, float]]:
        """Fit every version's rating again from `rating_pairs`, starting from the stored
        ratings (a few sweeps after one match), and store them."""
        pairs = {
            (int(low), int(high)): (float(games), float(score))
            for low, high, games, score in tx.query(
                "SELECT version_low, version_high, games, score_low FROM rating_pairs"
            )
        }
        current = {
            int(version): (float(value), int(games))
            for version, value, games in tx.query("SELECT version_id, rating, games FROM ratings")
        }
        fitted = rating.fit_pairs(pairs, start={v: r for v, (r, _) in current.items()})
        counts: dict[int, int] = {}
        for (low, high), (games, _) in pairs.items():
            counts[low] = counts.get(low, 0) + int(games)
            counts[high] = counts.get(high, 0) + int(games)
        for version, (value, deviation) in sorted(fitted.items()):
            if version in current:
                tx.execute(
                    "UPDATE ratings SET rating = ?, deviation = ?, games = ?, updated = ? "
                    "WHERE version_id = ?",
                    (value, deviation, counts[version], now, version),
                )
            else:
                tx.execute(
                    "INSERT INTO ratings (version_id, rating, deviation, games, updated) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (version, value, deviation, counts[version], now),
                )
        return fitted

    def ladder_id(self) -> str:
        """This ladder's identity: random, made with the store (32 hex digits)."""
        with self.backend.transaction() as tx:
            rows = tx.query("SELECT meta_value FROM ladder_meta WHERE meta_key = ?", ("ladder_id",))
        return str(rows[0][0])

    def pending_matches(self) -> int:
        """Matches created and not finished (pending or running): the scheduler's input."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT COUNT(*) FROM ladder_matches WHERE status IN ('pending', 'running')"
            )
        return int(rows[0][0])

    def open_pairs(self) -> list[tuple[int, int]]:
        """(version_a, version_b) of every ranked match created and not finished."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT version_a, version_b FROM ladder_matches "
                "WHERE status IN ('pending', 'running') AND ranked = 1 ORDER BY match_id"
            )
        return [(int(a), int(b)) for a, b in rows]

    def matches(
        self,
        *,
        version_id: int | None = None,
        team_id: int | None = None,
        limit: int = 100,
        before: int | None = None,
        finished: bool = False,
    ) -> list[LadderMatch]:
        """Matches, newest first, with their games; only those of a version or of a team's
        versions when given, with an id below `before` when given (the next page of a
        listing), finished ones only when `finished`."""
        where = ""
        params: list[object] = []
        if before is not None:
            where = "WHERE match_id < ?"
            params.append(int(before))
        if finished:
            where += " AND " if where else "WHERE "
            where += "status = 'finished'"
        if version_id is not None:
            where += " AND " if where else "WHERE "
            where += "(version_a = ? OR version_b = ?)"
            params += [version_id, version_id]
        if team_id is not None:
            where += " AND " if where else "WHERE "
            where += (
                "(version_a IN (SELECT version_id FROM versions WHERE team_id = ?) OR "
                "version_b IN (SELECT version_id FROM versions WHERE team_id = ?))"
            )
            params += [team_id, team_id]
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {_MATCH_COLUMNS} FROM ladder_matches {where} "
                "ORDER BY match_id DESC LIMIT ?",
                (*params, max(0, int(limit))),
            )
            games = self._results_of(tx, [int(row[0]) for row in rows])
            return [_match(row, games.get(int(row[0]), ())) for row in rows]

    def match(self, match_id: int) -> LadderMatch | None:
        """The match with its games, or None."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {_MATCH_COLUMNS} FROM ladder_matches WHERE match_id = ?", (match_id,)
            )
            return _match(rows[0], self._stored_results(tx, match_id)) if rows else None

    def move_times(self, version_id: int, *, games: int = 200) -> list[MoveTimes]:
        """The version's move times in its newest `games` games that have them, newest first."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT t.match_id, t.game_number, m.version_a, m.version_b, m.finished, "
                "t.move_ms FROM ladder_move_times t "
                "JOIN ladder_matches m ON m.match_id = t.match_id "
                "WHERE t.version_id = ? AND m.status = 'finished' "
                "ORDER BY t.match_id DESC, t.game_number DESC LIMIT ?",
                (version_id, max(0, int(games))),
            )
        return [
            MoveTimes(
                int(m),
                int(g),
                version_id,
                int(b) if int(a) == version_id else int(a),
                int(done or 0),
                _parse_times(str(text)),
            )
            for m, g, a, b, done, text in rows
        ]

    # -- ratings --

    def ratings(self) -> dict[int, tuple[float, float]]:
        """version id → (rating, deviation) of every version that played a ranked game."""
        with self.backend.transaction() as tx:
            rows = tx.query("SELECT version_id, rating, deviation FROM ratings")
        return {int(v): (float(r), float(d)) for v, r, d in rows}

    def standings(self) -> list[Standing]:
        """The ladder table: every active version of a team not suspended, best rating first
        (a version without ranked games has the prior's rating and deviation)."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT t.team_id, t.name, v.version_id, r.rating, r.deviation, r.games "
                "FROM versions v JOIN teams t ON t.team_id = v.team_id "
                "LEFT JOIN ratings r ON r.version_id = v.version_id "
                "WHERE v.active = 1 AND t.suspended = 0"
            )
        prior = rating.prior_deviation()
        entries = [
            (
                int(team),
                str(name),
                int(version),
                rating.BASE if value is None else float(value),
                prior if deviation is None else float(deviation),
                0 if games is None else int(games),
            )
            for team, name, version, value, deviation, games in rows
        ]
        entries.sort(key=lambda entry: (-entry[3], entry[4], entry[2]))
        return [Standing(*entry, rank=rank) for rank, entry in enumerate(entries, start=1)]

    def rating_history(self, version_id: int) -> list[tuple[int, float, float]]:
        """(time, rating, deviation) after each ranked match of the version, oldest first."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT at, rating, deviation FROM rating_history WHERE version_id = ? "
                "ORDER BY at, match_id",
                (version_id,),
            )
        return [(int(t), float(r), float(d)) for t, r, d in rows]

    # -- challenges --

    def create_challenge(self, team_id: int, opponent_version: int, games: int) -> int:
        """An unranked match of `games` games between the team's active version and an active
        version of another team; its id. ChallengeLimitError past `challenges_per_window` in
        `challenge_window` seconds; LadderError for a suspended team or one without an active
        version; ValueError for a bad opponent or number of games."""
        now = self._now()
        with self.backend.transaction() as tx:
            team = self._lock_team(tx, team_id)
            if team.suspended:
                raise LadderError(f"team {team.name} is suspended")
            own = tx.query(
                "SELECT version_id FROM versions WHERE team_id = ? AND active = 1", (team_id,)
            )
            if not own:
                raise LadderError(f"team {team.name} has no active version")
            opponent = tx.query(
                "SELECT v.team_id, v.active, t.suspended FROM versions v JOIN teams t "
                "ON t.team_id = v.team_id WHERE v.version_id = ?",
                (opponent_version,),
            )
            if not opponent or not opponent[0][1] or opponent[0][2]:
                raise ValueError(f"version {opponent_version} is not an active version")
            if int(opponent[0][0]) == team_id:
                raise ValueError("a team cannot challenge itself")
            since = now - int(self.challenge_window * 1000)
            recent = int(
                tx.query(
                    "SELECT COUNT(*) FROM challenges WHERE team_id = ? AND created > ?",
                    (team_id, since),
                )[0][0]
            )
            if recent >= self.challenges_per_window:
                raise ChallengeLimitError(
                    f"team {team.name} asked for {recent} challenges in the last "
                    f"{self.challenge_window:g} s: at most {self.challenges_per_window}"
                )
            challenge_id = self._next_id(tx, "challenges")
            tx.execute(
                "INSERT INTO challenges (challenge_id, team_id, own_version, opponent_version, "
                "games, created) VALUES (?, ?, ?, ?, ?, ?)",
                (challenge_id, team_id, int(own[0][0]), opponent_version, games, now),
            )
            self._create_match(tx, int(own[0][0]), opponent_version, False, challenge_id, games)
        return challenge_id
