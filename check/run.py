"""The whole check: every item of the card, in the order a bot meets them (docs/check.md).

`check(options) -> Card`. The upload is read first (item 1); the bot is then run as the
contest runs it, against the scripted server (items 2 and 5, and the idle-CPU measurement of
item 6) and in real games on the in-process game server through the match core (items 3 and
4). Every run is a fresh process (or container) in a fresh directory; items 6 and 7 are
gathered from all runs.
"""

from __future__ import annotations

import contextlib
import re
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from check import calibrate
from check.card import Card, Item, Status
from check.containers import (
    DESCRIPTION,
    DockerLauncher,
    DockerPlayer,
    bot_image,
    docker_mode_possible,
    leftover_containers,
    reaper_containers,
)
from check.contest import ARGUMENT_STYLES, MEMORY_MIB, MOVE_SECONDS, contest_arguments
from check.games import GameRecord, game_server, percentiles, play_games
from check.isolation import Isolation, JailLauncher, JailPlayer, RunRecord, detect
from check.stress import CASE_KEYS, CASES, EXIT_WAIT, Case, Outcome, ScriptedServer, run_case
from check.upload import BadInput, BotSource, Unrunnable, resolve
from runner.game import ServerAddress
from runner.reaper import BotReaper
from runner.timing import NEAR_MISS

SAFETY_MS = NEAR_MISS * MOVE_SECONDS * 1000  # p99 at the contest's speed must stay below
IDLE_CPU_FAIL = 0.20  # CPU asked for (used + waited for) while the opponent thinks: it spins
IDLE_CPU_WARN = 0.05
STARTUP_WARN = 5.0  # seconds from start to <joinPrepared>
LOG_TAIL_LINES = 12
# What a bot's log says when it looked for a network that is not there.
NETWORK_SIGNS = re.compile(
    r"Temporary failure in name resolution|Name or service not known|Network is unreachable"
    r"|UnknownHostException|getaddrinfo|No address associated|Could not resolve host"
    r"|nodename nor servname|Failed to establish a new connection|ENETUNREACH|EAI_AGAIN",
    re.IGNORECASE,
)
SECTIONS = {"upload": 1, "run": 2, "clock": 3, "test": 4, "stress": 5, "resources": 6, "robust": 7}


@dataclass
class Options:
    bot: str
    main: str | None = None
    python: str = "python3"
    mode: str = "auto"  # "auto", "process", "docker"
    sections: frozenset[int] = frozenset(range(1, 8))
    cases: tuple[str, ...] = CASE_KEYS
    styles: tuple[str, ...] = ARGUMENT_STYLES
    speed_factor: float | None = None  # the contest's thread is this many times slower
    random_games: int = 2
    match_games: int = 6
    clock_games: int = 2
    opponent: str = "greedy"
    log_dir: Path | None = None


@dataclass
class Context:
    options: Options
    source: BotSource
    isolation: Isolation
    log_dir: Path
    card: Card
    records: list[RunRecord] = field(default_factory=list)
    # (item key, verdict, detail) of every fault seen, for item 7
    verdicts: list[tuple[str, str, str]] = field(default_factory=list)
    started: bool = True  # whether any run got the bot to join
    running: list[JailPlayer | DockerPlayer] = field(default_factory=list)
    reaper: BotReaper | None = None
    image: str | None = None  # Docker mode: the bot's image

    @property
    def isolated_network(self) -> bool:
        return self.image is not None or self.isolation.netns

    @property
    def can_throttle(self) -> bool:
        return self.image is not None or self.isolation.cgroup is not None

    @property
    def description(self) -> str:
        return DESCRIPTION if self.image is not None else self.isolation.describe()

    def add(
        self,
        key: str,
        title: str,
        status: Status,
        detail: str = "",
        fix: str = "",
        *,
        figures: dict[str, Any] | None = None,
        bot_bytes: str = "",
        log_tail: str = "",
    ) -> Item:
        """Add an item to the card, in the section its key names (`stress.x` -> 5)."""
        section = SECTIONS[key.split(".")[0]]
        item = Item(section, key, title, status, detail, fix, figures or {}, bot_bytes, log_tail)
        return self.card.add(item)

    def launcher(
        self,
        style: str = "short",
        cpu_quota: float | None = 1.0,
        socket: Path | None = None,
        label: str = "",
    ) -> JailLauncher | DockerLauncher:
        if self.image is not None:
            assert socket is not None  # containers reach the servers through their sockets
            docker = DockerLauncher(
                self.image,
                socket,
                style=style,
                cpu_quota=cpu_quota,
                records=self.records,
                label=label,
            )
            docker.on_start = self.running.append
            return docker
        launcher = JailLauncher(
            self.source,
            self.isolation,
            socket,
            style=style,
            cpu_quota=cpu_quota,
            records=self.records,
            label=label,
            reaper=self.reaper,
        )
        launcher.on_start = self.running.append
        return launcher


def log_tail(path: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    if path is None:
        return ""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def network_sign(path: Path | None) -> str | None:
    if path is None:
        return None
    with contextlib.suppress(OSError):
        for line in path.read_text(errors="replace").splitlines():
            if NETWORK_SIGNS.search(line):
                return line.strip()[:200]
    return None


async def check(options: Options) -> Card:
    """Run every asked-for item; the card. Raises upload.BadInput for a BOT that is nothing
    the check can read."""
    card = Card(options.bot)
    items: list[Item] = []
    try:
        source = resolve(options.bot, main=options.main, python=options.python, items=items)
    except Unrunnable as error:
        card.items += items
        card.notes.append(f"the upload cannot be run: {error}")
        return card
    if 1 in options.sections:
        card.items += items
    isolation = detect().for_bot(source.command)
    image = None
    if options.mode != "process":
        why_not = await docker_mode_possible(source)
        if why_not is None:
            image = await bot_image(source)
        elif options.mode == "docker":
            source.cleanup()
            raise BadInput(f"--mode docker: {why_not}")
        else:
            card.notes.append(f"not in a container: {why_not}")
    card.isolation = DESCRIPTION if image is not None else isolation.describe()
    with contextlib.ExitStack() as stack:
        if options.log_dir is None:
            log_dir = Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="piranhas-check-"))
            )
        else:
            log_dir = options.log_dir
            log_dir.mkdir(parents=True, exist_ok=True)
            card.notes.append(f"logs in {log_dir}")
        # No bot outlives the check, however it ends (runner.reaper, as piranhas-match).
        reaper = stack.enter_context(BotReaper(reaper_containers() if image else None))
        context = Context(options, source, isolation, log_dir, card, reaper=reaper, image=image)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(monitor, context)
                await run_items(context)
                nursery.cancel_scope.cancel()
        finally:
            source.cleanup()
        await summarise(context)
    return card


async def monitor(context: Context) -> None:
    """Threads and processes of the running bots, a few times a second (item 6)."""
    while True:
        for player in list(context.running):
            if player.done:
                context.running.remove(player)
            else:
                player.sample()
        await trio.sleep(0.25)


async def run_items(context: Context) -> None:
    sections = context.options.sections
    context.add("run.isolation", "Isolation", Status.INFO, context.description)
    if not context.isolated_network:
        context.card.notes.append(
            "no network namespace: the bot is given -h 127.0.0.1 and a free "
            "port instead of gameserver:13050 (run as root for the contest's)"
        )
    needs_scripted = sections & {2, 5, 6, 7}
    if needs_scripted:
        with tempfile.TemporaryDirectory(prefix="piranhas-check-script-") as socket_dir:
            server = ScriptedServer(Path(socket_dir))
            async with trio.open_nursery() as nursery:
                await nursery.start(server.serve)
                if sections & {2, 5, 6, 7}:
                    await argument_items(context, server)
                if context.started and 5 in sections:
                    await stress_items(context, server)
                if context.started and 6 in sections:
                    await idle_item(context, server)
                nursery.cancel_scope.cancel()
    if context.started and sections & {3, 4}:
        await game_items(context)


async def scripted(
    context: Context, server: ScriptedServer, case: Case, label: str
) -> tuple[Outcome, RunRecord]:
    """One run of the bot against the scripted server."""
    launcher = context.launcher(case.style, socket=server.socket_path, label=label)
    reservation = str(uuid.uuid4())
    log_path = context.log_dir / f"{label}.log"
    await server.drain()
    launched = trio.current_time()
    player = await launcher.launch("bot", "127.0.0.1", server.port, reservation, log_path)
    record = launcher.records[-1]
    try:
        outcome = await run_case(
            server, case, launched, reservation, lambda: player.returncode, player.demand
        )
        with trio.move_on_after(EXIT_WAIT):
            await player.wait()
    finally:
        await player.stop()
    if (
        outcome.verdict == "crash"
        and record.exit_status is not None
        and "status" not in outcome.detail
    ):
        outcome.detail += f" (exit status {record.exit_status})"
    if record.oom_killed:
        outcome.detail += f"; killed: out of memory ({MEMORY_MIB} MiB)"
        outcome.verdict = "oom"
    if outcome.verdict:
        context.verdicts.append((label, outcome.verdict, outcome.detail))
    return outcome, record


PROBE_FIX = {
    "long": "parse the long forms too (--host, --port, --reservation): use getopt_long, "
    "argparse, picocli or the SC client's own parser",
    "reordered": "do not rely on the order of the options: parse them by name",
    "equals": "accept --option=value (GNU getopt_long does), or parse with a library that does",
    "short": 'pass the arguments on ("$@" in start.sh) and join with the reservation code',
}


async def argument_items(context: Context, server: ScriptedServer) -> None:
    """Item 2: the bot started with the contest's arguments in each form."""
    joined_any = False
    startups: list[float] = []
    network: str | None = None
    # Without item 2 one start in the contest's short form is the gate for the rest.
    report = 2 in context.options.sections
    for style in context.options.styles if report else ("short",):
        case = Case(f"args-{style}", f"arguments ({style})", bot_moves=1, style=style)
        outcome, record = await scripted(context, server, case, f"run-args-{style}")
        shown = " ".join(contest_arguments(style, "gameserver", 13050, "CODE"))
        network = network or network_sign(record.log_path)
        if outcome.joined:
            joined_any = True
            if outcome.startup is not None:
                startups.append(outcome.startup)
        if not report:
            continue
        title = f"Contest arguments, {style} form: {shown}"
        key = f"run.args-{style}"
        if outcome.joined:
            # Joining with the right reservation proves the arguments arrived; what the
            # bot did next is for the other items.
            then = "and moved" if outcome.ok else f"(then it {outcome.detail})"
            context.add(
                key, title, Status.PASS, f"joined after {outcome.startup or 0:.2f} s {then}"
            )
        else:
            context.add(
                key,
                title,
                Status.FAIL,
                f"the bot {outcome.detail}",
                PROBE_FIX.get(style, ""),
                bot_bytes=outcome.bot_bytes,
                log_tail=log_tail(record.log_path),
            )
    context.started = joined_any
    if not report:
        if not joined_any:
            context.card.notes.append(f"the bot never joined a game: {outcome.detail}")
        return
    if startups:
        slowest = max(startups)
        status = Status.WARN if slowest > STARTUP_WARN else Status.PASS
        context.add(
            "run.startup",
            "Start-up time",
            status,
            f"start to <joinPrepared>: {min(startups):.2f}-{slowest:.2f} s",
            "start faster (the contest's thread is slower than this one)"
            if status is Status.WARN
            else "",
            figures={"seconds": slowest},
        )
    if network is not None and not joined_any:
        context.add(
            "run.network",
            "No network but the game server",
            Status.FAIL,
            f"the bot needs a network that the contest does not have: {network}",
            "bundle what the bot loads at start; connect only to the host and port "
            "given with -h/-p",
        )
    elif network is not None:
        context.add(
            "run.network",
            "No network but the game server",
            Status.WARN,
            f"the bot looked for a network and carried on without: {network}",
            "harmless if it gives up at once; in the contest the attempt costs start-up "
            "time (the socha starter's version check is one)",
        )
    elif context.isolated_network:
        context.add(
            "run.network",
            "No network but the game server",
            Status.PASS,
            "only lo and the game server were there, and the bot looked for nothing else",
        )
    else:
        context.add(
            "run.network",
            "No network but the game server",
            Status.SKIP,
            "not isolated here (no network namespace)",
        )
    if not joined_any:
        context.card.notes.append("the bot never joined a game: the items that play were skipped")


async def stress_items(context: Context, server: ScriptedServer) -> None:
    """Item 5: the byte-stream stress suite."""
    for case in CASES:
        if case.key not in context.options.cases:
            continue
        outcome, record = await scripted(context, server, case, f"stress-{case.key}")
        network = network_sign(record.log_path)
        detail = outcome.detail if outcome.ok else f"the bot {outcome.detail}"
        if network and not outcome.ok:
            detail += f"; its log: {network}"
        context.add(
            f"stress.{case.key}",
            case.title,
            Status.PASS if outcome.ok else Status.FAIL,
            detail,
            "" if outcome.ok else stress_fix(outcome.verdict),
            figures={"move_ms": [round(ms, 1) for ms in outcome.move_ms]},
            bot_bytes=outcome.bot_bytes,
            log_tail="" if outcome.ok else log_tail(record.log_path),
        )


def stress_fix(verdict: str) -> str:
    return {
        "hang": "read until a whole packet has arrived, however the bytes are cut (an XML "
        "pull parser fed with every chunk); answer every moveRequest even when it "
        "arrives in the same read as the memento",
        "early": 'move only on <data class="moveRequest"/>, never on a memento or a timer',
        "twice": "answer each moveRequest exactly once",
        "garbage": "write only SC protocol XML to the socket (logs go to stdout/stderr)",
        "crash": "see the log: the bot died; catch the exception where it reads the stream",
        "illegal": "compute moves from the latest memento",
        "slow": "keep each answer under 2 s (item 3)",
        "oom": f"stay under {MEMORY_MIB} MiB (item 6)",
    }.get(verdict, "see the log tail")


async def idle_item(context: Context, server: ScriptedServer) -> None:
    """Item 6: CPU used while the opponent thinks (2.5 s per opponent move here)."""
    case = Case("waiting", "opponent thinking", bot_moves=2, opponent_delay=2.5)
    outcome, _record = await scripted(context, server, case, "resources-waiting")
    if outcome.cpu_wait is None:
        context.add(
            "resources.idle-cpu",
            "CPU while waiting for the opponent",
            Status.SKIP,
            f"not measured: the bot {outcome.detail}" if not outcome.ok else "not measured",
        )
        return
    share = outcome.cpu_wait
    status = (
        Status.FAIL
        if share > IDLE_CPU_FAIL
        else Status.WARN
        if share > IDLE_CPU_WARN
        else Status.PASS
    )
    context.add(
        "resources.idle-cpu",
        "CPU while waiting for the opponent",
        status,
        f"asked for {share:.0%} of one CPU while the opponent thought"
        + (f" (got {outcome.cpu_used:.0%} here)" if outcome.cpu_used is not None else "")
        + (": it spins, stealing its own contest thread" if status is Status.FAIL else ""),
        "block on the socket (a blocking read, select, or the SC client's loop) instead "
        "of polling it in a loop"
        if status is not Status.PASS
        else "",
        figures={"cpu_share": round(share, 3), "cpu_used": round(outcome.cpu_used or 0.0, 3)},
    )


async def game_items(context: Context) -> None:
    """Items 3 and 4: real games through the match core."""
    options = context.options
    log_dir = context.log_dir
    async with game_server(log_dir / "server.log") as server:
        bot = context.launcher(socket=server.unix_socket, label="game")
        tested: list[GameRecord] = []
        if 4 in options.sections or 3 in options.sections:
            tested += await play_games(
                server,
                bot,
                "random",
                options.random_games,
                log_dir,
                label="test-random",
                reaper=context.reaper,
            )
            test_item(
                context,
                "test.random",
                f"{options.random_games} games against the random player (as before activation)",
                tested,
            )
            matched = await play_games(
                server,
                bot,
                options.opponent,
                options.match_games,
                log_dir,
                first_number=options.random_games + 1,
                label="test-match",
                reaper=context.reaper,
            )
            test_item(
                context,
                "test.match",
                f"a {options.match_games}-game match against built-in {options.opponent} "
                "(first move alternating)",
                matched,
            )
            tested += matched
        if 3 in options.sections:
            await clock_items(context, server, tested)


def test_item(context: Context, key: str, title: str, games: list[GameRecord]) -> None:
    wins = sum(g.outcome == "win" for g in games)
    draws = sum(g.outcome == "draw" for g in games)
    losses = len(games) - wins - draws
    score = f"{wins} won, {draws} drawn, {losses} lost"
    bad = [g for g in games if g.irregular]
    for game in bad:
        context.verdicts.append(
            (key, game.irregular.lower() if game.irregular else "", game.reason)
        )
    if bad:
        first = bad[0]
        context.add(
            key,
            title,
            Status.FAIL,
            f"{score}; {len(bad)} lost irregularly: "
            + "; ".join(f"game {g.number} ({g.irregular}): {g.reason}" for g in bad[:3]),
            "an irregular loss (timeout, crash, invalid move) loses contest games: see the log",
            log_tail=log_tail(first.log_path),
            figures={"won": wins, "drawn": draws, "lost": losses},
        )
    else:
        context.add(
            key,
            title,
            Status.PASS,
            f"{score}, all regular",
            figures={"won": wins, "drawn": draws, "lost": losses},
        )


async def clock_items(context: Context, server: ServerAddress, tested: list[GameRecord]) -> None:
    options = context.options
    normal = [ms for game in tested for ms in game.move_ms]
    figures = percentiles(normal)
    if figures:
        context.add(
            "clock.here",
            "Move times on this machine (server-measured)",
            status_for(figures["max"], None),
            times_text(figures),
            figures=rounded(figures),
        )
    if options.speed_factor is not None:
        factor, how = options.speed_factor, "given by hand (--speed-factor)"
    else:
        seconds = float(
            (
                await trio.run_process(
                    [sys.executable, "-m", "check.calibrate"], capture_stdout=True
                )
            ).stdout
        )
        factor = calibrate.factor(seconds)
        how = (
            f"calibrated: workload {seconds:.3f} s now, {calibrate.REFERENCE_SECONDS:.3f} s "
            f"estimated on the contest's thread (±35 %, docs/check.md)"
        )
    quota = 1.0 / factor
    throttled: list[float] = []
    if context.can_throttle and factor > 1.0:
        bot = context.launcher(cpu_quota=quota, socket=server.unix_socket, label="clock")
        games = await play_games(
            server,
            bot,
            "random",
            options.clock_games,
            context.log_dir,
            first_number=100,
            label="clock",
            reaper=context.reaper,
        )
        throttled = [ms for game in games for ms in game.move_ms]
        for game in games:
            if game.irregular:
                context.verdicts.append(("clock.contest", game.irregular.lower(), game.reason))
        where = f"throttled to {quota:.0%} of one CPU (cgroup CPU quota)"
    elif factor > 1.0:
        throttled = [ms * factor for ms in normal]
        where = "no cgroup here: the times on this machine scaled by the factor"
    else:
        throttled = normal
        where = "this machine is not faster than the contest's thread now: no throttle"
    contest = percentiles(throttled)
    context.add(
        "clock.calibration",
        "The contest machine's speed",
        Status.INFO,
        f"factor {factor:.2f} ({how}); {where}",
        figures={"factor": round(factor, 3)},
    )
    if not contest:
        context.add(
            "clock.contest", "Move times at the contest's speed", Status.SKIP, "no moves measured"
        )
        return
    status = status_for(contest["max"], contest["p99"])
    context.add(
        "clock.contest",
        "Move times at the contest's speed",
        status,
        times_text(contest) + f"; safety line p99 < {SAFETY_MS:.0f} ms",
        "think less per move: budget about half the 2 s for the contest's slower thread "
        "(or measure time yourself and stop searching in time)"
        if status is not Status.PASS
        else "",
        figures=rounded(contest),
    )


def status_for(maximum: float, p99: float | None) -> Status:
    if maximum > MOVE_SECONDS * 1000:
        return Status.FAIL
    if p99 is not None and p99 > SAFETY_MS:
        return Status.FAIL
    return Status.WARN if maximum > SAFETY_MS else Status.PASS


def times_text(figures: dict[str, float]) -> str:
    margin = MOVE_SECONDS * 1000 - figures["max"]
    return (
        f"{int(figures['moves'])} moves: p50 {figures['p50']:.0f} ms, p95 {figures['p95']:.0f}"
        f", p99 {figures['p99']:.0f}, max {figures['max']:.0f} ms; margin to 2 s "
        f"{margin:.0f} ms"
    )


def rounded(figures: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 1) for name, value in figures.items()}


async def summarise(context: Context) -> None:
    """Items 6 and 7 from every run's record."""
    records = context.records
    sections = context.options.sections
    measured = [r for r in records if r.peak_memory is not None]
    if 6 in sections and records:
        oom = [r for r in records if r.oom_killed]
        if oom:
            context.add(
                "resources.memory",
                f"Peak memory against {MEMORY_MIB} MiB",
                Status.FAIL,
                f"killed for using more than {MEMORY_MIB} MiB in {len(oom)} run(s) "
                f"({', '.join(r.label for r in oom[:4])})",
                "allocate less (a JVM: -Xmx1g in start.sh; tables sized for 1.5 GB "
                "including the runtime)",
                log_tail=log_tail(oom[0].log_path),
            )
        elif measured:
            peak = max(r.peak_memory or 0 for r in measured)
            status = Status.WARN if peak > 0.8 * (MEMORY_MIB << 20) else Status.PASS
            context.add(
                "resources.memory",
                f"Peak memory against {MEMORY_MIB} MiB",
                status,
                f"peak {peak / (1 << 20):.0f} MiB over {len(measured)} runs",
                "leave headroom: the contest kills the bot at the limit"
                if status is Status.WARN
                else "",
                figures={"peak_mib": peak >> 20},
            )
        else:
            context.add(
                "resources.memory",
                f"Peak memory against {MEMORY_MIB} MiB",
                Status.SKIP,
                "not measured without a cgroup",
            )
        threads = max(r.max_threads for r in records)
        context.add(
            "resources.threads",
            "Threads",
            Status.INFO,
            f"at most {threads} threads (the contest gives one CPU thread: threads that "
            "compute at once share it)",
            figures={"max_threads": threads},
        )
        left = [r for r in records if r.left_behind]
        if left:
            names = sorted({name for r in left for name in r.left_behind})
            context.add(
                "resources.processes-left",
                "Processes left after the game",
                Status.FAIL,
                f"{len(left)} run(s) left processes running after the bot's end: "
                f"{', '.join(names[:8])} (the check killed them)",
                "wait for or stop child processes before exiting (exec the bot in "
                "start.sh instead of starting it in the background)",
            )
        else:
            context.add(
                "resources.processes-left",
                "Processes left after the game",
                Status.PASS,
                f"none in {len(records)} runs",
            )
        files = max(r.files_written for r in records)
        size = max(r.bytes_written for r in records)
        context.add(
            "resources.files",
            "Files written",
            Status.INFO,
            f"at most {files} files ({size / (1 << 20):.1f} MiB) in a run; nothing "
            "carries over between contest games (each run here starts from a fresh "
            "copy)",
            figures={"files": files, "bytes": size},
        )
    if 7 in sections:
        await robustness(context)


VERDICTS = {
    "crash": "crashed",
    "oom": "was killed for its memory",
    "hang": "hung (no answer)",
    "twice": "answered twice",
    "early": "moved without a request",
    "garbage": "wrote garbage",
    "illegal": "made an illegal move",
    "slow": "answered too late",
    "silent": "never spoke",
    "soft_timeout": "answered too late",
    "hard_timeout": "hung (no answer)",
    "rule_violation": "made an illegal move",
    "process_violation": "broke the protocol",
    "left": "left the game",
    "reservation": "ignored its reservation",
}


async def robustness(context: Context) -> None:
    seen: dict[str, list[str]] = {}
    for key, verdict, _detail in context.verdicts:
        seen.setdefault(verdict, []).append(key)
    if seen:
        parts = [f"{VERDICTS.get(v, v)} in {', '.join(keys[:4])}" for v, keys in seen.items()]
        context.add(
            "robust.verdicts",
            "Crash, hang, double answer, garbage",
            Status.FAIL,
            "the bot " + "; ".join(parts),
            "see the failed items above",
        )
    else:
        context.add(
            "robust.verdicts",
            "Crash, hang, double answer, garbage",
            Status.PASS,
            f"no crash, hang, double answer or garbage in {len(context.records)} runs",
        )
    leftovers = [r.label for r in context.records if not r.cleaned]
    leftovers += [f"container {c[:12]}" for c in await leftover_containers()]
    stopped = sum(r.exit_status is None or r.exit_status < 0 for r in context.records)
    if leftovers:
        context.add(
            "robust.cleanup",
            "Nothing of the bot survives the check",
            Status.FAIL,
            f"left behind by: {', '.join(leftovers[:6])}",
        )
    else:
        context.add(
            "robust.cleanup",
            "Nothing of the bot survives the check",
            Status.PASS,
            f"every run's processes were stopped and its directory removed "
            f"({len(context.records)} runs, {stopped} stopped by the check)",
        )


__all__ = ["Options", "check"]
