"""Example bot for the compose league: the official Python client socha==4.3.9, random moves.

Started like every contest bot (`-h HOST -p PORT [-r RESERVATION]`, see socha's Starter);
without a reservation it sends `<join/>`, so two of these meet in one room. It plays one game
and exits 0 after the server's `<left/>`.
"""

from __future__ import annotations

import logging
import random

from socha import GameState, Move
from socha.api.networking.game_client import IClientHandler
from socha.api.protocol.protocol import Result
from socha.starter import Starter


class RandomBot(IClientHandler):
    def __init__(self) -> None:
        self.state: GameState | None = None

    def on_update(self, state: GameState) -> None:
        self.state = state

    def calculate_move(self) -> Move:
        # The server always sends the memento before the move request (docs/clients.md).
        assert self.state is not None
        return random.choice(self.state.possible_moves())

    def on_game_over(self, roomMessage: Result) -> None:
        winner = roomMessage.winner
        logging.info(
            "game over: winner=%s regular=%s reason=%s",
            winner.team if winner else None,
            winner.regular if winner else None,
            winner.reason if winner else None,
        )


def main() -> None:
    # socha asks PyPI for a newer version on every start (without a timeout) and recommends
    # 5.x, which is next season's game: skip that in a container.
    Starter.check_socha_version = staticmethod(lambda: None)  # type: ignore[method-assign]
    Starter(logic=RandomBot())


if __name__ == "__main__":
    main()
