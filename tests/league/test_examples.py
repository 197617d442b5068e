"""The example league files in docs/ work as shipped: docs/league.example.toml is played to
the end by the real `piranhas-league run` (process mode, its built-in bots; two games a match
instead of six to stay small), and docs/league.docker.toml is a valid league whose images
this repository builds. The Docker group of .ci/run plays Docker leagues of its own
(tests/league/test_run_docker.py)."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from league.config import BotKind, load_league
from league.run import check_mode
from league.schedule import build_schedule

REPO = Path(__file__).resolve().parents[2]
PROCESS_EXAMPLE = REPO / "docs" / "league.example.toml"
DOCKER_EXAMPLE = REPO / "docs" / "league.docker.toml"
PIRANHAS_LEAGUE = Path(sys.executable).parent / "piranhas-league"


def test_the_process_example_is_played_to_the_end_as_shipped(tmp_path: Path) -> None:
    text = PROCESS_EXAMPLE.read_text(encoding="utf-8")
    small, replaced = re.subn(r"(?m)^games_per_match = 6$", "games_per_match = 2", text)
    assert replaced == 1  # otherwise the league below is not the example's
    league = tmp_path / "league.example.toml"
    league.write_text(small, encoding="utf-8")
    run = subprocess.run(
        [str(PIRANHAS_LEAGUE), "run", str(league)],
        cwd=REPO,  # as the file's comment says: from the repository root
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    config = load_league(league)
    assert config.database.parent == tmp_path
    with sqlite3.connect(config.database) as db:
        results = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    games = sum(len(match.games) for match in build_schedule(config))
    assert results == games == 6  # three teams, three matches of two games
    for team in config.teams:
        assert team.name in run.stdout  # the standings printed at the end


def test_the_docker_example_is_a_league_of_images_this_repository_builds() -> None:
    config = load_league(DOCKER_EXAMPLE)
    images = {team.bot.image for team in config.teams if team.bot.kind is BotKind.IMAGE}
    assert images  # a docker-mode league: at least one team in a container
    built = {
        tag
        for compose in REPO.glob("docker-compose*.yml")
        for tag in re.findall(r"(?m)^\s*image:\s*(\S+)", compose.read_text(encoding="utf-8"))
    }
    assert images <= built, f"{images - built} built by no compose file of the repository"
    kinds = {team.bot.kind for team in config.teams}
    assert kinds <= {BotKind.IMAGE, BotKind.COMMAND}  # no folder that a clone lacks
    assert [match.games for match in build_schedule(config)]
    assert config.database == DOCKER_EXAMPLE.parent / "league-docker.sqlite"
    check_mode(config, "docker")  # its command teams start (the run checks this first, too)
