"""Standings as the Software-Challenge ranks them (docs/tournament.md §1).

- A match is won by the team that won more of its games; equal is a draw. Match points 2/1/0.
- Ties on match points are broken by the configured chain, by default: the sum of Siegpunkte over
  all games (2/1/0 per game), then the Schwarmgröße criterion — the AVERAGE over the team's games of
  its heaviest swarm's weight at the end of the game, as the plugin aggregates that fragment (a
  violator scores 0 in that game, as in the official result) — then lot.
- Lot is a seeded draw (a hash of the league seed and the team id): reproducible, and every
  team's lot position is published with the table.

Only complete matches count (all their games recorded), so a half-played match never changes the
table and every criterion is computed over the same games. Averages are exact fractions: teams
tie on Schwarmgröße only when their averages are exactly equal.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from league.config import LeagueConfig, Tiebreak
from league.schedule import Match
from league.store import StoredGame

__all__ = ["MatchResult", "Standings", "TeamStanding", "compute_standings", "lot_order"]

MATCH_POINTS = "match-points"


@dataclass(frozen=True)
class MatchResult:
    """A complete match: games won by each side (the rest were drawn or aborted)."""

    match: Match
    home_wins: int
    away_wins: int

    def points(self, team_id: str) -> int:
        """Match points for `team_id`: 2 won, 1 drawn, 0 lost."""
        mine, theirs = (
            (self.home_wins, self.away_wins)
            if team_id == self.match.home
            else (self.away_wins, self.home_wins)
        )
        return 2 if mine > theirs else 1 if mine == theirs else 0

    def score_for(self, team_id: str) -> str:
        """`"4-2"` from `team_id`'s side."""
        if team_id == self.match.home:
            return f"{self.home_wins}-{self.away_wins}"
        return f"{self.away_wins}-{self.home_wins}"


@dataclass(frozen=True)
class TeamStanding:
    """One row of the table. `decided_by` names the criterion that put this team below the
    one above it (None for the first row)."""

    rank: int
    team_id: str
    name: str
    matches: int
    won: int
    drawn: int
    lost: int
    match_points: int
    games: int
    games_won: int
    games_drawn: int
    games_lost: int
    siegpunkte: int
    schwarm_average: Fraction
    lot: int
    decided_by: str | None

    def criterion(self, name: str) -> Any:
        """The value compared for a criterion (higher is better, except lot)."""
        return {
            MATCH_POINTS: self.match_points,
            Tiebreak.SIEGPUNKTE.value: self.siegpunkte,
            Tiebreak.SCHWARMGROESSE.value: self.schwarm_average,
            Tiebreak.GAMES_WON.value: self.games_won,
            Tiebreak.LOT.value: self.lot,
        }[name]


def lot_order(seed: int, team_ids: Iterable[str]) -> dict[str, int]:
    """The seeded lot: each team's position (1 = drawn first, ranks highest on a full tie)."""

    def draw(team_id: str) -> bytes:
        return hashlib.sha256(f"piranhas-league-lot:{seed}:{team_id}".encode()).digest()

    ordered = sorted(team_ids, key=draw)
    return {team_id: position for position, team_id in enumerate(ordered, start=1)}


@dataclass(frozen=True)
class Standings:
    """The table, the crosstable and the league's progress, with exports."""

    league: str
    criteria: tuple[str, ...]  # match-points, then the tie-break chain
    rows: tuple[TeamStanding, ...]
    crosstable: dict[str, dict[str, tuple[str, ...]]]  # row team → column team → match scores
    matches_complete: int
    matches_total: int
    games_recorded: int
    games_total: int

    # -- exports --

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: Schwarmgröße both as a number (6 decimals) and exact."""
        return {
            "league": self.league,
            "criteria": list(self.criteria),
            "progress": {
                "matches_complete": self.matches_complete,
                "matches_total": self.matches_total,
                "games_recorded": self.games_recorded,
                "games_total": self.games_total,
            },
            "standings": [
                {
                    "rank": row.rank,
                    "team": row.team_id,
                    "name": row.name,
                    "matches": row.matches,
                    "won": row.won,
                    "drawn": row.drawn,
                    "lost": row.lost,
                    "match_points": row.match_points,
                    "games": row.games,
                    "games_won": row.games_won,
                    "games_drawn": row.games_drawn,
                    "games_lost": row.games_lost,
                    "siegpunkte": row.siegpunkte,
                    "schwarmgroesse": round(float(row.schwarm_average), 6),
                    "schwarmgroesse_exact": str(row.schwarm_average),
                    "lot": row.lot,
                    "decided_by": row.decided_by,
                }
                for row in self.rows
            ],
            "crosstable": {
                team: {other: list(scores) for other, scores in cells.items()}
                for team, cells in self.crosstable.items()
            },
        }

    def to_json(self) -> str:
        """The table as a JSON document."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n"

    CSV_COLUMNS = (
        "rank",
        "team",
        "name",
        "matches",
        "won",
        "drawn",
        "lost",
        "match_points",
        "games",
        "games_won",
        "games_drawn",
        "games_lost",
        "siegpunkte",
        "schwarmgroesse",
        "lot",
        "decided_by",
    )

    def to_csv(self) -> str:
        """One row per team, a header line first."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.CSV_COLUMNS)
        for row in self.to_dict()["standings"]:
            writer.writerow(
                "" if row[column] is None else row[column] for column in self.CSV_COLUMNS
            )
        return out.getvalue()

    def to_html(self) -> str:
        """One self-contained page (inline CSS, no scripts, no external resources)."""
        return _html_page(self)


def compute_standings(
    config: LeagueConfig, matches: Iterable[Match], finished: Iterable[StoredGame]
) -> Standings:
    """Rank the teams from the recorded games of complete matches."""
    matches = tuple(matches)
    by_game = {(f.game.match_id, f.game.number): f for f in finished}
    lots = lot_order(config.seed, (team.id for team in config.teams))
    stats: dict[str, dict[str, int]] = {
        team.id: dict.fromkeys(
            ("matches", "won", "drawn", "lost", "mp", "games", "gw", "gd", "gl", "sp", "swarm"), 0
        )
        for team in config.teams
    }
    crosstable: dict[str, dict[str, list[str]]] = {
        team.id: {other.id: [] for other in config.teams if other.id != team.id}
        for team in config.teams
    }
    complete = 0
    for match in matches:
        games = [by_game.get((match.id, game.number)) for game in match.games]
        if any(game is None for game in games):
            continue
        complete += 1
        wins = {match.home: 0, match.away: 0}
        for finished_game in games:
            assert finished_game is not None
            game, outcome = finished_game.game, finished_game.outcome
            for side, team_id in enumerate((game.team_one, game.team_two)):
                row = stats[team_id]
                row["games"] += 1
                row["sp"] += outcome.siegpunkte[side]
                row["swarm"] += outcome.schwarm[side]
                if outcome.winner == team_id:
                    row["gw"] += 1
                    wins[team_id] += 1
                elif outcome.winner is None:
                    row["gd"] += 1
                else:
                    row["gl"] += 1
        result = MatchResult(match, wins[match.home], wins[match.away])
        for team_id in (match.home, match.away):
            row = stats[team_id]
            points = result.points(team_id)
            row["matches"] += 1
            row["mp"] += points
            row["won" if points == 2 else "drawn" if points == 1 else "lost"] += 1
        crosstable[match.home][match.away].append(result.score_for(match.home))
        crosstable[match.away][match.home].append(result.score_for(match.away))

    criteria = (MATCH_POINTS, *(t.value for t in config.tiebreaks))

    def key(team_id: str) -> tuple[Any, ...]:
        row = stats[team_id]
        values: list[Any] = [-row["mp"]]
        for criterion in config.tiebreaks:
            if criterion is Tiebreak.SIEGPUNKTE:
                values.append(-row["sp"])
            elif criterion is Tiebreak.SCHWARMGROESSE:
                values.append(-_average(row["swarm"], row["games"]))
            elif criterion is Tiebreak.GAMES_WON:
                values.append(-row["gw"])
            else:
                values.append(lots[team_id])
        return tuple(values)

    order = sorted((team.id for team in config.teams), key=key)
    rows: list[TeamStanding] = []
    for rank, team_id in enumerate(order, start=1):
        row = stats[team_id]
        decided_by = None
        if rows:
            above = key(order[rank - 2])
            mine = key(team_id)
            decided_by = next(
                (name for name, a, b in zip(criteria, above, mine, strict=True) if a != b), None
            )
        rows.append(
            TeamStanding(
                rank=rank,
                team_id=team_id,
                name=config.team(team_id).name,
                matches=row["matches"],
                won=row["won"],
                drawn=row["drawn"],
                lost=row["lost"],
                match_points=row["mp"],
                games=row["games"],
                games_won=row["gw"],
                games_drawn=row["gd"],
                games_lost=row["gl"],
                siegpunkte=row["sp"],
                schwarm_average=_average(row["swarm"], row["games"]),
                lot=lots[team_id],
                decided_by=decided_by,
            )
        )
    return Standings(
        league=config.name,
        criteria=criteria,
        rows=tuple(rows),
        crosstable={
            team: {other: tuple(scores) for other, scores in cells.items()}
            for team, cells in crosstable.items()
        },
        matches_complete=complete,
        matches_total=len(matches),
        games_recorded=len(by_game),
        games_total=sum(len(match.games) for match in matches),
    )


def _average(total: int, count: int) -> Fraction:
    return Fraction(total, count) if count else Fraction(0)


_CRITERION_LABELS = {
    MATCH_POINTS: "match points",
    Tiebreak.SIEGPUNKTE.value: "Siegpunkte",
    Tiebreak.SCHWARMGROESSE.value: "Schwarmgröße",
    Tiebreak.GAMES_WON.value: "games won",
    Tiebreak.LOT.value: "lot",
}

_CSS = """
:root { color-scheme: light dark; --line: #d0d4da; --head: #f3f5f8; --muted: #667085; }
@media (prefers-color-scheme: dark) {
  :root { --line: #3a3f47; --head: #22262c; --muted: #9aa3af; }
}
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto;
       max-width: 72rem; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; }
h2 { font-size: 1.15rem; margin-top: 2rem; }
p.meta { color: var(--muted); margin-top: 0; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .6rem; text-align: right; }
th { background: var(--head); font-weight: 600; }
td.name, th.name { text-align: left; }
td.self { background: var(--head); }
td.note { color: var(--muted); font-size: .85em; text-align: left; }
tbody tr:first-child td.rank { font-weight: 700; }
footer { color: var(--muted); font-size: .85em; margin-top: 2rem; }
"""


def _html_page(standings: Standings) -> str:
    esc = html.escape
    names = {row.team_id: row.name for row in standings.rows}
    chain = " → ".join(_CRITERION_LABELS[c] for c in standings.criteria)
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(standings.league)} — standings</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{esc(standings.league)}</h1>",
        f'<p class="meta">{standings.matches_complete} of {standings.matches_total} matches '
        f"complete, {standings.games_recorded} of {standings.games_total} games recorded. "
        f"Ranking: {esc(chain)}.</p>",
        "<h2>Standings</h2>",
        "<table>",
        '<thead><tr><th>#</th><th class="name">Team</th><th>Matches</th><th>W</th><th>D</th>'
        "<th>L</th><th>Points</th><th>Games W–D–L</th><th>Siegpunkte</th><th>Ø Schwarmgröße</th>"
        '<th>Lot</th><th class="name">Tie broken by</th></tr></thead>',
        "<tbody>",
    ]
    for row in standings.rows:
        # Only real ties are annotated: a team with fewer match points is simply below.
        tie = row.decided_by not in (None, MATCH_POINTS)
        decided = _CRITERION_LABELS[row.decided_by] if tie and row.decided_by else ""
        lines.append(
            f'<tr><td class="rank">{row.rank}</td><td class="name">{esc(row.name)}</td>'
            f"<td>{row.matches}</td><td>{row.won}</td><td>{row.drawn}</td><td>{row.lost}</td>"
            f"<td><strong>{row.match_points}</strong></td>"
            f"<td>{row.games_won}–{row.games_drawn}–{row.games_lost}</td>"
            f"<td>{row.siegpunkte}</td><td>{float(row.schwarm_average):.3f}</td>"
            f'<td>{row.lot}</td><td class="note">{esc(decided)}</td></tr>'
        )
    lines += ["</tbody>", "</table>", "<h2>Crosstable</h2>", "<table>", "<thead><tr><th></th>"]
    order = [row.team_id for row in standings.rows]
    lines.append("".join(f"<th>{esc(names[t])}</th>" for t in order) + "</tr></thead><tbody>")
    for team in order:
        cells = [f'<th class="name">{esc(names[team])}</th>']
        for other in order:
            if other == team:
                cells.append('<td class="self"></td>')
            else:
                scores = standings.crosstable.get(team, {}).get(other, ())
                cells.append(f"<td>{esc(' '.join(scores)) if scores else '·'}</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines += [
        "</tbody>",
        "</table>",
        "<footer>Games won in each match, row team first. Match points 2 / 1 / 0; "
        "Schwarmgröße is the average over the team's games of its heaviest swarm's weight."
        "</footer>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(lines)
