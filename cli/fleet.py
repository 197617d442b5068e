"""The distributed league's commands (docs/distributed.md), also under `piranhas-league`:

    distribute LEAGUE.toml  send every match to the queue, then show live standings until done
    worker LEAGUE.toml      play matches from the queue (one at a time) until SIGTERM
    status LEAGUE.toml      standings so far; queued, running (on which worker, since when),
                            done, failed, cancelled
    cancel LEAGUE.toml      cancel matches (`--match N`, repeatable) or the whole league (`--all`)

`--database` is a PostgreSQL URL (`postgresql://user@host:5432/league`) or the path of an
SQLite file (one machine only); `--redis` the Redis URL. Both default to the environment
(`PIRANHAS_DATABASE`, `PIRANHAS_REDIS_URL`), or to the first line of the file named by
`PIRANHAS_DATABASE_FILE` / `PIRANHAS_REDIS_URL_FILE` (a Docker secret). A URL with a password
is refused as an option (`ps` shows options to every user): passwords come from there only.

Exit status: 0 success (`distribute`: every match done), 1 `distribute` ended with failed or
cancelled matches, 2 a bad league file, store, server or command line (one line on stderr,
never a traceback), 130 interrupted (Ctrl+C).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from fleet import preflight
from fleet.preflight import FleetError
from league.config import LeagueConfig, LeagueFileError, load_league
from league.schedule import build_schedule
from league.store import StoreError

__all__ = ["COMMANDS", "FleetError", "add_commands", "dispatch", "main"]

COMMANDS = ("distribute", "worker", "status", "cancel")
INTERRUPTED = 130


def setting(name: str) -> str | None:
    """The environment's `name`, else the first line of the file named by `name`_FILE."""
    value = os.environ.get(name)
    if value:
        return value
    path = os.environ.get(f"{name}_FILE")
    if not path:
        return None
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise FleetError(f"{name}_FILE: cannot read {path}: {error}") from None
    return lines[0].strip() if lines else None


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the distributed commands to a `piranhas-league` parser."""

    def common(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("league", type=Path, metavar="FILE.toml")
        parser.add_argument(
            "--database",
            default=None,
            help="postgresql://… or an SQLite file (default: $PIRANHAS_DATABASE, else the "
            "league file's database)",
        )

    def redis(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--redis",
            default=None,
            help="redis://host:6379/0 (default: $PIRANHAS_REDIS_URL)",
        )

    run = commands.add_parser(
        "distribute", help="across machines: queue every match, show live standings"
    )
    common(run)
    redis(run)
    run.add_argument("--interval", type=float, default=5.0, help="seconds between updates")
    run.add_argument("--no-wait", action="store_true", help="only queue the matches")

    worker = commands.add_parser("worker", help="across machines: play matches from the queue")
    common(worker)
    redis(worker)
    worker.add_argument("--name", help="shown in status (default: host:pid)")
    worker.add_argument(
        "--log-dir",
        default="worker-logs",
        help="bot and server logs; {name} is replaced by the worker's name (workers sharing "
        "one volume: --log-dir /work/logs/{name})",
    )
    worker.add_argument("--poll", type=float, default=1.0, help="seconds between heartbeats")

    status = commands.add_parser(
        "status", help="across machines: standings and every match's state"
    )
    common(status)

    cancel = commands.add_parser("cancel", help="across machines: cancel matches or the league")
    common(cancel)
    which = cancel.add_mutually_exclusive_group(required=True)
    which.add_argument("--match", type=int, action="append", metavar="N", help="a match id")
    which.add_argument("--all", action="store_true", help="every match not yet done")


def _database(config: LeagueConfig, args: argparse.Namespace) -> str:
    if args.database:
        preflight.refuse_password_in_argument(args.database, "--database", "PIRANHAS_DATABASE")
    database = str(args.database or setting("PIRANHAS_DATABASE") or config.database)
    return preflight.check_database(database)


def _redis(args: argparse.Namespace) -> str:
    if args.redis:
        preflight.refuse_password_in_argument(args.redis, "--redis", "PIRANHAS_REDIS_URL")
    url = args.redis or setting("PIRANHAS_REDIS_URL")
    if not url:
        raise FleetError("no Redis: give --redis redis://host:6379/0 or set PIRANHAS_REDIS_URL")
    return preflight.check_redis_url(str(url))


def dispatch(args: argparse.Namespace, out: TextIO) -> int:
    """Run one of COMMANDS; the exit status. Raises FleetError when PostgreSQL or Redis
    cannot be reached (after the retries) or a setting is wrong."""
    import psycopg
    import redis

    try:
        return _dispatch(args, out)
    except (psycopg.Error, redis.RedisError) as error:
        raise FleetError(f"{type(error).__name__}: {error}") from None
    except KeyboardInterrupt:
        if args.command == "distribute":
            print(
                "piranhas-league: interrupted; the queued matches stay queued and the workers "
                "go on (`distribute` again shows the standings, sending nothing twice)",
                file=sys.stderr,
            )
        else:
            print("piranhas-league: interrupted", file=sys.stderr)
        return INTERRUPTED


def _dispatch(args: argparse.Namespace, out: TextIO) -> int:
    from fleet import coordinator
    from fleet.runs import RunStatus
    from fleet.stores import open_store

    config = load_league(args.league)
    database = _database(config, args)
    if args.command == "analyze":
        return _analyze(config, database, args, out)
    if args.command == "distribute":
        redis_url = _redis(args)
        preflight.check_redis(redis_url)
        sent = coordinator.enqueue(config, database, redis_url)
        print(f"{len(sent)} matches sent to the queue", file=out, flush=True)
        if args.no_wait:
            return 0
        states = coordinator.wait_until_final(config, database, out=out, interval=args.interval)
        return 0 if all(state.status is RunStatus.DONE for state in states) else 1
    if args.command == "worker":
        from fleet.worker import WorkerSetup, default_worker_name, run_worker

        # Workers do not create tables (the coordinator does; concurrent CREATEs can clash).
        matches = build_schedule(config)
        name = args.name or default_worker_name()
        setup = WorkerSetup(
            config,
            {match.id: match for match in matches},
            database,
            _redis(args),
            Path(args.log_dir.replace("{name}", name.replace("/", "_"))),
            name,
            args.poll,
        )
        return run_worker(setup)
    coordinator.initialize(config, database)
    store, runs = open_store(database)
    try:
        if args.command == "status":
            print(coordinator.format_standings(coordinator.standings(config, store)), file=out)
            print(coordinator.format_status(runs.states(), time.time()), file=out)
            return 0
        try:
            count = runs.cancel(None if args.all else args.match)
        except KeyError as error:
            missing = ", ".join(str(n) for n in error.args[0])
            print(
                f"piranhas-league: no match {missing} in this league (nothing cancelled; "
                "`status` lists the matches)",
                file=sys.stderr,
            )
            return 2
        print(f"cancel requested for {count} matches", file=out)
        return 0
    finally:
        store.close()


def _analyze(config: LeagueConfig, database: str, args: argparse.Namespace, out: TextIO) -> int:
    """`piranhas-league analyze --distributed`: 0 every game analysed, 1 some failed, 2 bad
    settings."""
    from analysis import AnalysisError
    from cli.analyze import settings_from
    from fleet import coordinator

    try:
        settings = settings_from(args.nodes, args.depth)
    except AnalysisError as error:
        raise FleetError(str(error)) from None
    redis_url = _redis(args)
    preflight.check_redis(redis_url)
    sent = coordinator.enqueue_analyses(config, database, redis_url, settings)
    print(f"{len(sent)} analysis jobs sent to the queue", file=out, flush=True)
    if args.no_wait:
        return 0
    progress = coordinator.wait_for_analyses(database, settings, out=out, interval=args.interval)
    records = args.records or Path(f"{config.database.with_suffix('')}.records")
    written, failed = coordinator.write_analyses(database, settings, records, out=out)
    print(f"{written} annotated records written to {records}", file=out)
    return 1 if failed or progress.failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """The same commands without the rest of `piranhas-league` (`python -m cli.fleet`)."""
    parser = argparse.ArgumentParser(
        prog="piranhas-league", description="A league across machines (docs/distributed.md)."
    )
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return dispatch(args, sys.stdout)
    except (LeagueFileError, FleetError, StoreError, OSError) as error:
        print(f"piranhas-league: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
