"""League throughput: matches per hour of `piranhas-league run` with built-in bots in process
mode, and the per-game overhead the league adds on top of the match runner (the same number of
games between the same two bots through `piranhas-match` and through a two-team league).

    python -m bench.league [--teams 4] [--games 6] [--concurrency 2] [--bot greedy]
    python -m bench.league --overhead [--small 4] [--large 20] [--repeat 3]

`--overhead` measures only the per-game cost, side by side: each tool plays `--small` and
`--large` games (same bots, concurrency), in turn, `--repeat` times, with a new league seed
each repeat. The same games: piranhas-match plays the league's boards (`--boards`, the board
seeds of the league's schedule), and the bots' tie-breaks are seeded (`builtin:NAME --seed 1`),
so both tools play move for move the same games (checked: the moves of every run are
counted in both). A game's cost is the marginal one, (wall(large) - wall(small)) / (large -
small), so the start-ups cancel (they are printed apart). Printed: each tool's cost per game
(mean ± 95 % CI over the repeats), the league's extra cost per game (paired by repeat)
against the goal of 30 ms, and the same per move, scaled to a game of the mean length (moves
from piranhas-match's results and the league's store).

Built-in bots are `builtin:NAME` (piranhas-bot); where this installation lacks it, the fast
test bot (tests/bots/fast_bot.py) stands in and the output says so. Prints the command lines,
the wall times and the load average before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import resource
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.match import own_cpu_seconds
from league.config import load_league
from league.schedule import build_schedule

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FAST_BOT = [sys.executable, str(REPO / "tests" / "bots" / "fast_bot.py")]


def bot_command(bot: str) -> list[str]:
    """The team command of the benchmark's bot."""
    if importlib.util.find_spec("cli.bot") is not None:
        return [f"builtin:{bot}"]
    return FAST_BOT


def seeded_bot_command(bot: str) -> list[str]:
    """The bot's command with its random tie-breaks seeded: the same board, the same game."""
    command = bot_command(bot)
    return [*command, "--seed", "1"] if command[0].startswith("builtin:") else command


def write_league(
    directory: Path,
    teams: int,
    games: int,
    concurrency: int,
    bot: str,
    seed: int = 1,
    command: list[str] | None = None,
) -> Path:
    """A league of `teams` copies of the bot (its `command`, by default `bot_command`)."""
    lines = [
        'name = "Bench"',
        f"games_per_match = {games}",
        f"concurrency = {concurrency}",
        f"seed = {seed}",
    ]
    for index in range(teams):
        team_command = command or bot_command(bot)
        lines += ["[[teams]]", f'id = "t{index}"', f"command = {json.dumps(team_command)}"]
    path = directory / "bench.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def timed(command: list[str], cwd: Path, *, quiet: bool = False) -> float:
    """Run `command`, fail loudly on a non-zero status; the wall time in seconds."""
    if not quiet:
        print(f"$ {shlex.join(command)}", flush=True)
    began = time.perf_counter()
    finished = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - began
    if finished.returncode != 0:
        sys.exit(f"failed ({finished.returncode}):\n{finished.stdout}\n{finished.stderr}")
    return elapsed


def load() -> str:
    """The load average, as `uptime` shows it."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def match_command(player: str, games: int, concurrency: int, logs: Path, boards: Path) -> list[str]:
    """piranhas-match playing `games` games between two copies of `player` on the boards
    of the list `boards` (--boards), pair by pair."""
    return [
        str(BIN / "piranhas-match"),
        *("--player1", player, "--player2", player, "--games", str(games)),
        *("--boards", str(boards)),
        *("--concurrency", str(concurrency), "--force-concurrency", "--log-dir", str(logs)),
    ]


def league_boards(league: Path, destination: Path) -> Path:
    """The league's boards as a --boards list: the board seed of every pair of its games in
    playing order (league.schedule), so that piranhas-match plays the very same games."""
    games = [game for match in build_schedule(load_league(league)) for game in match.games]
    pairs = [game.board_seed for game in games if game.number % 2 == 1]
    destination.write_text("".join(f"{seed}\n" for seed in pairs), encoding="utf-8")
    return destination


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % confidence interval (t quantiles, small samples)."""
    t95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
    if len(values) < 2:
        return (values[0] if values else float("nan")), float("nan")
    half = t95.get(len(values) - 1, 2.0) * statistics.stdev(values) / len(values) ** 0.5
    return statistics.fmean(values), half


def timed_cpu(command: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds of the command and every process it waited for (the bots),
    and CPU seconds of the command's own process (without the bots)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, cwd=cwd, stdout=output, stderr=output)
        own = 0.0
        while process.poll() is None:
            own = max(own, own_cpu_seconds(process.pid))
            time.sleep(0.02)
        wall = time.perf_counter() - began
        if process.returncode != 0:
            output.seek(0)
            sys.exit(f"failed ({process.returncode}): {shlex.join(command)}\n{output.read()!r}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), own


def moves_played(tool: str, run: Path) -> int:
    """The moves of every game a run played: piranhas-match's results file (each game's
    turn), the league's store (each game's record, one <move> a move)."""
    if tool == "match":
        lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
        return sum(int(json.loads(line)["turn"]) for line in lines if line.strip())
    with contextlib.closing(sqlite3.connect(run / "league.sqlite")) as connection:
        records = connection.execute("SELECT game_record FROM results").fetchall()
    return sum(str(record).count("<move>") for (record,) in records)


def overhead(args: argparse.Namespace) -> None:
    """The per-game cost of the league over piranhas-match, start-ups cancelled: wall time
    and CPU time (less sensitive to other jobs on a shared machine)."""
    command = seeded_bot_command(args.bot)
    player = shlex.join(command)
    tools = ("match", "league")
    kinds = ("wall", "cpu", "own")
    costs: dict[tuple[str, str], list[float]] = {(t, k): [] for t in tools for k in kinds}
    # The same per move, and the moves of a marginal game (the repeats' boards differ).
    per_move: dict[tuple[str, str], list[float]] = {(t, k): [] for t in tools for k in kinds}
    same_games = 0  # runs in which both tools played the same number of moves
    game_moves: list[float] = []
    starts: dict[str, list[float]] = {tool: [] for tool in tools}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeat):
            # A new seed each repeat: other boards, so that no board's games decide the
            # figure. piranhas-match plays the league's boards (--boards), the same games.
            seed = repeat + 1
            measured: dict[tuple[str, int], tuple[float, float, float]] = {}
            moves: dict[tuple[str, int], int] = {}
            for games in (args.small, args.large):
                for tool in tools if repeat % 2 == 0 else tools[::-1]:
                    run = Path(scratch) / f"{tool}-{repeat}-{games}"
                    run.mkdir()
                    league = write_league(run, 2, games, args.concurrency, args.bot, seed, command)
                    if tool == "match":
                        boards = league_boards(league, run / "boards.txt")
                        logs = run / "logs"
                        argv = match_command(player, games, args.concurrency, logs, boards)
                        argv += ["--results", "results.jsonl"]
                    else:
                        argv = [str(BIN / "piranhas-league"), "run", str(league)]
                    measured[tool, games] = timed_cpu(argv, run)
                    moves[tool, games] = moves_played(tool, run)
            sizes = (args.small, args.large)
            same_games += sum(moves["match", size] == moves["league", size] for size in sizes)
            line = [f"repeat {repeat + 1}:"]
            for tool in tools:
                small, large = measured[tool, args.small], measured[tool, args.large]
                extra = args.large - args.small
                wall, cpu = (large[0] - small[0]) / extra, (large[1] - small[1]) / extra
                own = (large[2] - small[2]) / extra
                costs[tool, "wall"].append(wall * 1000)
                costs[tool, "cpu"].append(cpu * 1000)
                costs[tool, "own"].append(own * 1000)
                extra_moves = moves[tool, args.large] - moves[tool, args.small]
                game_moves.append(extra_moves / extra)
                for index, kind in enumerate(kinds):
                    per_move[tool, kind].append((large[index] - small[index]) / extra_moves * 1e6)
                starts[tool].append((small[0] - args.small * wall) * 1000)
                line.append(
                    f"{tool} {small[0]:.2f}/{large[0]:.2f} s -> {wall * 1000:.1f} ms wall, "
                    f"{cpu * 1000:.1f} ms CPU ({own * 1000:.1f} ms its own) per game;"
                )
            print(" ".join(line), f"load {load()}", flush=True)
    for tool in tools:
        wall, wall_half = mean_ci(costs[tool, "wall"])
        cpu, cpu_half = mean_ci(costs[tool, "cpu"])
        own, own_half = mean_ci(costs[tool, "own"])
        start, start_half = mean_ci(starts[tool])
        print(
            f"piranhas-{tool}: {wall:.1f} ± {wall_half:.1f} ms wall, {cpu:.1f} ± {cpu_half:.1f} "
            f"ms CPU (its own process {own:.1f} ± {own_half:.1f} ms) per game (start-up and "
            f"end {start:.0f} ± {start_half:.0f} ms wall per run)"
        )
    print(
        f"the same games: both tools played the same number of moves in {same_games} of "
        f"{2 * args.repeat} runs (the league's boards, seeded bots)"
    )
    labels = {"wall": "wall", "cpu": "CPU in all", "own": "CPU of its own process"}
    for kind in kinds:
        mean, half, verdict = league_extra(costs["league", kind], costs["match", kind], 1.0)
        print(
            f"the league costs {mean:+.1f} ± {half:.1f} ms {labels[kind]} per game more than "
            f"piranhas-match ({args.repeat} paired repeats, concurrency {args.concurrency}, "
            f"{args.small} and {args.large} games; goal ≤ 30 ms: {verdict})"
        )
    # Per move (µs), scaled to a game of the mean length (a check: the games are the same).
    length = statistics.fmean(game_moves)
    scale = length / 1000
    for kind in kinds:
        mean, half, verdict = league_extra(per_move["league", kind], per_move["match", kind], scale)
        print(
            f"per move, for a game of {length:.1f} moves: the league costs {mean:+.1f} ± "
            f"{half:.1f} ms {labels[kind]} per game more (goal ≤ 30 ms: {verdict})"
        )


def league_extra(league: list[float], match: list[float], scale: float) -> tuple[float, float, str]:
    """The league's extra cost, paired by repeat and times `scale` (in ms): mean, the half-width
    of its 95 % interval, and the verdict on the goal of 30 ms."""
    mean, half = mean_ci([(one - other) * scale for one, other in zip(league, match, strict=True)])
    verdict = "met" if mean + half <= 30 else "not shown" if mean - half <= 30 else "missed"
    return mean, half, verdict


def main() -> int:
    """Run both measurements and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=4)
    parser.add_argument("--games", type=int, default=6, help="games per match (even)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--bot", default="greedy", help="the built-in bot every team plays")
    parser.add_argument("--overhead", action="store_true", help="only the per-game overhead")
    parser.add_argument("--small", type=int, default=4, help="--overhead: games of the short run")
    parser.add_argument("--large", type=int, default=20, help="--overhead: games of the long run")
    parser.add_argument("--repeat", type=int, default=3, help="--overhead: paired repeats")
    args = parser.parse_args()
    command = bot_command(args.bot)
    if command == FAST_BOT:
        print("note: piranhas-bot (cli.bot) is missing: the fast test bot plays instead")
    print(f"load average before: {load()}  ({os.cpu_count()} CPUs)")
    if args.overhead:
        overhead(args)
        print(f"load average after: {load()}")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)

        league = write_league(directory, args.teams, args.games, args.concurrency, args.bot)
        matches = args.teams * (args.teams - 1) // 2
        seconds = timed([str(BIN / "piranhas-league"), "run", str(league)], directory)
        games = matches * args.games
        print(
            f"league: {args.teams} teams, {matches} matches of {args.games} games, "
            f"concurrency {args.concurrency}: {seconds:.1f} s, "
            f"{matches * 3600 / seconds:.0f} matches/h, {games * 3600 / seconds:.0f} games/h"
        )

        # The same games between two bots: once through piranhas-match, once as a league.
        overhead_games = 2 * args.games
        pair = directory / "pair"
        pair.mkdir()
        two = write_league(pair, 2, overhead_games, args.concurrency, args.bot)
        player = shlex.join(command)
        match_seconds = timed(
            [
                str(BIN / "piranhas-match"),
                "--player1",
                player,
                "--player2",
                player,
                "--games",
                str(overhead_games),
                "--seed",
                "1",
                "--concurrency",
                str(args.concurrency),
                "--force-concurrency",
                "--log-dir",
                str(pair / "match-logs"),
            ],
            pair,
        )
        league_seconds = timed([str(BIN / "piranhas-league"), "run", str(two)], pair)
        per_game = (league_seconds - match_seconds) / overhead_games
        print(
            f"{overhead_games} games, concurrency {args.concurrency}: piranhas-match "
            f"{match_seconds:.2f} s, piranhas-league {league_seconds:.2f} s; the league adds "
            f"{per_game * 1000:+.0f} ms per game (wall time / games, start-up included)"
        )
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
