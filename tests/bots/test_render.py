"""The terminal board and the demo."""

from __future__ import annotations

import io

from bots.demo import main
from bots.players import GreedyBot, RandomBot
from bots.render import render
from bots.selfplay import play
from engine import Direction, GameState, Move, PlayerEntry, Team, game_result

BEFORE = GameState.from_rows(
    [
        ["ONE_S", "EMPTY", "TWO_L", "EMPTY"],
        ["SQUID", "ONE_M", "EMPTY", "TWO_S"],
        ["ONE_L", "EMPTY", "EMPTY", "EMPTY"],
    ]
)
# ONE's medium fish captures TWO's small one: two fish in its row, so it swims two fields.
AFTER = BEFORE.apply(Move(1, 1, Direction.RIGHT))


def test_plain_board_before_any_move() -> None:
    assert render(BEFORE) == "\n".join(
        [
            "turn 0, round 1, ONE to move | swarm ONE 6 TWO 4",
            " 2  1L   .   .   .",
            " 1  XX  1M   .  2S",
            " 0  1S   .  2L   .",
            "     0   1   2   3",
        ]
    )


def test_plain_board_marks_the_last_move() -> None:
    assert render(AFTER, previous=BEFORE) == "\n".join(
        [
            "turn 1, round 1, TWO to move | swarm ONE 3 TWO 3 | last: [1|1] RIGHT",
            " 2  1L   .   .   .",
            " 1  XX ( .)  . [1M]",
            " 0  1S   .  2L   .",
            "     0   1   2   3",
        ]
    )
    # Without the state before, only the start of the move is known.
    assert render(AFTER).splitlines()[2] == " 1  XX ( .)  .  1M"


def test_colour_board_paints_teams_squids_and_the_move() -> None:
    text = render(AFTER, colour=True, previous=BEFORE)
    assert "\x1b[31m\x1b[7m[1M]\x1b[0m" in text  # ONE red, the move's end highlighted
    assert "\x1b[34m\x1b[1m 2L \x1b[0m" in text  # TWO blue, a large fish bold
    assert "\x1b[32m XX \x1b[0m" in text  # squid green
    plain = text
    for code in ("\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[7m", "\x1b[31m", "\x1b[32m", "\x1b[34m"):
        plain = plain.replace(code, "")
    # The same text underneath (trailing blanks are only trimmed in plain mode).
    assert [line.rstrip() for line in plain.splitlines()] == render(
        AFTER, previous=BEFORE
    ).splitlines()


def test_demo_plays_the_game_and_prints_the_result() -> None:
    out = io.StringIO()
    argv = ["--player1", "random", "--player2", "greedy", "--seed", "2", "--delay", "0"]
    assert main(argv, out) == 0
    text = out.getvalue()
    final = play(RandomBot(2), GreedyBot(3), GameState.initial(2), 1.0)
    result = game_result(final, [PlayerEntry(Team.ONE, "random"), PlayerEntry(Team.TWO, "greedy")])
    assert text.count("ONE: random  TWO: greedy\n") == final.turn + 1  # every position drawn
    assert "\x1b[" not in text  # not a terminal: plain text
    assert render(final).splitlines()[1] in text
    assert text.endswith(
        f"Game over after {final.turn} moves: {result.reason}\n"
        f"ONE (random) {result.scores[0][1][0]} points, swarm {result.scores[0][1][1]}, "
        f"TWO (greedy) {result.scores[1][1][0]} points, swarm {result.scores[1][1][1]}\n"
    )
