"""The store's SQL runs unchanged on PostgreSQL (the distributed league's database).

A store flow (initialize, claim, heartbeat, expiry, record, duplicate, stale record, abandon,
reset) runs on SQLite while every statement is captured with its parameters; the same
transactions then run on a throwaway PostgreSQL cluster (Unix socket only, no TCP) through
`psql`, and the end state must match. Skipped where PostgreSQL's server binaries or the
`postgres` user are missing; needs root to start the cluster as that user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from league.config import parse_league
from league.schedule import build_schedule
from league.store import GameOutcome, LeagueStore, SQLiteBackend, StaleAttemptError, Transaction


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found or shutil.which("psql") is None or os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return None
    return Path(found[-1]).parent


PG_BIN = _pg_bin()
pytestmark = pytest.mark.skipif(
    PG_BIN is None, reason="no PostgreSQL server binaries (or not root)"
)


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int):
        return str(int(value))
    return "'" + str(value).replace("'", "''") + "'"


def _render(sql: str, params: Sequence[object]) -> str:
    parts = sql.split("?")
    assert len(parts) == len(params) + 1, f"a literal '?' in {sql!r}"
    return parts[0] + "".join(_literal(p) + rest for p, rest in zip(params, parts[1:], strict=True))


class CapturingBackend(SQLiteBackend):
    """SQLite that also writes every transaction as a psql script."""

    script: list[str]

    @contextmanager
    def _transaction(self) -> Iterator[Transaction]:
        script = self.script

        class Capture:
            def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
                script.append(_render(sql, params) + ";")
                return inner.query(sql, params)

            def execute(self, sql: str, params: Sequence[object] = ()) -> int:
                script.append(_render(sql, params) + ";")
                return inner.execute(sql, params)

        with super()._transaction() as inner:
            script.append("BEGIN;")
            try:
                yield Capture()
            except BaseException:
                script.append("ROLLBACK;")
                raise
            script.append("COMMIT;")


@pytest.fixture
def postgres() -> Iterator[Path]:
    """A throwaway cluster listening on a Unix socket only; yields the socket directory."""
    assert PG_BIN is not None
    home = Path(tempfile.mkdtemp(prefix="lgpg"))
    shutil.chown(home, "postgres")
    as_postgres = ["runuser", "-u", "postgres", "--"]
    data = home / "data"
    subprocess.run(
        [
            *as_postgres,
            str(PG_BIN / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "-N",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    options = f"-c listen_addresses='' -c unix_socket_directories={home} -c fsync=off"
    subprocess.run(
        [*as_postgres, str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", options, "-w", "start",
         "-l", str(home / "log")],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    try:
        yield home
    finally:
        subprocess.run(
            [*as_postgres, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(home, ignore_errors=True)


def _psql(socket: Path, sql: str) -> str:
    done = subprocess.run(
        ["psql", "-h", str(socket), "-U", "postgres", "-X", "-q", "-A", "-t",
         "-v", "ON_ERROR_STOP=1", "-f", "-"],
        input=sql,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_store_s_transactions_run_on_postgresql(tmp_path: Path, postgres: Path) -> None:
    text = 'name = "L"\ngames_per_match = 2\n' + "".join(
        f'[[teams]]\nid = "t{i}"\nname = "T\'{i}"\ncommand = "x"\n' for i in range(3)
    )
    config = parse_league(text)
    now = [1_800_000_000.0]
    backend = CapturingBackend(tmp_path / "league.sqlite")
    backend.script = []
    store = LeagueStore(backend, clock=lambda: now[0])
    store.initialize(config, build_schedule(config))
    store.initialize(config, build_schedule(config))
    expired = store.claim_next("w1", lease_seconds=10)
    assert expired is not None
    store.heartbeat(expired, lease_seconds=10)
    now[0] += 20
    claim = store.claim_next("w2")
    assert claim is not None and claim.attempt == 2
    outcome = GameOutcome((2, 0), (7, 3), claim.game.team_one, True, "Grund 'zitiert'", "<game/>")
    store.record(claim.match_id, claim.number, claim.attempt, outcome)
    store.record(claim.match_id, claim.number, claim.attempt, outcome)
    with pytest.raises(StaleAttemptError):
        store.record(expired.match_id, expired.number, expired.attempt, outcome)
    other = store.claim_next("w3")
    assert other is not None
    store.abandon(other)
    assert store.claim_next("w3") is not None
    store.reset_running()
    store.finished_games()
    store.progress()
    store.close()

    check = (
        "SELECT status, COUNT(*) FROM games GROUP BY status ORDER BY status;\n"
        "SELECT match_id, game_number, attempt, worker, outcome FROM attempts "
        "ORDER BY match_id, game_number, attempt;\n"
        "SELECT attempt, siegpunkte_one, schwarm_two, winner, regular, reason FROM results;\n"
    )
    _psql(postgres, "\n".join(backend.script))
    assert _psql(postgres, check).split() == [
        "finished|1",
        "pending|5",
        "1|1|1|w1|expired",
        "1|1|2|w2|finished",
        "1|2|1|w3|abandoned",
        "1|2|2|w3|abandoned",
        "2|2|3|t1|1|Grund",
        "'zitiert'",
    ]
