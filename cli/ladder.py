"""`piranhas-ladder`: an open contest ladder — teams upload bots, a ladder plays them around
the clock, everyone sees where they stand (docs/ladder.md).

    piranhas-ladder init --data DIR --admin NAME      the data directory, its store, an admin
    piranhas-ladder serve --data DIR [--no-docker]    the site and the workers on one machine
    piranhas-ladder admin create-team NAME            (also: invite TEAM, suspend TEAM, audit)
    piranhas-ladder worker ...                        workers only (ladder.workercli)
    piranhas-ladder season ...                        seasons and ratings (ladder.season)

`serve` runs the site in this process and the workers (`ladder.work_pool.run_workers`) in a child
process: a request never waits on a game, and a worker's crash never takes the site down.
"""

from __future__ import annotations

import argparse
import getpass
import multiprocessing
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import trio

from ladder import season, work, work_pool, workercli
from ladder.site.sessions import hash_password, password_problem, username_problem
from ladder.site.uploads import DEFAULT_MAX_UPLOAD
from ladder.store import LadderError, LadderStore

PROGRAM = "piranhas-ladder"
DEFAULT_DATA = Path("ladder-data")
DEFAULT_PORT = 8090
PASSWORD_VARIABLE = "PIRANHAS_LADDER_PASSWORD"
DATA_DIRECTORIES = ("uploads", "logs", "replays", "cards", "seasons")


def _common(parser: argparse.ArgumentParser) -> None:
    """--data and --database, on every subcommand (also those of ladder.workercli and
    ladder.season)."""
    known = {option for action in parser._actions for option in action.option_strings}
    if "--data" not in known:
        parser.add_argument(
            "--data", type=Path, default=DEFAULT_DATA, help="the data directory (./ladder-data)"
        )
    if "--database" not in known:
        parser.add_argument(
            "--database",
            default=None,
            help="the store: an SQLite path or postgresql://… (default DIR/ladder.sqlite)",
        )


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    init = commands.add_parser("init", help="make the data directory and its store")
    init.add_argument("--admin", metavar="NAME", help="also create this admin account")
    init.set_defaults(run=_init)

    serve = commands.add_parser("serve", help="the site and the in-process workers")
    serve.add_argument("--host", default="127.0.0.1", help="listen address (127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"({DEFAULT_PORT})")
    serve.add_argument("--workers", type=int, default=1, help="games played at once (1)")
    serve.add_argument(
        "--no-workers", action="store_true", help="the site only (workers run elsewhere)"
    )
    serve.add_argument(
        "--no-docker",
        action="store_true",
        help="run bots as jailed processes, not in the contest's containers (a laptop, tests)",
    )
    serve.add_argument(
        "--max-upload-mib",
        type=int,
        default=DEFAULT_MAX_UPLOAD >> 20,
        help=f"largest upload accepted ({DEFAULT_MAX_UPLOAD >> 20} MiB)",
    )
    serve.add_argument(
        "--analysis-nodes",
        type=int,
        default=None,
        help='search nodes per position of the viewer\'s "Analyse this game" (its default)',
    )
    serve.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        help="a reverse proxy's address whose X-Forwarded-For/-Proto are believed",
    )
    serve.set_defaults(run=_serve)

    admin = commands.add_parser("admin", help="teams, invites, suspension, audit log")
    actions = admin.add_subparsers(dest="action", required=True)
    create_admin = actions.add_parser("create-admin", help="an admin account")
    create_admin.add_argument("username")
    create_team = actions.add_parser("create-team", help="a team")
    create_team.add_argument("name")
    invite = actions.add_parser("invite", help="an invite link for a team (printed once)")
    invite.add_argument("team", type=int)
    invite.add_argument(
        "--base-url", default=f"http://127.0.0.1:{DEFAULT_PORT}", help="the site's address"
    )
    suspend = actions.add_parser("suspend", help="suspend a team (--undo: reinstate)")
    suspend.add_argument("team", type=int)
    suspend.add_argument("--undo", action="store_true")
    actions.add_parser("teams", help="list the teams")
    actions.add_parser("audit", help="the audit log")
    for action in actions.choices.values():
        _common(action)
    admin.set_defaults(run=_admin)

    _plug_ins(commands)
    for name, command in commands.choices.items():
        if name != "admin":  # its actions have them (after the action's name)
            _common(command)
    return parser


def _plug_ins(commands: Any) -> None:
    """The subcommands of the seasons (ladder.season) and the workers (ladder.workercli)."""
    season.add_season_command(commands)
    workercli.add_worker_command(commands)


def _database(args: argparse.Namespace) -> str:
    return str(args.database) if args.database else str(args.data / "ladder.sqlite")


def _open(args: argparse.Namespace) -> LadderStore:
    return LadderStore.open(_database(args))


def _read_password(username: str) -> str:
    password = os.environ.get(PASSWORD_VARIABLE)
    if password is None:
        if not sys.stdin.isatty():
            password = sys.stdin.readline().rstrip("\n")
        else:
            password = getpass.getpass(f"password for {username}: ")
    problem = password_problem(password)
    if problem is not None:
        raise ValueError(problem)
    return password


def _create_admin(store: LadderStore, username: str) -> None:
    problem = username_problem(username)
    if problem is not None:
        raise ValueError(problem)
    store.create_admin(username, hash_password(_read_password(username)))
    store.audit("cli", "create-admin", username)


def _init(args: argparse.Namespace) -> int:
    data: Path = args.data
    for name in DATA_DIRECTORIES:
        (data / name).mkdir(parents=True, exist_ok=True)
    work.private_directories(data)  # uploads, logs, cards: 0700 (a bot runs as another user)
    store = _open(args)
    try:
        if args.admin:
            _create_admin(store, args.admin.lower())
    finally:
        store.close()
    print(f"{PROGRAM}: ladder ready in {data} (store {_database(args)})")
    return 0


def _admin(args: argparse.Namespace) -> int:
    store = _open(args)
    try:
        action = args.action
        if action == "create-admin":
            _create_admin(store, args.username.lower())
            print(f"admin {args.username.lower()} created")
        elif action == "create-team":
            team_id = store.create_team(args.name)
            store.audit("cli", "create-team", f"{team_id} {args.name}")
            print(f"team {team_id}: {args.name}")
        elif action == "invite":
            token = store.create_invite(args.team, by="cli")
            print(f"{args.base_url.rstrip('/')}/invite/{token}")
        elif action == "suspend":
            store.set_suspended(args.team, not args.undo, by="cli")
            print(f"team {args.team} {'reinstated' if args.undo else 'suspended'}")
        elif action == "teams":
            for team in store.teams():
                print(f"{team.id}\t{team.name}\t{'suspended' if team.suspended else 'active'}")
        elif action == "audit":
            for entry in store.audit_log():
                print(f"{entry.time}\t{entry.actor}\t{entry.action}\t{entry.detail}")
    finally:
        store.close()
    return 0


async def _until_stopped(main: Callable[[], Awaitable[None]], *, parent: int | None = None) -> None:
    """Run `main` until SIGTERM or SIGINT (or, with `parent`, until that process is gone),
    then cancel it, so its cleanup runs (a bot's process, a container, the store)."""
    async with trio.open_nursery() as nursery:

        async def stop_on_signal() -> None:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

        async def stop_without_parent() -> None:
            while os.getppid() == parent:
                await trio.sleep(1.0)
            nursery.cancel_scope.cancel()

        nursery.start_soon(stop_on_signal)
        if parent is not None:
            nursery.start_soon(stop_without_parent)
        await main()
        nursery.cancel_scope.cancel()


def run_workers_process(database: str, data: str, workers: int, docker: bool, parent: int) -> None:
    """The child process of `serve`: `ladder.work_pool.run_workers` until terminated (or until
    `serve`'s process is gone: a killed site leaves no workers behind)."""
    factory: Callable[[], LadderStore] = partial(LadderStore.open, database)
    trio.run(
        partial(
            _until_stopped,
            partial(work_pool.run_workers, factory, Path(data), workers=workers, docker=docker),
            parent=parent,
        )
    )


def start_workers(
    database: str, data: Path, workers: int, docker: bool
) -> multiprocessing.process.BaseProcess:
    """The workers in a child process of their own (spawned: no state of the site's)."""
    context = multiprocessing.get_context("spawn")
    process = context.Process(
        target=run_workers_process,
        args=(database, str(data), workers, docker, os.getpid()),
        name="ladder-workers",
    )
    process.start()
    return process


def _serve(args: argparse.Namespace) -> int:
    from ladder.site.app import create_app
    from ladder.site.server import serve_site

    data: Path = args.data
    for name in DATA_DIRECTORIES:
        (data / name).mkdir(parents=True, exist_ok=True)
    work.private_directories(data)  # uploads, logs, cards: 0700 (a bot runs as another user)
    database = _database(args)
    LadderStore.open(database).close()  # the schema exists before the workers start
    workers = None
    if not args.no_workers:
        workers = start_workers(database, data, args.workers, not args.no_docker)
    site = create_app(
        partial(LadderStore.open, database),
        data,
        max_upload=args.max_upload_mib << 20,
        docker=not args.no_docker,
        analysis_nodes=args.analysis_nodes,
    )
    try:

        async def run() -> None:
            async with trio.open_nursery() as nursery:
                url = await nursery.start(
                    partial(
                        serve_site, site, args.host, args.port, proxies=tuple(args.trusted_proxy)
                    )
                )
                print(f"{PROGRAM}: the ladder is at {url}", flush=True)
                if workers is not None:
                    nursery.start_soon(_watch_workers, workers)

        trio.run(_until_stopped, run)
    except KeyboardInterrupt:
        pass
    finally:
        site.close()
        if workers is not None:
            workers.terminate()
            workers.join(10)
            if workers.is_alive():
                workers.kill()
    return 0


async def _watch_workers(process: multiprocessing.process.BaseProcess) -> None:
    """Say so when the workers' process ends (the site keeps serving)."""
    while process.is_alive():
        await trio.sleep(1.0)
    print(f"{PROGRAM}: the workers' process ended ({process.exitcode})", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """The console entry point."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.run(args)
        return status
    except (LadderError, ValueError, OSError) as failure:
        print(f"{PROGRAM}: {failure}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
