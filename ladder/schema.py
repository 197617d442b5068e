"""The ladder store's schema: the one place that defines the tables.

The same rules as `league.schema` (plain SQL that SQLite and PostgreSQL both accept, `?`
placeholders, times as BIGINT milliseconds since the epoch, booleans as SMALLINT 0/1,
`CREATE TABLE IF NOT EXISTS`), plus DOUBLE PRECISION for ratings. Ids are integers handed out
from `ladder_ids` (one row per table, bumped by an UPDATE: PostgreSQL serialises concurrent
bumps on the row lock, SQLite has one writer), so no SERIAL/AUTOINCREMENT dialect is needed.

Tables:
- `ladder_meta` — key/value: schema version.
- `ladder_ids` — the next id per kind of row.
- `teams`, `members` (a member of a team, or an admin with `team_id` NULL), `invites`,
  `tokens` — people. Invite and API tokens are stored as their SHA-256 only.
- `versions` — every upload of a team, numbered 1, 2, … per team; `state` is `queued`,
  `checking`, `passed` or `failed`; `active` marks the one version per team that plays.
  `check_attempt`/`check_lease` fence the check job as `ladder_matches` fences a match.
- `ladder_matches` — a match between two versions (a paired board: games with sides swapped);
  `status` is `pending`, `running` or `finished`; `attempt` the newest attempt (the fencing
  token), `lease_until` when a running attempt counts as dead; `finished_attempt` the attempt
  whose result was recorded.
- `ladder_games` — a finished match's games, written in the transaction that finishes it.
- `ladder_move_times` — per game and version its move times as the game server measured them
  (comma-separated ms, in move order), written with the game (the team page's time profile).
- `attempts` — every attempt at a check (`kind` = `check`) or a match (`match`) and how it
  ended (`running`, `finished`, `abandoned`, `expired`).
- `rating_pairs` — per pair of versions (the smaller id first) the ranked games counted by the
  rating fit and the first version's score: the fit's whole input, kept up to date in the
  transaction that records a match, so a refit never reads the games again.
- `ratings` — the current rating of every version that played a ranked game;
  `rating_history` — a row per version after each ranked match it played.
- `challenges` — unranked matches a team asked for (rate-limited per team).
- `audit` — admin actions.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

# The kinds of ids `ladder_ids` hands out (the table whose key they are).
ID_KINDS = ("teams", "members", "invites", "tokens", "versions", "matches", "challenges", "audit")

STATEMENTS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS ladder_meta (
        meta_key VARCHAR(64) NOT NULL PRIMARY KEY,
        meta_value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS ladder_ids (
        id_kind VARCHAR(32) NOT NULL PRIMARY KEY,
        next_id BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS teams (
        team_id BIGINT NOT NULL PRIMARY KEY,
        name VARCHAR(64) NOT NULL UNIQUE,
        suspended SMALLINT NOT NULL,
        created BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS members (
        member_id BIGINT NOT NULL PRIMARY KEY,
        team_id BIGINT REFERENCES teams (team_id),
        username VARCHAR(64) NOT NULL UNIQUE,
        password_hash TEXT NOT NULL,
        is_admin SMALLINT NOT NULL,
        created BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS invites (
        invite_id BIGINT NOT NULL PRIMARY KEY,
        team_id BIGINT NOT NULL REFERENCES teams (team_id),
        token_hash VARCHAR(64) NOT NULL UNIQUE,
        created_by VARCHAR(200) NOT NULL,
        created BIGINT NOT NULL,
        expires BIGINT NOT NULL,
        used_by BIGINT REFERENCES members (member_id),
        used_at BIGINT
    )""",
    """CREATE TABLE IF NOT EXISTS tokens (
        token_id BIGINT NOT NULL PRIMARY KEY,
        team_id BIGINT NOT NULL REFERENCES teams (team_id),
        token_hash VARCHAR(64) NOT NULL UNIQUE,
        created_by VARCHAR(200) NOT NULL,
        created BIGINT NOT NULL,
        revoked SMALLINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS versions (
        version_id BIGINT NOT NULL PRIMARY KEY,
        team_id BIGINT NOT NULL REFERENCES teams (team_id),
        number INTEGER NOT NULL,
        label VARCHAR(200) NOT NULL,
        size BIGINT NOT NULL,
        sha256 VARCHAR(64) NOT NULL,
        created BIGINT NOT NULL,
        state VARCHAR(16) NOT NULL,
        card_summary TEXT,
        active SMALLINT NOT NULL,
        check_attempt INTEGER NOT NULL,
        check_lease BIGINT,
        UNIQUE (team_id, number)
    )""",
    """CREATE INDEX IF NOT EXISTS versions_by_state ON versions (state, version_id)""",
    """CREATE TABLE IF NOT EXISTS challenges (
        challenge_id BIGINT NOT NULL PRIMARY KEY,
        team_id BIGINT NOT NULL REFERENCES teams (team_id),
        own_version BIGINT NOT NULL REFERENCES versions (version_id),
        opponent_version BIGINT NOT NULL REFERENCES versions (version_id),
        games INTEGER NOT NULL,
        created BIGINT NOT NULL
    )""",
    """CREATE INDEX IF NOT EXISTS challenges_by_team ON challenges (team_id, created)""",
    """CREATE TABLE IF NOT EXISTS ladder_matches (
        match_id BIGINT NOT NULL PRIMARY KEY,
        version_a BIGINT NOT NULL REFERENCES versions (version_id),
        version_b BIGINT NOT NULL REFERENCES versions (version_id),
        ranked SMALLINT NOT NULL,
        challenge_id BIGINT REFERENCES challenges (challenge_id),
        games INTEGER NOT NULL,
        board_seed BIGINT NOT NULL,
        status VARCHAR(16) NOT NULL,
        attempt INTEGER NOT NULL,
        lease_until BIGINT,
        finished_attempt INTEGER,
        created BIGINT NOT NULL,
        finished BIGINT
    )""",
    """CREATE INDEX IF NOT EXISTS matches_by_status ON ladder_matches (status, match_id)""",
    """CREATE INDEX IF NOT EXISTS matches_by_a ON ladder_matches (version_a, match_id)""",
    """CREATE INDEX IF NOT EXISTS matches_by_b ON ladder_matches (version_b, match_id)""",
    """CREATE TABLE IF NOT EXISTS ladder_games (
        match_id BIGINT NOT NULL REFERENCES ladder_matches (match_id),
        game_number INTEGER NOT NULL,
        first_version BIGINT NOT NULL,
        points_a INTEGER NOT NULL,
        points_b INTEGER NOT NULL,
        reason_a TEXT NOT NULL,
        reason_b TEXT NOT NULL,
        replay TEXT,
        PRIMARY KEY (match_id, game_number)
    )""",
    """CREATE TABLE IF NOT EXISTS ladder_move_times (
        match_id BIGINT NOT NULL,
        game_number INTEGER NOT NULL,
        version_id BIGINT NOT NULL REFERENCES versions (version_id),
        moves INTEGER NOT NULL,
        move_ms TEXT NOT NULL,
        PRIMARY KEY (match_id, game_number, version_id),
        FOREIGN KEY (match_id, game_number) REFERENCES ladder_games (match_id, game_number)
    )""",
    """CREATE INDEX IF NOT EXISTS move_times_by_version
        ON ladder_move_times (version_id, match_id)""",
    """CREATE TABLE IF NOT EXISTS attempts (
        kind VARCHAR(8) NOT NULL,
        subject_id BIGINT NOT NULL,
        attempt INTEGER NOT NULL,
        worker VARCHAR(200) NOT NULL,
        started_at BIGINT NOT NULL,
        heartbeat_at BIGINT NOT NULL,
        ended_at BIGINT,
        outcome VARCHAR(16) NOT NULL,
        PRIMARY KEY (kind, subject_id, attempt)
    )""",
    """CREATE TABLE IF NOT EXISTS ratings (
        version_id BIGINT NOT NULL PRIMARY KEY REFERENCES versions (version_id),
        rating DOUBLE PRECISION NOT NULL,
        deviation DOUBLE PRECISION NOT NULL,
        games INTEGER NOT NULL,
        updated BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS rating_pairs (
        version_low BIGINT NOT NULL REFERENCES versions (version_id),
        version_high BIGINT NOT NULL REFERENCES versions (version_id),
        games DOUBLE PRECISION NOT NULL,
        score_low DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (version_low, version_high)
    )""",
    """CREATE TABLE IF NOT EXISTS rating_history (
        version_id BIGINT NOT NULL REFERENCES versions (version_id),
        match_id BIGINT NOT NULL REFERENCES ladder_matches (match_id),
        at BIGINT NOT NULL,
        rating DOUBLE PRECISION NOT NULL,
        deviation DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (version_id, match_id)
    )""",
    """CREATE TABLE IF NOT EXISTS audit (
        audit_id BIGINT NOT NULL PRIMARY KEY,
        at BIGINT NOT NULL,
        actor VARCHAR(200) NOT NULL,
        action VARCHAR(64) NOT NULL,
        detail TEXT NOT NULL
    )""",
)
