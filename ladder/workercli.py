"""The `worker` subcommand of piranhas-ladder (cli/ladder.py calls `add_worker_command`): W
workers on this machine (ladder.work_pool.run_workers) or, with --redis, a Dramatiq worker of the
ladder's queue (ladder.actors.run_actor_worker). It lives apart from both so that ladder.actors
can build on ladder.work without ladder.work importing it back.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from functools import partial
from pathlib import Path

import trio

from ladder.store import LadderStore
from ladder.work import WorkSettings
from ladder.work_pool import cancel_on_signal, run_workers

__all__ = ["DEFAULT_DATA", "add_worker_command", "worker_command", "worker_settings"]

DEFAULT_DATA = Path("ladder-data")


def add_worker_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `worker` to piranhas-ladder's subcommands (its `run` is `worker_command`)."""
    worker = commands.add_parser(
        "worker",
        help="check uploads and play ladder matches (no site)",
        description="Check uploads and play ladder matches: W workers (and, unless "
        "--no-schedule, the scheduler that keeps W matches waiting) on this machine, or with "
        "--redis a Dramatiq worker of the ladder's queue (docs/ladder.md, Workers).",
    )
    worker.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the data directory")
    worker.add_argument(
        "--database", default=None, help="an SQLite path or postgresql://… (DIR/ladder.sqlite)"
    )
    worker.add_argument(
        "--workers",
        type=int,
        default=1,
        help="games played at once (1); with --redis: matches the dispatcher keeps waiting",
    )
    worker.add_argument(
        "--no-docker",
        action="store_true",
        help="run bots as processes in check's jail, not in containers (a laptop, tests; "
        "every card says so)",
    )
    worker.add_argument(
        "--no-schedule", action="store_true", help="only play: another process schedules"
    )
    worker.add_argument("--name", default=None, help="this worker's name in the store")
    worker.add_argument(
        "--lease", type=float, default=300.0, help="seconds a claim lives without a heartbeat"
    )
    worker.add_argument("--heartbeat", type=float, default=30.0, help="seconds between beats")
    worker.add_argument(
        "--join-seconds",
        type=float,
        default=60.0,
        help="a bot that has not joined its game after this long loses it (60)",
    )
    worker.add_argument(
        "--redis",
        default=None,
        metavar="URL",
        help="distributed: take jobs from the ladder's Dramatiq queue on this Redis",
    )
    worker.set_defaults(run=worker_command)


def worker_settings(args: argparse.Namespace) -> WorkSettings:
    """The WorkSettings of a `worker` command line."""
    if args.workers < 1 or args.lease <= 0 or args.heartbeat <= 0 or args.join_seconds <= 0:
        raise ValueError("--workers, --lease, --heartbeat and --join-seconds must be positive")
    if args.heartbeat >= args.lease:
        raise ValueError("--heartbeat must be shorter than --lease")
    base = WorkSettings(Path(args.data), docker=not args.no_docker)
    return dataclasses.replace(
        base,
        worker=args.name or base.worker,
        lease_seconds=args.lease,
        heartbeat_every=args.heartbeat,
        join_seconds=args.join_seconds,
    )


def worker_command(args: argparse.Namespace) -> int:
    """`piranhas-ladder worker`: work until SIGTERM or Ctrl+C (a running match is given
    back); the exit status."""
    settings = worker_settings(args)
    database = str(args.database) if args.database else str(settings.data_dir / "ladder.sqlite")
    LadderStore.open(database).close()  # the store answers (and has its tables) before work
    if args.redis:
        from ladder.actors import run_actor_worker  # only --redis loads Dramatiq

        return run_actor_worker(
            database,
            args.redis,
            settings,
            dispatch=not args.no_schedule,
            pending=args.workers,
        )

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_signal, nursery.cancel_scope)
            await run_workers(
                partial(LadderStore.open, database),
                settings.data_dir,
                workers=args.workers,
                docker=settings.docker,
                schedule=not args.no_schedule,
                settings=settings,
            )

    print(f"piranhas-ladder: worker {settings.worker} on {database}", file=sys.stderr)
    trio.run(main)
    return 0
