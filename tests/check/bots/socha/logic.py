"""A good contest bot on the official Python client socha 4.3.9: random legal moves.

The Starter parses the contest's arguments (-h/--host, -p/--port, -r/--reservation), connects
and calls calculate_move on every move request. As uploaded, with requirements.txt."""

from __future__ import annotations

import random
import sys
from typing import Any

from socha.api.networking.game_client import IClientHandler
from socha.starter import Starter


class Logic(IClientHandler):  # type: ignore[misc]  # socha is Any to mypy
    def __init__(self) -> None:
        self.state: Any = None
        self.random = random.Random(1)

    def on_update(self, state: Any) -> None:
        self.state = state

    def calculate_move(self) -> Any:
        return self.random.choice(self.state.possible_moves())


if __name__ == "__main__":
    Starter(logic=Logic())
    sys.exit(0)
