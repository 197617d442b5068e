"""`--resume`: the event stream is read back line by line and every game_end is checked
(runner/ndjson.py; issue 17 item 15)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from launching import MatchError
from runner.ndjson import MAX_RESUME_LINE, read_resume
from runner.options import Options, parse_options


@pytest.fixture
def options() -> Options:
    return parse_options(
        ["--player1", "true", "--player2", "true", "--games", "4", "--seed", "3"], threads=2
    )


def game_end(number: int, **changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "event": "game_end",
        "game": number,
        "room": f"room{number}",
        "players": ["player1", "player2"],
        "one": 0,
        "seed": 11,
        "winner": "player1",
        "regular": True,
        "reason": "x",
        "siegpunkte": [2, 0],
        "schwarmgroesse": [9, 4],
        "turn": 31,
        "notes": [],
    }
    event.update(changes)
    return {key: value for key, value in event.items() if value is not ...}


def stream(tmp_path: Path, *events: dict[str, Any], raw: str = "") -> Path:
    start = {"event": "run_start", "players": ["player1", "player2"], "games": 4, "seed": 3}
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in (start, *events)) + raw)
    return path


def test_a_stream_of_this_match_resumes(tmp_path: Path, options: Options) -> None:
    path = stream(tmp_path, game_end(1), game_end(2, winner=None, siegpunkte=[1, 1]))
    resumed = read_resume(path, options)
    assert [game.number for game in resumed.games] == [1, 2]
    assert resumed.games[1].result.winner is None


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"game": 999}, "game must be 1..4, got 999"),
        ({"game": -5}, "game must be 1..4, got -5"),
        ({"game": 2.0}, "game must be an integer"),
        ({"siegpunkte": [1e30, 0]}, "siegpunkte must be integers 0..2"),
        ({"siegpunkte": [7, 0]}, "siegpunkte must be integers 0..2"),
        ({"schwarmgroesse": [1, 2, 3]}, "schwarmgroesse must be a list of 2 integers"),
        ({"players": ["player1", "player2", "player3"]}, "players must be this match's two"),
        ({"players": ["player1", "mallory"]}, "players must be this match's two"),
        ({"winner": "mallory"}, "winner must be one of the players"),
        ({"one": 2}, "one must be 0..1"),
        ({"regular": "yes"}, "regular must be true or false"),
        ({"reason": ...}, "no key 'reason'"),
        ({"siegpunkte": ...}, "siegpunkte must be a list of 2 integers"),
        ({"turn": True}, "turn must be an integer"),
    ],
)
def test_an_event_this_runner_would_not_write_is_a_clear_error(
    tmp_path: Path, options: Options, changes: dict[str, Any], words: str
) -> None:
    path = stream(tmp_path, game_end(1), game_end(2, **changes), game_end(3))
    with pytest.raises(MatchError) as caught:
        read_resume(path, options)
    assert str(caught.value).startswith(f"--resume: {path}:3: game_end: ")
    assert words in str(caught.value)


def test_nan_is_refused(tmp_path: Path, options: Options) -> None:
    text = json.dumps(game_end(1)).replace('"turn": 31', '"turn": NaN')
    path = stream(tmp_path, raw=text + "\n" + json.dumps(game_end(2)) + "\n")
    with pytest.raises(MatchError, match=r"events.jsonl:2 is not an event line"):
        read_resume(path, options)


def test_a_torn_last_line_is_left_out(tmp_path: Path, options: Options) -> None:
    path = stream(tmp_path, game_end(1), raw='{"event": "game_end", "ga')
    assert [game.number for game in read_resume(path, options).games] == [1]


def test_a_huge_line_is_refused_without_reading_it_whole(tmp_path: Path, options: Options) -> None:
    path = stream(
        tmp_path, game_end(1), raw='{"event": "game_end", "notes": ["' + "x" * 3 * MAX_RESUME_LINE
    )
    with pytest.raises(MatchError, match=rf"events.jsonl:3 is longer than {MAX_RESUME_LINE} bytes"):
        read_resume(path, options)


def test_a_fifo_is_refused(tmp_path: Path, options: Options) -> None:
    import os

    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(MatchError, match="is not a regular file"):
        read_resume(fifo, options)
