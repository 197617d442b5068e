"""The schedule: which teams meet, in which round, on which start boards.

Deterministic: the same league file (teams in the same order, same format, same seed) always gives
the same schedule, so a resumed league continues exactly where it stopped and a game can be
replayed by anyone from its board seed.

A match is `games_per_match` games (docs/tournament.md §1: 6, the first move alternating). Games
are numbered from 1; games 2k+1 and 2k+2 form pair k and are played on the same start board with
the sides swapped, so neither board nor first move favours a team.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from league.config import Format, LeagueConfig

__all__ = ["Match", "ScheduledGame", "board_seed", "build_schedule", "schedule_fingerprint"]


@dataclass(frozen=True)
class ScheduledGame:
    """One game: `team_one` moves first (Team.ONE), `team_two` second."""

    match_id: int
    number: int  # 1..games_per_match
    board_seed: int
    team_one: str
    team_two: str

    @property
    def pair(self) -> int:
        """The pair index: games 1-2 are pair 0, 3-4 pair 1, …"""
        return (self.number - 1) // 2


@dataclass(frozen=True)
class Match:
    """A meeting of two teams. `home` plays Team.ONE in the odd-numbered games."""

    id: int  # 1-based, in schedule order
    round: int  # 1-based
    home: str
    away: str
    games: tuple[ScheduledGame, ...]


def board_seed(league_seed: int, match_id: int, pair: int) -> int:
    """The start-board seed of a pair of games: a hash of (league seed, match, pair), 63 bits so
    it fits a signed 64-bit column. Stable across Python versions and machines."""
    digest = hashlib.sha256(f"piranhas-league:{league_seed}:{match_id}:{pair}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _round_robin(team_ids: list[str]) -> list[list[tuple[str, str]]]:
    """Rounds of (home, away) pairs by the circle method (Berger tables): every pair exactly
    once, and every team's home count within one of its away count."""
    ids: list[str | None] = list(team_ids)
    if len(ids) % 2:
        ids.append(None)  # a bye
    n = len(ids)
    rounds: list[list[tuple[str, str]]] = []
    for r in range(n - 1):
        pairs: list[tuple[str, str]] = []
        fixed, first = ids[n - 1], ids[r]
        # The fixed team alternates home and away from round to round.
        if fixed is not None and first is not None:
            pairs.append((first, fixed) if r % 2 == 0 else (fixed, first))
        for k in range(1, n // 2):
            a, b = ids[(r + k) % (n - 1)], ids[(r - k) % (n - 1)]
            if a is None or b is None:
                continue
            pairs.append((a, b) if k % 2 else (b, a))
        rounds.append(pairs)
    return rounds


def build_schedule(config: LeagueConfig) -> tuple[Match, ...]:
    """Every match of the league in playing order (round by round)."""
    team_ids = [team.id for team in config.teams]
    if config.format is Format.GAUNTLET:
        challenger = config.gauntlet
        assert challenger is not None  # checked by the config
        field = [team for team in team_ids if team != challenger]
        rounds = [
            [(challenger, other) if index % 2 == 0 else (other, challenger)]
            for index, other in enumerate(field)
        ]
    else:
        rounds = _round_robin(team_ids)
        if config.format is Format.DOUBLE_ROUND_ROBIN:
            rounds += [[(away, home) for home, away in pairs] for pairs in rounds]

    matches: list[Match] = []
    for round_index, pairs in enumerate(rounds, start=1):
        for home, away in pairs:
            match_id = len(matches) + 1
            games = []
            for number in range(1, config.games_per_match + 1):
                pair = (number - 1) // 2
                one, two = (home, away) if number % 2 else (away, home)
                games.append(
                    ScheduledGame(
                        match_id, number, board_seed(config.seed, match_id, pair), one, two
                    )
                )
            matches.append(Match(match_id, round_index, home, away, tuple(games)))
    return tuple(matches)


def schedule_fingerprint(matches: tuple[Match, ...]) -> str:
    """A digest of the schedule, stored with the results: a store refuses to continue with a
    league file whose teams, format, games or seed were changed after games were played."""
    text = ";".join(
        f"{g.match_id},{g.number},{g.board_seed},{g.team_one},{g.team_two}"
        for match in matches
        for g in match.games
    )
    return hashlib.sha256(text.encode()).hexdigest()
