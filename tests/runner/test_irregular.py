"""Where the time goes and what went wrong: server-measured move times, near misses, timeouts,
crashes and illegal moves per bot, and the reproducer folders that put a bot back into the
position it failed in (`piranhas-match reproduce DIR`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from engine import GameResult, PlayerEntry, Team, Violation, ViolationKind
from protocol.replay import read_replay
from runner.timing import (
    CRASH,
    BotTimes,
    TimeReport,
    irregular_loss,
    movers,
    percentile,
    violation_kind,
)
from server.replays import load_start_state
from tests.helpers.process import environment
from tests.runner.test_match import FAST_BOT, game_lines, run_match

pytestmark = pytest.mark.timeout(90)

# Small limits keep the slow bots' games short: 0.8 s is over 75 % of the 1 s soft limit
# (and 0.2 s under it: margin for a loaded machine); a 1.5 s stall is a soft timeout with
# margins of 0.5 s and 1.5 s on either side.
LIMITS = "softTimeout = 1\nhardTimeout = 3\n"


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def final_times(path: Path) -> dict[str, dict[str, Any]]:
    """run_end's per-bot figures by name."""
    end = events(path)[-1]
    assert end["event"] == "run_end" and end["times"]["source"] == "server"
    return {bot["name"]: bot for bot in end["times"]["bots"]}


async def reproduce(folder: Path, *extra: str, limit: float = 30) -> tuple[int, str]:
    """Run the folder's repro.sh; its exit status and output."""
    with trio.fail_after(limit):
        done = await trio.run_process(
            [str(folder / "repro.sh"), *extra],
            env=environment(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    return done.returncode, done.stdout.decode() + done.stderr.decode()


def only_reproducer(tmp_path: Path) -> Path:
    (folder,) = (tmp_path / "log" / "reproducers").iterdir()
    return folder


# ---------------------------------------------------------------------------------------------
# Pure parts


def test_percentiles_are_nearest_rank() -> None:
    values = [float(ms) for ms in range(1, 101)]
    assert percentile(values, 0.50) == 50
    assert percentile(values, 0.95) == 95
    assert percentile(values, 0.99) == 99
    assert percentile([7.0], 0.99) == 7
    assert percentile([], 0.5) != percentile([], 0.5)  # NaN


def test_moves_are_attributed_by_turn_and_seat() -> None:
    assert movers(5) == [0, 1, 0, 1, 0]
    report = TimeReport(("a", "b"), soft_timeout=1.0, source="server")
    # b holds team ONE (one=1): it makes moves 0, 2, 4.
    report.add_game(1, [800.0, 10.0, 760.0, 20.0, 5.0], (True, True), (0, "RULE_VIOLATION"))
    a, b = report.bots
    assert (a.move_ms, b.move_ms) == ([10.0, 20.0], [800.0, 760.0, 5.0])
    assert (a.near_misses, b.near_misses) == (0, 2)
    assert a.losses["RULE_VIOLATION"] == 1
    # A bot that cannot time out has no near misses.
    free = BotTimes("c")
    free.add_moves([900.0], None)
    assert free.near_misses == 0


def test_violation_kind_from_entries_or_official_text() -> None:
    def result(reason: str, violation: Violation | None = None) -> GameResult:
        entries = [PlayerEntry(Team.ONE, "bot", violation), PlayerEntry(Team.TWO, "bot2")]
        return GameResult([(entries[0], (0, 1)), (entries[1], (2, 3))], Team.TWO, False, reason)

    timed_out = Violation(ViolationKind.SOFT_TIMEOUT, "1")
    assert violation_kind(result(timed_out.template.replace("%s", "bot"), timed_out), "bot") == (
        "SOFT_TIMEOUT"
    )
    # Without entries (an observer's result): the text, with the whole name ("bot" is a
    # prefix of "bot2", whose violation this is not).
    assert violation_kind(result("Regelverletzung von bot2: x"), "bot") is None
    assert violation_kind(result("Regelverletzung von bot2: x"), "bot2") == "RULE_VIOLATION"
    assert violation_kind(result("bot2 hat das Spiel verlassen: LOST"), "bot2") == "LEFT"
    hard = "bot hat innerhalb von 10 Sekunden nach Aufforderung keinen Zug gesendet."
    assert violation_kind(result(hard), "bot") == "HARD_TIMEOUT"
    assert irregular_loss(result("bot hat das Spiel verlassen: L"), ("bot", "bot2"), 0) == (
        0,
        "LEFT",
    )
    assert irregular_loss(result("x"), ("bot", "bot2"), 0, crashed=[1]) == (1, CRASH)


# ---------------------------------------------------------------------------------------------
# Real matches


async def test_near_misses_and_an_illegal_move_counted_and_reproduced(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text(LIMITS)
    run = await run_match(
        tmp_path,
        *("--player1", f"{FAST_BOT} --illegal-at-turn 6", "--player2", f"{FAST_BOT} --delay 0.8"),
        *("--games", "1", "--ndjson", "events.jsonl"),
        limit=40,
    )
    assert run.status == 0, run.stderr
    (line,) = game_lines(run.stdout)
    assert "IRREGULAR — Regelverletzung von player1" in line
    times = final_times(tmp_path / "events.jsonl")
    slow, illegal = times["player2"], times["player1"]
    # player1 (ONE) moved at turns 0, 2, 4 and broke the rules at 6; player2 at 1, 3, 5.
    assert (illegal["moves"], slow["moves"]) == (3, 3)
    assert slow["near_misses"] == 3 and slow["p50_ms"] >= 750
    assert slow["max_ms"] < 1000  # measured by the server: not a timeout
    assert illegal["near_misses"] == 0
    assert illegal["violations"] == {"RULE_VIOLATION": 1} and slow["violations"] == {}
    assert "Move times (measured by the server, ms):" in run.stdout
    assert "player1 lost irregularly: RULE_VIOLATION 1" in run.stdout

    folder = only_reproducer(tmp_path)
    assert folder.name == "game1_player1_rule_violation"
    case = json.loads((folder / "reproducer.json").read_text())
    assert (case["turn"], case["team"], case["kind"]) == (6, "ONE", "RULE_VIOLATION")
    # The state file is one the server itself loads at that turn, and it is the position
    # the game was in.
    state = load_start_state(folder / "state.xml", 6)
    replay = read_replay((folder / "replay.xml").read_bytes())
    assert state.turn == 6 and state.rows() == replay.states[-1].rows()
    assert replay.result is not None and replay.result.reason.startswith("Regelverletzung")
    assert "move requested at turn 6" in (folder / "bot.log").read_text()

    status, output = await reproduce(folder)
    assert status == 0, output
    assert "turn 6: the server asks player1 (team ONE) to move" in output
    assert "answer: RULE_VIOLATION" in output
    assert "reason: Regelverletzung von ONE" in output
    assert "reproduced: RULE_VIOLATION at turn 6" in output


async def test_timeout_counted_and_reproduced(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text(LIMITS)
    run = await run_match(
        tmp_path,
        *("--player1", f"{FAST_BOT} --stall-at-turn 4 --stall 1.5", "--player2", FAST_BOT),
        *("--games", "1", "--ndjson", "events.jsonl"),
        limit=40,
    )
    assert run.status == 0, run.stderr
    times = final_times(tmp_path / "events.jsonl")
    assert times["player1"]["timeouts"] == 1
    assert times["player1"]["violations"] == {"SOFT_TIMEOUT": 1}
    assert times["player2"]["timeouts"] == 0
    game_end = next(e for e in events(tmp_path / "events.jsonl") if e["event"] == "game_end")
    assert game_end["irregular_loss"] == {"player": "player1", "kind": "SOFT_TIMEOUT"}

    folder = only_reproducer(tmp_path)
    status, output = await reproduce(folder)
    assert status == 0, output
    assert "turn 4: the server asks player1 (team ONE) to move" in output
    assert "answer: SOFT_TIMEOUT" in output
    assert "reproduced: SOFT_TIMEOUT at turn 4" in output


async def test_crash_counted_and_reproduced_and_a_fixed_bot_is_not(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text(LIMITS)
    run = await run_match(
        tmp_path,
        *("--player1", FAST_BOT, "--player2", f"{FAST_BOT} --crash-at-turn 5"),
        *("--games", "1", "--ndjson", "events.jsonl", "--reproducers", "repro"),
        limit=40,
    )
    assert run.status == 0, run.stderr
    times = final_times(tmp_path / "events.jsonl")
    assert times["player2"]["crashes"] == 1 and times["player2"]["violations"] == {"CRASH": 1}
    assert times["player1"]["crashes"] == 0
    (folder,) = (tmp_path / "repro").iterdir()  # --reproducers DIR
    assert folder.name == "game1_player2_crash"
    (line,) = game_lines(run.stdout)
    assert f"reproducer: repro/{folder.name}/repro.sh" in line

    status, output = await reproduce(folder)
    assert status == 0, output
    # player2 was team TWO: the stand-in joined first so that it got TWO again.
    assert "turn 5: the server asks player2 (team TWO) to move" in output
    assert "answer: crashed (exit status 3)" in output
    assert "crashing on purpose at turn 5" in output  # the bot's own output
    assert "reproduced: CRASH at turn 5" in output

    # The same position with the bug fixed: a legal move in time, "not reproduced".
    status, output = await reproduce(folder, "--bot", FAST_BOT)
    assert status == 1, output
    assert "(a legal move, in time)" in output
    assert "not reproduced" in output


def test_reproduce_refuses_a_folder_without_a_case(tmp_path: Path) -> None:
    from cli.match import main

    assert main(["reproduce", str(tmp_path)]) == 2


async def test_reproducer_says_when_the_bot_will_not_join(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text(LIMITS)
    run = await run_match(
        tmp_path,
        *("--player1", f"{FAST_BOT} --illegal-at-turn 0", "--player2", FAST_BOT),
        *("--games", "1"),
        limit=40,
    )
    assert run.status == 0, run.stderr
    folder = only_reproducer(tmp_path)
    # A bot that exits at once instead of joining (as one that insists on a reservation).
    quitter = f"{sys.executable} -c 'print(\"no reservation, no game\")'"
    status, output = await reproduce(folder, "--bot", quitter)
    assert status == 1, output
    assert "the bot exited (status 0) without playing" in output
    assert "no reservation, no game" in output


async def test_protocol_error_after_a_move_counted_and_reproduced(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text(LIMITS)
    run = await run_match(
        tmp_path,
        *("--player1", FAST_BOT, "--player2", f"{FAST_BOT} --extra-move-at-turn 7"),
        *("--games", "1", "--ndjson", "events.jsonl"),
        limit=40,
    )
    assert run.status == 0, run.stderr
    times = final_times(tmp_path / "events.jsonl")
    assert times["player2"]["violations"] == {"PROCESS_VIOLATION": 1}
    folder = only_reproducer(tmp_path)
    # The position is the one it was asked to move in (turn 7), not the later one in which
    # its second, unrequested move arrived.
    case = json.loads((folder / "reproducer.json").read_text())
    assert (case["turn"], case["team"], case["kind"]) == (7, "TWO", "PROCESS_VIOLATION")
    status, output = await reproduce(folder)
    assert status == 0, output
    assert "turn 7: the server asks player2 (team TWO) to move" in output
    assert "(a legal move, in time)" in output and "answer: PROCESS_VIOLATION" in output
    assert "reason: Missachtung des Spielablaufs von TWO: It's not your turn yet" in output
