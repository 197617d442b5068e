"""A small league store for the web viewer's tests, filled through the store's API with real
games: random legal moves from each game's seeded board, the engine's result, and the game
record `league.run` would write (`league.records.record_game`)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from engine import GameState, PlayerEntry, Team, game_result
from league.config import LeagueConfig, load_league
from league.records import record_game, write_record
from league.schedule import Match, ScheduledGame, build_schedule
from league.store import GameOutcome, LeagueStore

TEAMS = {"haie": "Die Haie", "barsche": "Flinke Barsche", "hechte": "Hechte", "zander": "Zander"}


@dataclass
class League:
    """A league file and its SQLite store."""

    file: Path
    database: Path
    config: LeagueConfig
    matches: tuple[Match, ...]

    def game(self, match_id: int, number: int) -> ScheduledGame:
        """A scheduled game."""
        return self.matches[match_id - 1].games[number - 1]

    def play_next(self, count: int) -> list[tuple[ScheduledGame, GameState]]:
        """Play and record the next `count` games in schedule order; each game and its final
        state."""
        played = []
        store = LeagueStore.sqlite(self.database)
        try:
            for _ in range(count):
                claim = store.claim_next("test")
                assert claim is not None
                state, _record, outcome = play(self, claim.game)
                store.record(claim.match_id, claim.number, claim.attempt, outcome)
                played.append((claim.game, state))
        finally:
            store.close()
        return played


def play(league: League, game: ScheduledGame) -> tuple[GameState, bytes, GameOutcome]:
    """A random game to the end; its final state, record and outcome."""
    rng = random.Random(f"{game.match_id}-{game.number}")
    state = GameState.initial(game.board_seed)
    moves = []
    while not state.is_over:
        move = rng.choice(state.legal_moves())
        state = state.apply(move)
        moves.append(move)
    entries = [
        PlayerEntry(Team.ONE, TEAMS[game.team_one], None),
        PlayerEntry(Team.TWO, TEAMS[game.team_two], None),
    ]
    result = game_result(state, entries)
    match = league.matches[game.match_id - 1]
    record = record_game(
        league=league.config.name,
        round=match.round,
        match=game.match_id,
        number=game.number,
        date="2026-11-30T14:00:00+00:00",
        seed=game.board_seed,
        team_ids=[game.team_one, game.team_two],
        moves=moves,
        move_ms=[5.0] * len(moves),
        result=result,
    )
    xml = write_record(record)
    return state, xml, GameOutcome.from_result(game, result, xml.decode())


def make_league(directory: Path, *, games: int = 2) -> League:
    """Four teams (six matches), `games` games a match, an initialised store next to the file."""
    lines = ['name = "Testliga"', f"games_per_match = {games}", "seed = 11"]
    lines.append('database = "liga.sqlite"')
    for team_id, name in TEAMS.items():
        lines += ["[[teams]]", f'id = "{team_id}"', f'name = "{name}"', 'command = "bot"']
    path = directory / "liga.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = load_league(path)
    matches = build_schedule(config)
    store = LeagueStore.sqlite(config.database)
    try:
        store.initialize(config, matches)
    finally:
        store.close()
    return League(path, config.database, config, matches)
