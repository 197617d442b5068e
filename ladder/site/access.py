"""Who may read what: the one place that decides (the privacy rule of docs/ladder.md).

Rule: a team's uploads, cards, logs and versions never played in public are its members'
only. A version is *released* once it is active or has played a ranked match (its games are
public then). A game is visible to a reader when its match is finished and each of its two
versions is released or the reader's team's own; an anonymous reader has no team. Everything
else answers 404 to a reader who may not see it — the same answer as for what does not
exist, so ids cannot be probed. These functions run on the store's thread.
"""

from __future__ import annotations

from ladder.store import LadderMatch, LadderStore, Version

FINISHED = "finished"


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
