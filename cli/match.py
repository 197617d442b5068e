"""`piranhas-match`: let a server start two bots, play N games between them and count.

The model is the official TestClient (protocol §9): an admin connection prepares each game
with two reserved slots, observes it, starts both player commands with the contest options
`--host H --port P --reservation CODE`, and reads the result as an observer. The starting side
alternates: in game k (0-based) player1 holds slot 0 (team ONE, moves first) when k is even.
Scores are aggregated per player like the official client: Siegpunkte summed, Schwarmgröße as
a running mean.

Without --port the server runs in this process (on a free loopback port, with a random admin
password); with --port the games are played on a running server. `--concurrency K` plays K
games at once (one admin connection each); `--seed S` or `--boards FILE` pairs the boards
(runner.schedule).

A bot that crashes, times out or breaks the rules loses that game (irregularly) and the run
goes on; a folder per such loss reproduces it (runner.reproduce). The move times come from
the server in this process (runner.timing).

Exit status: 0 when every game was played; with --sprt 0 = H1 accepted, 1 = H0 accepted,
3 = inconclusive. 2 for bad options, a missing player command, an unreachable server, a wrong
password, a player process that ends before its game did, or a game that hangs (as the
official client); 130 after Ctrl+C.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import trio

from client import ConnectionClosed
from launching import MatchError
from runner.display import Display, display_for
from runner.match import LostGames, run_match
from runner.ndjson import EventLog, read_resume
from runner.options import PROGRAM, Options, parse_options, player_command
from runner.reproduce import CASE_FILE, Case, reproduce, tail
from runner.scores import Scoreboard
from runner.timing import CRASH
from server.exits import ExitCode, find_exception


def main(argv: Sequence[str] | None = None) -> int:
    """The `piranhas-match` command."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["reproduce"]:
        return reproduce_main(arguments[1:])
    if arguments[:1] == ["positions"]:
        from analysis.positions import main as positions_main

        return positions_main(arguments[1:])
    try:
        options = parse_options(arguments)
    except MatchError as error:
        return fail(error)
    except SystemExit as exit_request:  # argparse: --help or a usage error (already printed)
        return exit_request.code if isinstance(exit_request.code, int) else ExitCode.USAGE
    match = Scoreboard(
        options.names,
        options.games,
        paired=options.paired,
        report_every=options.report_every,
        sprt=options.sprt,
    )
    events = EventLog(options.ndjson)
    try:
        if options.resume is not None:
            for game in read_resume(options.resume, options).games:
                match.restore(game)
        events.open()
    except MatchError as error:
        return fail(error)
    events.run_start(options, resumed=len(match.played))
    status: int = ExitCode.USAGE
    error_text: str | None = None
    try:
        with display_for(match.out, options.games, len(match.played)) as display:
            match.display = display
            status = trio.run(run_match, options, match, events, lost_games_analysis(options))
    except BaseException as error:
        match_error = find_exception(error, MatchError)
        if match_error is not None:
            error_text = str(match_error)
            status = fail(match_error)
        elif find_exception(error, KeyboardInterrupt) is not None:
            # Ctrl+C outside the graceful window (start-up): the bots are in cleanups already.
            status = ExitCode.INTERRUPTED
        else:
            raise
    finally:
        match.display = Display(match.out)  # the bar is gone: the table prints plainly
        if error_text is not None:
            outcome = "error"
        elif status == ExitCode.INTERRUPTED:
            outcome = "interrupted"
        else:
            outcome = "done"
        events.run_end(outcome, len(match.played), error_text, match=match)
        events.close()
    if match.played or status == ExitCode.INTERRUPTED:
        match.print_table()
        if match.played:
            match.out.write(match.final_figures() + "\n")
            if match.times is not None:
                match.out.write(match.times.table() + "\n")
            match.out.flush()
    if status == ExitCode.INTERRUPTED:
        match.say(f"interrupted after {len(match.played)} of {options.games} games")
    return int(status)


def lost_games_analysis(options: Options) -> LostGames | None:
    """`--analyze`'s work (analysis.lost), imported only when asked for: the analysis and
    the engines it pulls in are half of the command's start-up, during which the CPUs idle."""
    if options.analyze is None:
        return None
    from analysis.lost import analyse_lost

    return analyse_lost


def fail(error: MatchError) -> int:
    """Print the error; the official TestClient's status for every failure."""
    print(f"{PROGRAM}: error: {error}", file=sys.stderr)
    return ExitCode.USAGE


def reproduce_main(argv: Sequence[str]) -> int:
    """`piranhas-match reproduce DIR [--bot COMMAND]`."""
    parser = argparse.ArgumentParser(
        prog=f"{PROGRAM} reproduce",
        description="Put a bot back into the position in which it lost a game irregularly "
        "(a folder written by piranhas-match) and print what it does.",
    )
    parser.add_argument("folder", type=Path, metavar="DIR", help="the reproducer folder")
    parser.add_argument(
        "--bot", default=None, metavar="COMMAND", help="run this command instead of the bot's"
    )
    try:
        arguments = parser.parse_args(list(argv))
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2
    folder: Path = arguments.folder
    try:
        case = Case.from_json(json.loads((folder / CASE_FILE).read_text("utf-8")))
        command = case.command
        if arguments.bot is not None:
            command = player_command(arguments.bot, "--bot")
    except (OSError, ValueError, KeyError, TypeError) as error:
        print(f"{PROGRAM} reproduce: cannot read {folder / CASE_FILE}: {error}", file=sys.stderr)
        return 2
    except MatchError as error:
        print(f"{PROGRAM} reproduce: {error}", file=sys.stderr)
        return 2

    def say(text: str) -> None:
        print(text, flush=True)

    say(
        f"reproducing: game {case.game}, {case.name} (team {case.team}) lost by {case.kind} "
        f"at turn {case.turn}"
    )
    say(f"bot: {shlex.join(command)}")
    try:
        answer = trio.run(reproduce, folder, case, command, say)
    except MatchError as error:
        print(f"{PROGRAM} reproduce: {error}", file=sys.stderr)
        return 2
    except ConnectionClosed as error:
        print(f"{PROGRAM} reproduce: the server closed the connection: {error}", file=sys.stderr)
        return 2
    if answer.asked_turn is not None:
        say(f"turn {answer.asked_turn}: the server asks {case.name} (team {case.team}) to move")
    if answer.move is not None:
        timing = "" if answer.move_ms is None else f" after {answer.move_ms:.1f} ms"
        say(f"answer: {answer.move}{timing} (a legal move, in time)")
    if answer.kind == CRASH:
        say(f"answer: crashed (exit status {answer.exit_status})")
    elif answer.kind is not None:
        say(f"answer: {answer.kind}")
    if answer.reason:
        say(f"reason: {answer.reason}")
    if answer.kind is not None or answer.move is None:
        say(f"bot output (last lines of {folder / 'repro-bot.log'}):")
        for line in tail(folder / "repro-bot.log"):
            say(f"  {line}")
    if answer.kind == case.kind and answer.asked_turn == case.turn:
        say(f"reproduced: {case.kind} at turn {case.turn}, as in game {case.game}")
        return 0
    say(f"not reproduced: game {case.game} had {case.kind} at turn {case.turn}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
