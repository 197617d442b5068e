"""`piranhas-match --analyze`: the games player1 lost, each analysed at the command's node
setting from the states the runner observed (docs/analysis.md); the figures printed, the
analysis written as JSON into the run's log dir. The match runner calls it through the hook
`runner.match.run_match(analyse_lost=...)` that the command wires in: the runner never imports
the analysis."""

from __future__ import annotations

from collections.abc import Callable

from analysis.game import Analyser, AnalysisError, Game, Settings
from analysis.report import json_text, summary_lines
from protocol.messages import Memento
from runner.game import Observation
from runner.options import Options


def analyse_lost(options: Options, lost: list[Observation], say: Callable[[str], None]) -> None:
    """`--analyze`: each lost game analysed at the default settings from the observed states
    (docs/analysis.md); its figures printed, the analysis written as JSON into the log dir."""
    say(f"analysing the {len(lost)} games {options.names[0]} lost")
    try:
        settings = Settings(nodes=options.analyze)
    except AnalysisError as error:
        say(f"--analyze: {error}")
        return
    with Analyser(settings) as analyser:
        for observation in lost:
            states = [p.state for p in observation.packets if isinstance(p, Memento)]
            if len(states) < 2:
                continue
            summary = observation.summary
            names = (options.names[summary.one], options.names[1 - summary.one])
            moves = tuple(state.last_move for state in states[1:] if state.last_move)
            game = Game(
                states[0],
                moves,
                names,
                f"game {summary.number}",
                summary.result.winner,
                summary.result.reason,
            )
            analysis = analyser.analyse(game)
            path = options.log_dir / f"analysis-game{summary.number}.json"
            try:
                path.write_text(json_text(analysis), encoding="utf-8")
            except OSError as error:
                say(f"game {summary.number}: cannot write {path}: {error}")
            for line in summary_lines(analysis):
                say(f"game {summary.number}: {line}")
