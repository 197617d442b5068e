"""What the distributed commands check before they do anything (fleet/preflight.py), without a
server: wrong addresses and passwords on the command line are one clear line on stderr and exit
status 2, never a traceback; a league file that is not the league in the store is refused,
naming what differs; `cancel` of a match that does not exist fails; Ctrl+C ends `distribute`
with a sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.league import main
from fleet import coordinator, preflight
from league.config import parse_league

TEAMS = "".join(f'[[teams]]\nid = "{t}"\ncommand = "bot --seed {n}"\n' for n, t in enumerate("abc"))
LEAGUE = f'name = "Pre"\ngames_per_match = 2\nseed = 5\n{TEAMS}'


@pytest.fixture
def league(tmp_path: Path) -> Path:
    path = tmp_path / "league.toml"
    path.write_text(LEAGUE)
    return path


@pytest.fixture(autouse=True)
def no_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIRANHAS_DATABASE", "PIRANHAS_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(f"{name}_FILE", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err


@pytest.mark.parametrize(
    ("redis_url", "says"),
    [
        ("localhost:6379", "is not a Redis URL: write redis://"),
        ("http://localhost:6379/0", "is not a Redis URL"),
        ("redis://localhost:63x9/0", "Redis redis://localhost:63x9/0: "),
    ],
)
def test_a_wrong_redis_url_is_an_error_message(
    league: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], redis_url: str, says: str
) -> None:
    database = str(tmp_path / "store.sqlite")
    for command in ("distribute", "worker"):
        argv = [command, str(league), "--database", database, "--redis", redis_url]
        status, err = run(capsys, *argv)
        assert status == 2 and says in err, err


def test_a_database_url_of_an_unknown_scheme_is_not_taken_for_a_file(
    league: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = "postgress://league@db:5432/league"
    status, err = run(capsys, "status", str(league), "--database", typo)
    assert status == 2
    assert "unknown scheme 'postgress': write postgresql://" in err
    assert not (tmp_path / "postgress:").exists() and not Path("postgress:").exists()


def test_passwords_are_refused_on_the_command_line_and_read_from_the_environment(
    league: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    status, err = run(capsys, "status", str(league), "--database", "postgresql://u:pw@db/league")
    assert status == 2
    assert "--database holds a password, which `ps` shows" in err and "pw" not in err.split(":")[0]
    assert "PIRANHAS_DATABASE_FILE" in err
    database = str(tmp_path / "store.sqlite")
    status, err = run(
        capsys, "worker", str(league), "--database", database, "--redis", "redis://:pw@r:6379/0"
    )
    assert status == 2 and "--redis holds a password" in err
    # An unencoded '@' in a password: the host would be "pass@host"; say what to do.
    monkeypatch.setenv("PIRANHAS_DATABASE", "postgresql://league:p@ss@db:5432/league")
    status, err = run(capsys, "status", str(league))
    assert status == 2 and "percent-encode" in err and "p@ss" not in err


def test_cancelling_a_match_that_does_not_exist_fails_and_cancels_nothing(
    league: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = str(tmp_path / "store.sqlite")
    status, err = run(capsys, "cancel", str(league), "--database", database, "--match", "99")
    assert status == 2 and "no match 99 in this league" in err
    status, _ = run(
        capsys, "cancel", str(league), "--database", database, "--match", "1", "--match", "99"
    )
    assert status == 2
    assert main(["status", str(league), "--database", database]) == 0
    assert "cancelled 0" in capsys.readouterr().out


def test_the_fingerprint_names_the_part_that_differs() -> None:
    base = preflight.describe(parse_league(LEAGUE))
    changes = {
        "teams": LEAGUE.replace("bot --seed 2", "bot --seed 7"),
        "schedule": LEAGUE.replace("seed = 5", "seed = 6"),
        "rules": LEAGUE + "[timeouts]\nsoft = 3.0\n",
    }
    for part, text in changes.items():
        other = preflight.describe(parse_league(text))
        assert [key for key in base if base[key] != other[key]] == [part]
    config = parse_league(LEAGUE)
    queue = preflight.queue_name(config, "id")
    assert queue == preflight.queue_name(parse_league(LEAGUE), "id")
    assert queue != preflight.queue_name(parse_league(changes["teams"]), "id")
    assert queue != preflight.queue_name(config, "another league, the same file")
    # Everything decides it except what only says where this machine keeps things.
    elsewhere = parse_league('database = "/elsewhere.sqlite"\nconcurrency = 2\n' + LEAGUE)
    assert preflight.fingerprint(elsewhere) == preflight.fingerprint(config)


def test_status_and_cancel_refuse_another_league_file(
    league: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = str(tmp_path / "store.sqlite")
    assert main(["status", str(league), "--database", database]) == 0
    capsys.readouterr()
    league.write_text(LEAGUE.replace("bot --seed 2", "another-bot"))  # same teams, other bot
    for command in (["status"], ["cancel", "--all"]):
        status, err = run(capsys, command[0], str(league), "--database", database, *command[1:])
        assert status == 2
        assert "this league file is not the league in the store: the teams and their bots" in err


def test_ctrl_c_on_a_waiting_distribute_is_a_sentence_and_status_130(
    league: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(preflight, "check_redis", lambda url: None)
    monkeypatch.setattr(coordinator, "enqueue", lambda *args, **kwargs: [1, 2, 3])
    monkeypatch.setattr(coordinator, "wait_until_final", interrupted)
    database = str(tmp_path / "store.sqlite")
    status, err = run(
        capsys, "distribute", str(league), "--database", database, "--redis", "redis://r:6379/0"
    )
    assert status == 130
    assert "interrupted; the queued matches stay queued" in err
