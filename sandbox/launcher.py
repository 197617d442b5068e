"""ContainerLauncher: every bot in its own Docker container, limited like the contest's.

One game's bot is two containers (docs/sandbox.md):
- a relay (`--network none`, only `lo`) that listens on 127.0.0.1:13050 in its network
  namespace and forwards to the game server's Unix socket (bind-mounted read-only), and
- the bot, in the relay's network namespace (`--network container:<relay>`): it sees `lo` and
  no route anywhere; `gameserver` resolves to 127.0.0.1 through the relay's hosts file. It is
  started as the contest does, `IMAGE -h gameserver -p 13050 -r CODE` (the image's entrypoint,
  e.g. a start.sh, gets these arguments), with 1 CPU, 1.5 GB without swap, a pids limit, a
  read-only root with a /tmp tmpfs, no capabilities, no new privileges and an init.

Each bot gets its own relay, so the two bots of a game share no network namespace either (no
talking over loopback). Containers are labelled (`piranhas.role`, `piranhas.run`,
`piranhas.match`, `piranhas.game`), and after the game their exit code, OOM flag and logs are
read before they are removed; `sweep` removes those a dead run left behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog
import trio

from launching import MatchError
from launching.botlog import BoundedLog
from sandbox.docker import DockerError, docker, docker_cli, remove_containers

BOT_BASE_IMAGE = "piranhas/bot-base:bookworm"
CONTEST_HOST = "gameserver"
CONTEST_PORT = 13050
RELAY_SCRIPT = Path(__file__).with_name("relay.py")
RELAY_READY = "relay ready"
RELAY_READY_TIMEOUT = 20.0
STOP_GRACE = 1  # seconds between SIGTERM and SIGKILL (`docker stop -t`)
LOGS_DRAIN = 5.0  # for `docker logs --follow` to finish after the container ended
_GAME_IN_LOG_NAME = re.compile(r"_game(\d+)\.log$")

log = structlog.get_logger("sandbox")


@dataclass(frozen=True)
class Limits:
    """What one bot may use; the contest: one core, 1.5 GB, no swap."""

    cpus: int = 1  # whole cores
    pin_cpus: bool = True  # --cpuset-cpus (rotating over the cores) where there are enough
    memory_mib: int = 1536  # also the memory+swap limit: no swap
    pids: int = 256
    tmpfs_mib: int = 256  # /tmp, the only writable place (counts against the memory)
    # A fraction of one CPU (`--cpus`, a CFS quota) on top of the pinning: piranhas-check
    # throttles a bot to the contest machine's speed with it (docs/check.md). None: no quota.
    cpu_quota: float | None = None

    def __post_init__(self) -> None:
        for name in ("cpus", "memory_mib", "pids", "tmpfs_mib"):
            if getattr(self, name) < 1:
                raise ValueError(f"limit {name} must be at least 1, got {getattr(self, name)}")
        if self.cpu_quota is not None and not 0.01 <= self.cpu_quota <= self.cpus:
            raise ValueError(f"cpu_quota must be in [0.01, {self.cpus}], got {self.cpu_quota}")


class CpuRotation:
    """Hands out cores in turn, so bots started one after the other (the two of a game, or
    games at once) sit on different cores."""

    def __init__(self, cores: Sequence[int] | None = None) -> None:
        self.cores = sorted(cores if cores is not None else os.sched_getaffinity(0))
        self.next_index = 0

    def take(self, count: int) -> str | None:
        """A `--cpuset-cpus` value with `count` cores, or None when there are fewer."""
        if count > len(self.cores):
            return None
        picked = [self.cores[(self.next_index + i) % len(self.cores)] for i in range(count)]
        self.next_index = (self.next_index + count) % len(self.cores)
        return ",".join(str(core) for core in picked)


# One rotation per process: every launcher's bots share the machine's cores.
SHARED_ROTATION = CpuRotation()


def exit_reason(status: int, oom_killed: bool, limits: Limits, stopped: bool) -> str | None:
    """Why a bot's container ended, for the match report; None for a clean exit."""
    if oom_killed:
        return f"killed: out of memory ({limits.memory_mib} MiB)"
    if stopped:
        return "killed: still running after the game"
    if status == 0:
        return None
    if status > 128:
        try:
            return f"killed by {signal.Signals(status - 128).name}"
        except ValueError:
            pass
    return f"exit {status}"


def labels(role: str, run: str, match: str, game: str) -> list[str]:
    """`--label` arguments of a container."""
    values = {
        "piranhas.role": role,
        "piranhas.run": run,
        "piranhas.match": match,
        "piranhas.game": game,
    }
    return [argument for key, value in values.items() for argument in ("--label", f"{key}={value}")]


def hardening() -> list[str]:
    """The flags every container gets, bots and relays."""
    return [
        # Images are local (built or loaded): never reach out to a registry for one.
        "--pull",
        "never",
        "--read-only",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--init",
        # Bounded logs: a bot that prints without end must not fill the disk.
        "--log-opt",
        "max-size=20m",
    ]


class ContainerPlayer:
    """One bot running in a container (with its relay). Implements runner's RunningPlayer."""

    def __init__(
        self,
        bot: str,
        relay: str,
        logs: trio.Process,
        limits: Limits,
        cli: str,
        bot_log: BoundedLog | None = None,
    ) -> None:
        self.bot = bot
        self.relay = relay
        self.logs = logs
        self.bot_log = bot_log
        self.limits = limits
        self.cli = cli
        self._returncode: int | None = None
        self.oom_killed = False
        self.stopped = False  # still running when stop() came
        self.removed = False
        self._wait_lock = trio.Lock()

    @property
    def returncode(self) -> int | None:
        """The container's exit code once it ended, else None."""
        return self._returncode

    @property
    def exit_reason(self) -> str | None:
        """Why it ended ("killed: out of memory (1536 MiB)", "exit 3", ...); None while it
        runs or after a clean exit."""
        if self._returncode is None:
            return None
        return exit_reason(self._returncode, self.oom_killed, self.limits, self.stopped)

    async def wait(self) -> int:
        """Wait until the container ends; its exit code. Reads the OOM flag too."""
        # A lock, not an event: a waiter cancelled mid-way (the match core's watcher) leaves
        # the next caller to ask again.
        async with self._wait_lock:
            if self._returncode is None:
                status = int(await docker("wait", self.bot, cli=self.cli, timeout=float("inf")))
                state = await docker(
                    "inspect", "--format", "{{.State.OOMKilled}}", self.bot, cli=self.cli
                )
                self.oom_killed = state == "true"
                self._returncode = status
        return self._returncode

    async def stop(self) -> bool:
        """Make sure the bot is gone: SIGTERM, SIGKILL after a second; then read its exit code,
        OOM flag and logs and remove both containers. True if it was still running. Shielded:
        this runs in cleanups after Ctrl+C. Never raises: the match core stops the other
        player next; a Docker failure is logged (and `sweep` finds what was left)."""
        with trio.CancelScope(shield=True):
            running = self._returncode is None
            try:
                if running:
                    state = await docker(
                        "inspect", "--format", "{{.State.Running}}", self.bot, cli=self.cli
                    )
                    running = state == "true"
                    if running:
                        self.stopped = True
                        await docker("stop", "--time", str(STOP_GRACE), self.bot, cli=self.cli)
                await self.wait()
                with trio.move_on_after(LOGS_DRAIN):
                    await self.logs.wait()
            except DockerError as error:
                log.warning("bot container failed", container=self.bot, error=str(error))
            finally:
                if self.logs.returncode is None:
                    self.logs.kill()
                    await self.logs.wait()
                if self.bot_log is not None:
                    await trio.to_thread.run_sync(self.bot_log.finish, LOGS_DRAIN)
                try:
                    await remove_containers([self.bot, self.relay], cli=self.cli)
                    self.removed = True
                except DockerError as error:
                    log.error("bot container left behind", container=self.bot, error=str(error))
        return running


def contest_short_form(reservation: str) -> list[str]:
    """`-h gameserver -p 13050 -r CODE`, as the contest starts a bot."""
    return ["-h", CONTEST_HOST, "-p", str(CONTEST_PORT), "-r", reservation]


class ContainerLauncher:
    """Starts a bot image in a container per game (runner's PlayerLauncher).

    `server_socket` is the game server's Unix socket (Settings.unix_socket); its directory is
    mounted read-only into the relays, so it should hold nothing else. The `host` and `port`
    that `launch` gets are not used: the bot always connects to gameserver:13050, which the
    relay forwards to that socket.
    """

    def __init__(
        self,
        image: str,
        server_socket: Path,
        *,
        limits: Limits | None = None,
        run_id: str | None = None,
        match_id: str = "",
        relay_image: str = BOT_BASE_IMAGE,
        cpus: CpuRotation | None = None,
        cli: str | None = None,
        arguments: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.image = image
        # The bot's arguments for a reservation; the contest's short form unless given
        # (piranhas-check tries the long forms and other orders too).
        self.arguments = arguments or contest_short_form
        self.server_socket = server_socket.absolute()
        self.limits = limits or Limits()
        self.run_id = run_id or secrets.token_hex(4)
        self.match_id = match_id
        self.relay_image = relay_image
        self.cpus = cpus or SHARED_ROTATION
        self.cli = cli or docker_cli()

    async def launch(
        self, name: str, host: str, port: int, reservation: str, log_path: Path
    ) -> ContainerPlayer:
        """Start the relay, wait until it listens, start the bot with its output following
        into `log_path`. Raises MatchError (nothing is left running then)."""
        match = _GAME_IN_LOG_NAME.search(log_path.name)
        game = match.group(1) if match else log_path.stem
        prefix = f"piranhas-{self.run_id}-{secrets.token_hex(4)}"
        started: list[str] = []
        try:
            relay = await self._start_relay(f"{prefix}-relay", game)
            started.append(relay)
            await self._relay_ready(relay)
            bot = await docker(
                "run",
                "--detach",
                "--name",
                f"{prefix}-bot",
                *self.bot_flags(relay, game),
                self.image,
                *self.arguments(reservation),
                cli=self.cli,
            )
            started.append(bot)
            # Bounded like a process player's log (launching.botlog): its head and tail.
            bot_log = BoundedLog(log_path)
            try:
                logs = await trio.lowlevel.open_process(
                    [self.cli, "logs", "--follow", bot],
                    stdin=subprocess.DEVNULL,
                    stdout=bot_log.writer,
                    stderr=subprocess.STDOUT,
                )
            finally:
                bot_log.started()
        except (DockerError, OSError) as error:
            # Shielded: also on Ctrl+C; a failure here is left to the next start's sweep.
            with trio.CancelScope(shield=True), contextlib.suppress(DockerError):
                await remove_containers(started, cli=self.cli)
            message = f"cannot start {name} in a container ({self.image}): {error}"
            raise MatchError(message) from None
        return ContainerPlayer(bot, relay, logs, self.limits, self.cli, bot_log)

    def bot_flags(self, relay: str, game: str) -> list[str]:
        """The `docker run` flags of a bot container (without name and image)."""
        limits = self.limits
        cores = self.cpus.take(limits.cpus) if limits.pin_cpus else None
        cpu_flags = ["--cpuset-cpus", cores] if cores else ["--cpus", str(limits.cpus)]
        if limits.cpu_quota is not None:
            cpu_flags = [*(cpu_flags if cores else []), "--cpus", f"{limits.cpu_quota:.3f}"]
        return [
            *labels("bot", self.run_id, self.match_id, game),
            "--network",
            f"container:{relay}",
            *cpu_flags,
            "--memory",
            f"{limits.memory_mib}m",
            "--memory-swap",
            f"{limits.memory_mib}m",
            "--pids-limit",
            str(limits.pids),
            "--tmpfs",
            f"/tmp:rw,nosuid,nodev,size={limits.tmpfs_mib}m,mode=1777",
            *hardening(),
        ]

    def _relay_mounts(self) -> list[str]:
        """The relay's `--volume` flags: the socket's directory, with a copy of relay.py put
        in it, so every path the daemon mounts is one this process made. A worker that is a
        container itself, driving the host's daemon through its socket (deploy/ladder.compose.yml),
        keeps that directory at the same path on the host; the installed relay.py is not there."""
        socket_dir = self.server_socket.parent
        mounts = ["--volume", f"{socket_dir}:/run/piranhas:ro"]
        copy = socket_dir / RELAY_SCRIPT.name
        try:
            if not copy.is_file():
                staged = socket_dir / f".{RELAY_SCRIPT.name}.{secrets.token_hex(4)}"
                staged.write_bytes(RELAY_SCRIPT.read_bytes())
                staged.chmod(0o644)
                os.replace(staged, copy)  # atomic: two launches at once copy it twice, fine
            script = f"/run/piranhas/{RELAY_SCRIPT.name}"
        except OSError:  # a socket directory not ours to write: the installed script
            mounts += ["--volume", f"{RELAY_SCRIPT}:/opt/piranhas/relay.py:ro"]
            script = "/opt/piranhas/relay.py"
        return [*mounts, "--entrypoint", "python3", self.relay_image, script]

    async def _start_relay(self, name: str, game: str) -> str:
        return await docker(
            "run",
            "--detach",
            "--name",
            name,
            *labels("relay", self.run_id, self.match_id, game),
            "--network",
            "none",
            # Bots cannot have --add-host with --network container:, but they share this
            # container's hosts file.
            "--add-host",
            f"{CONTEST_HOST}:127.0.0.1",
            # The server's socket belongs to this process's user; without capabilities only
            # that user may connect to it.
            "--user",
            f"{os.getuid()}:{os.getgid()}",
            "--memory",
            "64m",
            "--memory-swap",
            "64m",
            "--pids-limit",
            "32",
            *hardening(),
            *self._relay_mounts(),
            f"/run/piranhas/{self.server_socket.name}",
            str(CONTEST_PORT),
            cli=self.cli,
        )

    async def _relay_ready(self, relay: str) -> None:
        """Wait until the relay listens: a bot started earlier would find nobody there."""
        delay = 0.02
        with trio.move_on_after(RELAY_READY_TIMEOUT):
            while True:
                output = await docker("logs", relay, cli=self.cli)
                if RELAY_READY in output:
                    return
                state = await docker(
                    "inspect", "--format", "{{.State.Status}}", relay, cli=self.cli
                )
                if state not in ("created", "running"):
                    raise DockerError(f"the relay ended ({state}): {output[-500:]}")
                await trio.sleep(delay)
                delay = min(delay * 2, 0.5)
        raise DockerError(f"the relay did not listen within {RELAY_READY_TIMEOUT:g} s")


async def sweep(label: str, cli: str | None = None) -> int:
    """Remove every container with `label` ("key" or "key=value"), e.g. those a run that
    died left behind; how many there were."""
    listed = await docker("ps", "--all", "--quiet", "--filter", f"label={label}", cli=cli)
    ids = listed.split()
    await remove_containers(ids, cli=cli)
    return len(ids)
