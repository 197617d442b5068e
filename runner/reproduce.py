"""Reproducers: for each game a bot lost irregularly (a timeout, a crash, an illegal move, a
protocol error), a folder that puts the bot in exactly that position again.

The folder (`--reproducers DIR`, default LOG_DIR/reproducers, one `game<k>_<name>_<kind>`
per loss) holds:

- `state.xml`: the state the bot was asked to move in, as an official replay file the server
  loads with `--loadGameFile state.xml --turn N`;
- `replay.xml`: the game as observed, up to the failure and its result;
- `bot.log`: the bot's output in that game;
- `reproducer.json`: the bot's command and working directory, its team, the turn, the kind
  of failure, the server's time limits;
- `README.txt`, and `repro.sh`, which runs `piranhas-match reproduce DIR`.

`piranhas-match reproduce DIR [--bot COMMAND]` starts a server in this process from
`state.xml` at turn N (the server's own loadGameFile path), lets the bot join on the team it
had (a room opened from a loaded file is a `<join>` room: the first joiner is team ONE, so a
stand-in opponent joins first when the bot was team TWO), and prints what the bot does when
asked to move: the move it sends and how long it took, or the timeout, the rule violation,
or its crash with the exit status and the tail of its output. The bot is started with the
contest options but without a reservation (`--host H --port P`): official clients then send
`<join>`. `--bot` runs another command (the fixed bot) in the same position.

Exit status: 0 when the failure was reproduced (same kind at the same turn), 1 when the bot
behaved differently, 2 for unusable input.
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from client import ClientSession
from engine import GameState, Team
from protocol.messages import Left, Memento, MoveRequest, ResultMessage
from protocol.replay import write_replay
from runner.game import Observation, file_safe, log_path
from runner.inprocess import in_process_server
from runner.options import PROGRAM
from runner.processes import ProcessPlayer, start_process
from runner.reaper import BotReaper
from runner.timing import CRASH, violation_kind
from server.config import Settings

Say = Callable[[str], None]

STATE_FILE = "state.xml"
CASE_FILE = "reproducer.json"
BOT_LOG_TAIL = 15  # lines of the bot's output shown
EXIT_GRACE = 3.0  # for the server's result after the bot's process ended
AFTER_MOVE_GRACE = 0.5  # for a protocol error right after the bot's move


@dataclass(frozen=True)
class Case:
    """One irregular loss to reproduce (`reproducer.json`)."""

    game: int
    name: str
    command: list[str]
    cwd: str
    team: str  # "ONE" or "TWO"
    turn: int  # of the state the bot was asked to move in
    kind: str  # runner.timing kinds
    reason: str
    soft_timeout: float
    hard_timeout: float
    can_timeout: bool

    def to_json(self) -> dict[str, Any]:
        """The JSON form."""
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Case:
        """Back from `reproducer.json`; KeyError/TypeError when incomplete."""
        return cls(**{key: data[key] for key in cls.__dataclass_fields__})


def write_reproducer(
    directory: Path,
    log_dir: Path,
    observation: Observation,
    names: tuple[str, str],
    player: int,
    kind: str,
    command: Sequence[str],
    *,
    soft_timeout: float,
    hard_timeout: float,
    can_timeout: bool,
) -> Path | None:
    """Write the folder for `player`'s irregular loss; its path, None when the game has no
    state to start from (it never started)."""
    summary = observation.summary
    mementos = [packet for packet in observation.packets if isinstance(packet, Memento)]
    if not mementos:
        return None
    # The state it was asked to move in: the last one with its team to move (a bot that
    # breaks the protocol after its move, or leaves on the opponent's turn, failed later).
    team = Team.ONE if summary.one == player else Team.TWO
    asked = [memento for memento in mementos if memento.state.current_team is team]
    chosen = asked[-1] if asked else mementos[-1]
    state = chosen.state
    name = names[player]
    folder = directory / f"game{summary.number}_{file_safe(name)}_{kind.lower()}"
    folder.mkdir(parents=True, exist_ok=True)
    room = summary.room_id
    (folder / "replay.xml").write_bytes(write_replay(room, observation.packets))
    (folder / STATE_FILE).write_bytes(write_replay(room, [chosen]))
    bot_log = log_path(log_dir, name, summary.number)
    if bot_log.is_file():
        shutil.copyfile(bot_log, folder / "bot.log")
    case = Case(
        game=summary.number,
        name=name,
        command=list(command),
        cwd=str(Path.cwd()),
        team=team.name,
        turn=state.turn,
        kind=kind,
        reason=summary.result.reason,
        soft_timeout=soft_timeout,
        hard_timeout=hard_timeout,
        can_timeout=can_timeout,
    )
    (folder / CASE_FILE).write_text(json.dumps(case.to_json(), indent=2) + "\n", "utf-8")
    script = folder / "repro.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"# Puts {name} back into turn {state.turn} of game {summary.number} ({kind}).\n"
        f"# Another command: repro.sh --bot 'COMMAND'\n"
        f'exec {shlex.quote(sys.executable)} -m cli.match reproduce "$(dirname "$0")" "$@"\n',
        "utf-8",
    )
    script.chmod(0o755)
    (folder / "README.txt").write_text(readme(case), "utf-8")
    return folder


def readme(case: Case) -> str:
    """What the folder is and how to use it."""
    command = shlex.join(case.command)
    return f"""\
{case.name} lost game {case.game} irregularly: {case.kind} at turn {case.turn}.
Reason given by the server: {case.reason}

Run it again (a server from state.xml, {case.name} on team {case.team}, its answer printed):

    ./repro.sh                     # or: {PROGRAM} reproduce THIS_DIR
    ./repro.sh --bot 'COMMAND'     # another command (your fix) in the same position

Exit status 0: the failure happened again (same kind, same turn); 1: it did not.

Files:
  state.xml        the state {case.name} was asked to move in (turn {case.turn}), an official
                   replay file: piranhas-server --loadGameFile state.xml --turn {case.turn}
  replay.xml       the game as observed, up to the failure and its result
  bot.log          {case.name}'s output in that game
  reproducer.json  what repro.sh needs (command, team, turn, limits)

By hand: start `piranhas-server --loadGameFile state.xml --turn {case.turn}` with
softTimeout={case.soft_timeout:g} and hardTimeout={case.hard_timeout:g}, then connect the
players with plain joins; the first to join plays team ONE ({case.name} was team {case.team}):
    cd {case.cwd} && {command} --host localhost --port 13050
"""


@dataclass
class Answer:
    """What the bot did in the reproduced position."""

    asked_turn: int | None = None
    move: str | None = None
    move_ms: float | None = None
    kind: str | None = None  # a violation kind (or CRASH); None: it answered legally
    reason: str | None = None
    exit_status: int | None = None


def tail(path: Path, lines: int = BOT_LOG_TAIL) -> list[str]:
    """The last `lines` lines of a text file (none if it is missing)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


async def reproduce(folder: Path, case: Case, command: list[str], say: Say) -> Answer:
    """Start a server from the case's state, the bot on its team and a stand-in opponent;
    return what the bot did when asked to move."""
    settings = Settings(
        timeout=case.can_timeout,
        load_game_file=folder / STATE_FILE,
        turn=case.turn,
        soft_timeout=case.soft_timeout,
        hard_timeout=case.hard_timeout,
        results_file=None,
        save_replay=False,
    )
    with BotReaper() as reaper:
        return await _reproduce(folder, case, command, say, settings, reaper)


async def _reproduce(
    folder: Path, case: Case, command: list[str], say: Say, settings: Settings, reaper: BotReaper
) -> Answer:
    answer = Answer()
    bot_log = folder / "repro-bot.log"
    limit = case.hard_timeout + 15.0
    team = Team[case.team]
    async with in_process_server(settings, folder / "repro-server.log") as server:
        port = server.port
        password = server.password
        assert password is not None  # the in-process server's random one
        games = server.games
        assert games is not None
        say(
            f"server: 127.0.0.1:{port} from {STATE_FILE} at turn {case.turn} (soft limit "
            f"{case.soft_timeout:g} s, hard {case.hard_timeout:g} s)"
        )
        admin = ClientSession(await trio.open_tcp_stream("127.0.0.1", port))
        standin = ClientSession(await trio.open_tcp_stream("127.0.0.1", port))
        bot: ProcessPlayer | None = None
        try:
            with trio.fail_after(limit):
                await admin.authenticate(password)
                if team is Team.TWO:
                    await standin.join()
                bot = await start_bot(command, case.cwd, port, bot_log)
                reaper.register(bot)
                async with trio.open_nursery() as game_nursery:
                    game_nursery.start_soon(gone_early, bot, answer, game_nursery.cancel_scope)
                    if team is Team.ONE:
                        await wait_joined(admin)
                        await standin.join()
                    await play(standin, bot, team, answer, admin)
                    game_nursery.cancel_scope.cancel()
            # The server's record has the violation itself, and the move's time as it
            # measured it; it is written before <left>, which ended play().
            game = games.take_any()
            if game is not None:
                kind = violation_kind(game.result, "", team)
                if answer.kind != CRASH and kind is not None:
                    answer.kind = kind
                if answer.move is not None and game.move_ms:
                    answer.move_ms = game.move_ms[0]
        except trio.TooSlowError:
            answer.reason = f"no result within {limit:g} s"
        finally:
            with trio.CancelScope(shield=True):
                if bot is not None:
                    await bot.stop()
                    await reaper.sweep(bot)
                    reaper.forget(bot)
                    if answer.exit_status is None and answer.kind == CRASH:
                        answer.exit_status = bot.returncode
                await standin.aclose()
                await admin.aclose()
    return answer


async def start_bot(command: list[str], cwd: str, port: int, log: Path) -> ProcessPlayer:
    """The bot with the contest options, without a reservation: it sends `<join>`."""
    argv = [*command, "--host", "127.0.0.1", "--port", str(port)]
    return await start_process(
        argv, log, what=shlex.join(argv), cwd=cwd if Path(cwd).is_dir() else None
    )


async def gone_early(bot: ProcessPlayer, answer: Answer, scope: trio.CancelScope) -> None:
    """A bot that ends and leaves no game (it never joined: a bot that insists on a
    reservation, a typo) ends the reproduction after a grace for the server's result."""
    status = await bot.wait()
    await trio.sleep(EXIT_GRACE)
    if answer.kind is None and answer.move is None:
        answer.exit_status = status
        answer.reason = (
            f"the bot exited (status {status}) without playing: it must join without a "
            "reservation (--host H --port P only); see its output"
        )
        scope.cancel()


async def wait_joined(admin: ClientSession) -> None:
    """Until a player joined a room (admins get `<joinedGameRoom>`)."""
    from protocol.messages import JoinedGameRoom

    await admin.expect(JoinedGameRoom, timeout=math.inf)


async def play(
    standin: ClientSession, bot: ProcessPlayer, team: Team, answer: Answer, admin: ClientSession
) -> None:
    """Play the stand-in (first legal move) until the bot answered once or the game ended."""
    state: GameState | None = None
    room: str | None = None
    exited = trio.Event()

    async def watch() -> None:
        await bot.wait()
        exited.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        cancel_at = math.inf
        while True:
            message = None
            with trio.move_on_at(cancel_at):
                message = await standin.receive()
            if message is None:
                assert room is not None
                await admin.cancel(room)  # one answer is all we came for
                cancel_at = math.inf
                continue
            if isinstance(message, Memento):
                room = message.room_id
                if answer.asked_turn is not None and message.state.turn > answer.asked_turn:
                    move = message.state.last_move
                    answer.move = None if move is None else str(move)
                    # The stand-in does not answer from now on; a moment for a protocol
                    # error that may follow the move (a second move), then the room ends.
                    cancel_at = trio.current_time() + AFTER_MOVE_GRACE
                    continue
                state = message.state
                if state.current_team is team and answer.asked_turn is None:
                    answer.asked_turn = state.turn
            elif isinstance(message, MoveRequest) and state is not None:
                if answer.move is None:
                    await standin.send_move(message.room_id, state.legal_moves()[0])
            elif isinstance(message, ResultMessage):
                # Also after a legal move: a protocol error may follow it (a second move).
                kind = violation_kind(message.result, team.name, team)
                if kind is not None or answer.move is None:
                    answer.reason = message.result.reason
                    answer.kind = kind
            elif isinstance(message, Left):
                break
        if answer.kind == "LEFT":
            # A crash: the process ended by itself (the server saw the socket close first).
            with trio.move_on_after(3):
                await exited.wait()
            if exited.is_set():
                answer.kind = CRASH
                answer.exit_status = bot.returncode
        nursery.cancel_scope.cancel()
