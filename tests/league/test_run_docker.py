"""`piranhas-league run --mode docker` against a real Docker daemon: a four-team league of
`folder` teams built on the bot base image (the bots of tests/sandbox/sandbox_bot.py): one that
plays, one that allocates past the league's memory limit, one that looks for a way out, one
that crashes. The league is played to the end by the real command in a subprocess, then
checked from the outside: one result per scheduled game, the OOM bot's and the crasher's
games lost with their exit recorded, the probe saw only `lo` and no route, the records
verify, no container is left. Then a league killed with SIGKILL mid-run is resumed: the dead
run's containers are swept and every game is recorded exactly once.

Needs a Docker daemon (`.ci/docker-env.sh start`); skipped otherwise."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from league.config import load_league
from league.schedule import build_schedule
from league.standings import compute_standings
from league.store import LeagueStore
from sandbox.docker import docker_cli as docker_client
from tests.helpers.docker import bot_folder, cli, labelled_containers, require_docker

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
MEMORY_MIB = 160  # the OOM bot reaches it in a fraction of a second
TEAMS = {"normal": "play", "hog": "oom", "probe": "probe", "crasher": "crash"}


def league_file(directory: Path) -> Path:
    """The four teams, two games a match, small timeouts and memory limit."""
    lines = [
        'name = "Dockerliga"',
        "games_per_match = 2",
        "seed = 11",
        "concurrency = 2",
        "[timeouts]",
        "soft = 2.0",
        "hard = 5.0",
        "startup = 30.0",
        "game = 120.0",
        "[limits]",
        f'memory = "{MEMORY_MIB}m"',
    ]
    for team_id, mode in TEAMS.items():
        folder = bot_folder(directory / "bots", mode)
        lines += ["[[teams]]", f'id = "{team_id}"', f'folder = "{folder}"']
    path = directory / "liga.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def piranhas_league(*arguments: str) -> subprocess.Popen[str]:
    """`python -m cli.league ARGUMENTS`, this checkout's code, started."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "cli.league", *arguments],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=600)
    return process.returncode, out, err


@pytest.fixture(scope="module")
def docker_ready() -> Iterator[None]:
    """A daemon with the bot base image; the league's folder images are removed afterwards."""
    require_docker()
    yield
    built = cli("images", "--quiet", "piranhas-league/*").split()
    if built:
        cli("rmi", "--force", *built)


def test_a_docker_league_is_played_to_the_end(tmp_path: Path, docker_ready: None) -> None:
    path = league_file(tmp_path)
    code, out, err = finish(piranhas_league("run", str(path), "--mode", "docker"))
    assert code == 0, f"{out}\n{err}"
    assert labelled_containers() == []

    config = load_league(path)
    matches = build_schedule(config)
    store = LeagueStore.sqlite(config.database)
    try:
        progress = store.progress()
        finished = store.finished_games()
    finally:
        store.close()
    assert (progress.finished, progress.pending, progress.running) == (12, 0, 0)
    rows = (
        sqlite3.connect(config.database)
        .execute("SELECT match_id, game_number FROM results")
        .fetchall()
    )
    assert sorted(rows) == sorted(
        (game.match_id, game.number) for match in matches for game in match.games
    )  # exactly one result per scheduled game

    names = {team.id: team.name for team in config.teams}
    for game in finished:
        teams = (game.game.team_one, game.game.team_two)
        outcome = game.outcome
        for loser in ("hog", "crasher"):
            if loser in teams:
                # Lost, and the server's reason names it as the one who left.
                other = teams[1 - teams.index(loser)]
                if other not in ("hog", "crasher"):
                    assert outcome.winner == other, (game, outcome.reason)
                assert not outcome.regular
                assert f"{names[loser]} hat das Spiel verlassen" in outcome.reason or (
                    other in ("hog", "crasher")
                ), outcome.reason
    # The exit of every OOM-killed and crashed container is in the output's game lines.
    lines = [line for line in out.splitlines() if line.startswith("match ")]
    assert len(lines) == 12
    hog_lines = [line for line in lines if names["hog"] in line]
    assert hog_lines and all(
        f"killed: out of memory ({MEMORY_MIB} MiB)" in line for line in hog_lines
    ), hog_lines
    # (Against the OOM bot the game may end before the crasher's second move.)
    crasher_lines = [
        line for line in lines if names["crasher"] in line and names["hog"] not in line
    ]
    assert crasher_lines and all("exit 3" in line for line in crasher_lines), crasher_lines

    # The probe saw only the loopback interface and no route, in every game it played.
    probe_logs = [
        log
        for log in (tmp_path / "league.logs").rglob("*.log")
        if "mode=probe" in log.read_text(encoding="utf-8", errors="replace")
    ]
    assert len(probe_logs) == 6  # three matches of two games
    for log in probe_logs:
        text = log.read_text(encoding="utf-8", errors="replace")
        assert "probe: interfaces=lo\n" in text
        assert "probe: routes=0 default_routes=0" in text
        assert "eth0" not in text

    standings = compute_standings(config, matches, finished)
    assert standings.matches_complete == 6
    assert standings.rows[0].team_id in ("normal", "probe")
    assert {row.team_id for row in standings.rows[2:]} == {"hog", "crasher"}

    records = sorted((tmp_path / "league.records").glob("*.xml"))
    assert len(records) == 12
    code, out, err = finish(piranhas_league("verify", *map(str, records)))
    assert code == 0, out + err
    assert "12 of 12 records verified" in out
    assert labelled_containers() == []


def test_a_killed_docker_league_resumes_and_plays_every_game_once(
    tmp_path: Path, docker_ready: None
) -> None:
    path = league_file(tmp_path)
    config = load_league(path)
    league = piranhas_league("run", str(path), "--mode", "docker")
    # Kill it hard while bots run in containers: after its first result is stored. Killed
    # on a failure too: a run left playing would start containers under the next tests.
    try:
        deadline = time.monotonic() + 300
        while True:
            assert league.poll() is None, league.communicate()
            assert time.monotonic() < deadline, "no game finished"
            if stored_results(config.database) >= 1 and labelled_containers():
                break
            time.sleep(0.2)
    finally:
        league.send_signal(signal.SIGKILL)
        league.communicate(timeout=60)

    code, out, err = finish(piranhas_league("run", str(path), "--mode", "docker"))
    assert code == 0, f"{out}\n{err}"
    assert labelled_containers() == []  # the dead run's, swept; and the new run's, gone
    rows = (
        sqlite3.connect(config.database)
        .execute("SELECT match_id, game_number FROM results")
        .fetchall()
    )
    assert len(rows) == len(set(rows)) == 12


def stored_results(database: Path) -> int:
    """The results stored so far; 0 before the store made its tables (the file exists from
    the store's first connection, its schema a moment later)."""
    if not database.exists():
        return 0
    try:
        return int(sqlite3.connect(database).execute("SELECT count(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError as error:
        if "no such table" not in str(error):
            raise
        return 0


COMPOSE = Path("/usr/bin/docker-compose")


def test_the_compose_league_plays_stops_on_sigterm_and_continues(
    docker_ready: None, tmp_path: Path
) -> None:
    """docker-compose.league.yml with Debian's docker-compose (v1): its socket mount, the
    same-path binds of the checkout and the socket directory, the mounted Docker CLI and the
    SIGTERM of `stop`. The image `piranhas-server:local` (Dockerfile target `server`) is
    replaced by the bot base image running this checkout's code on the test venv's packages
    (mounted at their own path): building it needs the smoke test's wheelhouse."""
    if not COMPOSE.exists():
        pytest.skip("no /usr/bin/docker-compose (Debian's docker-compose)")
    work = REPO / "docker" / "league" / "run" / f"pytest-{os.getpid()}"  # under $PWD: mounted
    site_packages = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site_packages /= "site-packages"
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    project = f"piranhas-test-{os.getpid()}"
    try:
        for mode in ("play", "crash"):
            bot_folder(work / "bots", mode)
        teams = (("a", "play"), ("b", "play"), ("c", "crash"))
        (work / "liga.toml").write_text(
            'name = "Compose-Test"\ngames_per_match = 6\nconcurrency = 2\nseed = 3\n'
            "[timeouts]\nsoft = 2.0\nhard = 5.0\nstartup = 30.0\n"
            + "".join(f'[[teams]]\nid = "{t}"\nfolder = "bots/{m}"\n' for t, m in teams),
            encoding="utf-8",
        )
        (work / "override.yml").write_text(
            f"""services:
  league:
    image: piranhas/bot-base:bookworm
    entrypoint: ["python3", "-m", "cli.league"]
    command: ["run", "{work}/liga.toml", "--db", "/data/league.sqlite", "--mode", "docker"]
    environment:
      PYTHONPATH: {REPO}:{site_packages}
    volumes:
      - {host.removeprefix("unix://")}:/var/run/docker.sock
      - {site_packages}:{site_packages}:ro
""",
            encoding="utf-8",
        )
        env = dict(os.environ, PWD=str(REPO), PIRANHAS_DOCKER_CLI=docker_client())
        base = [str(COMPOSE), "--project-name", project, "--file", "docker-compose.league.yml"]
        base += ["--file", str(work / "override.yml")]

        def compose(*arguments: str) -> str:
            done = subprocess.run(
                [*base, *arguments], cwd=REPO, env=env, capture_output=True, text=True,
                timeout=300, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stdout + done.stderr
            return done.stdout + done.stderr

        try:
            compose("up", "--detach", "--no-build")
            deadline = time.monotonic() + 120
            while not labelled_containers():  # stopped while bots run
                assert time.monotonic() < deadline, compose("logs", "--no-color")
                time.sleep(0.2)
            compose("stop")
            assert labelled_containers() == []  # SIGTERM: the runner stopped its bots
            assert "interrupted: the same command continues" in compose("logs", "--no-color")
            out = compose("up", "--no-build")  # continues to the end in the foreground
            assert "3/3 matches complete, 18/18 games recorded" in out, out
            assert "0-0-12" in out  # the crasher lost every game
            assert labelled_containers() == []
        finally:
            compose("down", "--volumes")
    finally:
        shutil.rmtree(work, ignore_errors=True)
