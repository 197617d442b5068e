"""The local-process launcher: a player started as a process in its own session for one
game and stopped after it (`launching.PlayerLauncher`; containers are `sandbox`'s)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import secrets
import shlex
import signal
import subprocess
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import trio

from launching import MatchError
from launching.botlog import BoundedLog

TERMINATE_WAIT = 1.0  # between SIGTERM and SIGKILL for a process that must go
LOG_FINISH_WAIT = 2.0  # for the rest of a stopped player's output to reach its log
# Every player process and what it starts carry a token of their own in this variable, so the
# ones that left its process group are found again (runner.reaper).
TOKEN_VARIABLE = "PIRANHAS_BOT_TOKEN"


class Child(Protocol):
    """What a player needs of its process: `trio.Process`, or a `SpawnedProcess`."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


class SpawnThread:
    """Starts processes from one thread of its own, made before its process lowers its CPU
    priority, so that they get the priority the process had: on Linux the nice value and the
    scheduling policy belong to a thread, and a child gets those of the thread that forked it.
    (An unprivileged process cannot lower its nice value again, nor can its child: the one
    thread that never raised it has to start them.) The web viewer runs at nice 10 and
    SCHED_BATCH (web.process); a bot it starts for a person must not be slowed by that."""

    def __init__(self) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spawn")
        # Its one thread exists from now on (max_workers=1: no other is ever made).
        self._executor.submit(lambda: None).result()

    async def popen(self, argv: list[str], **options: Any) -> SpawnedProcess:
        """`subprocess.Popen(argv, **options)` on the thread; raises what Popen raises."""
        future = self._executor.submit(partial(subprocess.Popen, argv, **options))
        # Not abandoned on cancel: a process that was started is always handed back.
        popen: subprocess.Popen[Any] = await trio.to_thread.run_sync(future.result)
        return SpawnedProcess(popen)

    def close(self) -> None:
        """Let the thread end (it is idle between starts)."""
        self._executor.shutdown(wait=False)


class SpawnedProcess:
    """A process a `SpawnThread` started, as a `Child`: its exit is awaited through a pidfd
    opened at once (no reused process id can be mistaken for it), one waiter at a time."""

    def __init__(self, popen: subprocess.Popen[Any]) -> None:
        self._popen = popen
        self.pid = popen.pid
        self._pidfd: int | None = os.pidfd_open(popen.pid)
        self._waiting = trio.Lock()

    @property
    def returncode(self) -> int | None:
        """The exit status, None while it runs (reaped here when it has ended)."""
        return self._popen.poll()

    async def wait(self) -> int:
        """Wait for the process to exit; its status."""
        async with self._waiting:
            if self._pidfd is not None:
                if self._popen.poll() is None:
                    await trio.lowlevel.wait_readable(self._pidfd)
                trio.lowlevel.notify_closing(self._pidfd)
                os.close(self._pidfd)
                self._pidfd = None
            return self._popen.wait()


class ProcessPlayer:
    """A player running as a local process in its own process group."""

    def __init__(self, process: Child, token: str = "", log: BoundedLog | None = None) -> None:
        self.process = process
        self.token = token  # its TOKEN_VARIABLE
        self.log = log

    @property
    def returncode(self) -> int | None:
        """The process's exit status, None while it runs."""
        return self.process.returncode

    @property
    def pid(self) -> int:
        """The process id (also its process group's)."""
        return self.process.pid

    async def wait(self) -> int:
        """Wait for the process to exit."""
        return await self.process.wait()

    async def stop(self) -> bool:
        """Terminate, then kill the player's process group; True if the bot was still
        running. Shielded: this runs in cleanups after Ctrl+C."""
        running = self.process.returncode is None
        with trio.CancelScope(shield=True):
            if running:
                self._signal_group(signal.SIGTERM)
                with trio.move_on_after(TERMINATE_WAIT):
                    await self.process.wait()
            # Also after a clean exit: a wrapper script may leave children behind.
            self._signal_group(signal.SIGKILL)
            await self.process.wait()
            if self.log is not None:
                await trio.to_thread.run_sync(self.log.finish, LOG_FINISH_WAIT)
        return running

    def _signal_group(self, signum: signal.Signals) -> None:
        # ProcessLookupError: the group is gone (the bot and its children exited).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)


class ProcessLauncher:
    """Starts `argv + --host H --port P --reservation CODE` as a local process (from
    `spawner`'s thread when given)."""

    def __init__(self, argv: Sequence[str], spawner: SpawnThread | None = None) -> None:
        self.argv = list(argv)
        self.spawner = spawner

    async def launch(
        self, name: str, host: str, port: int, reservation: str, log_path: Path
    ) -> ProcessPlayer:
        """Start the process with stdout and stderr to `log_path`."""
        argv = [*self.argv, "--host", host, "--port", str(port), "--reservation", reservation]
        what = f"{name} ({shlex.join(argv)})"
        return await start_process(argv, log_path, what=what, spawner=self.spawner)


async def start_process(
    argv: Sequence[str],
    log_path: Path,
    *,
    what: str,
    cwd: str | None = None,
    spawner: SpawnThread | None = None,
) -> ProcessPlayer:
    """Start a player process as every launcher of this runner does: stdout and stderr to
    `log_path` (bounded: its head and tail, runner.botlog), no stdin, unbuffered Python, a
    process group of its own; from `spawner`'s thread when given (its CPU priority). Raises
    MatchError naming `what` when it cannot start."""
    env = dict(os.environ)
    # Python bots: output reaches the log as it happens, also when the bot is killed.
    env.setdefault("PYTHONUNBUFFERED", "1")
    token = env[TOKEN_VARIABLE] = secrets.token_hex(8)
    try:
        log = BoundedLog(log_path)
    except OSError as error:
        raise MatchError(f"cannot start {what}: cannot write {log_path}: {error}") from None
    options: dict[str, Any] = {
        "stdin": subprocess.DEVNULL,
        "stdout": log.writer,
        "stderr": subprocess.STDOUT,
        "env": env,
        "cwd": cwd,
        # Own process group: Ctrl+C in the terminal reaches only us (the bots do not die
        # first and look crashed), and killing the group also gets a wrapper's children
        # (start.sh -> java).
        "start_new_session": True,
    }
    process: Child
    try:
        if spawner is not None:
            process = await spawner.popen(list(argv), **options)
        else:
            process = await trio.lowlevel.open_process(list(argv), **options)
    except OSError as error:
        raise MatchError(f"cannot start {what}: {error}") from None
    finally:
        log.started()  # the pipe ends with the process (or at once when it did not start)
    return ProcessPlayer(process, token, log)
