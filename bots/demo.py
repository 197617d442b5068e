"""Watch two built-in bots play one game on the engine, redrawn after every move.

python -m bots.demo [--player1 search] [--player2 greedy] [--seed S] [--delay 0.3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from bots.players import BOT_NAMES, make_bot
from bots.render import LEGEND, render, use_colour
from bots.selfplay import play
from engine import GameState, PlayerEntry, Team, game_result

_CLEAR = "\x1b[H\x1b[2J"


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Play the game and print it; returns the exit status (0)."""
    parser = argparse.ArgumentParser(prog="python -m bots.demo", description=__doc__)
    parser.add_argument("--player1", choices=BOT_NAMES, default="search", help="plays ONE")
    parser.add_argument("--player2", choices=BOT_NAMES, default="greedy", help="plays TWO")
    parser.add_argument("--seed", type=int, default=None, help="start board and bot seeds")
    parser.add_argument("--delay", type=float, default=0.3, help="seconds between moves")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per move for search")
    parser.add_argument("--no-colour", action="store_true", help="plain text even on a terminal")
    options = parser.parse_args(argv)
    stream = out if out is not None else sys.stdout
    colour = use_colour(stream) and not options.no_colour

    one = make_bot(options.player1, options.seed)
    two = make_bot(options.player2, None if options.seed is None else options.seed + 1)
    start = GameState.initial(options.seed)
    shown = [start]

    def show(state: GameState, previous: GameState | None) -> None:
        board = render(state, colour=colour, previous=previous)
        # On a terminal the board is redrawn in place; elsewhere the boards follow each other.
        prefix = _CLEAR if colour else ""
        stream.write(f"{prefix}ONE: {one.name}  TWO: {two.name}\n{LEGEND}\n{board}\n\n")
        stream.flush()

    def on_move(state: GameState) -> None:
        if options.delay > 0:
            time.sleep(options.delay)
        show(state, shown[-1])
        shown.append(state)

    show(start, None)
    final = play(one, two, start, options.budget, on_move)
    players = [PlayerEntry(Team.ONE, one.name), PlayerEntry(Team.TWO, two.name)]
    result = game_result(final, players)
    scores = ", ".join(
        f"{entry.team.name} ({entry.name}) {points} points, swarm {swarm}"
        for entry, (points, swarm) in result.scores
    )
    stream.write(f"Game over after {final.turn} moves: {result.reason}\n{scores}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
