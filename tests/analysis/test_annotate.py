"""analysis.annotate: the analysis in the game record — it round-trips, `verify` still passes
on the annotated record, and a tampered annotation is reported."""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path

import pytest

from analysis import Analyser, GameAnalysis, Settings
from analysis.annotate import annotate, check, read_annotation
from analysis.sources import game_from_record
from cli import league as league_cli
from engine import GameState, Move, PlayerEntry, Team, game_result
from league.records import read_record, record_game, verify, write_record

NODES = 1000


@cache
def record_bytes() -> bytes:
    """A whole random game as a league record (random moves: plenty of marks)."""
    rng = random.Random(3)
    state = GameState.initial(99)
    moves: list[Move] = []
    while not state.is_over:
        move = rng.choice(state.legal_moves())
        moves.append(move)
        state = state.apply(move)
    entries = [PlayerEntry(Team.ONE, "Haie"), PlayerEntry(Team.TWO, "Barsche")]
    record = record_game(
        league="Testliga",
        round=1,
        match=1,
        number=1,
        date="2026-12-01T12:00:00Z",
        seed=99,
        team_ids=["haie", "barsche"],
        moves=moves,
        move_ms=[10.0] * len(moves),
        result=game_result(state, entries),
    )
    return write_record(record)


@cache
def analysed() -> tuple[GameAnalysis, bytes]:
    data = record_bytes()
    _, game = game_from_record(data, "g.xml")
    with Analyser(Settings(nodes=NODES)) as analyser:
        analysis = analyser.analyse(game)
    return analysis, annotate(data, analysis)


def test_the_annotated_record_round_trips_and_still_verifies() -> None:
    analysis, annotated = analysed()
    record = read_record(annotated)
    assert record == read_record(record_bytes())  # the game itself is untouched
    assert verify(record) == []
    annotation = read_annotation(annotated)
    assert annotation is not None
    assert annotation.settings == analysis.settings
    assert [(a.best, a.best_score, a.played_score) for a, _, _ in annotation.moves] == [
        (m.best, m.eval_best, m.eval_played) for m in analysis.moves
    ]
    assert [mark for _, mark, _ in annotation.moves] == [m.mark for m in analysis.moves]
    assert annotation.sides["ONE"]["accuracy"] == f"{analysis.sides[0].accuracy:.1f}"
    assert annotate(annotated, analysis) == annotated  # annotating again changes nothing
    assert check(annotated, "g.xml") == []
    assert read_annotation(record_bytes()) is None
    assert b'<analysis eval="' in annotated and b"<best x=" in annotated


def test_a_tampered_mark_is_reported() -> None:
    _, annotated = analysed()
    tampered = annotated.replace(b'mark="??"', b'mark="?!"', 1)
    assert tampered != annotated
    found = check(tampered, "g.xml")
    number = _first(annotated, 'mark="??"')
    assert [d.item for d in found] == [f"mark of move {number}"]
    assert verify(read_record(tampered)) == []  # the game itself is still right


def test_a_tampered_evaluation_or_accuracy_is_reported() -> None:
    _, annotated = analysed()
    evaluation = re.sub(
        rb'eval="(-?\d+)"',
        lambda m: b'eval="' + str(int(m[1]) + 400).encode() + b'"',
        annotated,
        count=1,
    )
    assert check(evaluation, "g.xml")
    accuracy = re.sub(rb'accuracy="[\d.]+"', b'accuracy="99.9"', annotated, count=1)
    assert [d.item for d in check(accuracy, "g.xml")] == ["accuracy of ONE"]


def test_a_consistent_forgery_is_caught_by_recomputing() -> None:
    analysis, annotated = analysed()
    # Swap the best move of move 1 for another legal move: legal, and every figure that
    # follows from the evaluations still agrees; only a new search can tell.
    start = GameState.initial(99)
    other = next(m for m in start.legal_moves() if m != analysis.moves[0].best)
    best = analysis.moves[0].best
    written = f'<best x="{best.x}" y="{best.y}" direction="{best.direction.name}"/>'.encode()
    forged = annotated.replace(
        written,
        f'<best x="{other.x}" y="{other.y}" direction="{other.direction.name}"/>'.encode(),
        1,
    )
    assert forged != annotated
    assert check(forged, "g.xml") == []
    assert [d.item for d in check(forged, "g.xml", recompute=True)] == ["analysis of move 1"]
    assert check(annotated, "g.xml", recompute=True) == []


def _first(annotated: bytes, text: str) -> int:
    """The number of the first move whose annotation holds `text`."""
    blocks = annotated.split(b"<move>")[1:]
    return next(n for n, block in enumerate(blocks, 1) if text.encode() in block)


def test_league_verify_passes_an_annotated_record_and_reports_a_tampered_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, annotated = analysed()
    good, bad = tmp_path / "good.xml", tmp_path / "bad.xml"
    good.write_bytes(annotated)
    bad.write_bytes(annotated.replace(b'mark="??"', b'mark="?!"', 1))
    assert league_cli.main(["verify", str(good)]) == 0
    assert league_cli.main(["verify", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "bad.xml: bad.xml: mark of move" in out and "good.xml:" not in out.split("\n")[1]


def test_league_analyze_annotates_every_record_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    league = tmp_path / "league.toml"
    league.write_text(
        'name = "T"\n[[teams]]\nid = "haie"\nname = "Haie"\ncommand = "bot"\n'
        '[[teams]]\nid = "barsche"\nname = "Barsche"\ncommand = "bot"\n',
        encoding="utf-8",
    )
    records = tmp_path / "l.records"
    records.mkdir()
    (records / "match001-game1.xml").write_bytes(record_bytes())
    arguments = ["analyze", str(league), "--db", str(tmp_path / "l.sqlite"), "--nodes", "1000"]
    assert league_cli.main(arguments) == 0
    assert "1 analysed, 0 already analysed" in capsys.readouterr().out
    assert (records / "match001-game1.xml").read_bytes() == analysed()[1]
    assert league_cli.main(arguments) == 0
    assert "0 analysed, 1 already analysed" in capsys.readouterr().out
