"""The team page's time profile of its moves and rating graphs per version, the listing's
pages, and the viewer's replay page inside the ladder (its context: the ladder's navigation,
the game's links, no dead links) — on the real LadderStore (SQLite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ladder.site import team as team_module
from ladder.site.times import SOFT_LIMIT_MS, profile
from ladder.store import GameResultRow, LadderStore, MoveTimes, RecordStatus
from ladder.work_match import seat_times
from tests.helpers.ladder import FakeClock, teams_with_versions
from tests.ladder.site_client import running_site, sign_in
from tests.ladder.test_site import MOVE_MS, passed_version, played_match

VIEWER = Path(__file__).resolve().parents[2] / "web" / "static"


def game(*times: float) -> MoveTimes:
    return MoveTimes(1, 1, 1, 2, 0, tuple(times))


def test_profile_figures_and_histogram_bins() -> None:
    moves = [float(ms) for ms in range(1, 101)]  # 1 … 100 ms
    p = profile([game(*moves[:50]), game(*moves[50:], 1600.0, 2000.0, 2500.0)])
    assert (p.games, p.moves) == (2, 103)
    # Nearest-rank percentiles (runner.timing's): the 52nd, 93rd, 102nd of 103 moves.
    assert (p.median, p.p90, p.p99, p.max) == (52.0, 93.0, 2000.0, 2500.0)
    assert (p.near, p.over) == (3, 1)  # over 75 % of 2 s; over 2 s (2 s itself is in time)
    assert sum(p.bins) == 103 and p.bins[0] == 9 and p.bins[-2:] == (2, 1)
    histogram = p.to_json()["histogram"]
    assert histogram[-1] == {"from_ms": SOFT_LIMIT_MS, "to_ms": None, "moves": 1}
    empty = profile([])
    assert empty.moves == 0 and empty.median is None and empty.max is None


def test_seat_times_follow_who_moves() -> None:
    # Team ONE moves on even turns; seat 1 (version b) holds team ONE in even games.
    assert seat_times([1.0, 2.0, 3.0, 4.0, 5.0], one=0) == ((1.0, 3.0, 5.0), (2.0, 4.0))
    assert seat_times([1.0, 2.0, 3.04], one=1) == ((2.0,), (1.0, 3.0))


def test_store_keeps_move_times_with_the_games_exactly_once(tmp_path: Path) -> None:
    store = LadderStore.open(str(tmp_path / "ladder.sqlite"), clock=FakeClock())
    (_, a), (_, b) = teams_with_versions(store, 2)
    store.create_match(a, b)
    claim = store.claim_match("w")
    assert claim is not None
    rows = [
        GameResultRow(1, a, 2, 0, "r", "r", None, (10.04, 20.0), (1.0,)),
        GameResultRow(2, b, 0, 2, "r", "r", None, (30.0,), (2.0, 3.0)),
    ]
    assert store.record_match(claim, rows) is RecordStatus.RECORDED
    # The same results again (times as sent, before the store's rounding): a duplicate.
    assert store.record_match(claim, rows) is RecordStatus.DUPLICATE
    assert [(t.number, t.move_ms, t.opponent) for t in store.move_times(a)] == [
        (2, (30.0,), b),
        (1, (10.0, 20.0), b),
    ]
    assert store.match(claim.match_id).results[1].move_ms_b == (2.0, 3.0)  # type: ignore[union-attr]
    store.create_match(a, b)
    claim = store.claim_match("w")
    assert claim is not None
    for bad in ((-1.0,), (float("nan"),), (1.0,) * 201):
        with pytest.raises(ValueError, match="move times"):
            store.record_match(claim, [GameResultRow(1, a, 1, 1, "r", "r", None, bad), rows[1]])
    store.close()


async def test_team_page_profiles_and_rating_graphs(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        a, _ = site.team_with_member("Sharks", "ann")
        b, _ = site.team_with_member("Pikes", "bob")
        va1 = passed_version(site.store, tmp_path, a, active=True)
        vb = passed_version(site.store, tmp_path, b, active=True)
        played_match(site.store, tmp_path, va1, vb, ranked=True)
        va2 = passed_version(site.store, tmp_path, a, active=True)  # v1 stays released
        played_match(site.store, tmp_path, va2, vb, ranked=True)
        va3 = passed_version(site.store, tmp_path, a, active=False)  # never released
        visitor = site.client()
        page = (await visitor.get(f"/team/{a}")).text
        # A graph and a histogram per released version; the active one's is rating-graph.
        assert 'id="rating-graph"' in page and 'id="rating-graph-v1"' in page
        assert 'id="time-histogram-v2"' in page and 'id="time-histogram-v1"' in page
        assert 'data-version="3"' not in page and 'id="time-profiles"' not in page
        assert "max 2.10 s" in page and "limit-bar" in page  # the 2100 ms move of game 2
        figures = json.loads((await visitor.get(f"/team/{a}/versions/{va1}/times")).body)
        own = MOVE_MS[0][0] + MOVE_MS[1][0]
        assert figures["moves"] == len(own) and figures["max_ms"] == max(own)
        assert figures["over_limit"] == 1 and figures["near_limit"] == 2
        assert (await visitor.get(f"/team/{a}/versions/{va3}/times")).status == 404
        assert (await visitor.get(f"/team/{b}/versions/{va1}/times")).status == 404
        ann = site.client()
        await sign_in(ann, "ann")
        mine = (await ann.get(f"/team/{a}")).text
        assert 'id="time-profiles"' in mine
        assert f'href="/team/{a}/versions/{va3}/times"' in mine  # every version, its own
        assert (await ann.get(f"/team/{a}/versions/{va3}/times")).status == 200


async def test_listing_pages_cover_every_visible_game_once(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        a, _ = site.team_with_member("Sharks", "ann")
        b, _ = site.team_with_member("Pikes", "bob")
        va = passed_version(site.store, tmp_path, a, active=True)
        vb = passed_version(site.store, tmp_path, b, active=True)
        matches = [played_match(site.store, tmp_path, va, vb, ranked=True) for _ in range(5)]
        visitor = site.client()
        seen: list[str] = []
        cursor, pages = 0, 0
        while True:
            answer = json.loads((await visitor.get(f"/api/replays?limit=3&offset={cursor}")).body)
            assert len(answer["replays"]) <= 4  # whole matches of 2 games up to 3 games
            seen += [entry["name"] for entry in answer["replays"]]
            pages += 1
            if answer["next"] is None:
                break
            cursor = answer["next"]
        expected = [f"{m}-{n}.xml.gz" for m in reversed(matches) for n in (1, 2)]
        assert seen == expected and pages >= 3
        for query in ("limit=x", "offset=-1", "limit=0"):
            assert (await visitor.get(f"/api/replays?{query}")).status == 400
        huge = json.loads((await visitor.get("/api/replays?limit=100000")).body)
        assert len(huge["replays"]) == 10 and huge["next"] is None


async def test_team_page_games_have_older_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(team_module, "TEAM_PAGE_GAMES", 2)
    async with running_site(tmp_path) as site:
        a, _ = site.team_with_member("Sharks", "ann")
        b, _ = site.team_with_member("Pikes", "bob")
        va = passed_version(site.store, tmp_path, a, active=True)
        vb = passed_version(site.store, tmp_path, b, active=True)
        first, second = (played_match(site.store, tmp_path, va, vb, ranked=True) for _ in "ab")
        visitor = site.client()
        newest = (await visitor.get(f"/team/{a}")).text
        assert f"/game/{second}/1" in newest and f"/game/{first}/1" not in newest
        assert f'href="/team/{a}?before={second}#games"' in newest
        older = (await visitor.get(f"/team/{a}?before={second}")).text
        assert f"/game/{first}/1" in older and f"/game/{second}/1" not in older


async def test_replay_page_inside_the_ladder_has_the_ladders_links(tmp_path: Path) -> None:
    async with running_site(tmp_path) as site:
        a, _ = site.team_with_member("Sharks", "ann")
        b, _ = site.team_with_member("Pikes", "bob")
        va = passed_version(site.store, tmp_path, a, active=True)
        vb = passed_version(site.store, tmp_path, b, active=True)
        match_id = played_match(site.store, tmp_path, va, vb, ranked=True)
        visitor = site.client()
        config = json.loads((await visitor.get("/api/config")).body)
        context = config["context"]
        links = [link["href"] for link in context["nav"]]
        assert links[0] == "/" and "/replays" in links and "/login" in links
        assert context["play"] is False  # no game server here: no "play from here"
        for href in links:
            assert (await visitor.get(href)).status == 200, href
        replay = json.loads((await visitor.get(f"/api/replays/{match_id}-1.xml.gz")).body)
        assert replay["states"] and {link["href"] for link in replay["links"]} == {
            f"/match/{match_id}",
            f"/team/{a}",
            f"/team/{b}",
        }
        match_page = await visitor.get(f"/match/{match_id}")
        assert match_page.status == 200 and f'href="/game/{match_id}/2"' in match_page.text
        assert (await visitor.get(f"/match/{match_id + 1}")).status == 404
        session = json.loads((await visitor.get("/api/session")).body)
        assert session["label"] == "not signed in"
        ann = site.client()
        await sign_in(ann, "ann")
        nav = json.loads((await ann.get("/api/config")).body)["context"]["nav"]
        assert {"label": "Our team", "href": f"/team/{a}", "name": "team"} in nav
        assert json.loads((await ann.get("/api/session")).body)["label"] == "ann"


def test_the_viewers_replay_page_takes_a_context() -> None:
    # The page is the viewer's file, reused: the hooks the context uses are in it.
    page = (VIEWER / "replays.html").read_text()
    assert 'data-feature="play"' in page and 'id="context-links"' in page
    common = (VIEWER / "common.js").read_text()
    assert "applyContext(config.context)" in common and "Web.session.label ||" in common
    assert "showLinks(data.links)" in (VIEWER / "replays.js").read_text()
