"""The SC client session: connect, authenticate, prepare, observe, join and receive, over trio.

Written once and used by everything that talks to a game server as a client: the match runner,
the built-in bots, the tests and the benchmarks. It never imports `server`.
"""

from client.session import ClientSession, ConnectionClosed, ServerRefused, open_session
from protocol import GAME_TYPE

__all__ = ["GAME_TYPE", "ClientSession", "ConnectionClosed", "ServerRefused", "open_session"]
