"""Builders for the ladder tests: a store with teams whose versions passed and are active."""

from __future__ import annotations

import hashlib

from ladder.store import GameResultRow, LadderStore, MatchClaim


class FakeClock:
    """A clock the test moves (seconds since the epoch)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def active_version(store: LadderStore, team_id: int, label: str = "v") -> int:
    """A new version of the team that passed its check and is active."""
    digest = hashlib.sha256(f"{team_id}:{label}".encode()).hexdigest()
    version = store.add_version(team_id, size=1000, sha256=digest, label=label)
    store.set_check_result(version, True, "ok")
    store.activate(team_id, version)
    return version


def teams_with_versions(store: LadderStore, count: int) -> list[tuple[int, int]]:
    """`count` teams named T1, T2, … each with an active version: (team id, version id)."""
    out = []
    for number in range(1, count + 1):
        team = store.create_team(f"T{number}")
        out.append((team, active_version(store, team)))
    return out


def paired_results(claim: MatchClaim, a_wins: int) -> list[GameResultRow]:
    """Results of the claimed match in which version_a wins its first `a_wins` games and
    loses the others; version_a moves first in the odd games."""
    rows = []
    for number in range(1, claim.games + 1):
        won = number <= a_wins
        first = claim.version_a if number % 2 else claim.version_b
        rows.append(
            GameResultRow(
                number,
                first,
                2 if won else 0,
                0 if won else 2,
                "won" if won else "lost",
                "lost" if won else "won",
                f"{claim.match_id}-{number}.xml.gz",
            )
        )
    return rows
