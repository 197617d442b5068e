"""The runner's options: the command line of `piranhas-match`, checked before any game starts."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from launching import MatchError
from runner.stats import Sprt
from server.config import DEFAULT_PASSWORD, PROPERTIES_FILE, ConfigError, load_settings
from server.files import FileReadError, read_regular_file

PROGRAM = "piranhas-match"
DEMO_PLAYERS = ("builtin:search --budget 0.3", "builtin:greedy")
DEMO_GAMES = 2


@dataclass(frozen=True)
class Options:
    """Everything a run needs, checked."""

    commands: tuple[list[str], list[str]]
    names: tuple[str, str]
    can_timeout: tuple[bool, bool]
    games: int
    host: str | None  # None: start the server in this process
    port: int | None
    password: str | None
    password_source: str  # for the message when the server refuses it
    log_dir: Path
    results: Path | None
    save_replay: bool
    replay_dir: Path
    game_timeout: float | None  # None: derived from the server's hard timeout
    concurrency: int = 1
    seed: int | None = None  # None: random, unpaired boards
    boards: tuple[int, ...] | None = None  # --boards: pair k plays boards[k % len(boards)]
    report_every: int = 10  # a block of figures every N games
    ndjson: Path | None = None  # the event stream
    resume: Path | None = None  # continue the run whose event stream this is
    sprt: Sprt | None = None  # stop early when it accepts a hypothesis
    reproducers: Path | None = None  # None: DIR/reproducers next to the bot logs
    no_reproducers: bool = False
    analyze: int | None = None  # nodes: analyse player1's lost games move by move at the end
    show_board: bool = False  # draw every observed state

    @property
    def paired(self) -> bool:
        """Whether games 2k-1 and 2k share a start board (--seed or --boards)."""
        return self.seed is not None or self.boards is not None

    @property
    def reproducer_dir(self) -> Path:
        """Where the reproducers of irregular losses go."""
        return self.reproducers if self.reproducers is not None else self.log_dir / "reproducers"


def hardware_threads() -> int:
    """The hardware threads this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def default_concurrency(threads: int) -> int:
    """Games at once by default: one per two hardware threads. In a game only one bot
    thinks at a time, but the server, bot start-ups (a JVM, a Python interpreter) and bots
    that compute on the opponent's time need CPU too; a bot starved of it would lose on the
    2 s move clock for the machine's sake."""
    return max(1, threads // 2)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of `piranhas-match`."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description=(
            "Play GAMES games of Piranhas between two bots and count the scores. Each player "
            "command is started once per game with '--host H --port P --reservation CODE' "
            "appended (the contest convention; socha's Starter and the Java player accept it). "
            "The starting side alternates: player1 moves first in games 1, 3, 5, ..."
        ),
        epilog=(
            "Put a bot back into the position of an irregular loss: "
            f"'{PROGRAM} reproduce DIR [--bot COMMAND]' with DIR a reproducer folder "
            "(exit status 0: the failure happened again, 1: it did not). "
            "Exit status of a match: 0 done (with --sprt: H1 accepted), 1 H0 accepted, "
            "3 SPRT inconclusive, 2 error, 130 interrupted."
        ),
    )
    parser.add_argument(
        "--player1",
        metavar="COMMAND",
        help="first bot command (builtin:random|greedy|search [OPTIONS] for a built-in bot, "
        "docker:IMAGE for a bot image sandboxed like the contest's: docs/sandbox.md)",
    )
    parser.add_argument("--player2", metavar="COMMAND", help="second bot command")
    parser.add_argument(
        "--demo",
        action="store_true",
        help=f"watch the built-in bots play: {DEMO_PLAYERS[0]!r} against {DEMO_PLAYERS[1]!r}, "
        f"{DEMO_GAMES} games on this process's server, the board drawn after every move",
    )
    parser.add_argument(
        "--show-board",
        action="store_true",
        help="draw the board after every move (the observer's view; best with --concurrency 1)",
    )
    parser.add_argument(
        "--games",
        "-t",
        "--tests",
        type=int,
        default=10,
        metavar="N",
        help="number of games (default 10)",
    )
    parser.add_argument(
        "--name1", default="player1", metavar="NAME", help="display name of player1"
    )
    parser.add_argument(
        "--name2", default="player2", metavar="NAME", help="display name of player2"
    )
    parser.add_argument("--no-timeout", action="store_true", help="neither player can time out")
    parser.add_argument("--no-timeout1", action="store_true", help="player1 cannot time out")
    parser.add_argument("--no-timeout2", action="store_true", help="player2 cannot time out")
    parser.add_argument(
        "--concurrency",
        "-c",
        type=int,
        default=None,
        metavar="K",
        help="games played at once (default: hardware threads / 2, at least 1)",
    )
    parser.add_argument(
        "--force-concurrency",
        action="store_true",
        help="allow --concurrency above the number of hardware threads",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        metavar="S",
        help="reproducible paired boards: games 2k-1 and 2k play the same start board "
        "(derived from S) with sides swapped",
    )
    parser.add_argument(
        "--boards",
        type=Path,
        default=None,
        metavar="FILE",
        help="paired boards from a list: FILE has one board seed per line (# starts a "
        "comment); games 2k-1 and 2k play the board of line k with sides swapped, from the "
        "top again after the last line. A fixed set of openings, or another run's boards",
    )
    parser.add_argument(
        "--host", default=None, help="host of a running server (with --port; default localhost)"
    )
    parser.add_argument(
        "--port",
        "-p",
        type=int,
        default=None,
        help="use the server running on this port instead of starting one",
    )
    parser.add_argument(
        "--password",
        default=None,
        help="admin password of the running server (default: from "
        "./server.properties, else examplepassword)",
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        metavar="DIR",
        default=Path("log"),
        help="bot output goes to DIR/<name>_game<k>.log, the in-process server's log to "
        "DIR/server.log (default ./log)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        metavar="FILE",
        help="append one JSON line per game to FILE",
    )
    parser.add_argument(
        "--report-every",
        type=int,
        default=10,
        metavar="N",
        help="print the figures so far every N games (default 10; 0 = never)",
    )
    parser.add_argument(
        "--ndjson",
        type=Path,
        default=None,
        metavar="FILE",
        help="append the run as JSON events to FILE, one per line (run_start, game_end, "
        "stats, run_end)",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="FILE",
        help="continue the interrupted run whose --ndjson stream is FILE: finished games are "
        "counted, not played again; new events go to FILE too (unless --ndjson names another)",
    )
    parser.add_argument(
        "--sprt",
        default=None,
        metavar="elo0=E0,elo1=E1[,alpha=A,beta=B,model=normalized|logistic]",
        help="sequential test of H0: Elo = E0 against H1: Elo = E1 (player1's view; alpha "
        "and beta default to 0.05, the model to normalized, i.e. nElo): the run stops as soon "
        "as one is accepted (after a finished pair with --seed or --boards). Exit status 0: "
        "H1 accepted, 1: H0 accepted, 3: inconclusive after --games games",
    )
    parser.add_argument(
        "--reproducers",
        type=Path,
        default=None,
        metavar="DIR",
        help="for each game a bot lost by a timeout, crash or illegal move, a folder in DIR "
        "with the position, the replay, the bot's log and repro.sh, which puts the bot in that "
        "position again (default: LOG_DIR/reproducers)",
    )
    parser.add_argument("--no-reproducers", action="store_true", help="write no reproducer folders")
    parser.add_argument(
        "--analyze",
        nargs="?",
        type=int,
        const=12_000,
        default=None,
        metavar="NODES",
        help="at the end, analyse every game player1 lost move by move (docs/analysis.md; "
        "NODES per position, default 12000): accuracy, marks and the turning point printed, "
        "the whole analysis in LOG_DIR/analysis-game<k>.json",
    )
    parser.add_argument(
        "--save-replay", action="store_true", help="save a replay of every game (official format)"
    )
    parser.add_argument(
        "--replay-dir",
        type=Path,
        metavar="DIR",
        default=Path("replays"),
        help="where replays go (default ./replays)",
    )
    parser.add_argument(
        "--game-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="a game that takes longer is reported as hung and the run ends "
        "(default: 60 moves x the server's hard timeout + 60 s)",
    )
    return parser


def parse_options(argv: Sequence[str], threads: int | None = None) -> Options:
    """Raises SystemExit (argparse) for unusable options, MatchError for bad values.
    `threads`: the hardware threads to plan for (default: this machine's)."""
    arguments = build_parser().parse_args(list(argv))
    if arguments.demo:
        for index, flag in enumerate(("player1", "player2")):
            if getattr(arguments, flag) is None:
                setattr(arguments, flag, DEMO_PLAYERS[index])
                name = "name1" if index == 0 else "name2"
                if getattr(arguments, name) == flag:  # the default name: say which bot
                    setattr(arguments, name, DEMO_PLAYERS[index].split()[0].split(":")[1])
        if "--games" not in argv and "-t" not in argv and "--tests" not in argv:
            arguments.games = DEMO_GAMES
        arguments.concurrency = 1
        arguments.show_board = True
    for flag in ("player1", "player2"):
        if getattr(arguments, flag) is None:
            raise MatchError(f"--{flag} is required (or --demo)")
    if arguments.games < 1:
        raise MatchError(f"--games must be at least 1, got {arguments.games}")
    if arguments.port is None and (arguments.host is not None or arguments.password is not None):
        raise MatchError("--host and --password are for a running server: give its --port too")
    if arguments.port is not None and not 0 < arguments.port < 65536:
        raise MatchError(f"--port must be 1..65535, got {arguments.port}")
    if arguments.game_timeout is not None and not arguments.game_timeout > 0:
        raise MatchError(f"--game-timeout must be positive, got {arguments.game_timeout}")
    if arguments.report_every < 0:
        raise MatchError(f"--report-every must be 0 or more, got {arguments.report_every}")
    boards = None
    if arguments.boards is not None:
        if arguments.seed is not None:
            raise MatchError("--seed and --boards both choose the boards: give one of them")
        boards = read_boards(arguments.boards)
    sprt = None
    if arguments.sprt is not None:
        try:
            sprt = Sprt.parse(arguments.sprt)
        except ValueError as error:
            raise MatchError(f"--sprt: {error}") from None
    threads = hardware_threads() if threads is None else threads
    concurrency = arguments.concurrency
    if concurrency is None:
        concurrency = default_concurrency(threads)
    elif concurrency < 1:
        raise MatchError(f"--concurrency must be at least 1, got {concurrency}")
    elif concurrency > threads and not arguments.force_concurrency:
        # As fastchess: more games than threads starve bots into timeouts.
        raise MatchError(
            f"--concurrency {concurrency} exceeds the {threads} hardware threads: bots would "
            "lose on time for the machine's sake (--force-concurrency allows it)"
        )
    commands = (
        player_command(arguments.player1, "--player1"),
        player_command(arguments.player2, "--player2"),
    )
    for flag, name in (("--name1", arguments.name1), ("--name2", arguments.name2)):
        if not name.strip():
            raise MatchError(f"{flag} must not be blank")
    password = arguments.password
    password_source = "--password"
    if arguments.port is not None and password is None:
        password, password_source = properties_password()
    return Options(
        commands=commands,
        names=distinct_names(arguments.name1, arguments.name2),
        can_timeout=(
            not (arguments.no_timeout or arguments.no_timeout1),
            not (arguments.no_timeout or arguments.no_timeout2),
        ),
        games=arguments.games,
        host=(arguments.host or "localhost") if arguments.port is not None else None,
        port=arguments.port,
        password=password,
        password_source=password_source,
        log_dir=arguments.log_dir,
        results=arguments.results,
        save_replay=arguments.save_replay,
        replay_dir=arguments.replay_dir,
        game_timeout=arguments.game_timeout,
        concurrency=min(concurrency, arguments.games),
        seed=arguments.seed,
        boards=boards,
        report_every=arguments.report_every,
        ndjson=arguments.ndjson or arguments.resume,
        resume=arguments.resume,
        sprt=sprt,
        reproducers=arguments.reproducers,
        no_reproducers=arguments.no_reproducers,
        analyze=arguments.analyze,
        show_board=arguments.show_board,
    )


MAX_BOARDS_BYTES = 1 << 20  # 50,000 seeds of 20 digits
SEED_BOUND = 1 << 63  # a board seed fits a Java long, as the official server's


def read_boards(path: Path) -> tuple[int, ...]:
    """The board seeds of a --boards file: one decimal integer per line; blank lines and
    text from `#` on are skipped. Only a regular file of at most MAX_BOARDS_BYTES is read
    (server.files). Raises MatchError naming the file and the line."""
    try:
        data = read_regular_file(path, MAX_BOARDS_BYTES)
    except FileReadError as error:
        raise MatchError(f"--boards: {path}: {error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MatchError(f"--boards: {path} is not UTF-8 text") from None
    seeds = []
    for number, line in enumerate(text.splitlines(), 1):
        field = line.split("#", 1)[0].strip()
        if not field:
            continue
        try:
            seed = int(field, 10)
        except ValueError:
            raise MatchError(
                f"--boards: {path}:{number}: not a board seed (an integer): {field!r:.40}"
            ) from None
        if not -SEED_BOUND <= seed < SEED_BOUND:
            raise MatchError(f"--boards: {path}:{number}: {seed} does not fit 64 bits")
        seeds.append(seed)
    if not seeds:
        raise MatchError(f"--boards: {path} names no board seed")
    return tuple(seeds)


def player_command(text: str, flag: str) -> list[str]:
    """The argv of a player command, checked now: a typo should fail before any game starts,
    not as a "crashed player" in game 1. A lone `.jar` runs with `java -jar`, as officially."""
    if text.startswith("docker:"):  # an image, run in a sandboxed container (runner.launchers)
        if not text.removeprefix("docker:").strip():
            raise MatchError(f"{flag}: docker: needs an image, e.g. docker:mybot:latest")
        return [text]
    try:
        argv = shlex.split(text)
    except ValueError as error:
        raise MatchError(f"{flag}: cannot parse {text!r}: {error}") from None
    if not argv:
        raise MatchError(f"{flag}: the player command is empty")
    if argv[0].startswith(BUILTIN):
        return builtin_command(argv, flag)
    if len(argv) == 1 and argv[0].endswith(".jar"):
        if not Path(argv[0]).is_file():
            raise MatchError(f"{flag}: {argv[0]}: no such file")
        argv = ["java", "-jar", argv[0]]
    if shutil.which(argv[0]) is None:
        what = "not executable" if Path(argv[0]).exists() else "not found"
        raise MatchError(f"{flag}: command {argv[0]!r} {what} (from {text!r})")
    return argv


BUILTIN = "builtin:"


def builtin_command(argv: list[str], flag: str) -> list[str]:
    """`builtin:NAME [OPTIONS]`: the built-in bot NAME as a process, `piranhas-bot --bot
    NAME OPTIONS` (run with this interpreter, so no PATH lookup), e.g.
    `builtin:search --budget 0.2`. A process like any bot: the same launcher, logs,
    timeouts and reproducers."""
    from bots.players import BOT_NAMES

    name = argv[0].removeprefix(BUILTIN)
    if name not in BOT_NAMES:
        raise MatchError(f"{flag}: unknown built-in bot {name!r} (known: {', '.join(BOT_NAMES)})")
    return [sys.executable, "-m", "cli.bot", "--bot", name, *argv[1:]]


def distinct_names(name1: str, name2: str) -> tuple[str, str]:
    """Equal names get `-1`/`-2` appended, as the official TestClient does."""
    if name1 == name2:
        return f"{name1}-1", f"{name2}-2"
    return name1, name2


def properties_password() -> tuple[str | None, str]:
    """The password the official TestClient uses: from ./server.properties, else the
    default; and where it came from."""
    try:
        password = load_settings([], Path.cwd()).password
    except ConfigError as error:
        raise MatchError(f"cannot read the password: {error}") from None
    if (Path.cwd() / PROPERTIES_FILE).is_file():
        return password, f"./{PROPERTIES_FILE}"
    return password, f"the default {DEFAULT_PASSWORD!r}; give --password"
