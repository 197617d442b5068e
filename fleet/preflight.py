"""What every process of a distributed league checks before it does anything, so that a wrong
setting ends it at once with one clear line instead of a traceback, a retry loop or a healthy
looking process that never plays:

- the addresses: a Redis URL (`redis://`, `rediss://`, `unix://`), a PostgreSQL URL or an SQLite
  path; a password on the command line is refused (`ps` shows it to every user of the machine);
- the servers: Redis answers PING with this password, PostgreSQL accepts this role and database;
- the league: one fingerprint of everything that decides a result (teams and their bots, the
  seed and schedule, the rules version, timeouts and limits). The coordinator writes it into the
  store, with a random league id; every worker, `status` and `cancel` refuse a league file whose
  fingerprint differs, naming the part that differs. The queue's name is derived from the
  fingerprint and the league id, so leagues sharing one Redis (even two with the same file, in
  two databases) never see each other's messages.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import uuid
from dataclasses import asdict
from pathlib import Path
from urllib.parse import urlsplit

from league.backends import redact
from league.config import BotKind, LeagueConfig, TeamSpec
from league.store import Backend
from protocol.events import GAME_TYPE

__all__ = [
    "FleetError",
    "LeagueMismatchError",
    "check_database",
    "check_fingerprint",
    "check_redis",
    "check_redis_url",
    "describe",
    "fingerprint",
    "queue_name",
    "read_fingerprint",
    "redact",
    "refuse_password_in_argument",
    "write_or_check_fingerprint",
]

CONNECT_TIMEOUT = 5.0
META_KEY = "fleet_fingerprint"
# What each part of the fingerprint covers, as the error names it.
PARTS = {
    "teams": "the teams and their bots (ids, names, commands, images, folder contents)",
    "schedule": "the schedule (format, gauntlet, games per match, seed)",
    "rules": "the rules version, timeouts and limits",
}


class FleetError(Exception):
    """A setting that cannot work, or a server that cannot be reached (the message says which
    and what to do)."""


class LeagueMismatchError(FleetError):
    """This process's league file is not the league in the store."""


def _check_netloc(url: str, what: str) -> None:
    netloc = urlsplit(url).netloc
    if netloc.count("@") > 1:
        raise FleetError(
            f"{what} {redact(url)}: more than one '@' before the host: percent-encode the "
            "password's special characters (@ as %40, / as %2F, : as %3A, % as %25)"
        )


def refuse_password_in_argument(url: str, option: str, variable: str) -> None:
    """A URL given as a command-line option must not hold a password: `ps` shows every
    process's arguments to every user."""
    if urlsplit(url).password:
        raise FleetError(
            f"{option} holds a password, which `ps` shows to every user of this machine: put the "
            f"URL into ${variable}, or into a file (mode 600) named by ${variable}_FILE"
        )


def check_redis_url(url: str) -> str:
    """`url` if it is a Redis URL Dramatiq can use; else FleetError with the expected form."""
    scheme = urlsplit(url).scheme if "://" in url else ""
    if scheme not in ("redis", "rediss", "unix"):
        raise FleetError(
            f"Redis {redact(url)!r} is not a Redis URL: write redis://[:PASSWORD@]HOST:6379/0 "
            "(rediss:// for TLS, unix:///path/redis.sock for a socket)"
        )
    _check_netloc(url, "Redis")
    import redis

    try:
        redis.connection.parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError as error:
        raise FleetError(f"Redis {redact(url)}: {error}") from None
    return url


def check_database(database: str) -> str:
    """`database` if it is a PostgreSQL URL or an SQLite path; a URL of any other scheme (a
    typo such as `postgress://`) is refused rather than taken as a file name."""
    if "://" not in database:
        return database
    scheme = database.split("://", 1)[0]
    if scheme not in ("postgresql", "postgres"):
        raise FleetError(
            f"database {redact(database)!r}: unknown scheme {scheme!r}: write "
            "postgresql://USER@HOST:5432/DATABASE (or the path of an SQLite file, one machine)"
        )
    _check_netloc(database, "database")
    import psycopg

    try:
        psycopg.conninfo.conninfo_to_dict(database)
    except psycopg.Error as error:
        raise FleetError(f"database {redact(database)}: {error}") from None
    return database


def check_redis(url: str) -> None:
    """PING Redis once (CONNECT_TIMEOUT): FleetError saying what is wrong when it does not
    answer or refuses the password."""
    import redis

    where = redact(url)
    client = redis.Redis.from_url(
        url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=CONNECT_TIMEOUT
    )
    try:
        client.ping()
    except redis.AuthenticationError as error:
        raise FleetError(f"Redis {where} refused the login: {error}") from None
    except redis.ResponseError as error:
        if "NOAUTH" in str(error) or "NOPERM" in str(error):
            raise FleetError(f"Redis {where} refused the login: {error}") from None
        raise FleetError(f"Redis {where}: {error}") from None
    except (redis.ConnectionError, redis.TimeoutError) as error:
        raise FleetError(
            f"cannot reach Redis {where} within {CONNECT_TIMEOUT:g} s: {error or 'timeout'}"
        ) from None
    finally:
        client.close()


def _folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _team(team: TeamSpec) -> list[object]:
    bot = team.bot
    if bot.kind is BotKind.IMAGE:
        what: object = bot.image
    elif bot.kind is BotKind.FOLDER:
        assert bot.folder is not None
        what = _folder_digest(bot.folder)
    else:
        what = list(bot.command)
    return [team.id, team.name, bot.kind.value, what]


def _package_version() -> str:
    try:
        return importlib.metadata.version("piranhas-server")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        return "unknown"


def describe(config: LeagueConfig) -> dict[str, str]:
    """The fingerprint's parts (see PARTS), each a SHA-256 hex digest."""
    parts: dict[str, object] = {
        "teams": [_team(team) for team in config.teams],
        "schedule": [
            config.format.value,
            config.gauntlet,
            config.games_per_match,
            config.seed,
        ],
        "rules": [
            GAME_TYPE,
            _package_version(),
            asdict(config.timeouts),
            asdict(config.limits),
            config.base_image,
            [t.value for t in config.tiebreaks],
        ],
    }
    return {
        key: hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()
        for key, value in parts.items()
    }


def fingerprint(config: LeagueConfig) -> str:
    """One digest of the whole league (every part of `describe`)."""
    return hashlib.sha256(json.dumps(describe(config), sort_keys=True).encode()).hexdigest()


def queue_name(config: LeagueConfig, league_id: str) -> str:
    """The league's queue on the broker: 16 hex digits of its fingerprint and its league id."""
    digest = hashlib.sha256(f"{fingerprint(config)} {league_id}".encode()).hexdigest()
    return f"piranhas.{digest[:16]}"


def read_fingerprint(backend: Backend) -> dict[str, str] | None:
    """What the coordinator stored (the parts and `league`, the league id), or None when the
    league was not created yet."""
    try:
        with backend.transaction() as tx:
            rows = tx.query("SELECT meta_value FROM league_meta WHERE meta_key = ?", (META_KEY,))
    except Exception as error:
        # No tables yet: the coordinator did not create the league (the same for both engines:
        # sqlite3 "no such table", PostgreSQL 42P01 undefined_table).
        if "no such table" in str(error) or getattr(error, "sqlstate", None) == "42P01":
            return None
        raise
    if not rows:
        return None
    stored: dict[str, str] = json.loads(str(rows[0][0]))
    return stored


def _compare(config: LeagueConfig, stored: dict[str, str]) -> str:
    mine = describe(config)
    differ = [PARTS[key] for key in PARTS if stored.get(key) != mine.get(key)]
    if differ:
        raise LeagueMismatchError(
            "this league file is not the league in the store: "
            + "; ".join(differ)
            + " differ. Every machine of a league needs the same league file and the same "
            "version of piranhas-server (a new league needs a new database)"
        )
    return queue_name(config, stored["league"])


def write_or_check_fingerprint(config: LeagueConfig, backend: Backend) -> str:
    """Store the league's fingerprint and a new league id (the store's tables must exist), or
    refuse a league file that differs from the stored one (LeagueMismatchError). The league's
    queue name."""
    with backend.transaction() as tx:
        rows = tx.query("SELECT meta_value FROM league_meta WHERE meta_key = ?", (META_KEY,))
        if not rows:
            stored = {**describe(config), "league": uuid.uuid4().hex}
            tx.execute(
                "INSERT INTO league_meta (meta_key, meta_value) VALUES (?, ?)",
                (META_KEY, json.dumps(stored, sort_keys=True)),
            )
            return queue_name(config, stored["league"])
    return _compare(config, json.loads(str(rows[0][0])))


def check_fingerprint(config: LeagueConfig, backend: Backend) -> str | None:
    """The league's queue name when the store holds this league, None when it was not created
    yet; LeagueMismatchError when it holds another one."""
    stored = read_fingerprint(backend)
    if stored is None:
        return None
    return _compare(config, stored)
