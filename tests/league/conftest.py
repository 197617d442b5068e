"""Shared league-file builders for the league tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from league.config import LeagueConfig, parse_league


def league_text(team_ids: list[str], extra: str = "") -> str:
    """A league file with command bots for `team_ids` and `extra` top-level keys."""
    teams = "".join(
        f'[[teams]]\nid = "{team_id}"\nname = "Team {team_id.upper()}"\ncommand = "bot"\n'
        for team_id in team_ids
    )
    return f'name = "Test League"\n{extra}\n{teams}'


@pytest.fixture
def make_league() -> Callable[..., LeagueConfig]:
    """make_league(["a", "b"], 'seed = 3') -> LeagueConfig."""

    def make(team_ids: list[str], extra: str = "") -> LeagueConfig:
        return parse_league(league_text(team_ids, extra))

    return make


@pytest.fixture
def make_league_text() -> Callable[..., str]:
    """make_league_text(["a", "b"], 'seed = 3') -> the league file's text."""
    return league_text
