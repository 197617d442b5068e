"""Move-by-move analysis of Piranhas games (`piranhas-analyze`, docs/analysis.md): for every
move the evaluation before it, the best move, the move played and its evaluation, the win
probability it gave away and a mark (`?!`, `?`, `??`, `!`); per side an accuracy; per game the
turning point. A client of the game server: it reads replays, league game records and
piranhas-match streams, or observes a room; it never imports the server's internals.

    from analysis import Analyser, Settings, load_games
    with Analyser(Settings(nodes=12_000), concurrency=2) as analyser:
        for game in load_games(path):
            result = analyser.analyse(game)
            print(result.sides[0].accuracy, [m.mark for m in result.moves])

Deterministic: the same game and settings give the same analysis on any machine, with any
concurrency (chains of positions searched in order, bounded by nodes or depth, never the clock).
"""

from analysis.game import (
    DEFAULT_NODES,
    Analyser,
    AnalysisError,
    Game,
    GameAnalysis,
    MoveAnalysis,
    Settings,
    SideSummary,
    analyse_position,
)

__all__ = [
    "DEFAULT_NODES",
    "Analyser",
    "AnalysisError",
    "Game",
    "GameAnalysis",
    "MoveAnalysis",
    "Settings",
    "SideSummary",
    "analyse_position",
]
