"""Process-mode isolation: a bot run as a process with the limits the kernel can set, as close
to the contest's container as this machine allows (docs/check.md, item 2).

- a cgroup of its own (v1 or v2, when we may create one): 1.5 GB without swap, 256 pids, one
  CPU (a `cpu.max` / CFS quota, the same knob that throttles it to the contest's speed);
  the cgroup also measures peak memory, CPU time, OOM kills and what is left after the game;
- without a cgroup: rlimits (address space, processes) and one CPU by affinity;
- a network namespace with only `lo` (when we may create one): the bot reaches the game
  server as `gameserver:13050` through sandbox/relay.py and a Unix socket, and nothing else;
- a fresh copy of the upload as its writable working directory, HOME and TMPDIR, removed
  after the run (nothing carries over between games).

`JailLauncher` is a runner.players.PlayerLauncher: the match core and the stress suite start
bots only through it (or through sandbox.ContainerLauncher in Docker mode).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import trio

from check.contest import CONTEST_HOST, CONTEST_PORT, MEMORY_MIB, contest_arguments
from check.upload import BotSource
from runner.processes import TOKEN_VARIABLE, ProcessPlayer, start_process
from runner.reaper import BotReaper

CGROUP_ROOT = Path("/sys/fs/cgroup")
PIDS_LIMIT = 256
CPU_PERIOD_US = 20_000  # a short CFS period: a throttled bot's slowdown is smooth within a move


@dataclass(frozen=True)
class Isolation:
    """What this machine lets the check apply to a process."""

    cgroup: str | None  # "v1", "v2" or None
    netns: bool
    uid: int | None = None  # the unprivileged user the bot runs as; None: as the check runs

    def for_bot(self, command: Sequence[str]) -> Isolation:
        """This isolation for a bot's command: as root the bot runs as `nobody` when that
        user can reach its program (an upload's files are copied for it; a command from a
        private folder, such as a virtual environment under /root, keeps root)."""
        if os.geteuid() != 0 or not reachable_by_others(command):
            return replace(self, uid=None)
        return replace(self, uid=UNPRIVILEGED)

    def describe(self) -> str:
        parts = ["process"]
        if self.cgroup:
            parts.append(f"cgroup {self.cgroup} (1 CPU, {MEMORY_MIB} MiB, {PIDS_LIMIT} pids)")
        else:
            parts.append(f"rlimits ({MEMORY_MIB} MiB address space) and CPU affinity, no cgroup")
        if self.netns:
            parts.append("network namespace (only lo; gameserver:13050 via a relay)")
        else:
            parts.append("NO network isolation (the bot connects to 127.0.0.1)")
        parts.append("fresh writable copy per run")
        if self.uid is not None:
            parts.append(f"as uid {self.uid} (nobody)")
        elif os.geteuid() == 0:
            parts.append("as root (the command's program is not reachable by an unprivileged user)")
        return ", ".join(parts)


UNPRIVILEGED = 65534  # nobody


def reachable_by_others(command: Sequence[str]) -> bool:
    """Whether a user without privileges may run the command's program: an upload's own start
    file (copied for it) always; another program when it and every folder above it are
    world-executable."""
    if command[0].startswith("./"):
        return True
    found = shutil.which(command[0])
    if found is None:
        return False
    path = Path(os.path.realpath(found))
    for part in [path, *path.parents]:
        try:
            if not part.stat().st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def detect() -> Isolation:
    """Which isolation applies: cgroups and namespaces need root here (cgroup v1)."""
    root = os.geteuid() == 0
    version = None
    if root and (CGROUP_ROOT / "memory").is_dir() and (CGROUP_ROOT / "cpu").is_dir():
        version = "v1"
    elif root and (CGROUP_ROOT / "cgroup.controllers").is_file():
        version = "v2"
    netns = root and shutil.which("unshare") is not None and shutil.which("ip") is not None
    return Isolation(version, netns)


class Cgroup:
    """One bot run's cgroup (v1: one directory per controller; v2: one directory)."""

    def __init__(self, version: str, memory_mib: int, cpu_quota: float | None) -> None:
        self.version = version
        name = f"piranhas-check-{secrets.token_hex(4)}"
        self.dirs: dict[str, Path] = {}
        if version == "v1":
            for controller in ("memory", "cpu", "cpuacct", "pids"):
                path = CGROUP_ROOT / controller / name
                if path.resolve() in {d.resolve() for d in self.dirs.values()}:
                    continue
                path.mkdir()
                self.dirs[controller] = path
            limit = str(memory_mib << 20)
            _write(self.dirs["memory"] / "memory.limit_in_bytes", limit)
            memsw = self.dirs["memory"] / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                _write(memsw, limit)
            _write(self.dirs["pids"] / "pids.max", str(PIDS_LIMIT))
            if cpu_quota is not None:
                _write(self.dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(self.dirs["cpu"] / "cpu.cfs_quota_us", str(int(CPU_PERIOD_US * cpu_quota)))
        else:
            with contextlib.suppress(OSError):
                _write(CGROUP_ROOT / "cgroup.subtree_control", "+memory +cpu +pids")
            path = CGROUP_ROOT / name
            path.mkdir()
            self.dirs = {c: path for c in ("memory", "cpu", "cpuacct", "pids")}
            _write(path / "memory.max", str(memory_mib << 20))
            with contextlib.suppress(OSError):
                _write(path / "memory.swap.max", "0")
            _write(path / "pids.max", str(PIDS_LIMIT))
            if cpu_quota is not None:
                _write(path / "cpu.max", f"{int(CPU_PERIOD_US * cpu_quota)} {CPU_PERIOD_US}")

    def procs_files(self) -> list[str]:
        return sorted({str(path / "cgroup.procs") for path in self.dirs.values()})

    def pids(self) -> list[int]:
        text = _read(self.dirs["pids"] / "cgroup.procs")
        return [int(pid) for pid in text.split()]

    def peak_memory(self) -> int:
        name = "memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak"
        return int(_read(self.dirs["memory"] / name) or 0)

    def oom_kills(self) -> int:
        name = "memory.oom_control" if self.version == "v1" else "memory.events"
        for line in _read(self.dirs["memory"] / name).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        if self.version == "v1":
            return 1 if int(_read(self.dirs["memory"] / "memory.failcnt") or 0) else 0
        return 0

    def cpu_ns(self) -> int:
        if self.version == "v1":
            return int(_read(self.dirs["cpuacct"] / "cpuacct.usage") or 0)
        for line in _read(self.dirs["cpu"] / "cpu.stat").splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) * 1000
        return 0

    def kill_all(self) -> None:
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self) -> None:
        self.kill_all()
        for path in set(self.dirs.values()):
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def threads_of(pids: list[int]) -> int:
    count = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            count += len(os.listdir(f"/proc/{pid}/task"))
    return count


@dataclass(frozen=True)
class CpuDemand:
    """A bot's CPU time so far and each live thread's run-queue wait (ns): what it used, and
    how long it was ready to run but waited for a CPU (the other load of this machine, or its
    cgroup's quota). Used plus waited is the CPU it asked for, whatever this machine gave."""

    cpu_ns: int
    waits: dict[int, int]  # thread id -> run-queue wait so far

    def wanted_since(self, earlier: CpuDemand) -> int:
        """CPU time used plus time waited for a CPU, since `earlier` (ns). A thread that ended
        in between takes its wait along (under-counted, never over-counted)."""
        waited = sum(wait - earlier.waits.get(tid, 0) for tid, wait in self.waits.items())
        return self.cpu_ns - earlier.cpu_ns + max(0, waited)


def run_queue_waits(pids: Sequence[int]) -> dict[int, int]:
    """Run-queue wait so far by thread, from /proc/PID/task/TID/schedstat (its second field:
    time runnable but not running; it includes time throttled by a CFS quota)."""
    waits: dict[int, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                path = f"/proc/{pid}/task/{tid}/schedstat"
                with contextlib.suppress(OSError, IndexError, ValueError), open(path) as handle:
                    waits[int(tid)] = int(handle.read().split()[1])
    return waits


def group_pids(pgid: int) -> list[int]:
    """The processes of a process group (the meter without a cgroup)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                found.append(int(entry))
    return found


def command_names(pids: list[int]) -> list[str]:
    names = []
    for pid in pids:
        try:
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            continue
    return names


@dataclass
class RunRecord:
    """What one run of the bot used and left behind (item 6)."""

    label: str
    started: float
    peak_memory: int | None = None  # bytes; None: not measured
    oom_killed: bool = False
    cpu_seconds: float | None = None
    max_threads: int = 0
    max_processes: int = 0
    left_behind: list[str] = field(default_factory=list)  # processes alive after the bot's end
    files_written: int = 0
    bytes_written: int = 0
    exit_status: int | None = None
    log_path: Path | None = None
    cleaned: bool = False  # its processes, cgroup (or container) and directory are gone


class JailPlayer:
    """One bot run in process mode (a runner.players.RunningPlayer)."""

    def __init__(
        self,
        process: ProcessPlayer,
        cgroup: Cgroup | None,
        workdir: Path,
        record: RunRecord,
        reaper: BotReaper | None = None,
    ) -> None:
        self.process = process
        self.reaper = reaper
        self.cgroup = cgroup
        self.workdir = workdir
        self.record = record
        self.before = _snapshot(workdir)
        self.done = False

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    @property
    def exit_reason(self) -> str | None:
        if self.record.oom_killed or (self.cgroup and self.cgroup.oom_kills()):
            return f"killed: out of memory ({MEMORY_MIB} MiB)"
        return None

    def cpu_ns(self) -> int | None:
        if self.cgroup is not None:
            return self.cgroup.cpu_ns()
        total = 0
        for pid in group_pids(self.process.pid):
            with contextlib.suppress(OSError, IndexError):
                with open(f"/proc/{pid}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) * (10**9 // os.sysconf("SC_CLK_TCK"))
        return total

    def demand(self) -> CpuDemand | None:
        cpu = self.cpu_ns()
        if cpu is None:
            return None
        pids = self.cgroup.pids() if self.cgroup is not None else group_pids(self.process.pid)
        return CpuDemand(cpu, run_queue_waits(pids))

    def pids(self) -> list[int]:
        if self.cgroup is not None:
            return self.cgroup.pids()
        return [pid for pid in group_pids(self.process.pid) if pid != self.process.pid]

    def sample(self) -> None:
        """Threads and processes now (the monitor calls this a few times a second)."""
        if self.done:
            return
        pids = self.pids()
        self.record.max_processes = max(self.record.max_processes, len(pids))
        self.record.max_threads = max(self.record.max_threads, threads_of(pids))

    async def wait(self) -> int:
        status = await self.process.wait()
        self._note_leftovers()
        return status

    def _note_leftovers(self) -> None:
        if self.record.exit_status is None and self.process.returncode is not None:
            self.record.exit_status = self.process.returncode
            # The main process has ended: whatever is still in its cgroup (or process group)
            # outlived the bot.
            self.record.left_behind = command_names(self.pids())

    async def stop(self) -> bool:
        running = self.process.returncode is None
        with trio.CancelScope(shield=True):
            if not running:
                self._note_leftovers()
            stopped = await self.process.stop()
            if self.reaper is not None:
                # Children that left the bot's process group (runner.reaper).
                await self.reaper.sweep(self.process)
                self.reaper.forget(self.process)
            self.finish()
        return stopped

    def finish(self) -> None:
        if self.done:
            return
        self.done = True
        record = self.record
        if self.cgroup is not None:
            record.peak_memory = self.cgroup.peak_memory()
            record.oom_killed = record.oom_killed or self.cgroup.oom_kills() > 0
            record.cpu_seconds = self.cgroup.cpu_ns() / 1e9
            self.cgroup.remove()
        after = _snapshot(self.workdir)
        changed = {name: size for name, size in after.items() if self.before.get(name) != size}
        record.files_written = len(changed)
        record.bytes_written = sum(size for size, _ in changed.values())
        shutil.rmtree(self.workdir, ignore_errors=True)
        cgroup_gone = self.cgroup is None or not any(p.exists() for p in self.cgroup.dirs.values())
        alive = group_pids(self.process.pid) if self.cgroup is None else []
        record.cleaned = cgroup_gone and not alive and not self.workdir.exists()


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for path in folder.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                info = path.stat()
                found[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns)
    return found


class JailLauncher:
    """Starts the bot in process mode (a runner.players.PlayerLauncher).

    `socket` is the game server's Unix socket (used inside a network namespace); without a
    namespace the bot is given 127.0.0.1 and the TCP port `launch` gets. `style` is the form
    of the contest arguments (check.contest.contest_arguments); `cpu_quota` throttles the
    bot to that fraction of one CPU (the contest machine's speed)."""

    def __init__(
        self,
        source: BotSource,
        isolation: Isolation,
        socket: Path | None,
        *,
        style: str = "short",
        cpu_quota: float | None = 1.0,
        records: list[RunRecord] | None = None,
        label: str = "",
        reaper: BotReaper | None = None,
    ) -> None:
        self.reaper = reaper
        self.source = source
        self.isolation = isolation
        self.socket = socket
        self.style = style
        self.cpu_quota = cpu_quota
        self.records = records if records is not None else []
        self.label = label
        self.running: list[JailPlayer] = []
        self.on_start: Callable[[JailPlayer], None] | None = None

    async def launch(
        self, name: str, host: str, port: int, reservation: str, log_path: Path
    ) -> JailPlayer:
        workdir = Path(tempfile.mkdtemp(prefix="piranhas-check-run-"))
        if self.source.folder is not None:
            shutil.copytree(self.source.folder, workdir, dirs_exist_ok=True, symlinks=True)
        (workdir / ".tmp").mkdir(exist_ok=True)
        netns = self.isolation.netns and self.socket is not None
        if netns:
            host, port = CONTEST_HOST, CONTEST_PORT
        arguments = contest_arguments(self.style, host, port, reservation)
        command = list(self.source.command)
        if command[0].startswith("./"):
            command[0] = str(workdir / command[0][2:])
        cgroup = None
        rlimits: dict[str, int] = {"NPROC": 4096} if os.geteuid() else {}
        if self.isolation.cgroup:
            cgroup = Cgroup(self.isolation.cgroup, MEMORY_MIB, self.cpu_quota)
        else:
            rlimits["AS"] = MEMORY_MIB << 20
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(workdir),
            "TMPDIR": str(workdir / ".tmp"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
        }
        token_variable = TOKEN_VARIABLE  # the jail passes start_process's token on
        config = {
            "netns": netns,
            "hosts": str(_etc_file("hosts", f"127.0.0.1 localhost {CONTEST_HOST}\n")),
            "resolv": str(_etc_file("resolv.conf", "")),
            "socket": str(self.socket) if netns else None,
            "port": CONTEST_PORT,
            "cwd": str(workdir),
            "env": env,
            "command": [*command, *arguments],
            "cgroups": cgroup.procs_files() if cgroup else [],
            "rlimits": rlimits,
            "cpu": _one_cpu(),
            "token_variable": token_variable,
            "uid": self.isolation.uid,
            "gid": self.isolation.uid,
        }
        if self.isolation.uid is not None:
            _chown_tree(workdir, self.isolation.uid)
        argv = [sys.executable, "-m", "check.jail", json.dumps(config)]
        if netns:
            argv = ["unshare", "--net", "--mount", "--", *argv]
        record = RunRecord(self.label or name, time.monotonic(), log_path=log_path)
        try:
            process = await start_process(argv, log_path, what=f"{name} ({self.source.label})")
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        if self.reaper is not None:
            self.reaper.register(process)
        player = JailPlayer(process, cgroup, workdir, record, self.reaper)
        self.records.append(record)
        self.running.append(player)
        if self.on_start is not None:
            self.on_start(player)
        return player


def _chown_tree(folder: Path, uid: int) -> None:
    """Give the bot's fresh copy to the user it runs as (it must be able to write there)."""
    os.chown(folder, uid, uid)
    for path in folder.rglob("*"):
        os.chown(path, uid, uid, follow_symlinks=False)


_ETC: dict[str, Path] = {}


def _etc_file(name: str, content: str) -> Path:
    """The hosts file and resolv.conf mounted over the real ones in the bot's namespace: one
    folder per check process, removed when it exits."""
    if name not in _ETC:
        if not _ETC:
            folder = Path(tempfile.mkdtemp(prefix="piranhas-check-etc-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
        else:
            folder = next(iter(_ETC.values())).parent
        (folder / name).write_text(content)
        _ETC[name] = folder / name
    return _ETC[name]


_NEXT_CPU = [0]


def _one_cpu() -> int:
    """One core for the bot (the contest's one thread), taken in turn."""
    cores = sorted(os.sched_getaffinity(0))
    core = cores[_NEXT_CPU[0] % len(cores)]
    _NEXT_CPU[0] += 1
    return core
