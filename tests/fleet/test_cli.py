"""`piranhas-league status`, `cancel` and the settings the distributed commands need (on an
SQLite store: no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.league import main

LEAGUE = """name = "Cli"
games_per_match = 2
[[teams]]
id = "a"
command = "bot"
[[teams]]
id = "b"
command = "bot"
[[teams]]
id = "c"
command = "bot"
"""


@pytest.fixture
def league(tmp_path: Path) -> Path:
    path = tmp_path / "league.toml"
    path.write_text(LEAGUE)
    return path


def test_status_and_cancel_from_the_command_line(
    league: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = str(tmp_path / "store.sqlite")
    assert main(["status", str(league), "--database", database]) == 0
    out = capsys.readouterr().out
    assert "Cli: 0/3 matches complete, 0/6 games recorded" in out
    assert "new 3  queued 0  running 0  done 0  failed 0  cancelled 0" in out
    assert main(["cancel", str(league), "--database", database, "--match", "2"]) == 0
    assert "cancel requested for 1 matches" in capsys.readouterr().out
    assert main(["cancel", str(league), "--database", database, "--all"]) == 0
    assert "cancel requested for 2 matches" in capsys.readouterr().out
    assert main(["status", str(league), "--database", database]) == 0
    out = capsys.readouterr().out
    assert "cancelled 3" in out
    assert "match 2: cancelled" in out


def test_distribute_and_worker_need_redis(
    league: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PIRANHAS_REDIS_URL", raising=False)
    monkeypatch.delenv("PIRANHAS_REDIS_URL_FILE", raising=False)
    database = str(tmp_path / "store.sqlite")
    for command in ("distribute", "worker"):
        assert main([command, str(league), "--database", database]) == 2
        assert "no Redis: give --redis" in capsys.readouterr().err


def test_the_database_from_the_environment_or_a_secret_file(
    league: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = tmp_path / "database-url"
    secret.write_text(f"{tmp_path / 'from-secret.sqlite'}\n")
    monkeypatch.delenv("PIRANHAS_DATABASE", raising=False)
    monkeypatch.setenv("PIRANHAS_DATABASE_FILE", str(secret))
    assert main(["cancel", str(league), "--match", "1"]) == 0
    assert (tmp_path / "from-secret.sqlite").exists()
    monkeypatch.setenv("PIRANHAS_DATABASE", str(tmp_path / "from-env.sqlite"))
    assert main(["status", str(league)]) == 0
    assert (tmp_path / "from-env.sqlite").exists()
    monkeypatch.setenv("PIRANHAS_DATABASE", "")
    monkeypatch.setenv("PIRANHAS_DATABASE_FILE", str(tmp_path / "missing"))
    assert main(["status", str(league)]) == 2
    assert "PIRANHAS_DATABASE_FILE: cannot read" in capsys.readouterr().err


def test_an_unreachable_postgres_is_an_error_message_not_a_traceback(
    league: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from league import postgres

    monkeypatch.setattr(postgres, "RECONNECT_FOR", 0.0)
    monkeypatch.setattr(postgres, "CONNECT_TIMEOUT", 1)
    # Port 1 on loopback: nothing listens, the connection is refused at once.
    dsn = "postgresql://nobody@127.0.0.1:1/league"
    assert main(["status", str(league), "--database", dsn]) == 2
    err = capsys.readouterr().err
    assert f"PostgreSQL {dsn} is unreachable: Connection refused" in err
    assert "Traceback" not in err
