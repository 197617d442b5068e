"""`piranhas-league`: play a league, its standings, schedule and record verification
(docs/league.md).

Exit status: 0 success; 1 `verify` found discrepancies (or unreadable records), or `run` gave up
on a game that failed again and again; 2 a bad league file, store or command line; 130 `run`
interrupted (Ctrl+C, SIGTERM: the same command continues).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TextIO

import trio

from cli.analyze import analyze_league, verify_annotation
from league.config import LeagueConfig, LeagueFileError, load_league
from league.records import RecordError, read_record_file, verify
from league.run import (
    MODES,
    AsyncStore,
    GameReport,
    LeagueRunError,
    check_mode,
    default_mode,
    describe,
    display_names,
    run_league,
)
from league.schedule import Match, build_schedule
from league.standings import Standings, compute_standings
from league.store import LeagueStore, StoredGame, StoreError
from runner.display import display_for

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="piranhas-league", description="A league of Piranhas bots (docs/league.md)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    standings = commands.add_parser("standings", help="the table as the Software-Challenge ranks")
    standings.add_argument("league", type=Path, metavar="FILE.toml")
    standings.add_argument("--json", type=Path, metavar="F", help="also write the table as JSON")
    standings.add_argument("--csv", type=Path, metavar="F", help="also write the table as CSV")
    standings.add_argument("--html", type=Path, metavar="F", help="also write one HTML page")
    schedule = commands.add_parser("schedule", help="print the schedule")
    schedule.add_argument("league", type=Path, metavar="FILE.toml")
    run = commands.add_parser("run", help="play every unfinished game (resumes after a stop)")
    run.add_argument("league", type=Path, metavar="FILE.toml")
    run.add_argument("--db", type=Path, metavar="F", help="the store (default: the file's)")
    run.add_argument(
        "--mode",
        choices=MODES,
        help="bots as local processes or in containers (default: process when every team "
        "is a command, else docker)",
    )
    run.add_argument(
        "--concurrency", type=int, metavar="K", help="games at once (default: the file's)"
    )
    run.add_argument(
        "--standings-every",
        type=int,
        default=10,
        metavar="N",
        help="print the standings every N finished games (plain output; 0: only at the end)",
    )
    check = commands.add_parser("verify", help="replay game records and report discrepancies")
    check.add_argument("records", type=Path, nargs="+", metavar="RECORD")
    check.add_argument(
        "--analysis",
        action="store_true",
        help="also search every annotated position again with its recorded settings "
        "(deterministic: any difference is a tampered or stale annotation; slow)",
    )
    from cli.analyze import add_league_command

    add_league_command(commands)
    # Across machines (docs/distributed.md): distribute, worker, status, cancel.
    from cli.fleet import add_commands

    add_commands(commands)
    return parser


def _finished_games(config: LeagueConfig, matches: tuple[Match, ...]) -> list[StoredGame]:
    # A read-only command never creates a database: no file means no game was recorded yet.
    if not config.database.exists():
        return []
    store = LeagueStore.sqlite(config.database)
    try:
        store.initialize(config, matches)
        return store.finished_games()
    finally:
        store.close()


def _plain_table(standings: Standings) -> str:
    header = ("#", "Team", "M", "W", "D", "L", "Pts", "Games W-D-L", "SP", "Ø Schwarm", "Lot")
    rows = [
        (
            str(row.rank),
            row.name,
            str(row.matches),
            str(row.won),
            str(row.drawn),
            str(row.lost),
            str(row.match_points),
            f"{row.games_won}-{row.games_drawn}-{row.games_lost}",
            str(row.siegpunkte),
            f"{float(row.schwarm_average):.3f}",
            str(row.lot),
        )
        for row in standings.rows
    ]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(width) if index == 1 else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(header), *(line(row) for row in rows)])


def _print_standings(standings: Standings, out: TextIO) -> None:
    summary = (
        f"{standings.league}: {standings.matches_complete}/{standings.matches_total} matches "
        f"complete, {standings.games_recorded}/{standings.games_total} games recorded"
    )
    if out.isatty():
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            pass
        else:
            table = Table(title=summary)
            for column in ("#", "Team", "M", "W", "D", "L", "Pts", "Games", "SP", "Ø Schwarm"):
                table.add_column(column, justify="left" if column == "Team" else "right")
            table.add_column("Lot", justify="right")
            for row in standings.rows:
                table.add_row(
                    str(row.rank),
                    row.name,
                    str(row.matches),
                    str(row.won),
                    str(row.drawn),
                    str(row.lost),
                    f"[bold]{row.match_points}[/bold]",
                    f"{row.games_won}-{row.games_drawn}-{row.games_lost}",
                    str(row.siegpunkte),
                    f"{float(row.schwarm_average):.3f}",
                    str(row.lot),
                )
            Console(file=out).print(table)
            return
    print(summary, file=out)
    print(_plain_table(standings), file=out)


def _standings(args: argparse.Namespace, out: TextIO) -> int:
    config = load_league(args.league)
    matches = build_schedule(config)
    standings = compute_standings(config, matches, _finished_games(config, matches))
    _print_standings(standings, out)
    exports = ((args.json, standings.to_json), (args.csv, standings.to_csv))
    for path, render in (*exports, (args.html, standings.to_html)):
        if path is not None:
            path.write_text(render(), encoding="utf-8")
    return 0


def _schedule(args: argparse.Namespace, out: TextIO) -> int:
    config = load_league(args.league)
    matches = build_schedule(config)
    print(
        f"{config.name}: {config.format.value}, {len(matches)} matches of "
        f"{config.games_per_match} games, seed {config.seed}",
        file=out,
    )
    names = {team.id: team.name for team in config.teams}
    current_round = 0
    for match in matches:
        if match.round != current_round:
            current_round = match.round
            print(f"Round {current_round}", file=out)
        seeds = " ".join(str(game.board_seed) for game in match.games[::2])
        print(
            f"  match {match.id}: {names[match.home]} - {names[match.away]}  boards {seeds}",
            file=out,
        )
    return 0


def _verify(args: argparse.Namespace, out: TextIO) -> int:
    failed = 0
    for path in args.records:
        try:
            record = read_record_file(path)
        except RecordError as error:
            print(f"{path}: cannot read: {error}", file=out)
            failed += 1
            continue
        found = [str(discrepancy) for discrepancy in verify(record)]
        # The move analysis written into the record (docs/game-records.md "Analysis").
        found += verify_annotation(path, recompute=args.analysis)
        if found:
            failed += 1
            for discrepancy in found:
                print(f"{path}: {discrepancy}", file=out)
    print(f"{len(args.records) - failed} of {len(args.records)} records verified", file=out)
    return 1 if failed else 0


class _Progress:
    """Live progress of a run (runner.display): a rich bar on a terminal, plain lines
    otherwise (one per finished game, the standings every N games)."""

    def __init__(
        self,
        out: TextIO,
        config: LeagueConfig,
        matches: tuple[Match, ...],
        store: AsyncStore,
        total: int,
        done: int,
        standings_every: int,
    ) -> None:
        self.out = out
        self.config = config
        self.matches = matches
        self.store = store
        self.names = display_names(config)
        self.standings_every = standings_every
        self.total = total
        self.done = done
        self.finished = 0
        self.display = display_for(out, total, done, label=config.name)

    def __enter__(self) -> _Progress:
        self.display.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.display.__exit__(None, None, None)

    async def game(self, report: GameReport) -> None:
        self.finished += 1
        self.display.line(describe(report, self.names))
        self.display.progress(self.done + self.finished, self.total, "")
        if (
            not self.display.live
            and self.standings_every
            and self.finished % self.standings_every == 0
        ):
            games = await self.store.call(self.store.store.finished_games)
            standings = compute_standings(self.config, self.matches, games)
            self.display.line(_plain_table(standings))


def _run(args: argparse.Namespace, out: TextIO) -> int:
    config = load_league(args.league)
    if args.db is not None:
        config = replace(config, database=args.db)
    if args.concurrency is not None:
        if args.concurrency < 1:
            print("piranhas-league: --concurrency must be at least 1", file=sys.stderr)
            return 2
        config = replace(config, concurrency=args.concurrency)
    mode = args.mode or default_mode(config)
    check_mode(config, mode)
    matches = build_schedule(config)
    store = AsyncStore(partial(LeagueStore.sqlite, config.database))
    try:
        return trio.run(_play, config, matches, store, mode, args, out)
    finally:
        store.close()


async def _play(
    config: LeagueConfig,
    matches: tuple[Match, ...],
    store: AsyncStore,
    mode: str,
    args: argparse.Namespace,
    out: TextIO,
) -> int:
    await store.call(store.store.initialize, config, matches)
    given_back = await store.call(store.store.reset_running)
    progress = await store.call(store.store.progress)
    database = config.database
    base = database.with_suffix("")
    print(
        f"{config.name}: {progress.finished}/{progress.total} games played, {mode} mode, "
        f"{config.concurrency} at once, store {database}"
        + (f" ({given_back} unfinished games of a stopped run given back)" if given_back else ""),
        file=out,
        flush=True,
    )
    interrupted = False
    failure: str | None = None
    with (
        _Progress(
            out, config, matches, store, progress.total, progress.finished, args.standings_every
        ) as live,
        trio.CancelScope() as scope,
    ):
        async with trio.open_nursery() as nursery:

            async def on_signal() -> None:
                nonlocal interrupted
                with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        interrupted = True
                        scope.cancel()
                        return

            nursery.start_soon(on_signal)
            try:
                await run_league(
                    config,
                    store,
                    mode=mode,
                    log_dir=Path(f"{base}.logs"),
                    records_dir=Path(f"{base}.records"),
                    on_game=live.game,
                )
            except LeagueRunError as error:
                failure = str(error)
            nursery.cancel_scope.cancel()
    games = await store.call(store.store.finished_games)
    _print_standings(compute_standings(config, matches, games), out)
    if interrupted:
        print("interrupted: the same command continues", file=out, flush=True)
        return 130
    if failure is not None:
        print(f"piranhas-league: {failure}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The console entry point."""
    args = _parser().parse_args(argv)
    out = sys.stdout
    try:
        if args.command == "standings":
            return _standings(args, out)
        if args.command == "schedule":
            return _schedule(args, out)
        if args.command == "verify":
            return _verify(args, out)
        if args.command == "run":
            return _run(args, out)
        if args.command == "analyze" and not args.distributed:
            config = load_league(args.league)
            database = args.db or config.database
            return analyze_league(Path(f"{database.with_suffix('')}.records"), args, out)
        from cli.fleet import FleetError, dispatch

        try:
            return dispatch(args, out)
        except FleetError as error:
            print(f"piranhas-league: {error}", file=sys.stderr)
            return 2
    except (LeagueFileError, LeagueRunError, StoreError, OSError) as error:
        print(f"piranhas-league: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
