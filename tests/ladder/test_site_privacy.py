"""The privacy matrix: team A's session and A's API token, and an anonymous visitor, against
every endpoint that names one of team B's objects (uploads, cards, logs, unreleased versions,
the games of an unreleased version, B's tokens) — each answers 403/404 or leaves B's objects
out, while B itself gets them (so each refusal is the rule, not a broken endpoint)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from ladder.store import LadderStore
from tests.ladder.site_client import Client, Site, running_site, sign_in
from tests.ladder.test_site import BOT, passed_version, played_match

REFUSED = {401, 403, 404}


@dataclass
class World:
    """Teams A and B; B's public version vb1 (a ranked match with A), its unreleased vb2 (an
    unranked match against A: hidden from A, since vb2 was never released)."""

    a: int
    b: int
    va: int
    vb1: int
    vb2: int
    public_match: int
    private_match: int
    b_token_id: int
    a_token: str


def build(site: Site) -> World:
    store, data = site.store, site.data_dir
    a, _ = site.team_with_member("Sharks", "ann")
    b, _ = site.team_with_member("Pikes", "bob")
    va = passed_version(store, data, a, active=True)
    vb1 = passed_version(store, data, b, active=True)
    public_match = played_match(store, data, va, vb1, ranked=True)
    vb2 = store.add_version(b, size=len(BOT), sha256="ab" * 32, label="secret-label")
    store.set_check_result(vb2, True, "secret card summary")
    (data / "uploads" / str(b) / f"{vb2}.zip").write_bytes(BOT)
    (data / "cards" / f"{vb2}.json").write_text('{"secret": "card"}')
    private_match = played_match(store, data, vb2, va, ranked=False)
    store.create_api_token(b, by="test")
    [b_token] = store.api_tokens(b)
    return World(
        a,
        b,
        va,
        vb1,
        vb2,
        public_match,
        private_match,
        b_token.id,
        store.create_api_token(a, by="test"),
    )


def b_reads(w: World) -> list[str]:
    """Every GET that names one of B's private objects."""
    b, pm = w.b, w.private_match
    return [
        f"/team/{b}/versions/{w.vb2}/card",
        f"/team/{b}/versions/{w.vb1}/card",
        f"/team/{b}/versions/{w.vb2}/bot.zip",
        f"/team/{b}/versions/{w.vb1}/bot.zip",
        f"/team/{b}/logs/{w.public_match}/1",
        f"/team/{b}/logs/{pm}/2",
        f"/game/{pm}/1",
        f"/api/replays/{pm}-1.xml.gz",
        f"/api/replays/{pm}-2.xml.gz/download",
        f"/match/{pm}",
        f"/team/{b}/versions/{w.vb2}/times",  # the time profile of an unreleased version
        # B's objects under A's own paths: the path's team is not the object's.
        f"/team/{w.a}/versions/{w.vb2}/card",
        f"/team/{w.a}/versions/{w.vb2}/bot.zip",
        f"/team/{w.a}/versions/{w.vb2}/times",
    ]


def b_writes(w: World) -> list[tuple[str, dict[str, str]]]:
    """Every form that changes one of B's objects."""
    b = w.b
    return [
        (f"/team/{b}/upload", {}),
        (f"/team/{b}/activate", {"version": str(w.vb2)}),
        (f"/team/{b}/tokens", {}),
        (f"/team/{b}/tokens/{w.b_token_id}/revoke", {}),
        (f"/team/{b}/challenge", {"opponent": str(w.va), "games": "2"}),
    ]


async def readers(site: Site, w: World) -> dict[str, Client]:
    anonymous = site.client()
    await anonymous.get("/")
    ann = site.client()
    await sign_in(ann, "ann")
    await ann.get(f"/team/{w.a}")  # its CSRF token, as a page would have it
    return {"anonymous": anonymous, "team A": ann}


def unchanged(store: LadderStore, w: World) -> None:
    versions = {v.id: v for v in store.versions(w.b)}
    assert set(versions) == {w.vb1, w.vb2}
    assert versions[w.vb1].active and not versions[w.vb2].active
    assert [t.revoked for t in store.api_tokens(w.b)] == [False]


async def test_team_b_sees_its_own_objects(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        w = build(site)
        bob = site.client()
        await sign_in(bob, "bob")
        for path in b_reads(w)[:11]:
            answer = await bob.get(path)
            assert answer.status in (200, 303), path
        page = await bob.get(f"/team/{w.b}")
        assert "secret-label" in page.text and 'id="private"' in page.text
        listing = await bob.get("/api/replays")
        assert f"{w.private_match}-1.xml.gz" in listing.text


async def test_others_never_read_team_bs_objects(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        w = build(site)
        for who, client in (await readers(site, w)).items():
            for path in b_reads(w):
                answer = await client.get(path)
                assert answer.status in REFUSED, (who, path, answer.status)
                assert b"secret" not in answer.body and b"log of team" not in answer.body
            page = await client.get(f"/team/{w.b}")
            assert page.status == 200 and 'id="private"' not in page.text, who
            assert "secret" not in page.text and f"/game/{w.private_match}/" not in page.text
            # Only B's released version has a public profile (rating graph, move times).
            assert 'class="version-profile" data-version="1"' in page.text
            assert 'data-version="2"' not in page.text and 'id="time-profiles"' not in page.text
            public = await client.get(f"/team/{w.b}/versions/{w.vb1}/times")
            assert public.status == 200 and json.loads(public.body)["moves"] > 0
            # Every page of the listing keeps B's unreleased games out.
            cursor = 0
            while True:
                paged = json.loads((await client.get(f"/api/replays?limit=1&offset={cursor}")).body)
                assert all(
                    not e["name"].startswith(f"{w.private_match}-") for e in paged["replays"]
                )
                if paged["next"] is None:
                    break
                cursor = paged["next"]
            # B's public game is public.
            assert f"/game/{w.public_match}/1" in page.text
            assert (await client.get(f"/api/replays/{w.public_match}-1.xml.gz")).status == 200
            listing = await client.get("/api/replays")
            assert f"{w.private_match}-" not in listing.text, who
            assert f"{w.public_match}-1.xml.gz" in listing.text
            own = await client.get(f"/team/{w.a}")
            assert f"/game/{w.private_match}/" not in own.text or who == "team A"


async def test_others_never_change_team_bs_objects(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        w = build(site)
        for who, client in (await readers(site, w)).items():
            for path, fields in b_writes(w):
                files = {"bot": ("bot.zip", BOT)} if path.endswith("/upload") else None
                answer = await client.post(path, fields, files)
                assert answer.status in REFUSED, (who, path, answer.status)
            unchanged(site.store, w)


async def test_team_as_token_reaches_only_its_own_team(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        w = build(site)
        api = site.client()
        bearer = {"Authorization": f"Bearer {w.a_token}"}
        versions = await api.get("/api/versions", bearer)
        assert versions.status == 200 and f'"id":{w.va}' in versions.text
        assert "secret" not in versions.text and f'"id":{w.vb2}' not in versions.text
        activate = await api.post_json("/api/activate", {"version": w.vb2}, bearer)
        assert activate.status == 400
        for path in b_reads(w):
            answer = await api.get(path, bearer)
            assert answer.status in REFUSED, path
        unchanged(site.store, w)


@pytest.mark.parametrize(
    "name",
    [
        "..%2Fladder.sqlite",
        "1-1.xml",
        "1-1.xml.gz%00",
        "01-1.xml.gz.bak",
        "%2e%2e%2fcards%2f1.json",
        "ladder.sqlite",
    ],
)
async def test_replay_names_are_ids_only(tmp_path: Path, name: str) -> None:
    async with running_site(tmp_path) as site:
        (tmp_path / "replays").mkdir(exist_ok=True)
        (tmp_path / "replays" / "1-1.xml").write_text("<protocol/>")
        answer = await site.client().get(f"/api/replays/{name}")
        assert answer.status == 404
