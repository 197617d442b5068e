"""No bot left behind: every process a bot started dies with the bot's game, and with the
command that started it, however that command ends (SIGKILL included).

A bot runs in a session and process group of its own (runner.processes), so stopping it kills
the group. That misses children that moved to a group or session of their own (setpgid,
setsid, a daemonizing helper). Two more mechanisms catch them:

- This process is a child subreaper (prctl PR_SET_CHILD_SUBREAPER) while a `BotReaper` is open:
  a bot's orphaned descendants are re-parented to us instead of init. After a player is
  stopped, `sweep` kills and reaps every child of ours that belongs to it: it carries the
  player's token in its environment (`TOKEN_VARIABLE`, set by runner.processes), or it is still
  in the player's process group or session (a zombie keeps those).
- A companion process kills what is still registered when this process ends in any way: it
  reads `+ PGID TOKEN` / `- PGID TOKEN` lines and acts when its stdin reaches EOF, which the
  kernel delivers when our end of the pipe closes. It kills the registered groups and every
  process whose environment carries a registered token. (PR_SET_PDEATHSIG would not do: trio
  starts processes from worker threads, and the signal follows the thread.) With
  `containers` = (docker CLI, label) it also removes every container with that label.

A descendant that both leaves the bot's session and clears its environment escapes the
companion (not the subreaper sweep while we live, as long as it is our child then).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import trio

from launching import PlayerLauncher
from runner.processes import TOKEN_VARIABLE, ProcessLauncher, ProcessPlayer

__all__ = ["BotReaper", "ReapedLauncher", "ReapedPlayer", "reaped"]

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
REAP_WAIT = 5.0  # seconds for a killed child to become reapable

_COMPANION = f"""
import os, signal, subprocess, sys
groups, tokens = set(), set()
for line in sys.stdin:
    op, pid, token = line.split()
    if op == "+":
        groups.add(int(pid)); tokens.add(token)
    else:
        groups.discard(int(pid)); tokens.discard(token)
for pid in groups:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
wanted = {{("{TOKEN_VARIABLE}=" + token).encode() for token in tokens}}
for _ in range(3):  # a killed parent's children may move on before they die
    for name in os.listdir("/proc") if wanted else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{{name}}/environ", "rb") as file:
                variables = set(file.read().split(b"\\0"))
        except OSError:
            continue
        if variables & wanted:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
if len(sys.argv) == 3:  # docker CLI and the run's container label
    cli, label = sys.argv[1:]
    try:
        listed = subprocess.run([cli, "ps", "-aq", "--filter", "label=" + label],
                                capture_output=True, text=True, timeout=60).stdout.split()
        if listed:
            subprocess.run([cli, "rm", "-f", *listed], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        pass
"""


class _Subreaper:
    """PR_SET_CHILD_SUBREAPER on this process while at least one BotReaper is open."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0

    @staticmethod
    def _set(value: int) -> bool:
        if not sys.platform.startswith("linux"):
            return False
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, value, 0, 0, 0) == 0)

    def acquire(self) -> None:
        with self._lock:
            if self._users == 0:
                self._set(1)
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                self._set(0)


_SUBREAPER = _Subreaper()


def _children() -> list[int]:
    """The process ids of this process's children (of every thread)."""
    pids: list[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            text = Path(f"/proc/self/task/{task}/children").read_text()
        except OSError:
            continue
        pids += [int(pid) for pid in text.split()]
    return pids


def _belongs_to(pid: int, player: ProcessPlayer) -> bool:
    """Whether our child `pid` descends from `player`: its token, else (no token: a zombie, or
    a child that cleared its environment) its process group or session. A child with another
    player's token is that player's, even where a reused process id would say otherwise."""
    prefix = f"{TOKEN_VARIABLE}=".encode()
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        environ = b""
    tokens = [value for value in environ.split(b"\0") if value.startswith(prefix)]
    if tokens:
        return tokens[-1] == prefix + player.token.encode()
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses.
    fields = stat[stat.rindex(")") + 2 :].split()
    return player.pid in (int(fields[2]), int(fields[3]))


async def _reap(pid: int) -> None:
    """Wait (without blocking the event loop) until the killed child `pid` can be reaped."""
    with trio.move_on_after(REAP_WAIT):
        while True:
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return  # reaped elsewhere, or never ours
            if done:
                return
            await trio.sleep(0.005)


class BotReaper:
    """The two guarantees above for every bot registered with it (see the module)."""

    def __init__(self, containers: tuple[str, str] | None = None) -> None:
        self._process = subprocess.Popen(
            # -I -S: the standard library only, no site packages to import (half the start).
            [sys.executable, "-I", "-S", "-c", _COMPANION, *(containers or ())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Its own session: Ctrl+C in the terminal must not end it before the command.
            start_new_session=True,
        )
        self._lock = threading.Lock()
        # The players registered and not forgotten, by process id (see `_other`).
        self._players: dict[int, ProcessPlayer] = {}
        _SUBREAPER.acquire()
        self._closed = False

    def _send(self, line: str) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        with self._lock:
            stdin.write(line.encode())
            stdin.flush()

    def register(self, player: ProcessPlayer) -> None:
        """Kill the player's group and token holders if this process dies before `forget`."""
        self._players[player.pid] = player
        self._send(f"+ {player.pid} {player.token}\n")

    def forget(self, player: ProcessPlayer) -> None:
        """The player is gone (stopped, reaped, swept): its group id may be reused."""
        if self._players.get(player.pid) is player:
            del self._players[player.pid]
        self._send(f"- {player.pid} {player.token}\n")

    async def sweep(self, player: ProcessPlayer) -> int:
        """Kill and reap the stopped player's descendants that were re-parented to us; how
        many. Repeated until none is left: a killed child's own children come to us next."""
        swept = 0
        while True:
            ours = [
                pid
                for pid in _children()
                if not self._other(pid, player) and _belongs_to(pid, player)
            ]
            if not ours:
                return swept
            for pid in ours:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for pid in ours:
                await _reap(pid)
            swept += len(ours)

    def _other(self, pid: int, player: ProcessPlayer) -> bool:
        """Whether our child `pid` is surely no descendant of `player`: the companion, or
        another registered player not reaped yet (so its process id is not reused). Most of
        our children are the other games' bots; this spares reading their /proc entries."""
        if pid == self._process.pid:
            return True  # nothing reaps it but `close`
        other = self._players.get(pid)
        return other is not None and other is not player and other.returncode is None

    def close(self) -> None:
        """End the companion (it kills what is still registered) and the subreaper role."""
        if self._closed:
            return
        self._closed = True
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait()
        _SUBREAPER.release()

    def __enter__(self) -> BotReaper:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class ReapedPlayer:
    """A `ProcessPlayer` registered with the reaper while it may be running."""

    def __init__(self, player: ProcessPlayer, reaper: BotReaper) -> None:
        self.player = player
        self.reaper = reaper

    @property
    def returncode(self) -> int | None:
        """The process's exit status, None while it runs."""
        return self.player.returncode

    async def wait(self) -> int:
        """Wait for the process to exit."""
        return await self.player.wait()

    async def stop(self) -> bool:
        """Stop the process group (runner.processes), sweep its escaped descendants, then
        unregister it. Shielded: this runs in cleanups after Ctrl+C."""
        try:
            return await self.player.stop()
        finally:
            with trio.CancelScope(shield=True):
                await self.reaper.sweep(self.player)
            self.reaper.forget(self.player)


class ReapedLauncher:
    """A `ProcessLauncher` whose bots and their descendants the reaper kills."""

    def __init__(self, launcher: ProcessLauncher, reaper: BotReaper) -> None:
        self.launcher = launcher
        self.reaper = reaper

    async def launch(
        self, name: str, host: str, port: int, reservation: str, log_path: Path
    ) -> ReapedPlayer:
        """Start the bot and register it."""
        player = await self.launcher.launch(name, host, port, reservation, log_path)
        self.reaper.register(player)
        return ReapedPlayer(player, self.reaper)


def reaped(launcher: PlayerLauncher, reaper: BotReaper | None) -> PlayerLauncher:
    """`launcher` under `reaper` if it starts local processes (containers are removed by
    their own launcher and by the reaper's container label)."""
    if reaper is not None and isinstance(launcher, ProcessLauncher):
        return ReapedLauncher(launcher, reaper)
    return launcher
