"""The replay viewer's new endpoints without a browser: the download and "analyse this game"
(bounded, CSRF-protected, with progress); "play from here" is in test_play_from.py."""

from __future__ import annotations

import gzip
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
import trio

import web.analysis
from analysis import Analyser, Settings
from analysis.annotate import annotate
from analysis.sources import game_from_record, game_from_replay
from engine import Direction, GameState, Move, PlayerEntry, Team, game_result
from league.records import record_game, write_record
from protocol.messages import Memento
from protocol.replay import read_replay, write_replay
from web.analysis import AnalysisJobs, Job
from web.board import move_target
from web.replays import MAX_UPLOAD_BYTES

from .conftest import Running
from .httpclient import Browser
from .players import random_bot
from .test_analysis_browser import random_game, replay_file


def raw_get(url: str) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as failure:
        return failure.code, failure.read(), dict(failure.headers)


async def test_a_replay_downloads_as_its_own_bytes_and_nothing_else_does(running: Running) -> None:
    states, _ = random_game(moves=12)
    directory = running.viewer.settings.replay_dir
    path = replay_file(directory, states)
    zipped = directory / "zipped.xml.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    (directory / "odd name.xml").write_bytes(path.read_bytes())
    base = running.url + "/api/replays/"
    status, data, headers = await trio.to_thread.run_sync(raw_get, base + "game.xml/download")
    assert status == 200 and data == path.read_bytes()
    assert headers["content-disposition"] == 'attachment; filename="game.xml"'
    status, data, headers = await trio.to_thread.run_sync(raw_get, base + "zipped.xml.gz/download")
    assert status == 200 and gzip.decompress(data) == path.read_bytes()
    assert headers["content-type"] == "application/gzip"
    # A name the header could not carry as it is gets a plain one.
    status, data, headers = await trio.to_thread.run_sync(raw_get, base + "odd%20name.xml/download")
    assert status == 200 and headers["content-disposition"] == 'attachment; filename="replay.xml"'
    for missing in ("missing.xml", "..%2Fsecret.xml", "notes.txt"):
        url = base + missing + "/download"
        assert (await trio.to_thread.run_sync(raw_get, url))[0] == 404, missing


def replay_file_bytes(states: list[GameState]) -> bytes:
    return write_replay("r", [Memento("r", state) for state in states])


def best_target(state: GameState, best: dict[str, Any]) -> list[int]:
    """Where the engine puts the fish of the analysis' best move."""
    return list(move_target(state, Move(best["x"], best["y"], Direction[best["direction"]])))


async def poll(browser: Browser, job: str) -> dict[str, Any]:
    seen = []
    while True:
        status, body = await browser.get(f"/api/analysis/{job}")
        assert status == 200
        seen.append(body["done"])
        if body["state"] != "running":
            assert seen == sorted(seen), "progress only goes forward"
            return body  # type: ignore[no-any-return]
        await trio.sleep(0.05)


async def test_analyse_this_game_is_guarded_bounded_and_answers_the_analysis(
    running: Running,
) -> None:
    states, _ = random_game(moves=10)
    data = replay_file(running.viewer.settings.replay_dir, states).read_bytes()
    running.viewer.analyses.settings = Settings(nodes=1000)
    browser = Browser(running.url)
    await browser.session()
    with trio.fail_after(60):
        # Without the CSRF token, or from another site: refused before anything is read.
        stranger = Browser(running.url)
        await stranger.session()
        stranger.csrf = "wrong"
        assert (await stranger.post("/api/analysis", data))[0] == 403
        assert (await browser.post("/api/analysis", data, Origin="http://evil.example"))[0] == 403
        # Bounded: a body over the upload bound, and anything that is no game.
        assert await browser.post_announcing("/api/analysis", MAX_UPLOAD_BYTES + 1) == 413
        status, body = await browser.post("/api/analysis", b"<not a replay")
        assert status == 400 and "not a readable replay" in body["error"]
        status, body = await browser.post("/api/analysis", gzip.compress(b"\0" * 3_000_000))
        assert status == 400 and "uncompressed" in body["error"]
        # A game: accepted at once, progress, then what the analysis says.
        status, body = await browser.post("/api/analysis", gzip.compress(data))
        assert status == 202 and body["state"] == "running" and body["total"] == 10
        done = await poll(browser, body["job"])
        with Analyser(Settings(nodes=1000)) as analyser:
            expected = analyser.analyse(game_from_replay(data)).as_json()
        analysis = done["analysis"]
        assert done["state"] == "done" and done["done"] == 10
        assert [m["mark"] for m in analysis["moves"]] == [m["mark"] for m in expected["moves"]]
        assert analysis["graph"] == expected["graph"]
        # Each best move carries its target: where the engine puts the fish.
        for state, move in zip(states, analysis["moves"], strict=False):
            assert move["best"]["to"] == best_target(state, move["best"])
        # The same game again is the same job, answered at once (deterministic).
        status, again = await browser.post("/api/analysis", data)
        assert status == 200 and again["job"] == body["job"] and again["state"] == "done"
        assert (await browser.get("/api/analysis/unknown"))[0] == 404


async def test_one_analysis_at_a_time_and_a_slow_one_is_stopped(running: Running) -> None:
    first, _ = random_game(seed=1, moves=20)
    second, _ = random_game(seed=2, moves=20)
    directory = running.viewer.settings.replay_dir
    one = replay_file(directory, first, "one.xml").read_bytes()
    two = replay_file(directory, second, "two.xml").read_bytes()
    jobs = running.viewer.analyses
    # Long enough that the requests below come while it runs: the search holds the GIL, so
    # on a quiet machine three requests took 2 s and the job was over before the third.
    jobs.settings = Settings(nodes=40_000)
    jobs.deadline = 4.0
    ada, bob = Browser(running.url), Browser(running.url)
    await ada.session()
    await bob.session()
    with trio.fail_after(60):
        status, body = await ada.post("/api/analysis", one)
        assert status == 202
        # While it runs: the same session may not start another, nor may anyone else.
        status, busy = await ada.post("/api/analysis", two)
        assert status == 429 and "one analysis at a time" in busy["error"]
        status, busy = await bob.post("/api/analysis", two)
        assert status == 503
        done = await poll(ada, body["job"])
        assert done["state"] == "failed" and "longer than 4 s" in done["error"]
        assert 0 < done["done"] < 20
        # Failed jobs are not answered again: asked once more, it is analysed anew.
        jobs.deadline = 60.0
        jobs.settings = Settings(nodes=1000)
        status, retried = await bob.post("/api/analysis", one)
        assert status == 202 and retried["job"] != body["job"]
        assert (await poll(bob, retried["job"]))["state"] == "done"


async def test_a_live_game_downloads_as_a_replay_of_the_states_seen(running: Running) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: random_bot(running.port, seed=1))
            nursery.start_soon(lambda: random_bot(running.port, seed=2))
        (room_id,) = running.viewer.hub.games
        view = running.viewer.hub.games[room_id]
        url = f"{running.url}/api/games/{room_id}/replay"
        status, data, headers = await trio.to_thread.run_sync(raw_get, url)
    assert status == 200 and "attachment" in headers["content-disposition"]
    replay = read_replay(data)
    assert [state.rows() for state in replay.states] == [state.rows() for state in view.states]
    assert replay.result == view.result
    missing = f"{running.url}/api/games/no-such-room/replay"
    assert (await trio.to_thread.run_sync(raw_get, missing))[0] == 404


async def test_an_annotated_league_record_shows_its_written_analysis(running: Running) -> None:
    states, moves = random_game(seed=6, moves=14)
    entries = [PlayerEntry(Team.ONE, "alpha"), PlayerEntry(Team.TWO, "beta")]
    data = write_record(
        record_game(
            league="L",
            round=1,
            match=1,
            number=1,
            date="2026-12-01T00:00:00Z",
            seed=17,
            team_ids=["a", "b"],
            moves=moves,
            move_ms=[],
            result=game_result(states[-1], entries, aborted="cut short for the test"),
        )
    )
    _, game = game_from_record(data)
    with Analyser(Settings(nodes=1000)) as analyser:
        expected = analyser.analyse(game).as_json()
    with Analyser(Settings(nodes=1000)) as analyser:
        annotated = annotate(data, analyser.analyse(game))
    browser = Browser(running.url)
    with trio.fail_after(30):
        status, plain = await browser.post("/api/replays/upload", data)
        assert status == 200 and plain["analysis"] is None
        status, body = await browser.post("/api/replays/upload", annotated)
    assert status == 200, body
    analysis = body["analysis"]
    assert [m["mark"] for m in analysis["moves"]] == [m["mark"] for m in expected["moves"]]
    assert [m["best"]["to"] for m in analysis["moves"]] == [
        list(
            move_target(
                state, Move(m["best"]["x"], m["best"]["y"], Direction[m["best"]["direction"]])
            )
        )
        for state, m in zip(states, expected["moves"], strict=False)
    ]


async def test_a_viewer_that_stops_does_not_wait_for_an_analysis_and_its_thread_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ended = threading.Event()
    stopped_by: list[object] = []

    class Watched(Analyser):  # tells when (and why) the abandoned thread left its analysis
        def __exit__(self, kind: object = None, *rest: object) -> None:
            stopped_by.append(kind)
            ended.set()
            super().__exit__(kind, *rest)

    monkeypatch.setattr(web.analysis, "Analyser", Watched)
    states, _ = random_game(seed=8, moves=30)
    game = game_from_replay(replay_file_bytes(states))
    jobs = AnalysisJobs(lambda handler: handler, lambda task: None)
    # Few nodes: one position (up to twice the nodes with the second look) must end well
    # within the 1.5 s below even on a loaded machine; the 30 positions still take seconds.
    jobs.settings = Settings(nodes=4_000)
    job = Job("j", "owner", len(game.moves))
    with trio.fail_after(5):
        with trio.move_on_after(0.3):
            await jobs._run(job, game)
    assert job.failure == "the viewer stopped"
    # The abandoned thread stops at its next position (one position's search: slow on a
    # loaded machine, so it is waited for, not slept for), before the game's end.
    assert await trio.to_thread.run_sync(ended.wait, 60)
    assert stopped_by == [web.analysis._TooLong]
    assert job.done < len(game.moves)
