"""The league on the web viewer: standings and match pages from a store, game records as
replays (from the store and uploaded), discrepancies, the settings."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import urllib.request
from pathlib import Path

import pytest
import trio

from league.records import read_record, write_record
from league.standings import compute_standings
from league.store import Claim, LeagueStore, SQLiteBackend
from server.config import Settings, parse_settings
from web.board import state_json

from .conftest import Running
from .httpclient import Browser
from .leagues import TEAMS, League, make_league


@pytest.fixture
def league(tmp_path: Path) -> League:
    return make_league(tmp_path)


@pytest.fixture
def settings(tmp_path: Path, league: League) -> Settings:
    return Settings(
        port=0, replay_dir=tmp_path / "replays", password="secret-pw", web_league=league.file
    )


def store_standings(league: League) -> dict[str, object]:
    store = LeagueStore.sqlite(league.database)
    try:
        finished = store.finished_games()
    finally:
        store.close()
    standings = compute_standings(league.config, league.matches, finished).to_dict()
    as_json: dict[str, object] = json.loads(json.dumps(standings))  # as the page has it
    return as_json


async def test_standings_are_the_league_s_and_follow_the_store(
    running: Running, league: League
) -> None:
    assert running.viewer.league is not None
    running.viewer.league.poll_seconds = 0.0  # read the store on every request
    browser = Browser(running.url)
    with trio.fail_after(20):
        status, body = await browser.get("/api/league")
        assert status == 200 and body["standings"]["progress"]["games_recorded"] == 0
        league.play_next(5)  # 6 matches of 2 games: the third one is incomplete
        status, body = await browser.get("/api/league")
        assert status == 200
        assert body["standings"] == store_standings(league)
        assert body["standings"]["progress"]["matches_complete"] == 2
        assert [match["recorded"] for match in body["matches"]] == [2, 2, 1, 0, 0, 0]
        assert body["names"]["haie"] == "Die Haie"
        league.play_next(7)
        status, body = await browser.get("/api/league")
        assert body["standings"] == store_standings(league)
        assert body["standings"]["progress"]["matches_complete"] == 6
        _, config = await browser.get("/api/config")
        assert config["league"] is True


async def test_a_match_page_lists_its_games_with_results(running: Running, league: League) -> None:
    played = league.play_next(3)
    browser = Browser(running.url)
    with trio.fail_after(20):
        status, body = await browser.get("/api/league/matches/1")
        assert status == 200
        assert body["recorded"] == 2 and body["games"] == 2
        games = body["games_list"]
        assert [game["number"] for game in games] == [1, 2]
        for game, (scheduled, _state) in zip(games, played[:2], strict=True):
            assert game["teams"] == [scheduled.team_one, scheduled.team_two]
            assert game["boardSeed"] == scheduled.board_seed
            assert game["record"] is True
            assert game["result"]["reason"]
        store = LeagueStore.sqlite(league.database)
        try:
            outcome = store.finished_games()[0].outcome
        finally:
            store.close()
        first = games[0]["result"]
        assert (first["winner"], tuple(first["siegpunkte"]), tuple(first["schwarm"])) == (
            outcome.winner,
            outcome.siegpunkte,
            outcome.schwarm,
        )
        status, body = await browser.get("/api/league/matches/2")
        assert body["recorded"] == 1 and body["games_list"][1]["record"] is False
        assert body["games_list"][1]["result"] is None
        assert (await browser.get("/api/league/matches/99"))[0] == 404
        assert (await browser.get("/api/league/records/2/2"))[0] == 404  # not played yet


async def test_a_stored_record_replays_to_the_engine_s_final_state(
    running: Running, league: League
) -> None:
    [(game, final)] = league.play_next(1)
    browser = Browser(running.url)
    with trio.fail_after(20):
        status, body = await browser.get(f"/api/league/records/{game.match_id}/{game.number}")
        assert status == 200
        assert body["states"][-1] == state_json(final, None) | {
            "lastMove": body["states"][-1]["lastMove"]
        }
        assert body["states"][-1]["board"] == [[f.name for f in row] for row in final.rows()]
        assert body["states"][-1]["turn"] == final.turn == len(body["states"]) - 1
        assert body["discrepancies"] == []
        assert body["record"]["match"] == game.match_id
        assert body["names"] == [TEAMS[game.team_one], TEAMS[game.team_two]]


async def test_a_tampered_record_shows_its_discrepancy(running: Running, league: League) -> None:
    league.play_next(1)
    browser = Browser(running.url)
    with trio.fail_after(20):
        stored = read_record(await _record_xml(running, 1, 1))
        (one_points, one_swarm), *others = stored.result.scores
        scores = ((one_points + 1, one_swarm), *others)
        tampered = write_record(
            dataclasses.replace(stored, result=dataclasses.replace(stored.result, scores=scores))
        )
        # Dropped on the replay page …
        status, body = await browser.post("/api/replays/upload", tampered)
        assert status == 200
        assert any("Siegpunkte of ONE" in text for text in body["discrepancies"])
        assert body["states"][-1]["turn"] == len(stored.moves)
        # … and stored in the league's store.
        connection = sqlite3.connect(league.database)
        with connection:
            connection.execute("UPDATE results SET game_record = ?", (tampered.decode(),))
        connection.close()
        assert running.viewer.league is not None
        running.viewer.league.poll_seconds = 0.0
        status, body = await browser.get("/api/league/records/1/1")
        assert status == 200 and len(body["discrepancies"]) == 1
        status, body = await browser.post("/api/replays/upload", b"<game><header/></game>")
        assert status == 400 and "not a game record" in body["error"]


async def _record_xml(running: Running, match_id: int, number: int) -> bytes:
    url = f"{running.url}/api/league/records/{match_id}/{number}.xml"

    def get() -> bytes:
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.headers["Content-Type"].startswith("application/xml")
            data: bytes = response.read()
            return data

    return await trio.to_thread.run_sync(get)


async def test_an_unreadable_league_file_is_reported(running: Running, league: League) -> None:
    assert running.viewer.league is not None
    running.viewer.league.poll_seconds = 0.0
    league.file.write_text("name = [broken\n", encoding="utf-8")
    with trio.fail_after(20):
        status, body = await Browser(running.url).get("/api/league")
    assert status == 503 and "league file cannot be read" in body["error"]
    assert str(league.file.parent) not in body["error"]  # no paths to anonymous pages


async def test_an_unreadable_store_is_reported(running: Running, league: League) -> None:
    assert running.viewer.league is not None
    running.viewer.league.poll_seconds = 0.0
    league.database.write_bytes(b"no database here " * 512)
    with trio.fail_after(20):
        status, body = await Browser(running.url).get("/api/league")
    assert status == 503 and "league store cannot be read" in body["error"]


def test_the_viewer_never_writes_to_the_store(league: League) -> None:
    league.play_next(1)
    store = LeagueStore(SQLiteBackend(league.database, read_only=True))
    try:
        assert len(store.finished_games()) == 1
        with pytest.raises(sqlite3.OperationalError, match="never writes"):
            store.abandon(Claim(league.game(1, 1), 1, "test"))
        # Below the store's API too: the connection itself is read-only.
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.backend._connection.execute("DELETE FROM results")  # type: ignore[attr-defined]
    finally:
        store.close()


def test_reads_see_the_last_commit_while_the_league_writes(league: League) -> None:
    """While the league writes (a write transaction held open), the viewer reads the last
    committed state."""
    league.play_next(1)
    writer = sqlite3.connect(league.database, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("DELETE FROM results")  # not committed: the viewer sees the last commit
    try:
        store = LeagueStore(SQLiteBackend(league.database, read_only=True))
        try:
            assert len(store.finished_games()) == 1
        finally:
            store.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_web_league_settings(tmp_path: Path) -> None:
    settings, _ = parse_settings(["--web-league", "liga.toml"], tmp_path)
    assert settings.web_league == tmp_path / "liga.toml" and settings.web_league_db is None
    (tmp_path / "server.properties").write_text(
        "webLeague = a/liga.toml\nwebLeagueDb = /data/liga.sqlite\n"
    )
    settings, _ = parse_settings([], tmp_path)
    assert settings.web_league == tmp_path / "a" / "liga.toml"
    assert settings.web_league_db == Path("/data/liga.sqlite")
    assert Settings().web_league is None
