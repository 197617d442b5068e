"""Docker mode: the bot in a container as the contest runs it, through the sandbox's
`ContainerLauncher` (its relay, limits and hardening, docs/sandbox.md) — never a copy.

The upload folder becomes an image (`sandbox.images.build_bot_image`: the folder at /bot,
start.sh the entrypoint, user `bot`, on the bot base image). What the container used is read
from its cgroup (cgroupfs driver, cgroup v1 or v2) before the sandbox removes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import time
from collections.abc import Callable
from pathlib import Path

import trio

from check.contest import CONTEST_HOST, CONTEST_PORT, contest_arguments
from check.isolation import CGROUP_ROOT, CpuDemand, RunRecord, run_queue_waits, threads_of
from check.upload import BotSource
from runner.reaper import BotReaper
from sandbox import BOT_BASE_IMAGE, ContainerLauncher, ContainerPlayer, Limits, docker_available
from sandbox.images import build_base_image, build_bot_image, image_exists

DESCRIPTION = (
    "Docker container (sandbox.ContainerLauncher): 1 CPU, 1536 MiB without swap, 256 pids, "
    "only lo and gameserver:13050 via a relay, read-only root with a fresh /tmp, user bot"
)


async def docker_mode_possible(source: BotSource) -> str | None:
    """None when the bot can run in a container here, else why not."""
    if source.folder is None or source.main is None or not source.command[0].startswith("./"):
        return (
            "only an upload with a start.sh runs in a container (this is a "
            f"{source.kind}): process mode"
        )
    if not await docker_available():
        return "no Docker daemon answers"
    if not await image_exists(BOT_BASE_IMAGE) and not await image_exists("debian:bookworm-slim"):
        return f"neither {BOT_BASE_IMAGE} nor debian:bookworm-slim is there to build on"
    return None


async def bot_image(source: BotSource) -> str:
    """The image of the upload folder (built once per content)."""
    assert source.folder is not None
    if not await image_exists(BOT_BASE_IMAGE):
        await build_base_image()
    digest = hashlib.sha256()
    for path in sorted(source.folder.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(source.folder)).encode())
            digest.update(path.read_bytes())
    tag = f"piranhas-check/bot:{digest.hexdigest()[:16]}"
    if not await image_exists(tag):
        await build_bot_image(source.folder, tag)
    return tag


def _cgroup_dirs(container: str) -> dict[str, Path]:
    v1 = {c: CGROUP_ROOT / c / "docker" / container for c in ("memory", "cpuacct", "pids")}
    if v1["memory"].is_dir():
        return v1
    v2 = CGROUP_ROOT / "system.slice" / f"docker-{container}.scope"
    return dict.fromkeys(("memory", "cpuacct", "pids"), v2) if v2.is_dir() else {}


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class DockerPlayer:
    """A ContainerPlayer whose use is recorded (the interface check.run uses)."""

    def __init__(self, player: ContainerPlayer, record: RunRecord) -> None:
        self.player = player
        self.record = record
        self.done = False
        self.dirs = _cgroup_dirs(player.bot)

    @property
    def returncode(self) -> int | None:
        return self.player.returncode

    @property
    def exit_reason(self) -> str | None:
        return self.player.exit_reason

    def cpu_ns(self) -> int | None:
        if "cpuacct" not in self.dirs:
            return None
        text = _read(self.dirs["cpuacct"] / "cpuacct.usage")
        if text:
            return int(text)
        for line in _read(self.dirs["cpuacct"] / "cpu.stat").splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) * 1000
        return None

    def demand(self) -> CpuDemand | None:
        cpu = self.cpu_ns()
        if cpu is None or "pids" not in self.dirs:
            return None
        pids = self._pids()
        return CpuDemand(cpu, run_queue_waits(pids))

    def _pids(self) -> list[int]:
        """The processes in the container's cgroup (tini first); needs the "pids" dir."""
        return [int(pid) for pid in _read(self.dirs["pids"] / "cgroup.procs").split()]

    def sample(self) -> None:
        """Also the memory peak and CPU time so far: Docker removes a container's cgroup when
        it ends, before the check could read it."""
        if self.done or "pids" not in self.dirs:
            return
        self._measure()
        pids = self._pids()
        # tini (--init) is the container's first process; the bot is what runs under it.
        self.record.max_processes = max(self.record.max_processes, max(0, len(pids) - 1))
        self.record.max_threads = max(self.record.max_threads, threads_of(pids[1:]))

    async def wait(self) -> int:
        status = await self.player.wait()
        self.record.exit_status = status
        return status

    def _measure(self) -> None:
        memory = self.dirs.get("memory")
        if memory is not None:
            peak = _read(memory / "memory.max_usage_in_bytes") or _read(memory / "memory.peak")
            if peak:
                self.record.peak_memory = max(self.record.peak_memory or 0, int(peak))
        cpu = self.cpu_ns()
        if cpu is not None:
            self.record.cpu_seconds = max(self.record.cpu_seconds or 0.0, cpu / 1e9)

    async def stop(self) -> bool:
        with trio.CancelScope(shield=True):
            self._measure()
            stopped = await self.player.stop()
            self.done = True
            self.record.oom_killed = self.player.oom_killed
            self.record.cleaned = self.player.removed
            if self.record.exit_status is None:
                self.record.exit_status = self.player.returncode
        return stopped


class DockerLauncher:
    """Starts the bot image through sandbox.ContainerLauncher with the contest's arguments in
    `style`, throttled to `cpu_quota` of a CPU when given."""

    def __init__(
        self,
        image: str,
        socket: Path,
        *,
        style: str = "short",
        cpu_quota: float | None = None,
        records: list[RunRecord] | None = None,
        label: str = "",
        reaper: BotReaper | None = None,  # containers go by their label (runner.reaper)
    ) -> None:
        self.records = records if records is not None else []
        self.label = label
        self.on_start: Callable[[DockerPlayer], None] | None = None
        quota = cpu_quota if cpu_quota is not None and cpu_quota < 1.0 else None
        self.inner = ContainerLauncher(
            image,
            socket,
            limits=Limits(cpu_quota=quota),
            run_id=RUN_ID,
            arguments=lambda code: contest_arguments(style, CONTEST_HOST, CONTEST_PORT, code),
        )

    async def launch(
        self, name: str, host: str, port: int, reservation: str, log_path: Path
    ) -> DockerPlayer:
        record = RunRecord(self.label or name, time.monotonic(), log_path=log_path)
        player = DockerPlayer(
            await self.inner.launch(name, host, port, reservation, log_path), record
        )
        self.records.append(record)
        if self.on_start is not None:
            self.on_start(player)
        return player


# One label per check run: the reaper removes the run's containers if the check dies.
RUN_ID = f"check-{secrets.token_hex(4)}"


def reaper_containers() -> tuple[str, str]:
    from sandbox.docker import docker_cli

    return docker_cli(), f"piranhas.run={RUN_ID}"


async def leftover_containers() -> list[str]:
    from sandbox.docker import DockerError, docker

    with contextlib.suppress(DockerError):
        listed = await docker("ps", "--all", "--quiet", "--filter", f"label=piranhas.run={RUN_ID}")
        return listed.split()
    return []
