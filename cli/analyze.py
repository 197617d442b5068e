"""`piranhas-analyze`: move-by-move analysis of Piranhas games (docs/analysis.md).

    piranhas-analyze GAME…                      # replays (.xml/.gz), league records, NDJSON
    piranhas-analyze --room ROOM --port 13050   # a game the server is playing
    piranhas-analyze r1-m1-g1.xml --annotate out/   # the analysis written into the record
    piranhas-analyze lost/*.xml --export-positions mistakes.json --player mybot

Exit status: 0 done, 1 an input could not be read or analysed (the others still are), 2 bad
options, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from analysis.annotate import AnnotationError, annotate
from analysis.game import DEFAULT_NODES, Analyser, AnalysisError, GameAnalysis, Settings
from analysis.report import json_text, ndjson_line, write_plain, write_rich
from analysis.sources import Loaded, SourceError, load, observe_room
from analysis.suite import export

PROGRAM = "piranhas-analyze"


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Analyse Piranhas games move by move: the evaluation before every move, "
        "the best move, the move played, the win probability it gave away and a mark "
        "(?! inaccuracy, ? mistake, ?? blunder, ! only move); per side the accuracy, per "
        "game the turning point. Deterministic: the same input and settings give the same "
        "output on any machine and with any --concurrency.",
    )
    parser.add_argument(
        "inputs",
        nargs="*",
        type=Path,
        metavar="GAME",
        help="official replays (plain or gzip), league game records, or "
        "piranhas-match --ndjson streams (their games' replays)",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=None,
        help=f"search nodes per position (default {DEFAULT_NODES})",
    )
    parser.add_argument(
        "--depth",
        type=int,
        default=None,
        help="search depth per position (instead of, or with, --nodes)",
    )
    parser.add_argument(
        "--concurrency",
        "-c",
        type=int,
        default=1,
        help="positions analysed at once, in processes (default 1)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "json", "ndjson"),
        default="table",
        help="table (rich on a terminal, plain text otherwise), one JSON "
        "document per game, or one JSON line per game",
    )
    parser.add_argument(
        "--output", "-o", type=Path, default=None, help="write the output here instead of stdout"
    )
    parser.add_argument(
        "--annotate",
        type=Path,
        default=None,
        metavar="DIR",
        help="write every league game record, annotated, into DIR",
    )
    parser.add_argument(
        "--export-positions",
        type=Path,
        default=None,
        metavar="SUITE",
        help="write the ?/?? moves of the losing sides as a position suite",
    )
    parser.add_argument(
        "--player",
        default=None,
        help="with --export-positions: only this player's mistakes, in the games it lost",
    )
    parser.add_argument(
        "--room",
        default=None,
        help="observe this room on a running server and analyse its game "
        "when it ends (from the position at which observing began)",
    )
    parser.add_argument("--host", default="localhost", help="with --room: the server")
    parser.add_argument("--port", type=int, default=13050, help="with --room: its port")
    parser.add_argument(
        "--password",
        default="examplepassword",
        help="with --room: the admin password (observing needs it)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="with --room: stop watching after this many seconds",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    return parser


def settings_from(nodes: int | None, depth: int | None) -> Settings:
    """The analysis settings of --nodes/--depth (the default node bound when neither)."""
    if nodes is None and depth is None:
        return Settings()
    return Settings(nodes=nodes, depth=depth)


class Progress:
    """`analysing NAME: done/total` on stderr, rewritten in place on a terminal."""

    def __init__(self, quiet: bool, stream: TextIO = sys.stderr) -> None:
        self.quiet = quiet
        self.stream = stream
        self.terminal = stream.isatty()
        self.label = ""

    def __call__(self, done: int, total: int) -> None:
        if self.quiet:
            return
        if self.terminal:
            self.stream.write(f"\r{self.label}: {done}/{total} positions")
            if done == total:
                self.stream.write("\n")
            self.stream.flush()
        elif done == total:
            self.stream.write(f"{self.label}: {total} positions\n")


def write(analysis: GameAnalysis, style: str, out: TextIO) -> None:
    """One game's analysis in the chosen format."""
    if style == "json":
        out.write(json_text(analysis))
    elif style == "ndjson":
        out.write(ndjson_line(analysis))
    elif out.isatty():
        from rich.console import Console

        write_rich(analysis, Console(file=out))
    else:
        write_plain(analysis, out)
        out.write("\n")


def main(argv: Sequence[str] | None = None) -> int:
    """The `piranhas-analyze` command."""
    parser = build_parser()
    try:
        options = parser.parse_intermixed_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2

    def usage(message: str) -> int:
        print(f"{PROGRAM}: {message}", file=sys.stderr)
        return 2

    if not options.inputs and options.room is None:
        return usage("give games to analyse (files) or --room ROOM")
    if options.inputs and options.room is not None:
        return usage("give files or --room, not both")
    if options.player is not None and options.export_positions is None:
        return usage("--player goes with --export-positions")
    try:
        settings = settings_from(options.nodes, options.depth)
        analyser = Analyser(settings, options.concurrency)
    except AnalysisError as error:
        return usage(str(error))
    if options.annotate is not None and not options.annotate.is_dir():
        return usage(f"--annotate {options.annotate}: no such folder")

    out: TextIO = sys.stdout
    failed = False
    analyses: list[GameAnalysis] = []
    progress = Progress(options.quiet)
    failed_inputs: list[str] = []
    try:
        if options.output is not None:
            try:
                out = options.output.open("w", encoding="utf-8")
            except OSError as error:
                return usage(f"--output {options.output}: {error.strerror or error}")
        with analyser:
            for loaded in _inputs(options, failed_inputs):
                progress.label = f"analysing {loaded.game.label}"
                analysis = analyser.analyse(loaded.game, progress)
                write(analysis, options.format, out)
                out.flush()
                if options.export_positions is not None:
                    analyses.append(analysis)
                if options.annotate is not None and loaded.record_bytes is not None:
                    failed |= not _annotate(loaded, analysis, options.annotate)
            failed |= bool(failed_inputs)
        if options.export_positions is not None:
            suite = export(analyses, options.player)
            if suite is not None:
                options.export_positions.write_text(suite.dumps(), encoding="utf-8")
                if not options.quiet:
                    print(
                        f"{len(suite.positions)} positions written to {options.export_positions}",
                        file=sys.stderr,
                    )
    except KeyboardInterrupt:
        print(f"{PROGRAM}: interrupted", file=sys.stderr)
        return 130
    finally:
        if out is not sys.stdout:
            out.close()
    return 1 if failed else 0


def _inputs(options: argparse.Namespace, failed: list[str]) -> list[Loaded]:
    """The games of every input; an unreadable input is reported and skipped."""
    if options.room is not None:
        import trio

        try:
            game = trio.run(
                lambda: observe_room(
                    options.host,
                    options.port,
                    options.password,
                    options.room,
                    timeout=options.timeout,
                )
            )
        except SourceError as error:
            print(f"{PROGRAM}: {error}", file=sys.stderr)
            failed.append(options.room)
            return []
        return [Loaded(game)]
    loaded: list[Loaded] = []
    for path in options.inputs:
        try:
            loaded.extend(load(path))
        except SourceError as error:
            print(f"{PROGRAM}: {error}", file=sys.stderr)
            failed.append(str(path))
    return loaded


def _annotate(loaded: Loaded, analysis: GameAnalysis, folder: Path) -> bool:
    assert loaded.record_bytes is not None and loaded.path is not None
    name = loaded.path.name
    try:
        data = annotate(loaded.record_bytes, analysis)
        (folder / name).write_bytes(data)
    except (AnnotationError, OSError) as error:
        print(f"{PROGRAM}: cannot annotate {name}: {error}", file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())


# ---- piranhas-league analyze / verify (cli/league.py calls these) ---------------------------


def add_league_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`piranhas-league analyze FILE.toml`: annotate every game record of the league."""
    command = commands.add_parser(
        "analyze",
        help="analyse every game record of the league and write the analysis into it "
        "(resumable: records already analysed with these settings are skipped)",
    )
    command.add_argument("league", type=Path, metavar="FILE.toml")
    command.add_argument("--db", type=Path, metavar="F", help="the store (default: the file's)")
    command.add_argument(
        "--nodes",
        type=int,
        default=None,
        help=f"search nodes per position (default {DEFAULT_NODES})",
    )
    command.add_argument("--depth", type=int, default=None, help="search depth per position")
    command.add_argument(
        "--concurrency", "-c", type=int, default=1, help="positions analysed at once, in processes"
    )
    distributed = command.add_argument_group(
        "across machines (docs/distributed.md): the games recorded in the shared store, "
        "analysed by the league's workers through the league's queue"
    )
    distributed.add_argument(
        "--distributed",
        action="store_true",
        help="send one analysis job per recorded game to the queue, show the progress, then "
        "write the annotated records (resumable: the same command sends nothing twice)",
    )
    distributed.add_argument(
        "--database",
        default=None,
        help="postgresql://… or an SQLite file (default: $PIRANHAS_DATABASE, else the league "
        "file's database)",
    )
    distributed.add_argument(
        "--redis", default=None, help="redis://host:6379/0 (default: $PIRANHAS_REDIS_URL)"
    )
    distributed.add_argument(
        "--records",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the annotated records go (default: the league's records folder)",
    )
    distributed.add_argument(
        "--interval", type=float, default=5.0, help="seconds between progress updates"
    )
    distributed.add_argument(
        "--no-wait", action="store_true", help="only send the jobs (write nothing)"
    )


def analyze_league(records_dir: Path, args: argparse.Namespace, out: TextIO) -> int:
    """Annotate every `match*-game*.xml` in `records_dir` in place (written atomically);
    skip those already annotated with the same settings. 0 done, 1 some record failed."""
    from analysis.annotate import read_annotation
    from analysis.sources import game_from_record, read_bounded

    try:
        settings = settings_from(args.nodes, args.depth)
        analyser = Analyser(settings, args.concurrency)
    except AnalysisError as error:
        print(f"piranhas-league analyze: {error}", file=sys.stderr)
        return 2
    paths = sorted(records_dir.glob("match*-game*.xml")) if records_dir.is_dir() else []
    if not paths:
        print(f"no game records in {records_dir}", file=out)
        return 0
    failed = done = skipped = 0
    with analyser:
        for number, path in enumerate(paths, start=1):
            prefix = f"[{number}/{len(paths)}] {path.name}"
            try:
                data = read_bounded(path)
                existing = read_annotation(data)
                if existing is not None and existing.settings == settings:
                    skipped += 1
                    continue
                _, game = game_from_record(data, path.name)
                analysis = analyser.analyse(game)
                annotated = annotate(data, analysis)
                temporary = path.with_suffix(".xml.tmp")
                temporary.write_bytes(annotated)
                temporary.replace(path)
            except (SourceError, AnnotationError, OSError) as error:
                print(f"{prefix}: {error}", file=out, flush=True)
                failed += 1
                continue
            done += 1
            one, two = analysis.sides
            print(f"{prefix}: {_side_text(one)}; {_side_text(two)}", file=out, flush=True)
    print(f"{done} analysed, {skipped} already analysed, {failed} failed", file=out)
    return 1 if failed else 0


def _side_text(side: object) -> str:
    from analysis.game import SideSummary

    assert isinstance(side, SideSummary)
    accuracy = "-" if side.accuracy is None else f"{side.accuracy:.1f}"
    return f"{side.name} accuracy {accuracy}, {side.mistakes} ?, {side.blunders} ??"


def verify_annotation(path: Path, recompute: bool) -> list[str]:
    """The discrepancies of a record's annotation (none without one), as verify prints."""
    from analysis.annotate import check
    from analysis.sources import read_bounded

    try:
        data = read_bounded(path)
    except SourceError as error:
        return [str(error)]
    return [str(found) for found in check(data, path.name, recompute=recompute)]
