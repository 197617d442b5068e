"""A bot on the official Python client socha 4.3.9 that plays random legal moves.

Started like every contest bot (`random_bot.py -h HOST -p PORT [-r RESERVATION]`). What it
saw is written as JSON to the file named by $BOT_REPORT after every event, so tests can check
that it received the result and `left`. $BOT_SEED makes its moves reproducible.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import Any

from socha.api.networking.game_client import IClientHandler
from socha.starter import Starter


class RandomLogic(IClientHandler):  # type: ignore[misc]  # socha is Any to mypy
    def __init__(self, report_path: str | None, seed: int | None) -> None:
        self.report_path = report_path
        self.random = random.Random(seed)
        self.state: Any = None
        self.report: dict[str, Any] = {
            "moves": 0,
            "updates": 0,
            "result": None,
            "left": False,
            "errors": [],
        }

    def on_update(self, state: Any) -> None:
        self.state = state
        self.report["updates"] += 1

    def calculate_move(self) -> Any:
        self.report["moves"] += 1
        self._save()
        return self.random.choice(self.state.possible_moves())

    def on_game_over(self, roomMessage: Any) -> None:  # socha names the parameter
        self.report["result"] = {
            "scores": [
                {
                    "name": entry.player.name,
                    "team": entry.player.team,
                    "parts": list(entry.score.part),
                }
                for entry in roomMessage.scores.entry
            ],
            "winner": roomMessage.winner.team,
            "regular": roomMessage.winner.regular,
            "reason": roomMessage.winner.reason,
        }
        self._save()

    def on_game_left(self) -> None:
        self.report["left"] = True
        self._save()

    def on_error(self, logMessage: str) -> None:  # socha names the parameter
        self.report["errors"].append(logMessage)
        self._save()

    def _save(self) -> None:
        if self.report_path:
            temporary = self.report_path + ".tmp"
            with open(temporary, "w", encoding="utf-8") as file:
                json.dump(self.report, file)
            os.replace(temporary, self.report_path)


def main() -> None:
    # The starter asks PyPI for a newer socha on every start, without a timeout (and would
    # recommend 5.x, the wrong game): never useful for a test bot.
    Starter.check_socha_version = staticmethod(lambda: None)
    seed = os.environ.get("BOT_SEED")
    logic = RandomLogic(os.environ.get("BOT_REPORT"), int(seed) if seed else None)
    Starter(logic=logic)  # parses sys.argv, plays, and exits via sys.exit(0)


if __name__ == "__main__":
    main()
    sys.exit(0)
