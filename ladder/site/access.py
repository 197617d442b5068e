"""Who may read what: the one place that decides (the privacy rule of docs/ladder.md).

Rule: a team's uploads, cards, logs and versions never played in public are its members'
only. A version is *released* once it is active or has played a ranked match (its games are
public then). A game is visible to a reader when its match is finished and each of its two
versions is released or the reader's team's own; an anonymous reader has no team. Everything
else answers 404 to a reader who may not see it — the same answer as for what does not
exist, so ids cannot be probed. A version's move times (its time profile) are its games':
the same rule. These functions run on the store's thread.
"""

from __future__ import annotations

from ladder.store import LadderMatch, LadderStore, MoveTimes, Version

FINISHED = "finished"
PROFILE_GAMES = 200  # a time profile is over a version's newest games: a bounded read
PAGE_GAMES = 100  # games per page of a listing by default
MAX_PAGE_GAMES = 500
SCAN_MATCHES = 1000  # matches read at most for one page of a listing
SCAN_BATCH = 100


def released(store: LadderStore, version: Version) -> bool:
    """Whether `version` may be seen by anyone (active, or played a ranked match)."""
    return version.active or bool(store.rating_history(version.id))


def version_visible(store: LadderStore, version: Version, team_id: int | None) -> bool:
    """Whether a reader of `team_id` (None: anonymous) may see that `version` exists."""
    return version.team_id == team_id or released(store, version)


def match_visible(store: LadderStore, match: LadderMatch, team_id: int | None) -> bool:
    """Whether a reader of `team_id` may see `match` and its games (see the module rule)."""
    if match.status != FINISHED:
        return False
    for version_id in (match.version_a, match.version_b):
        version = store.version(version_id)
        if version is None or not version_visible(store, version, team_id):
            return False
    return True


def owns_version(store: LadderStore, version_id: int, team_id: int | None) -> Version | None:
    """The version if it is `team_id`'s (None for anyone else's or a missing one)."""
    if team_id is None:
        return None
    version = store.version(version_id)
    return version if version is not None and version.team_id == team_id else None


def visible_move_times(
    store: LadderStore, version: Version, team_id: int | None, *, games: int = PROFILE_GAMES
) -> list[MoveTimes] | None:
    """The version's move times of its newest `games` games a reader of `team_id` may see
    (both versions visible: the games' rule); None when the version itself is hidden."""
    if not version_visible(store, version, team_id):
        return None
    opponents: dict[int, bool] = {}
    out = []
    for game in store.move_times(version.id, games=games):
        if game.opponent not in opponents:
            other = store.version(game.opponent)
            opponents[game.opponent] = other is not None and version_visible(store, other, team_id)
        if opponents[game.opponent]:
            out.append(game)
    return out


def visible_matches(
    store: LadderStore,
    team_id: int | None,
    *,
    of_team: int | None = None,
    before: int | None = None,
    games: int = PAGE_GAMES,
) -> tuple[list[LadderMatch], int | None]:
    """A page of the finished matches a reader of `team_id` may see, newest first (of
    `of_team`'s versions when given; ids below `before` when given): whole matches, until
    they hold `games` games, and the cursor of the next page (None at the end). At most
    `SCAN_MATCHES` matches are read per page, so a page of hidden matches answers quickly
    (fewer games, a cursor still)."""
    games = max(1, min(int(games), MAX_PAGE_GAMES))
    page: list[LadderMatch] = []
    held = scanned = 0
    cursor = before
    while scanned < SCAN_MATCHES:
        batch = store.matches(team_id=of_team, before=cursor, finished=True, limit=SCAN_BATCH)
        if not batch:
            return page, None
        for match in batch:
            scanned += 1
            cursor = match.id
            if match_visible(store, match, team_id):
                page.append(match)
                held += len(match.results)
                if held >= games:
                    return page, cursor
    return page, cursor
