"""Results, scores and reason texts (docs/protocol.md §6.3, §6.4, §5.9)."""

from __future__ import annotations

import pytest

from engine import (
    Direction,
    FieldState,
    GameState,
    InvalidMoveError,
    Move,
    MoveMistake,
    PlayerEntry,
    Team,
    Violation,
    ViolationKind,
    game_result,
)

o, O = FieldState.ONE_S, FieldState.ONE_L  # noqa: E741
t, T = FieldState.TWO_S, FieldState.TWO_L
E = FieldState.EMPTY

# ONE: one large fish (weight 3); TWO: two small fish, not connected (weight 1).
UNEVEN = GameState.from_rows([[O, E, t, E, t]], turn=5)


def test_violator_loses_irregularly_and_scores_zero() -> None:
    error = InvalidMoveError(MoveMistake.JUMP_OVER_OPPONENT, Move(0, 1, Direction.RIGHT))
    alice = PlayerEntry(Team.ONE, "alice", Violation(ViolationKind.RULE_VIOLATION, str(error)))
    bob = PlayerEntry(Team.TWO, "bob")
    result = game_result(UNEVEN, [alice, bob])
    assert result.winner is Team.TWO
    assert not result.regular
    assert result.scores == [(alice, (0, 0)), (bob, (2, 1))]
    assert result.reason == (
        "Regelverletzung von alice: Gegnerische Piranhas können nicht übersprungen werden "
        "bei 'Schwimme von [0|1] in Richtung RIGHT'"
    )


def test_second_player_violating_names_that_player() -> None:
    one = PlayerEntry(Team.ONE, "")
    two = PlayerEntry(
        Team.TWO,
        "bob",
        Violation(ViolationKind.PROCESS_VIOLATION, "Move from bob has not been requested."),
    )
    result = game_result(UNEVEN, [one, two])
    assert result.winner is Team.ONE
    assert result.scores == [(one, (2, 3)), (two, (0, 0))]
    assert result.reason == (
        "Missachtung des Spielablaufs von bob: Move from bob has not been requested."
    )


@pytest.mark.parametrize("name", ["", "   ", "\t"])
def test_blank_names_fall_back_to_the_team_name(name: str) -> None:
    leaver = PlayerEntry(Team.ONE, name, Violation(ViolationKind.LEFT, "LOST_CONNECTION"))
    result = game_result(UNEVEN, [leaver, PlayerEntry(Team.TWO, "bob")])
    assert result.reason == "ONE hat das Spiel verlassen: LOST_CONNECTION"


@pytest.mark.parametrize(
    ("kind", "detail", "text"),
    [
        (
            ViolationKind.SOFT_TIMEOUT,
            "",
            "TWO hat fuer die Antwort auf die Zugaufforderung laenger als 2 Sekunden gebraucht.",
        ),
        (
            ViolationKind.HARD_TIMEOUT,
            "",
            "TWO hat innerhalb von 2 Sekunden nach Aufforderung keinen Zug gesendet.",
        ),
        (
            ViolationKind.SOFT_TIMEOUT,
            "5",
            "TWO hat fuer die Antwort auf die Zugaufforderung laenger als 5 Sekunden gebraucht.",
        ),
        (
            ViolationKind.LEFT,
            "RECEIVED_DISCONNECT",
            "TWO hat das Spiel verlassen: RECEIVED_DISCONNECT",
        ),
    ],
)
def test_violation_texts(kind: ViolationKind, detail: str, text: str) -> None:
    players = [PlayerEntry(Team.ONE, "x"), PlayerEntry(Team.TWO, "", Violation(kind, detail))]
    result = game_result(UNEVEN, players)
    assert result.reason == text
    assert result.winner is Team.ONE
    assert [score for _, score in result.scores] == [(2, 3), (0, 0)]


def test_only_the_first_violation_counts() -> None:
    players = [
        PlayerEntry(Team.ONE, "a", Violation(ViolationKind.LEFT, "NOT_CONNECTED")),
        PlayerEntry(Team.TWO, "b", Violation(ViolationKind.SOFT_TIMEOUT)),
    ]
    result = game_result(UNEVEN, players)
    # Nobody is left without a violation: no winner, and the text names "Alle Spieler".
    assert result.winner is None
    assert not result.regular
    assert result.reason == "Alle Spieler hat das Spiel verlassen: NOT_CONNECTED"
    assert [score for _, score in result.scores] == [(0, 0), (0, 0)]


def test_lone_player_leaving_a_waiting_room() -> None:
    leaver = PlayerEntry(Team.ONE, "", Violation(ViolationKind.LEFT, "RECEIVED_DISCONNECT"))
    result = game_result(GameState.initial(1), [leaver])
    assert result.scores == [(leaver, (0, 0))]
    assert result.winner is None
    assert result.reason == "Alle Spieler hat das Spiel verlassen: RECEIVED_DISCONNECT"


@pytest.mark.parametrize("seed", range(5))
def test_lone_player_forced_start_is_a_regular_one_entry_tie(seed: int) -> None:
    state = GameState.initial(seed)
    player = PlayerEntry(Team.ONE, "")
    result = game_result(state, [player])
    assert result.regular
    assert result.winner is None
    assert result.scores == [(player, (1, state.greatest_swarm_weight(Team.ONE)))]
    assert result.reason == "Beide Spieler sind gleichauf"


def test_regular_win_names_the_winner() -> None:
    over = GameState.from_rows([[O, E, t, E, t]], turn=60)
    players = [PlayerEntry(Team.ONE, "alice"), PlayerEntry(Team.TWO, "bob")]
    result = game_result(over, players)
    assert result.regular
    assert result.winner is Team.ONE
    assert [score for _, score in result.scores] == [(2, 3), (0, 1)]
    assert result.reason == "alice hat den größeren zusammenhängenden Schwarm"


def test_scores_follow_player_order() -> None:
    players = [PlayerEntry(Team.TWO, "bob"), PlayerEntry(Team.ONE, "alice")]
    result = game_result(UNEVEN, players)
    assert [(entry.team, score) for entry, score in result.scores] == [
        (Team.TWO, (0, 1)),
        (Team.ONE, (2, 3)),
    ]


def test_blocked_win_text() -> None:
    # Both ONE fish are cornered by TWO fish (rows[y][x], bottom row first).
    blocked = GameState.from_rows(
        [[o, t, E, E, E], [t, t, E, E, E], [E, E, E, E, E], [E, E, E, t, t], [E, E, E, t, o]]
    )
    assert blocked.is_over
    result = game_result(blocked, [PlayerEntry(Team.ONE, ""), PlayerEntry(Team.TWO, "")])
    assert result.regular
    assert result.winner is Team.TWO
    assert result.reason == "TWO hat den Gegner blockiert, sodass er keinen Zug mehr machen kann"


def test_first_union_text() -> None:
    state = GameState.from_rows([[o, o, E, E, t, t]], turn=2, first_union=Team.TWO)
    result = game_result(state, [PlayerEntry(Team.ONE, ""), PlayerEntry(Team.TWO, "bob")])
    assert result.winner is Team.TWO
    assert result.reason == "bob hat zuerst alle Fische einer Farbe vereinigt"
    assert [score for _, score in result.scores] == [(0, 2), (2, 2)]


def test_aborted_game_has_no_winner_and_no_points() -> None:
    players = [
        PlayerEntry(Team.ONE, "a"),
        PlayerEntry(Team.TWO, "b", Violation(ViolationKind.SOFT_TIMEOUT)),
    ]
    result = game_result(UNEVEN, players, aborted="Server wurde beendet")
    assert result.winner is None
    assert not result.regular
    assert result.reason == "Server wurde beendet"
    assert [score for _, score in result.scores] == [(0, 0), (0, 0)]


def _games(count: int) -> list[GameState]:
    """Every position of `count` random games from random boards (ends of all kinds)."""
    import random

    states = []
    for seed in range(count):
        rng = random.Random(seed)
        state = GameState.initial(seed)
        states.append(state)
        while not state.is_over:
            state = state.apply(rng.choice(state.legal_moves()))
            states.append(state)
    return states


def test_current_winner_with_given_weights_is_current_winner() -> None:
    # game_result passes the weights it needs for the scores: the same outcome in every
    # position, over or not (connected, first union, blocked, heavier swarm, tie).
    made = [
        UNEVEN,
        GameState.from_rows(  # blocked
            [[o, t, E, E, E], [t, t, E, E, E], [E, E, E, E, E], [E, E, E, t, t], [E, E, E, t, o]]
        ),
        GameState.from_rows([[o, o, E, E, t, t]], turn=2, first_union=Team.TWO),
        GameState.from_rows([[o, o, E, E, t, t]], turn=2),  # both connected, even: a tie
    ]
    reasons = set()
    for state in made + _games(60):
        weights = (state.greatest_swarm_weight(Team.ONE), state.greatest_swarm_weight(Team.TWO))
        assert state.current_winner(weights) == state.current_winner()
        reasons.add(state.current_winner().reason)
    assert len(reasons) >= 4, reasons


def test_regular_result_is_the_outcome_and_each_teams_weight() -> None:
    # The general rule, spelled out: current_winner() decides, each player scores its team's
    # greatest swarm; one entry or two, in either order.
    for state in _games(30)[::7]:
        outcome = state.current_winner()
        for teams in ([Team.ONE, Team.TWO], [Team.TWO, Team.ONE], [Team.ONE], [Team.TWO]):
            players = [PlayerEntry(team, team.name.lower()) for team in teams]
            result = game_result(state, players)
            assert result.winner is outcome.winner
            assert result.regular
            for player, (points, weight) in result.scores:
                assert weight == state.greatest_swarm_weight(player.team)
                if outcome.winner is None:
                    assert points == 1
                else:
                    assert points == (2 if outcome.winner is player.team else 0)
