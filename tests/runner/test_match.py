"""piranhas-match: real matches through the command, with the in-repo fast bot (a game in a
fraction of a second) and, once, with two socha 4.3.9 bots (about 6 s per game)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from cli.match import main
from engine import GameResult, GameState, PlayerEntry, Team
from launching import MatchError
from protocol.replay import read_replay
from runner.game import left_the_game
from runner.options import distinct_names, parse_options
from runner.scores import PlayerScore, first_player, player_at
from tests.helpers.process import TEST_BOTS, environment
from tests.helpers.server import running_server

FAST_BOT = shlex.join([sys.executable, str(TEST_BOTS / "fast_bot.py")])
SOCHA_BOT = shlex.join([sys.executable, str(TEST_BOTS / "random_bot.py")])

# Every test has a limit: the pytest-timeout one below, and trio.fail_after around each run.
pytestmark = pytest.mark.timeout(90)


@dataclass
class Run:
    status: int
    stdout: str
    stderr: str
    seconds: float


async def run_match(cwd: Path, *arguments: str, limit: float) -> Run:
    """`python -m cli.match ARGUMENTS` in `cwd` (its log/ and replays/ go there)."""
    started = time.monotonic()
    with trio.fail_after(limit):
        completed = await trio.run_process(
            [sys.executable, "-m", "cli.match", *arguments],
            cwd=cwd,
            env=environment(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return Run(
        completed.returncode,
        completed.stdout.decode(),
        completed.stderr.decode(),
        time.monotonic() - started,
    )


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def game_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("game ")]


def table(stdout: str) -> dict[str, list[str]]:
    """The final score table: player name -> its cells."""
    lines = stdout.splitlines()
    start = lines.index("=============== SCORES ================")
    assert lines[start + 1].split()[0] == "player"
    rows = {}
    for line in lines[start + 2 :]:
        cells = line.split()
        if cells[1:2] == ["of"]:  # "x of n games ended irregularly"
            break
        rows[cells[0]] = cells[1:]
    return rows


def bot_pid(log: Path) -> int:
    match = re.search(r"fast_bot pid=(\d+)", log.read_text(encoding="utf-8"))
    assert match, log.read_text(encoding="utf-8")
    return int(match.group(1))


def assert_gone(pid: int) -> None:
    """The process no longer exists (killed and reaped)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"bot process {pid} still exists")


def assert_scores_add_up(games: list[dict[str, Any]]) -> None:
    """Siegpunkte of every regular game sum to 2: 2/0 with a winner, 1/1 on a tie."""
    for game in games:
        assert game["regular"] is True
        points = {player["team"]: player["score"] for player in game["players"]}
        assert sum(points.values()) == 2
        if game["winner"] is None:
            assert points == {"ONE": 1, "TWO": 1}
        else:
            assert points[game["winner"]] == 2


def assert_table_matches(stdout: str, games: list[dict[str, Any]], names: list[str]) -> None:
    """The final table is the aggregate of the per-game results."""
    rows = table(stdout)
    assert sorted(rows) == sorted(names)
    for name in names:
        entries = [p for game in games for p in game["players"] if p["name"] == name]
        assert len(entries) == len(games)
        wins = sum(
            game["winner"] == p["team"]
            for game in games
            for p in game["players"]
            if p["name"] == name
        )
        draws = sum(game["winner"] is None for game in games)
        swarm = sum(p["swarm"] for p in entries) / len(entries)
        games_, wins_, draws_, losses_, points_, swarm_ = rows[name]
        assert int(games_) == len(games)
        assert (int(wins_), int(draws_), int(losses_)) == (wins, draws, len(games) - wins - draws)
        assert int(points_) == sum(p["score"] for p in entries)
        assert float(swarm_) == pytest.approx(swarm, abs=0.005)


# ---------------------------------------------------------------------------------------------
# Pure parts


def test_equal_names_get_official_suffixes() -> None:
    assert distinct_names("bot", "bot") == ("bot-1", "bot-2")
    assert distinct_names("alice", "bob") == ("alice", "bob")


def test_starting_side_alternates_player1_first() -> None:
    assert [first_player(k) for k in range(4)] == [0, 1, 0, 1]
    # In game 2 (k = 1) player2 holds slot 0 and player1 slot 1.
    assert (player_at(0, 1), player_at(1, 1)) == (1, 0)
    assert (player_at(0, 0), player_at(1, 0)) == (0, 1)


def test_left_reason_names_exactly_one_player() -> None:
    reason = "robot hat das Spiel verlassen: LOST_CONNECTION"
    assert left_the_game(reason, "robot")
    assert not left_the_game(reason, "bot")  # a suffix of another name is not that player
    assert not left_the_game("robot hat den größeren zusammenhängenden Schwarm", "robot")


def test_scores_sum_points_and_average_swarms() -> None:
    score = PlayerScore("alice")
    entries = [PlayerEntry(Team.ONE, "alice"), PlayerEntry(Team.TWO, "bob")]
    won = GameResult([(entries[0], (2, 9)), (entries[1], (0, 3))], Team.ONE, True, "")
    tie = GameResult([(entries[0], (1, 4)), (entries[1], (1, 4))], None, True, "")
    lost = GameResult([(entries[0], (0, 0)), (entries[1], (2, 5))], Team.TWO, False, "")
    score.add(Team.ONE, won, 2, 9)
    score.add(Team.ONE, tie, 1, 4)
    score.add(Team.ONE, lost, 0, 0)
    assert (score.games, score.wins, score.draws, score.losses) == (3, 1, 1, 1)
    assert score.points == 3
    assert score.swarm == pytest.approx(13 / 3)
    assert score.violations == 1  # the irregular loss


def test_option_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    bot = ["--player1", FAST_BOT, "--player2", FAST_BOT]
    with pytest.raises(MatchError, match="--player1: command 'no-such-bot-4711' not found"):
        parse_options(["--player1", "no-such-bot-4711", "--player2", FAST_BOT])
    with pytest.raises(MatchError, match="--player2: the player command is empty"):
        parse_options(["--player1", FAST_BOT, "--player2", "  "])
    with pytest.raises(MatchError, match="give its --port"):
        parse_options([*bot, "--host", "example.org"])
    with pytest.raises(MatchError, match="--games"):
        parse_options([*bot, "--games", "0"])
    with pytest.raises(MatchError, match="--name2 must not be blank"):
        parse_options([*bot, "--name2", ""])
    options = parse_options([*bot, "--no-timeout2", "--port", "1234"])
    assert options.can_timeout == (True, False)
    assert (options.host, options.port, options.password) == ("localhost", 1234, "examplepassword")


def test_missing_player_command_fails_before_any_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    status = main(["--player1", FAST_BOT, "--player2", str(tmp_path / "missing_bot.sh")])
    assert status == 2
    err = capsys.readouterr().err
    assert "piranhas-match: error: --player2: command" in err
    assert "not found" in err
    assert not (tmp_path / "log").exists()  # nothing was started


# ---------------------------------------------------------------------------------------------
# Matches with the fast bot


async def test_fast_match_alternates_sides_and_counts(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", f"{FAST_BOT} --seed 1", "--player2", f"{FAST_BOT} --seed 2"),
        *("--games", "4", "--name1", "bot", "--name2", "bot"),
        *("--results", "results.jsonl", "--save-replay"),
        limit=30,
    )
    assert run.status == 0, run.stderr
    names = ["bot-1", "bot-2"]  # equal names made distinct, as officially
    games = records(tmp_path / "results.jsonl")
    assert [game["game"] for game in games] == [1, 2, 3, 4]
    # Slot order is team order: the ONE side alternates, player1 first.
    assert [[p["name"] for p in game["players"]] for game in games] == [
        names,
        names[::-1],
        names,
        names[::-1],
    ]
    assert all([p["team"] for p in game["players"]] == ["ONE", "TWO"] for game in games)
    assert_scores_add_up(games)
    assert_table_matches(run.stdout, games, names)
    lines = game_lines(run.stdout)
    assert len(lines) == 4
    assert lines[0].startswith("game 1/4: bot-1 (ONE) vs bot-2 (TWO)")
    assert lines[1].startswith("game 2/4: bot-2 (ONE) vs bot-1 (TWO)")
    assert "0 of 4 games ended irregularly" in run.stdout
    # Saving a replay prints nothing of its own: such a line, printed from the thread that
    # saved, could land inside a game's line.
    assert "replay saved" not in run.stdout + run.stderr
    # Every bot process had its own log, and played (fast_bot logs the end of its game).
    for name in names:
        for number in range(1, 5):
            log = tmp_path / "log" / f"{name}_game{number}.log"
            assert "game over after" in log.read_text(encoding="utf-8")
    assert (tmp_path / "log" / "server.log").stat().st_size > 0
    # Replays under the official names (slot order), holding the game's result.
    assert len(list((tmp_path / "replays").iterdir())) == 4
    for game in games:
        first, second = (p["name"] for p in game["players"])
        assert re.search(rf"_{first}_{second}(-\d+)?\.xml$", game["replay"])
        replay = read_replay((tmp_path / game["replay"]).read_bytes())
        assert replay.result is not None
        assert replay.result.reason == game["reason"]
        assert replay.states[-1].turn == game["turn"]


async def test_a_replay_that_cannot_be_saved_is_a_note_of_its_game(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where the replay folder should be\n")
    run = await run_match(
        tmp_path,
        *("--player1", FAST_BOT, "--player2", FAST_BOT, "--games", "2"),
        *("--results", "results.jsonl", "--save-replay", "--replay-dir", "blocker"),
        limit=30,
    )
    assert run.status == 0, run.stderr  # the games count; only their replays are missing
    lines = game_lines(run.stdout)
    assert len(lines) == 2
    assert all("; replay not saved: [Errno" in line for line in lines), lines
    games = records(tmp_path / "results.jsonl")
    assert not any("replay" in game for game in games)
    assert all(game["notes"][0].startswith("replay not saved: ") for game in games)


async def test_player_that_exits_at_once_ends_the_run(tmp_path: Path) -> None:
    quitter = shlex.join([sys.executable, "-c", "print('bye')"])
    run = await run_match(
        tmp_path, "--player1", quitter, "--player2", FAST_BOT, "--games", "3", limit=20
    )
    assert run.status == 2
    assert "player process exited before game 1 ended: player1 (status 0)" in run.stderr
    assert "log/player1_game1.log" in run.stderr
    assert run.seconds < 10  # a few seconds' grace for a result, no game-length wait
    assert "bye" in (tmp_path / "log" / "player1_game1.log").read_text(encoding="utf-8")
    # The waiting opponent did not outlive the run.
    assert_gone(bot_pid(tmp_path / "log" / "player2_game1.log"))
    assert game_lines(run.stdout) == []


async def test_player_crash_during_a_game_is_a_counted_loss(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", f"{FAST_BOT} --crash-after 5", "--player2", FAST_BOT),
        *("--games", "2", "--results", "results.jsonl", "--no-reproducers"),
        limit=20,
    )
    # A bot that dies during its game loses it, and the run goes on (unlike a bot that
    # cannot start: that is a usage error).
    assert run.status == 0, run.stderr
    lines = game_lines(run.stdout)
    assert len(lines) == 2
    for line in lines:
        assert "winner player2 IRREGULAR — player1 hat das Spiel verlassen" in line
        assert "player1 crashed (exit status 3)" in line
    assert [game["regular"] for game in records(tmp_path / "results.jsonl")] == [False, False]
    assert table(run.stdout)["player1"][:4] == ["2", "0", "0", "2"]
    assert re.search(r"player1 +\d+ .* 2$", run.stdout, re.MULTILINE)  # crashes column
    assert not (tmp_path / "log" / "reproducers").exists()


async def test_hung_game_ends_the_run_and_kills_the_bots(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", f"{FAST_BOT} --hang", "--player2", FAST_BOT),
        *("--no-timeout", "--game-timeout", "1.5"),
        limit=20,
    )
    assert run.status == 2
    assert "game 1 hangs: no result after 1.5 s" in run.stderr
    for name in ("player1", "player2"):
        assert_gone(bot_pid(tmp_path / "log" / f"{name}_game1.log"))


async def test_timed_out_player_loses_an_irregular_game(tmp_path: Path) -> None:
    # The in-process server reads ./server.properties like the server command.
    (tmp_path / "server.properties").write_text("softTimeout = 1\nhardTimeout = 1.5\n")
    run = await run_match(
        tmp_path,
        *("--player1", FAST_BOT, "--player2", f"{FAST_BOT} --hang"),
        *("--games", "1", "--results", "results.jsonl"),
        limit=30,
    )
    assert run.status == 0, run.stderr
    (game,) = records(tmp_path / "results.jsonl")
    assert game["regular"] is False
    assert game["winner"] == "ONE"
    assert [p["score"] for p in game["players"]] == [2, 0]
    (line,) = game_lines(run.stdout)
    assert "IRREGULAR" in line
    assert "player2 still running after 5 s: killed" in line
    assert "1 of 1 games ended irregularly (lost by violation: player2 1)" in run.stdout
    assert table(run.stdout)["player2"][:5] == ["1", "0", "0", "1", "0"]


async def test_ctrl_c_kills_the_bots_and_prints_the_score(tmp_path: Path) -> None:
    stdout = tmp_path / "stdout.txt"
    with stdout.open("wb") as output:
        process = await trio.lowlevel.open_process(
            [
                *(sys.executable, "-m", "cli.match"),
                *("--player1", FAST_BOT, "--player2", f"{FAST_BOT} --hang"),
                *("--games", "5", "--no-timeout"),
            ],
            cwd=tmp_path,
            env=environment(),
            stdout=output,
            stderr=output,
        )
    try:
        logs = [tmp_path / "log" / f"{name}_game1.log" for name in ("player1", "player2")]
        with trio.fail_after(15):  # both bots are running
            while not all(log.exists() and "pid=" in log.read_text("utf-8") for log in logs):
                await trio.sleep(0.05)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(15):
            status = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
    output_text = stdout.read_text(encoding="utf-8")
    assert status == 130, output_text
    assert "=============== SCORES ================" in output_text
    assert "interrupted after 0 of 5 games" in output_text
    for log in logs:
        assert_gone(bot_pid(log))


# ---------------------------------------------------------------------------------------------
# A server that is already running


async def test_running_server_with_password(tmp_path: Path) -> None:
    async with running_server(password="s3cret") as server:
        port = server.port
        bots = ["--player1", FAST_BOT, "--player2", FAST_BOT, "--port", str(port)]

        wrong = await run_match(tmp_path, *bots, "--password", "nope", limit=20)
        assert wrong.status == 2
        assert f"wrong password: the server at localhost:{port} refused" in wrong.stderr

        default = await run_match(tmp_path, *bots, limit=20)
        assert default.status == 2
        assert "the default 'examplepassword'; give --password" in default.stderr

        good = await run_match(
            tmp_path,
            *bots,
            *("--host", "127.0.0.1", "--password", "s3cret", "--games", "2"),
            limit=20,
        )
        assert good.status == 0, good.stderr
        assert len(game_lines(good.stdout)) == 2
        assert not (tmp_path / "log" / "server.log").exists()  # no server of its own
        # No server-measured times from a server we did not start: the report says whose.
        assert "Move times (measured by the observer" in good.stdout


async def test_unreachable_server(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = await run_match(
        tmp_path, "--player1", FAST_BOT, "--player2", FAST_BOT, "--port", str(port), limit=20
    )
    assert run.status == 2
    assert f"cannot connect to the server at localhost:{port}" in run.stderr


# ---------------------------------------------------------------------------------------------
# The official Python client


@pytest.mark.socha
@pytest.mark.slow  # ~30 s of socha's 0.1 s polls; tests/server/test_socha.py plays socha too
async def test_socha_bots_two_games(tmp_path: Path) -> None:
    pytest.importorskip("socha")
    run = await run_match(
        tmp_path,
        *("--player1", SOCHA_BOT, "--player2", SOCHA_BOT, "--games", "2"),
        *("--name1", "alice", "--name2", "bob", "--results", "results.jsonl"),
        limit=60,
    )
    assert run.status == 0, run.stderr
    games = records(tmp_path / "results.jsonl")
    assert [[p["name"] for p in game["players"]] for game in games] == [
        ["alice", "bob"],
        ["bob", "alice"],
    ]
    assert_scores_add_up(games)
    assert_table_matches(run.stdout, games, ["alice", "bob"])
    for name in ("alice", "bob"):
        for number in (1, 2):
            # socha logs the result it received and the server's <left>.
            log = (tmp_path / "log" / f"{name}_game{number}.log").read_text(encoding="utf-8")
            assert "Result received" in log
            assert "The server left." in log


# ---------------------------------------------------------------------------------------------
# Concurrency and paired boards through the command


async def test_concurrent_seeded_run_pairs_boards_and_records_each_game_once(
    tmp_path: Path,
) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", FAST_BOT, "--player2", FAST_BOT, "--games", "4", "--seed", "5"),
        *("--concurrency", "2", "--force-concurrency", "--results", "results.jsonl"),
        "--save-replay",
        limit=40,
    )
    assert run.status == 0, run.stderr
    assert "2 games at once" in run.stdout
    games = {game["game"]: game for game in records(tmp_path / "results.jsonl")}
    assert sorted(games) == [1, 2, 3, 4]  # each once, in whatever order they ended
    assert len(game_lines(run.stdout)) == 4
    assert_scores_add_up(list(games.values()))
    assert_table_matches(run.stdout, list(games.values()), ["player1", "player2"])
    for first, second in ((1, 2), (3, 4)):
        a, b = games[first], games[second]
        assert a["seed"] == b["seed"]
        assert [p["name"] for p in a["players"]] == ["player1", "player2"]
        assert [p["name"] for p in b["players"]] == ["player2", "player1"]
        for game in (a, b):
            replay = read_replay((tmp_path / game["replay"]).read_bytes())
            assert replay.states[0] == GameState.initial(game["seed"])
    assert games[1]["seed"] != games[3]["seed"]


async def test_ctrl_c_with_concurrent_games_kills_every_bot(tmp_path: Path) -> None:
    stdout = tmp_path / "stdout.txt"
    with stdout.open("wb") as output:
        process = await trio.lowlevel.open_process(
            [
                *(sys.executable, "-m", "cli.match"),
                *("--player1", FAST_BOT, "--player2", f"{FAST_BOT} --hang"),
                *("--games", "5", "--no-timeout", "--concurrency", "2", "--force-concurrency"),
            ],
            cwd=tmp_path,
            env=environment(),
            stdout=output,
            stderr=output,
        )
    try:
        logs = [
            tmp_path / "log" / f"{name}_game{number}.log"
            for name in ("player1", "player2")
            for number in (1, 2)
        ]
        with trio.fail_after(15):  # the bots of both games are running
            while not all(log.exists() and "pid=" in log.read_text("utf-8") for log in logs):
                await trio.sleep(0.05)
        process.send_signal(signal.SIGINT)
        with trio.fail_after(15):
            status = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
    output_text = stdout.read_text(encoding="utf-8")
    assert status == 130, output_text
    assert "=============== SCORES ================" in output_text
    assert "interrupted after 0 of 5 games" in output_text
    for log in logs:
        assert_gone(bot_pid(log))


# ---------------------------------------------------------------------------------------------
# The event stream and resuming


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_ndjson_stream_has_every_event(tmp_path: Path) -> None:
    run = await run_match(
        tmp_path,
        *("--player1", FAST_BOT, "--player2", FAST_BOT, "--games", "3"),
        *("--ndjson", "events.jsonl", "--save-replay"),
        limit=30,
    )
    assert run.status == 0, run.stderr
    events = events_of(tmp_path / "events.jsonl")
    kinds = [event["event"] for event in events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert kinds.count("game_end") == kinds.count("stats") == 3
    start = events[0]
    assert (start["players"], start["games"], start["seed"]) == (["player1", "player2"], 3, None)
    ends = sorted((e for e in events if e["event"] == "game_end"), key=lambda e: e["game"])
    for number, end in enumerate(ends, 1):
        one = (number - 1) % 2
        expected = ["player1", "player2"] if one == 0 else ["player2", "player1"]
        assert (end["game"], end["one"], end["players"]) == (number, one, expected)
        assert sum(end["siegpunkte"]) == 2 and end["regular"] is True
        assert len(end["move_ms"]) == end["turn"]  # one time per move
        assert all(ms >= 0 for ms in end["move_ms"])
        # The in-process server's own figures: a time per applied move.
        assert len(end["server_move_ms"]) == end["turn"]
        assert end["irregular_loss"] is None and end["reproducer"] is None
        assert (tmp_path / end["replay"]).is_file()
        if end["winner"] is not None:
            assert end["siegpunkte"][end["players"].index(end["winner"])] == 2
    last_stats = [e for e in events if e["event"] == "stats"][-1]
    assert last_stats["wins"] + last_stats["draws"] + last_stats["losses"] == 3
    assert "pentanomial" not in last_stats  # no pairs without --seed
    assert table(run.stdout)["player1"][1:4] == [
        str(last_stats["wins"]),
        str(last_stats["draws"]),
        str(last_stats["losses"]),
    ]
    assert events[-1]["status"] == "done" and events[-1]["played"] == 3
    final = events[-1]
    assert final["stats"]["games"] == 3 and "elo" in final["stats"] and "los" in final["stats"]
    assert final["times"]["source"] == "server"
    moves = sum(bot["moves"] for bot in final["times"]["bots"])
    assert moves == sum(end["turn"] for end in ends)


async def test_resume_plays_only_the_missing_games(tmp_path: Path) -> None:
    bots = ("--player1", FAST_BOT, "--player2", FAST_BOT, "--games", "4", "--seed", "3")
    first = await run_match(tmp_path, *bots, "--ndjson", "events.jsonl", limit=30)
    assert first.status == 0, first.stderr
    stream = tmp_path / "events.jsonl"
    events = events_of(stream)
    # An interruption after games 1 and 2, with a torn last line.
    kept = [events[0], *(e for e in events if e["event"] == "game_end" and e["game"] <= 2)]
    stream.write_text("".join(json.dumps(e) + "\n" for e in kept) + '{"event": "ga')
    for log in (tmp_path / "log").glob("*_game*.log"):
        log.unlink()

    resumed = await run_match(tmp_path, *bots, "--resume", "events.jsonl", limit=30)
    assert resumed.status == 0, resumed.stderr
    assert "resumed: 2 of 4 games already played" in resumed.stdout
    assert sorted(line.split("/")[0] for line in game_lines(resumed.stdout)) == [
        "game 3",
        "game 4",
    ]
    assert sorted(log.name for log in (tmp_path / "log").glob("player1_game*.log")) == [
        "player1_game3.log",
        "player1_game4.log",
    ]
    rows = table(resumed.stdout)
    assert rows["player1"][0] == rows["player2"][0] == "4"  # all four games counted
    lines = stream.read_text(encoding="utf-8").splitlines()
    ends = [json.loads(line) for line in lines if '"game_end"' in line]
    assert sorted(end["game"] for end in ends) == [1, 2, 3, 4]
    # The torn line stays a line of its own; the resumed run's events follow it.
    assert lines[len(kept)] == '{"event": "ga'
    parsed = [json.loads(line) for line in lines if line != '{"event": "ga']
    stats = [event for event in parsed if event["event"] == "stats"]
    assert sum(stats[-1]["pentanomial"]) == 2  # both pairs finished
    final = json.loads(lines[-1])
    assert final["event"] == "run_end" and final["stats"]["pentanomial"] == stats[-1]["pentanomial"]


async def test_resume_refuses_another_match(tmp_path: Path) -> None:
    bots = ("--player1", FAST_BOT, "--player2", FAST_BOT)
    first = await run_match(tmp_path, *bots, "--games", "1", "--ndjson", "e.jsonl", limit=30)
    assert first.status == 0, first.stderr
    other = await run_match(tmp_path, *bots, "--games", "2", "--resume", "e.jsonl", limit=30)
    assert other.status == 2
    assert "is another match" in other.stderr
    missing = await run_match(tmp_path, *bots, "--resume", "nope.jsonl", limit=30)
    assert missing.status == 2
    assert "--resume: cannot read nope.jsonl" in missing.stderr
