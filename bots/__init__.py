"""Built-in bots (`random`, `greedy`, `search`): move choosers on the engine, pure and
synchronous. Clients of the game server; the server never imports them.

    from bots import make_bot
    bot = make_bot("search", seed=1)
    move = bot.choose(state, budget=1.5)   # a legal move, within the budget (seconds)

`choose` is CPU-bound and synchronous (run it in a worker thread from async code). To watch
two bots play: `python -m bots.demo --player1 search --player2 greedy --seed 1`.
"""

from bots.players import BOT_NAMES, DEFAULT_BUDGET, Bot, GreedyBot, RandomBot, make_bot
from bots.search import SearchBot, SearchInfo

__all__ = [
    "BOT_NAMES",
    "DEFAULT_BUDGET",
    "Bot",
    "GreedyBot",
    "RandomBot",
    "SearchBot",
    "SearchInfo",
    "make_bot",
]
