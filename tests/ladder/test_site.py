"""The ladder's site (ladder/site) on the real LadderStore (SQLite), served on loopback:
invites, sign-in and its lockout, CSRF and Origin, uploads (bounds, ZIP rules, quota), API
tokens, activation, the game page in the viewer's replay page, the admin page."""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import random
from pathlib import Path

import pytest
import trio

from engine import GameState
from ladder.site.server import site_config
from ladder.site.sessions import hash_password
from ladder.store import GameResultRow, LadderStore
from protocol.messages import Memento
from protocol.replay import write_replay
from server.logins import Logins
from tests.helpers.hypercorn_race import protocol_send_failure, send_race
from tests.ladder.site_client import PASSWORD, running_site, sign_in, zip_bytes

BOT = zip_bytes({"start.sh": '#!/bin/sh\nexec python3 bot.py "$@"\n', "bot.py": "print(1)\n"})


# A played match's move times (ms) per game: (version a's, version b's).
MOVE_MS = (
    ((12.5, 30.0, 1600.0), (4.0, 5.0, 6.0)),
    ((20.0, 2100.0), (8.0, 9.0)),
)


def passed_version(store: LadderStore, data_dir: Path, team_id: int, *, active: bool) -> int:
    """A version that passed its check (as a worker leaves it), its file in place."""
    version = store.add_version(
        team_id, size=len(BOT), sha256=hashlib.sha256(BOT).hexdigest(), label="made by test"
    )
    path = data_dir / "uploads" / str(team_id) / f"{version}.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(BOT)
    store.set_check_result(version, True, "ready for the contest")
    (data_dir / "cards").mkdir(exist_ok=True)
    (data_dir / "cards" / f"{version}.json").write_text('{"items": [], "secret": "card"}')
    if active:
        store.activate(team_id, version)
    return version


def played_match(store: LadderStore, data_dir: Path, a: int, b: int, *, ranked: bool) -> int:
    """A finished match of two games with replays and both teams' logs, as a worker leaves
    it."""
    match_id = store.create_match(a, b, ranked=ranked)
    claim = store.claim_match("test")
    assert claim is not None and claim.match_id == match_id
    chooser = random.Random(match_id)
    (data_dir / "replays").mkdir(exist_ok=True)
    for number in (1, 2):
        state = GameState.initial(number)
        states = [state]
        for _ in range(6):
            state = state.apply(chooser.choice(state.legal_moves()))
            states.append(state)
        data = write_replay("room", [Memento("room", s) for s in states])
        (data_dir / "replays" / f"{match_id}-{number}.xml.gz").write_bytes(gzip.compress(data))
    for version in (a, b):
        team = store.version(version)
        assert team is not None
        logs = data_dir / "logs" / str(team.team_id)
        logs.mkdir(parents=True, exist_ok=True)
        for number in (1, 2):
            (logs / f"{match_id}-{number}.log").write_text(f"log of team {team.team_id}\n")
    # Move times as the worker records them (the server's clock): MOVE_MS of each side.
    rows = [
        GameResultRow(1, a, 2, 0, "regular", "regular", f"{match_id}-1.xml.gz", *MOVE_MS[0]),
        GameResultRow(2, b, 1, 1, "regular", "regular", f"{match_id}-2.xml.gz", *MOVE_MS[1]),
    ]
    store.record_match(claim, rows)
    return match_id


async def test_invite_sign_up_sign_in_and_out(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        team_id = site.store.create_team("Sharks")
        token = site.store.create_invite(team_id, by="test")
        client = site.client()
        page = await client.get(f"/invite/{token}")
        assert page.status == 200 and 'id="invite"' in page.text
        weak = await client.post(f"/invite/{token}", {"username": "ann", "password": "short"})
        assert weak.status == 400 and "at least 10 characters" in weak.text
        joined = await client.post(f"/invite/{token}", {"username": "Ann", "password": PASSWORD})
        assert joined.status == 303 and joined.headers["location"] == f"/team/{team_id}"
        member = site.store.member_by_name("ann")
        assert member is not None and member.team_id == team_id
        assert member.password_hash.startswith("$argon2id$")  # never the password itself
        mine = await client.get(f"/team/{team_id}")
        assert 'id="private"' in mine.text and "ann" in mine.text
        # The invite is used up.
        other = site.client()
        await other.get(f"/invite/{token}")
        again = await other.post(f"/invite/{token}", {"username": "bob", "password": PASSWORD})
        assert again.status == 400 and site.store.member_by_name("bob") is None
        # Out, then in again.
        out = await client.post("/logout")
        assert out.status == 303
        assert 'id="private"' not in (await client.get(f"/team/{team_id}")).text
        back = await sign_in(client, "ann")
        assert back.status == 303 and back.headers["location"] == f"/team/{team_id}"
        assert 'id="private"' in (await client.get(f"/team/{team_id}")).text


async def test_sign_in_lockout_is_the_game_servers_rule(tmp_path: Path) -> None:
    clock = [0.0]
    logins = Logins(failures=3, window=60.0, lockout=300.0, clock=lambda: clock[0])
    async with running_site(tmp_path, logins=logins, failure_delay=0.0) as site:
        site.team_with_member("Sharks", "ann")
        client = site.client()
        await client.get("/login")
        with trio.fail_after(30):
            for _ in range(3):
                wrong = await client.post("/login", {"username": "ann", "password": "x" * 12})
                assert wrong.status == 403 and "wrong username or password" in wrong.text
        # Locked out: even the right password is refused, without a look at it.
        locked = await client.post("/login", {"username": "ann", "password": PASSWORD})
        assert locked.status == 429 and "try again in 300 s" in locked.text
        clock[0] = 301.0
        assert (
            await client.post("/login", {"username": "ann", "password": PASSWORD})
        ).status == 303


async def test_state_changing_forms_need_csrf_and_this_origin(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        team_id, _ = site.team_with_member("Sharks", "ann")
        client = site.client()
        await sign_in(client, "ann")
        await client.get(f"/team/{team_id}")
        no_token = await client.post(f"/team/{team_id}/tokens", csrf=False)
        assert no_token.status == 403 and "CSRF" in no_token.text
        wrong = await client.post(f"/team/{team_id}/tokens", {"csrf": "guess"})
        assert wrong.status == 403
        cross = await client.post(
            f"/team/{team_id}/tokens", headers={"Origin": "http://evil.example"}
        )
        assert cross.status == 403 and "cross-site" in cross.text
        assert site.store.api_tokens(team_id) == []
        made = await client.post(f"/team/{team_id}/tokens")
        assert made.status == 200 and 'id="new-token"' in made.text
        assert len(site.store.api_tokens(team_id)) == 1
        # Every form body is bounded, before it is parsed.
        large = await client.post("/login", {"username": "a" * 20_000, "password": "x"})
        assert large.status == 413


async def test_upload_from_the_team_page(tmp_path: Path) -> None:
    async with running_site(tmp_path, max_upload=256 * 1024) as site:
        team_id, _ = site.team_with_member("Sharks", "ann")
        client = site.client()
        await sign_in(client, "ann")
        await client.get(f"/team/{team_id}")
        sent = await client.post(
            f"/team/{team_id}/upload", {"label": "first"}, {"bot": ("bot.zip", BOT)}
        )
        assert sent.status == 303, sent.text
        [version] = site.store.versions(team_id)
        assert version.label == "first" and version.state == "queued"
        stored = tmp_path / "uploads" / str(team_id) / f"{version.id}.zip"
        assert stored.read_bytes() == BOT and version.sha256 == hashlib.sha256(BOT).hexdigest()
        page = await client.get(f"/team/{team_id}?done=uploaded")
        assert "queued for the check" in page.text and "first" in page.text
        # Zip-slip, not a ZIP, too large: refused with the reason, nothing stored.
        await client.get(f"/team/{team_id}")
        slip = zip_bytes({"start.sh": "#!/bin/sh\n", "../../evil.sh": "x"})
        refused = await client.post(f"/team/{team_id}/upload", {}, {"bot": ("a.zip", slip)})
        assert refused.status == 400 and "climbs out with .." in refused.text
        junk = await client.post(f"/team/{team_id}/upload", {}, {"bot": ("a.zip", b"PK junk")})
        assert junk.status == 400 and "not a readable ZIP" in junk.text
        big = await client.post(
            f"/team/{team_id}/upload", {}, {"bot": ("a.zip", b"\0" * (400 * 1024))}
        )
        assert big.status == 413
        assert len(site.store.versions(team_id)) == 1
        leftovers = list((tmp_path / "uploads" / ".incoming").iterdir())
        assert leftovers == []


async def test_quota_refusal_is_shown(tmp_path: Path) -> None:
    database = str(tmp_path / "ladder.sqlite")
    async with running_site(tmp_path) as site:
        site.site.store.max_versions = 1
        team_id, _ = site.team_with_member("Sharks", "ann")
        client = site.client()
        await sign_in(client, "ann")
        await client.get(f"/team/{team_id}")
        first = await client.post(f"/team/{team_id}/upload", {}, {"bot": ("a.zip", BOT)})
        assert first.status == 303
        await client.get(f"/team/{team_id}")
        second = await client.post(f"/team/{team_id}/upload", {}, {"bot": ("a.zip", BOT)})
        assert second.status == 400 and "not accepted" in second.text
        assert "at most 1" in second.text
    assert len(LadderStore.open(database).versions(team_id)) == 1


async def test_api_token_upload_versions_activate_and_revoke(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        team_id, _ = site.team_with_member("Sharks", "ann")
        token = site.store.create_api_token(team_id, by="test")
        api = site.client()
        bearer = {"Authorization": f"Bearer {token}"}
        sent = await api.post("/api/upload", {}, {"bot": ("bot.zip", BOT)}, bearer, csrf=False)
        assert sent.status == 201, sent.text
        version_id = int(json.loads(sent.body)["version"]["id"])
        listed = await api.get("/api/versions", bearer)
        assert listed.status == 200 and f'"id":{version_id}' in listed.text
        not_passed = await api.post_json("/api/activate", {"version": version_id}, bearer)
        assert not_passed.status == 400
        site.store.set_check_result(version_id, True, "ready")
        done = await api.post_json("/api/activate", {"version": version_id}, bearer)
        assert done.status == 200
        standings = await api.get("/api/standings")
        assert '"name":"Sharks"' in standings.text
        # Revoked on the team page: the token no longer works.
        [made] = site.store.api_tokens(team_id)
        client = site.client()
        await sign_in(client, "ann")
        await client.get(f"/team/{team_id}")
        revoked = await client.post(f"/team/{team_id}/tokens/{made.id}/revoke")
        assert revoked.status == 303
        refused = await api.get("/api/versions", bearer)
        assert refused.status == 401
        anonymous = await site.client().get("/api/versions")
        assert anonymous.status == 401


async def test_game_page_opens_the_replay_viewer(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        a, _ = site.team_with_member("Sharks", "ann")
        b, _ = site.team_with_member("Pikes", "bob")
        va = passed_version(site.store, tmp_path, a, active=True)
        vb = passed_version(site.store, tmp_path, b, active=True)
        match_id = played_match(site.store, tmp_path, va, vb, ranked=True)
        visitor = site.client()
        game = await visitor.get(f"/game/{match_id}/1")
        assert game.status == 303
        assert game.headers["location"] == f"/replays#file={match_id}-1.xml.gz"
        viewer = await visitor.get("/replays")
        assert viewer.status == 200 and "/static/replays.js" in viewer.text
        replay = await visitor.get(f"/api/replays/{match_id}-1.xml.gz")
        assert replay.status == 200 and '"states"' in replay.text
        listing = await visitor.get("/api/replays")
        assert f"{match_id}-2.xml.gz" in listing.text
        team_page = await visitor.get(f"/team/{a}")
        assert f'href="/game/{match_id}/1"' in team_page.text
        assert 'id="rating-graph"' in team_page.text
        assert (await visitor.get("/static/board.js")).status == 200
        missing = await visitor.get(f"/game/{match_id}/3")
        assert missing.status == 404


async def test_admin_page(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        site.store.create_admin("root", hash_password(PASSWORD))
        admin = site.client()
        assert (await sign_in(admin, "root")).headers["location"] == "/admin"
        await admin.get("/admin")  # a new session on sign-in: a new CSRF token
        made = await admin.post("/admin/team", {"name": "Sharks"})
        assert made.status == 303
        [team] = site.store.teams()
        await admin.get("/admin")
        invite = await admin.post("/admin/invite", {"team": str(team.id)})
        assert invite.status == 200 and "/invite/" in invite.text
        suspended = await admin.post("/admin/suspend", {"team": str(team.id), "suspend": "1"})
        assert suspended.status == 303
        team_now = site.store.team(team.id)
        assert team_now is not None and team_now.suspended
        # The season: the active versions (the suspended team's is off the ladder).
        for name in ("Pikes", "Breams"):
            other = site.store.create_team(name)
            passed_version(site.store, tmp_path, other, active=True)
        frozen = await admin.post("/admin/freeze", {"name": "Spring 2027"})
        assert frozen.status == 200 and "piranhas-league run" in frozen.text, frozen.text
        league = (tmp_path / "seasons" / "spring-2027.toml").read_text()
        assert "Pikes" in league and "Breams" in league and "Sharks" not in league
        page = await admin.get("/admin")
        assert 'id="audit"' in page.text and "suspend" in page.text and "Spring 2027" in page.text
        # Nobody else sees or uses it.
        member_team, _ = site.team_with_member("Carps", "bob")
        bob = site.client()
        await sign_in(bob, "bob")
        assert (await bob.get("/admin")).status == 404
        await bob.get(f"/team/{member_team}")
        assert (await bob.post("/admin/team", {"name": "Mine"})).status == 404
        assert (await site.client().get("/admin")).status == 404


@pytest.mark.parametrize("header", ["Basic abc", "Bearer ", "Bearer wrong-token"])
async def test_api_refuses_bad_authorization(tmp_path: Path, header: str) -> None:
    async with running_site(tmp_path) as site:
        answer = await site.client().get("/api/versions", {"Authorization": header})
        assert answer.status == 401


async def test_challenge_from_the_team_page_and_its_rate_limit(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        site.site.store.challenges_per_window = 1
        a, _ = site.team_with_member("Sharks", "ann")
        b, _ = site.team_with_member("Pikes", "bob")
        passed_version(site.store, tmp_path, a, active=True)
        vb = passed_version(site.store, tmp_path, b, active=True)
        client = site.client()
        await sign_in(client, "ann")
        page = await client.get(f"/team/{a}")
        assert f'<option value="{vb}">Pikes' in page.text
        odd = await client.post(f"/team/{a}/challenge", {"opponent": str(vb), "games": "3"})
        assert odd.status == 400 and "even number" in odd.text
        sent = await client.post(f"/team/{a}/challenge", {"opponent": str(vb), "games": "4"})
        assert sent.status == 303
        [match] = site.store.matches(team_id=a)
        assert not match.ranked and match.games == 4 and match.challenge_id is not None
        await client.get(f"/team/{a}")
        again = await client.post(f"/team/{a}/challenge", {"opponent": str(vb), "games": "2"})
        assert again.status == 400 and "not now" in again.text
        assert len(site.store.matches(team_id=a)) == 1


async def test_the_sites_hypercorn_drops_only_its_send_race(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The site's hypercorn logs as the viewer's (`web.listen.hypercorn_config`): a client
    leaving during its 408 is no "Error in ASGI Framework" traceback; another error is one."""
    log = site_config().log
    caplog.set_level(logging.INFO, logger="hypercorn.error")
    for error in (await send_race(), await protocol_send_failure(RuntimeError("a bug"))):
        try:
            raise error
        except Exception:
            await log.exception("Error in ASGI Framework")  # as hypercorn's task group does
    errors = [record for record in caplog.records if record.name == "hypercorn.error"]
    assert [record.exc_info[1] for record in errors if record.exc_info] == [error]
    assert logging.getLogger("hypercorn.error").propagate  # once, through the root's handler
