"""`piranhas-match positions SUITE --player1 CMD`: a bot's past mistakes as a regression test
(docs/analysis.md "Position suites").

Each position of the suite is played as a real game from that position: a game server in
this process starts its `<join>` room from the position (the server's `loadGameFile` start
state, set directly), the bot joins it (the player command without a reservation, so it
sends `<join>`) in the slot of the side to move, a stand-in opponent takes the other slot,
and the bot's first move is judged with the suite's analysis settings (analysis.suite):
`best`, `acceptable`, `mistake` (a `?`/`??` again), `repeated` (the very move of the
suite) or `no move` (a timeout, an illegal move, a crash). Then the stand-in leaves and the
game is over. Positions are played one after another.

Exit status: 0 every position best or acceptable (and the score at least --min-score), 1
otherwise, 2 for bad options or an unreadable suite.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

from analysis.suite import Position, Suite, SuiteError, Verdict, loads, score, summary
from client import ClientSession, ConnectionClosed
from engine import Move, Team
from launching import MatchError
from protocol.messages import JoinedGameRoom, Left, Memento, ResultMessage
from runner.inprocess import in_process_server, server_settings
from runner.options import player_command
from runner.processes import start_process

PROGRAM = "piranhas-match positions"
ANSWER_LIMIT = 30.0  # seconds for the bot to join and move (the hard timeout is 10 s)


async def play_position(
    position: Position, argv: Sequence[str], log_path: Path, server_log: Path
) -> Move | None:
    """Play `position` with the bot `argv` to move, on the match core's in-process server
    (runner.inprocess; its log to `server_log`); the bot's first move, or None when it made
    none (timeout, illegal move, crash). Raises MatchError when the server or the bot cannot
    be started."""
    settings = server_settings(results_file=None, save_replay=False, start_state=position.state)
    answer: Move | None = None
    async with in_process_server(settings, server_log) as server:
        command = [*argv, "--host", "127.0.0.1", "--port", str(server.port)]
        with trio.move_on_after(ANSWER_LIMIT):
            answer = await _first_move(position, command, server.port, server.password, log_path)
    return answer


async def _first_move(
    position: Position, command: list[str], port: int, password: str | None, log_path: Path
) -> Move | None:
    admin = ClientSession(await trio.open_tcp_stream("127.0.0.1", port))
    opponent = ClientSession(await trio.open_tcp_stream("127.0.0.1", port))
    bot = None
    try:
        assert password is not None
        await admin.authenticate(password)
        what = f"the bot ({' '.join(command)})"
        if position.side is Team.ONE:
            # <join> fills slot ONE first: the bot joins, then the stand-in.
            bot = await start_process(command, log_path, what=what)
            await admin.expect(JoinedGameRoom, timeout=ANSWER_LIMIT)
            await opponent.join()
        else:
            await opponent.join()
            bot = await start_process(command, log_path, what=what)
        while True:
            message = await opponent.receive()
            if isinstance(message, Memento) and message.state.turn == position.state.turn + 1:
                return message.state.last_move
            if isinstance(message, ResultMessage | Left):
                return None
    except ConnectionClosed:
        return None
    finally:
        with trio.CancelScope(shield=True):
            await opponent.aclose()
            await admin.aclose()
            if bot is not None:
                await bot.stop()


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "suite", type=Path, help="the position suite (piranhas-analyze --export-positions)"
    )
    parser.add_argument(
        "--player1",
        required=True,
        metavar="COMMAND",
        help="the bot command (builtin:NAME [OPTIONS] for a built-in bot)",
    )
    parser.add_argument(
        "--log-dir",
        type=Path,
        default=Path("log"),
        help="bot output goes to DIR/position<k>.log (default ./log)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the verdicts as JSON lines to FILE",
    )
    parser.add_argument(
        "--min-score",
        type=float,
        default=None,
        metavar="PERCENT",
        help="also fail when fewer than PERCENT of the positions are best or acceptable",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `piranhas-match positions` command."""
    parser = build_parser()
    try:
        options = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2
    try:
        command = player_command(options.player1, "--player1")
        data = options.suite.read_bytes()
        suite = loads(data)
        options.log_dir.mkdir(parents=True, exist_ok=True)
    except (MatchError, SuiteError, OSError) as error:
        print(
            f"{PROGRAM}: {options.suite}: {error}"
            if isinstance(error, SuiteError)
            else f"{PROGRAM}: {error}",
            file=sys.stderr,
        )
        return 2
    if not suite.positions:
        print(f"{PROGRAM}: {options.suite}: the suite has no positions", file=sys.stderr)
        return 2
    try:
        verdicts = trio.run(_play_all, suite, command, options.log_dir)
    except MatchError as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    counts = summary(verdicts)
    good = counts["best"] + counts["acceptable"]
    percent = 100.0 * good / len(verdicts)
    print(
        ", ".join(f"{name} {count}" for name, count in counts.items())
        + f" — score {percent:.0f} % ({good} of {len(verdicts)} best or acceptable)"
    )
    if options.json is not None:
        options.json.write_text(
            "".join(json.dumps(v.as_json()) + "\n" for v in verdicts), encoding="utf-8"
        )
    passed = good == len(verdicts)
    if options.min_score is not None:
        passed = percent >= options.min_score
    return 0 if passed else 1


async def _play_all(suite: Suite, command: list[str], log_dir: Path) -> list[Verdict]:
    verdicts = []
    total = len(suite.positions)
    for number, position in enumerate(suite.positions, start=1):
        answer = await play_position(
            position, command, log_dir / f"position{number}.log", log_dir / "server.log"
        )
        verdict = await trio.to_thread.run_sync(score, position, answer, suite.settings)
        verdicts.append(verdict)
        shown = "-" if answer is None else f"{answer.x},{answer.y} {answer.direction.name}"
        print(
            f"position {number:>{len(str(total))}}/{total} {position.id} "
            f"({position.side.name}): {shown}: {verdict.verdict}",
            flush=True,
        )
    return verdicts
