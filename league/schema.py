"""The league store's schema: the one place that defines the tables.

Plain SQL that SQLite and PostgreSQL both accept: VARCHAR/TEXT/INTEGER/BIGINT/SMALLINT only (no
BOOLEAN, no AUTOINCREMENT, no JSON columns), timestamps as BIGINT milliseconds since the epoch,
booleans as SMALLINT 0/1, composite primary keys instead of rowids, `CREATE TABLE IF NOT EXISTS`.
Queries use `?` placeholders; a PostgreSQL backend rewrites them to `%s` (no literal `?` appears in
any query of `league.store`).

Tables:
- `league_meta` — key/value: schema version, league name, schedule fingerprint.
- `teams`, `matches`, `games` — the schedule. `games.status` is `pending`, `running` or
  `finished`; `games.attempt` is the newest attempt number (the fencing token), 0 before the
  first; `games.lease_until` when a running attempt counts as dead without a heartbeat.
- `attempts` — every attempt ever started, with its worker and how it ended
  (`running`, `finished`, `abandoned`, `expired`).
- `results` — at most one row per game, written in the same transaction that marks the game
  finished, with the attempt that produced it.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

STATEMENTS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS league_meta (
        meta_key VARCHAR(64) NOT NULL PRIMARY KEY,
        meta_value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS teams (
        team_id VARCHAR(64) NOT NULL PRIMARY KEY,
        display_name TEXT NOT NULL,
        position INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS matches (
        match_id INTEGER NOT NULL PRIMARY KEY,
        round_number INTEGER NOT NULL,
        home VARCHAR(64) NOT NULL REFERENCES teams (team_id),
        away VARCHAR(64) NOT NULL REFERENCES teams (team_id)
    )""",
    """CREATE TABLE IF NOT EXISTS games (
        match_id INTEGER NOT NULL REFERENCES matches (match_id),
        game_number INTEGER NOT NULL,
        board_seed BIGINT NOT NULL,
        team_one VARCHAR(64) NOT NULL REFERENCES teams (team_id),
        team_two VARCHAR(64) NOT NULL REFERENCES teams (team_id),
        status VARCHAR(16) NOT NULL,
        attempt INTEGER NOT NULL,
        lease_until BIGINT,
        PRIMARY KEY (match_id, game_number)
    )""",
    """CREATE INDEX IF NOT EXISTS games_by_status ON games (status, match_id, game_number)""",
    """CREATE TABLE IF NOT EXISTS attempts (
        match_id INTEGER NOT NULL,
        game_number INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        worker VARCHAR(200) NOT NULL,
        started_at BIGINT NOT NULL,
        heartbeat_at BIGINT NOT NULL,
        ended_at BIGINT,
        outcome VARCHAR(16) NOT NULL,
        PRIMARY KEY (match_id, game_number, attempt),
        FOREIGN KEY (match_id, game_number) REFERENCES games (match_id, game_number)
    )""",
    """CREATE TABLE IF NOT EXISTS results (
        match_id INTEGER NOT NULL,
        game_number INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        siegpunkte_one INTEGER NOT NULL,
        siegpunkte_two INTEGER NOT NULL,
        schwarm_one INTEGER NOT NULL,
        schwarm_two INTEGER NOT NULL,
        winner VARCHAR(64),
        regular SMALLINT NOT NULL,
        reason TEXT NOT NULL,
        game_record TEXT,
        recorded_at BIGINT NOT NULL,
        PRIMARY KEY (match_id, game_number),
        FOREIGN KEY (match_id, game_number) REFERENCES games (match_id, game_number)
    )""",
)
