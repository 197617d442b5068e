"""A bot that plays the analysis's best move (analysis.analyse_position at --nodes): the
perfect student of a position suite made at the same settings. For the positions tests.

    best_bot.py --nodes N --host H --port P [--reservation CODE]

Without --reservation it sends `<join>` (the positions command's rooms).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from analysis import Settings, analyse_position
from client import ClientSession
from engine import GameState, Move


async def play(host: str, port: int, reservation: str | None, nodes: int) -> None:
    session = ClientSession(await trio.open_tcp_stream(host, port))
    try:
        if reservation is None:
            await session.join()
        else:
            await session.join_prepared(reservation)

        async def choose(state: GameState) -> Move:
            result, _ = analyse_position(state, None, Settings(nodes=nodes))
            return result.best

        await session.play(choose)
    finally:
        await session.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--reservation", default=None)
    parser.add_argument("--nodes", type=int, required=True)
    options = parser.parse_args()
    trio.run(play, options.host, options.port, options.reservation, options.nodes)


if __name__ == "__main__":
    main()
