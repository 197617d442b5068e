"""The ladder store: people and tokens, versions and quotas, matches recorded exactly once,
ratings with their history, challenges, audit.

Tests taking the `store` fixture run on SQLite, and on a real PostgreSQL server with
`-m distributed` (tests/conftest.py starts it): the schema and the core path hold on both."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ladder import rating
from ladder.store import (
    ChallengeLimitError,
    GameResultRow,
    InviteError,
    LadderError,
    LadderStore,
    QuotaError,
    RecordConflictError,
    RecordStatus,
    StaleAttemptError,
    token_hash,
)
from league.backends import Backend, SQLiteBackend, StoreError
from tests.helpers.ladder import FakeClock, active_version, paired_results, teams_with_versions

SHA = hashlib.sha256(b"bot").hexdigest()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.distributed)])
def open_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Backend]:
    """New connections to one database: an SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        path = tmp_path / "ladder.sqlite"
        return lambda: SQLiteBackend(path)
    from league.postgres import PostgresBackend

    dsn: str = request.getfixturevalue("postgres_dsn")
    return lambda: PostgresBackend(dsn)


@pytest.fixture
def store(open_backend: Callable[[], Backend], clock: FakeClock) -> Iterator[LadderStore]:
    store = LadderStore(open_backend(), clock=clock, max_versions=3, max_team_bytes=10_000)
    yield store
    store.close()


def test_the_core_path_plays_a_match_exactly_once_and_rates_it(
    store: LadderStore, clock: FakeClock
) -> None:
    (team_a, va), (team_b, vb) = teams_with_versions(store, 2)
    match_id = store.create_match(va, vb)
    assert store.pending_matches() == 1
    claim = store.claim_match("w1", lease_seconds=60)
    assert claim is not None
    assert (claim.match_id, claim.attempt, claim.version_a, claim.version_b, claim.games) == (
        match_id,
        1,
        va,
        vb,
        2,
    )
    assert claim.ranked and claim.board_seed > 0
    assert store.claim_match("w2") is None  # a running match is nobody else's
    store.heartbeat(claim, lease_seconds=60)
    results = paired_results(claim, a_wins=2)
    assert store.record_match(claim, results) is RecordStatus.RECORDED
    # A retry of the same write (a lost acknowledgement) changes nothing.
    assert store.record_match(claim, results) is RecordStatus.DUPLICATE
    with pytest.raises(RecordConflictError):
        store.record_match(claim, paired_results(claim, a_wins=0))
    with pytest.raises(StaleAttemptError):
        store.heartbeat(claim)
    assert store.pending_matches() == 0
    assert store.claim_match("w2") is None  # a finished match is never handed out again
    match = store.match(match_id)
    assert match is not None and match.status == "finished"
    assert match.results == tuple(results)
    [a_row, b_row] = store.standings()
    assert (a_row.team_id, a_row.version_id, a_row.rank, a_row.games) == (team_a, va, 1, 2)
    assert (b_row.team_id, b_row.rank) == (team_b, 2)
    assert a_row.rating > rating.BASE > b_row.rating
    # Finite after two won games, and still very uncertain (the prior is weak).
    assert 100 < a_row.deviation < rating.prior_deviation()
    [(at, value, deviation)] = store.rating_history(va)
    assert at == int(clock.now * 1000) and (value, deviation) == (a_row.rating, a_row.deviation)
    assert store.attempts("match", match_id) == [(1, "w1", "finished")]


def test_a_dead_workers_match_is_handed_out_again_and_its_late_result_rejected(
    store: LadderStore, clock: FakeClock
) -> None:
    (_, va), (_, vb) = teams_with_versions(store, 2)
    store.create_match(va, vb)
    dead = store.claim_match("w1", lease_seconds=60)
    assert dead is not None
    clock.now += 30
    assert store.claim_match("w2", lease_seconds=60) is None  # the lease still runs
    clock.now += 31
    again = store.claim_match("w2", lease_seconds=60)
    assert again is not None and again.match_id == dead.match_id and again.attempt == 2
    with pytest.raises(StaleAttemptError):
        store.heartbeat(dead)
    with pytest.raises(StaleAttemptError):
        store.record_match(dead, paired_results(dead, a_wins=2))
    assert store.record_match(again, paired_results(again, a_wins=1)) is RecordStatus.RECORDED
    # The old attempt, come back after the match finished, is still rejected.
    with pytest.raises(StaleAttemptError):
        store.record_match(dead, paired_results(dead, a_wins=1))
    assert store.attempts("match", dead.match_id) == [(1, "w1", "expired"), (2, "w2", "finished")]
    # Played once: one history row per version, the games of attempt 2 only.
    assert len(store.rating_history(va)) == 1
    match = store.match(dead.match_id)
    assert match is not None and [g.points_a for g in match.results] == [2, 0]


def test_an_abandoned_match_is_played_by_the_next_claim(store: LadderStore) -> None:
    (_, va), (_, vb) = teams_with_versions(store, 2)
    store.create_match(va, vb)
    first = store.claim_match("w1")
    assert first is not None and store.abandon_match(first)
    assert not store.abandon_match(first)
    second = store.claim_match("w2")
    assert second is not None and second.attempt == 2
    with pytest.raises(StaleAttemptError):
        store.record_match(first, paired_results(first, a_wins=2))


def test_results_that_do_not_fit_the_match_are_refused(store: LadderStore) -> None:
    (_, va), (_, vb) = teams_with_versions(store, 2)
    store.create_match(va, vb)
    claim = store.claim_match("w")
    assert claim is not None
    good = paired_results(claim, a_wins=1)
    with pytest.raises(ValueError, match=r"games 1\.\.2"):
        store.record_match(claim, good[:1])
    bad_points = [good[0], GameResultRow(2, vb, 3, 0, "", "")]
    with pytest.raises(ValueError, match="Siegpunkte"):
        store.record_match(claim, bad_points)
    with pytest.raises(ValueError, match="first_version"):
        store.record_match(claim, [good[0], GameResultRow(2, 999, 2, 0, "", "")])
    with pytest.raises(ValueError, match="sides swap"):
        store.record_match(claim, [good[0], GameResultRow(2, va, 2, 0, "", "")])
    assert store.record_match(claim, good) is RecordStatus.RECORDED


def test_matches_need_two_teams_and_an_even_number_of_games(store: LadderStore) -> None:
    [(team, va), (_, vb)] = teams_with_versions(store, 2)
    other = active_version(store, team, "second")
    with pytest.raises(ValueError, match="two different teams"):
        store.create_match(va, other)
    with pytest.raises(ValueError, match="even"):
        store.create_match(other, vb, games=3)
    with pytest.raises(ValueError, match="no version"):
        store.create_match(other, 999)


def test_unranked_matches_leave_the_ratings_alone(store: LadderStore) -> None:
    (_, va), (_, vb) = teams_with_versions(store, 2)
    store.create_match(va, vb, ranked=False, games=4)
    claim = store.claim_match("w")
    assert claim is not None and not claim.ranked and claim.games == 4
    assert store.record_match(claim, paired_results(claim, a_wins=4)) is RecordStatus.RECORDED
    assert store.ratings() == {}
    assert store.rating_history(va) == []
    assert [s.rating for s in store.standings()] == [rating.BASE, rating.BASE]


def test_ratings_follow_the_fit_of_all_ranked_games(store: LadderStore) -> None:
    versions = [v for _, v in teams_with_versions(store, 3)]
    plan = [(0, 1, 2), (1, 2, 1), (0, 2, 2), (0, 1, 1)]
    games: list[tuple[int, int, float]] = []
    for a, b, wins in plan:
        store.create_match(versions[a], versions[b])
        claim = store.claim_match("w")
        assert claim is not None
        store.record_match(claim, paired_results(claim, a_wins=wins))
        games += [(versions[a], versions[b], 1.0 if n < wins else 0.0) for n in range(2)]
    expected = rating.fit(games)
    stored = store.ratings()
    assert stored.keys() == expected.keys()
    for version, (value, deviation) in expected.items():
        assert stored[version][0] == pytest.approx(value, abs=0.01)
        assert stored[version][1] == pytest.approx(deviation, abs=0.01)
    assert len(store.rating_history(versions[0])) == 3
    assert [s.version_id for s in store.standings()] == sorted(
        versions, key=lambda v: -expected[v][0]
    )


def test_invites_are_single_use_expire_and_are_stored_as_hashes(
    store: LadderStore, clock: FakeClock
) -> None:
    team = store.create_team("Hechte")
    token = store.create_invite(team, by="admin", ttl_seconds=60)
    member = store.accept_invite(token, "ada", "argon2-hash")
    found = store.member_by_name("ADA")
    assert found is not None and (found.id, found.team_id, found.is_admin) == (member, team, False)
    assert store.member(member) == found and store.members(team) == [found]
    with pytest.raises(InviteError, match="used"):
        store.accept_invite(token, "bob", "h")
    with pytest.raises(InviteError, match="not known"):
        store.accept_invite("made-up", "bob", "h")
    late = store.create_invite(team, by="admin", ttl_seconds=60)
    taken = store.create_invite(team, by="admin")
    clock.now += 61
    with pytest.raises(InviteError, match="expired"):
        store.accept_invite(late, "bob", "h")
    with pytest.raises(InviteError, match="taken"):
        store.accept_invite(taken, "Ada", "h")
    # The name was taken: the invite is still good.
    assert store.accept_invite(taken, "bob", "h") > member
    with pytest.raises(InviteError, match="user name"):
        store.accept_invite(store.create_invite(team, by="admin"), "../x", "h")
    assert [i.used_by is not None for i in store.invites(team)] == [False, True, False, True]
    rows = store.backend.transaction()
    with rows as tx:
        stored = [str(r[0]) for r in tx.query("SELECT token_hash FROM invites")]
    assert token not in stored and token_hash(token) in stored


def test_api_tokens_identify_their_team_until_revoked_or_suspended(store: LadderStore) -> None:
    team = store.create_team("Welse")
    other = store.create_team("Barsche")
    token = store.create_api_token(team, by="ada")
    assert store.team_for_token(token) == team
    assert store.team_for_token(token + "x") is None
    with store.backend.transaction() as tx:
        assert tx.query("SELECT token_hash FROM tokens") == [(token_hash(token),)]
    [info] = store.api_tokens(team)
    assert not store.revoke_api_token(other, info.id, by="eve")  # not that team's token
    store.set_suspended(team, True, by="admin")
    assert store.team_for_token(token) is None
    store.set_suspended(team, False, by="admin")
    assert store.team_for_token(token) == team
    assert store.revoke_api_token(team, info.id, by="ada")
    assert store.team_for_token(token) is None
    assert store.api_tokens(team)[0].revoked


def test_team_names_are_checked(store: LadderStore) -> None:
    store.create_team("Hechte")
    for bad in ("", "  ", "hechte", "x" * 65, "a\x1bb"):
        with pytest.raises(ValueError):
            store.create_team(bad)
    assert [t.name for t in store.teams()] == ["Hechte"]
    assert store.team(999) is None


def test_quotas_bound_versions_and_bytes_per_team(store: LadderStore) -> None:
    team = store.create_team("Hechte")
    first = store.add_version(team, size=6000, sha256=SHA, label="one")
    with pytest.raises(QuotaError, match="bytes"):
        store.add_version(team, size=5000, sha256=SHA, label="two")
    store.add_version(team, size=2000, sha256=SHA, label="two")
    store.add_version(team, size=10, sha256=SHA, label="three")
    with pytest.raises(QuotaError, match="versions"):
        store.add_version(team, size=10, sha256=SHA, label="four")
    assert [(v.number, v.label, v.state) for v in store.versions(team)] == [
        (3, "three", "queued"),
        (2, "two", "queued"),
        (1, "one", "queued"),
    ]
    with pytest.raises(ValueError, match="sha256"):
        store.add_version(store.create_team("B"), size=1, sha256="../etc", label="x")
    version = store.version(first)
    assert version is not None and version.size == 6000 and not version.active


def test_only_a_passed_version_of_the_team_is_activated(store: LadderStore) -> None:
    (team, va), (other, vb) = teams_with_versions(store, 2)
    queued = store.add_version(team, size=1, sha256=SHA, label="new")
    with pytest.raises(ValueError, match="queued"):
        store.activate(team, queued)
    with pytest.raises(ValueError, match="no version"):
        store.activate(team, vb)  # another team's version
    store.set_check_result(queued, False, "start.sh missing")
    with pytest.raises(ValueError, match="failed"):
        store.activate(team, queued)
    assert [v.id for v in store.active_versions()] == [va, vb]
    second = active_version(store, team, "second")
    assert [v.id for v in store.active_versions()] == [vb, second]
    store.set_suspended(other, True, by="admin")
    assert [v.id for v in store.active_versions()] == [second]
    assert [s.version_id for s in store.standings()] == [second]


def test_check_jobs_are_fenced_like_matches(store: LadderStore, clock: FakeClock) -> None:
    team = store.create_team("Hechte")
    version = store.add_version(team, size=1, sha256=SHA, label="x")
    claim = store.claim_check("w1", lease_seconds=60)
    assert claim is not None and (claim.version_id, claim.attempt) == (version, 1)
    assert store.claim_check("w2") is None
    clock.now += 61
    again = store.claim_check("w2", lease_seconds=60)
    assert again is not None and again.attempt == 2
    with pytest.raises(StaleAttemptError):
        store.heartbeat_check(claim)
    with pytest.raises(StaleAttemptError):
        store.set_check_result(version, True, "ok", attempt=claim.attempt)
    store.heartbeat_check(again)
    store.set_check_result(version, True, "ok", attempt=again.attempt)
    checked = store.version(version)
    assert checked is not None and (checked.state, checked.card_summary) == ("passed", "ok")
    assert store.claim_check("w3") is None
    assert store.attempts("check", version) == [(1, "w1", "expired"), (2, "w2", "finished")]


def test_suspension_cancels_pending_matches_and_is_audited(store: LadderStore) -> None:
    (team, va), (_, vb) = teams_with_versions(store, 2)
    store.create_match(va, vb)
    store.set_suspended(team, True, by="admin")
    assert store.pending_matches() == 0 and store.claim_match("w") is None
    with pytest.raises(LadderError, match="suspended"):
        store.add_version(team, size=1, sha256=SHA, label="x")
    entry = store.audit_log()[0]
    assert (entry.actor, entry.action) == ("admin", "team.suspend")
    assert "1 pending matches cancelled" in entry.detail
    store.audit("admin", "season.freeze", "season 1")
    assert [e.action for e in store.audit_log(limit=2)] == ["season.freeze", "team.suspend"]


def test_challenges_are_unranked_and_rate_limited(store: LadderStore, clock: FakeClock) -> None:
    store.challenges_per_window = 2
    store.challenge_window = 60
    (team, va), (_, vb) = teams_with_versions(store, 2)
    store.create_challenge(team, vb, 4)
    store.create_challenge(team, vb, 2)
    with pytest.raises(ChallengeLimitError):
        store.create_challenge(team, vb, 2)
    with pytest.raises(ValueError, match="itself"):
        store.create_challenge(team, va, 2)
    clock.now += 61
    challenge = store.create_challenge(team, vb, 2)
    matches = store.matches(team_id=team)
    assert (matches[0].challenge_id, matches[0].ranked, matches[0].games) == (challenge, False, 2)
    assert [m.games for m in matches] == [2, 2, 4]
    assert store.open_pairs() == []  # challenges are not the ladder's pairs
    loner = store.create_team("Allein")
    with pytest.raises(LadderError, match="no active version"):
        store.create_challenge(loner, vb, 2)


def test_matches_lists_by_version_and_team(store: LadderStore) -> None:
    (ta, va), (_, vb), (_, vc) = teams_with_versions(store, 3)
    one = store.create_match(va, vb)
    two = store.create_match(vb, vc)
    assert [m.id for m in store.matches()] == [two, one]
    assert [m.id for m in store.matches(version_id=vc)] == [two]
    assert [m.id for m in store.matches(team_id=ta)] == [one]
    assert [m.id for m in store.matches(limit=1)] == [two]
    assert store.open_pairs() == [(va, vb), (vb, vc)]
    assert store.match(999) is None


def test_a_restarted_single_machine_run_gives_back_its_running_jobs(store: LadderStore) -> None:
    (_, va), (_, vb) = teams_with_versions(store, 2)
    store.create_match(va, vb)
    store.add_version(store.create_team("C"), size=1, sha256=SHA, label="x")
    assert store.claim_match("w") is not None and store.claim_check("w") is not None
    assert store.reset_running() == 2
    claim = store.claim_match("w")
    assert claim is not None and claim.attempt == 2


def test_open_creates_the_schema_once_and_keeps_the_data(tmp_path: Path) -> None:
    path = tmp_path / "ladder.sqlite"
    store = LadderStore.open(str(path))
    team = store.create_team("Hechte")
    store.close()
    again = LadderStore.open(str(path))
    try:
        assert [t.id for t in again.teams()] == [team]
        assert again.create_team("Welse") == team + 1
    finally:
        again.close()


def test_concurrent_workers_claim_every_match_once_and_ids_never_collide(
    open_backend: Callable[[], Backend], clock: FakeClock
) -> None:
    """Four workers, each with its own connection, racing (on PostgreSQL: READ COMMITTED,
    the compare-and-set on the attempt decides; on SQLite: one writer at a time)."""
    setup = LadderStore(open_backend(), clock=clock)
    versions = [v for _, v in teams_with_versions(setup, 4)]
    va = versions[0]
    # Many pairs: concurrent refits update many rating rows (and insert new pairs' rows).
    pairs = [(a, b) for a in versions for b in versions if a < b]
    created = {setup.create_match(*pairs[n % 6]) for n in range(24)}
    claimed: list[tuple[int, int]] = []
    teams: list[int] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        store = LadderStore(open_backend(), clock=clock)
        try:
            for index in range(3):
                team = store.create_team(f"{name}-{index}")
                with lock:
                    teams.append(team)
            while (claim := store.claim_match(name)) is not None:
                status = store.record_match(claim, paired_results(claim, a_wins=1))
                assert status is RecordStatus.RECORDED
                with lock:
                    claimed.append((claim.match_id, claim.attempt))
        finally:
            store.close()

    threads = [threading.Thread(target=work, args=(f"w{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(m for m, _ in claimed) == sorted(created)
    assert all(attempt == 1 for _, attempt in claimed)
    assert len(set(teams)) == len(teams) == 12
    assert sum(len(setup.rating_history(v)) for v in versions) == 48
    assert len(setup.rating_history(va)) == 12
    setup.close()


def test_a_record_that_never_committed_is_played_again_once(
    open_backend: Callable[[], Backend], clock: FakeClock
) -> None:
    crash = {"on": True}

    def before_commit(operation: str) -> None:
        if operation == "record" and crash["on"]:
            raise KeyboardInterrupt  # the worker killed between the writes and the commit

    store = LadderStore(open_backend(), clock=clock, before_commit=before_commit)
    (_, va), (_, vb) = teams_with_versions(store, 2)
    match_id = store.create_match(va, vb)
    claim = store.claim_match("w1", lease_seconds=60)
    assert claim is not None
    with pytest.raises(KeyboardInterrupt):
        store.record_match(claim, paired_results(claim, a_wins=2))
    crash["on"] = False
    # Nothing of the match was kept: no games, no rating, still the dead attempt's.
    match = store.match(match_id)
    assert match is not None and (match.status, match.results) == ("running", ())
    assert store.ratings() == {}
    clock.now += 61
    again = store.claim_match("w2", lease_seconds=60)
    assert again is not None and again.attempt == 2
    assert store.record_match(again, paired_results(again, a_wins=0)) is RecordStatus.RECORDED
    assert len(store.rating_history(va)) == 1
    store.close()


def test_recomputing_the_ratings_gives_the_running_fit(store: LadderStore) -> None:
    versions = [v for _, v in teams_with_versions(store, 4)]
    for n, (a, b) in enumerate([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3)] * 2):
        store.create_match(versions[a], versions[b])
        claim = store.claim_match("w")
        assert claim is not None
        store.record_match(claim, paired_results(claim, a_wins=n % 3))
    store.create_match(versions[0], versions[1], ranked=False)  # unranked: not counted
    claim = store.claim_match("w")
    assert claim is not None
    store.record_match(claim, paired_results(claim, a_wins=2))
    running = store.ratings()
    history = store.rating_history(versions[0])
    with store.backend.transaction() as tx:
        tx.execute("UPDATE rating_pairs SET games = games + 50")  # running totals gone wrong
    assert store.recompute_ratings() == 4
    again = store.ratings()
    for version, (value, deviation) in running.items():
        assert again[version][0] == pytest.approx(value, abs=0.01)
        assert again[version][1] == pytest.approx(deviation, abs=0.01)
    assert store.rating_history(versions[0]) == history


def test_a_new_active_version_takes_over_the_queue(store: LadderStore) -> None:
    (team, va), (other, vb) = teams_with_versions(store, 2)
    running = store.create_match(va, vb)
    claim = store.claim_match("w")
    assert claim is not None and claim.match_id == running
    queued = store.create_match(vb, va)
    challenge = store.create_challenge(other, va, 2)
    second = active_version(store, team, "second")
    match = store.match(queued)
    assert match is not None and match.status == "cancelled"
    # The running match finishes and counts; the challenge against the old version stays.
    assert store.record_match(claim, paired_results(claim, a_wins=2)) is RecordStatus.RECORDED
    assert [m.challenge_id for m in store.matches() if m.status == "pending"] == [challenge]
    assert store.open_pairs() == []
    # The new version starts from the prior (1500); the old one's win was over vb.
    assert [s.version_id for s in store.standings()] == [second, vb]


def test_a_store_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ladder.sqlite"
    LadderStore.open(str(path)).close()
    backend = SQLiteBackend(path)
    with backend.transaction() as tx:
        tx.execute("UPDATE ladder_meta SET meta_value = '99' WHERE meta_key = 'schema_version'")
    backend.close()
    with pytest.raises(StoreError, match="schema version 99"):
        LadderStore.open(str(path))


def test_an_sqlite_store_is_its_owners_alone_and_a_link_is_refused(tmp_path: Path) -> None:
    # It holds password and token hashes and unreleased versions; a --no-docker bot runs as
    # another user on the same machine.
    path = tmp_path / "ladder.sqlite"
    path.touch(mode=0o644)
    path.chmod(0o644)
    store = LadderStore.open(str(path))
    try:
        store.create_team("Sharks")
    finally:
        store.close()
    for name in tmp_path.iterdir():
        assert name.stat().st_mode & 0o077 == 0, name
    (tmp_path / "link.sqlite").symlink_to(path)
    with pytest.raises(LadderError, match="not a regular file"):
        LadderStore.open(str(tmp_path / "link.sqlite"))
