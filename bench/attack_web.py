"""The web viewer's and the inputs' attacks of `bench.attack` (issue 17): the same probe (10
prepared games between instant bots on the game port) while hostile HTTP and WebSocket
clients work on the viewer, or a hostile league file sits under `--web-league`.

Each scenario starts `python -m cli.server --web-port P --replay-dir D --log-format json`
afresh in a temporary directory (the replay directory and the league file prepared first), runs
its attackers from 127.0.0.2 while the probe plays, then checks what the attack was after:

  replays      30,000 replay files; 4 clients list `GET /api/replays` in a loop
  wsfragments  20 WebSockets on `/ws/game/<room>`, each sending one never-finished 15 MiB
               fragmented message (then holding it); the viewer's memory after they closed
  loginbody    4 clients posting a 300 MB body to `/api/login` (with session and CSRF token)
  loginbrute   8 clients guessing passwords on `/api/login`; afterwards the right password from
               the same address on the web and on the game port's admin login
  sessions     10,050+ cookieless `GET /api/session` after an admin logged in: is the admin's
               session still there?
  gzipbomb     8 clients uploading a 15 KB gzip of 15 MB to `/api/replays/upload` in a loop
  slowbody     300 request bodies at 1 byte every 3 s: when does the viewer let go, and how
               many tracebacks does its log get
  symlink      links in the replay dir to /etc/passwd and /proc/self/environ, fetched in a loop:
               is anything of them served or listed?
  leaguegames  `--web-league` file with games_per_match = 1e9 (re-read every 3 s), its pages
               asked for in a loop
  leagueteams  the same with 3,000 teams

Run through bench.attack: `python -m bench.attack --attacks replays,wsfragments,...`.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11
import trio
import wsproto
import wsproto.events as ws

from bench.attackclient import Client, probe_command
from bench.serverprocess import PASSWORD, ServerProcess, cpu_seconds
from bench.serverprocess import start_server as start_server_process

ATTACKER = "127.0.0.2"  # as bench.attack: the probe's admin stays on 127.0.0.1
REPLAY_FILES = 30_000
WS_SOCKETS = 20
WS_MESSAGE = 15 * 1024 * 1024
LOGIN_BODY = 300_000_000
SLOW_BODIES = 300
SESSION_REQUESTS = 10_050


@dataclass
class Tally:
    """What the attackers saw; `integrity` turns it into the table's last column."""

    answers: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    notes: dict[str, Any] = field(default_factory=dict)
    held: list[float] = field(default_factory=list)  # seconds a slow body was held


@dataclass
class Target:
    """The running server of one scenario."""

    server: ServerProcess
    web_port: int
    workdir: Path
    log: Path
    tally: Tally


# ---------------------------------------------------------------- HTTP and WebSocket clients


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


async def http(
    port: int,
    method: str,
    path: str,
    *,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    local: str | None = ATTACKER,
    timeout: float = 30.0,
) -> Answer:
    """One request on a connection of its own (h11), the whole answer read."""
    with trio.fail_after(timeout):
        stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=local)
        async with stream:
            connection = h11.Connection(h11.CLIENT)
            fields = [("Host", f"127.0.0.1:{port}"), ("Content-Length", str(len(body)))]
            fields += list((headers or {}).items())
            data = connection.send(h11.Request(method=method, target=path, headers=fields))
            data += connection.send(h11.Data(data=body)) if body else b""
            data += connection.send(h11.EndOfMessage())
            await stream.send_all(data)
            status, chunks = 0, []
            answer_headers: dict[str, str] = {}
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    connection.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                    for name, value in event.headers:
                        key = name.decode().lower()
                        joined = answer_headers.get(key)
                        answer_headers[key] = value.decode() + ("; " + joined if joined else "")
                elif isinstance(event, h11.Data):
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    return Answer(status, answer_headers, b"".join(chunks))


@dataclass
class Browser:
    """A session cookie and its CSRF token, as the viewer's pages have them."""

    cookie: str
    csrf: str

    @classmethod
    async def open(cls, port: int, local: str | None = ATTACKER) -> Browser:
        answer = await http(port, "GET", "/api/session", local=local)
        cookie = answer.headers.get("set-cookie", "").split(";", 1)[0]
        return cls(cookie, json.loads(answer.body)["csrf"])

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Cookie": self.cookie, "X-CSRF-Token": self.csrf, **extra}

    async def login(self, port: int, password: str, local: str | None = ATTACKER) -> Answer:
        body = json.dumps({"password": password}).encode()
        headers = self.headers(**{"Content-Type": "application/json"})
        answer = await http(port, "POST", "/api/login", body=body, headers=headers, local=local)
        if answer.status == 200:
            self.cookie = answer.headers.get("set-cookie", self.cookie).split(";", 1)[0]
        return answer


async def raw_request(stream: trio.SocketStream, port: int, head: str) -> None:
    await stream.send_all(f"{head}\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())


def status_of(data: bytes) -> str:
    """The status code of a raw HTTP answer ("closed" when there was none)."""
    if data.startswith(b"HTTP/1.1 ") and len(data) >= 12:
        return data[9:12].decode()
    return "closed"


async def again(attack: Callable[[], Awaitable[None]], tally: Tally) -> None:
    """Run `attack` over and over; a refused or closed connection is counted, not an error."""
    while True:
        try:
            await attack()
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
            tally.answers["connection error"] += 1
            await trio.sleep(0.05)
        except h11.RemoteProtocolError:
            tally.answers["bad answer"] += 1
            await trio.sleep(0.05)


# ---------------------------------------------------------------- the scenarios


async def list_replays(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally

    async def listing() -> None:
        began = time.monotonic()
        answer = await http(target.web_port, "GET", "/api/replays")
        tally.requests += 1
        tally.answers[str(answer.status)] += 1
        tally.held.append(time.monotonic() - began)
        tally.notes["bytes"] = len(answer.body)
        with contextlib.suppress(ValueError, KeyError, TypeError):
            tally.notes["total"] = json.loads(answer.body)["total"]

    for _ in range(4):
        nursery.start_soon(again, listing, tally)


def replays_integrity(target: Target) -> str:
    tally = target.tally
    median = statistics.median(tally.held) * 1000 if tally.held else float("nan")
    return (
        f"{tally.requests} listings (median {median:.0f} ms, {tally.notes.get('bytes', 0)} B, "
        f"{tally.notes.get('total', '?')} of {REPLAY_FILES} files), answers {dict(tally.answers)}"
    )


async def ws_fragments(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally
    room = await prepare_paused_room(target.server.port)
    tally.notes["room"] = room

    async def fragments() -> None:
        stream = await trio.open_tcp_stream("127.0.0.1", target.web_port, local_address=ATTACKER)
        async with stream:
            socket = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
            await stream.send_all(
                socket.send(
                    ws.Request(host=f"127.0.0.1:{target.web_port}", target=f"/ws/game/{room}")
                )
            )
            accepted = False
            while not accepted:
                data = await stream.receive_some(65536)
                if not data:
                    tally.answers["refused"] += 1
                    return
                socket.receive_data(data)
                for event in socket.events():
                    if isinstance(event, ws.AcceptConnection):
                        accepted = True
                    elif isinstance(event, ws.RejectConnection):
                        tally.answers["rejected"] += 1
                        return
            tally.answers["accepted"] += 1
            closed = False

            async def read() -> None:
                nonlocal closed
                while data := await stream.receive_some(65536):
                    socket.receive_data(data)
                    for event in socket.events():
                        if isinstance(event, ws.CloseConnection):
                            tally.answers[f"closed {event.code}"] += 1
                            closed = True
                closed = True

            async with trio.open_nursery() as inner:
                inner.start_soon(read)
                chunk = b"x" * 65536
                sent = 0
                while sent < WS_MESSAGE and not closed:
                    await stream.send_all(
                        socket.send(ws.BytesMessage(chunk, message_finished=False))
                    )
                    sent += len(chunk)
                tally.notes["sent_kib_max"] = max(tally.notes.get("sent_kib_max", 0), sent >> 10)
                while not closed:  # hold the unfinished message
                    await trio.sleep(0.5)
                inner.cancel_scope.cancel()

    for _ in range(WS_SOCKETS):
        nursery.start_soon(again, fragments, tally)


async def prepare_paused_room(port: int) -> str:
    """A paused prepared room (from 127.0.0.1, the admin), for `/ws/game/<room>`."""
    from protocol import GAME_TYPE
    from protocol.events import Authenticate, Prepare, SlotDescriptor
    from protocol.messages import Prepared

    admin = await Client.connect(port)
    await admin.send(Authenticate(PASSWORD))
    slots = (SlotDescriptor("x", True, True), SlotDescriptor("y", True, True))
    await admin.send(Prepare(GAME_TYPE, True, slots))
    while True:
        message = await admin.receive()
        if isinstance(message, Prepared):
            return message.room_id
        if message is None:
            raise SystemExit("prepare for the WebSocket attack failed")


def ws_integrity(target: Target) -> str:
    tally = target.tally
    return (
        f"sockets {dict(tally.answers)}, up to {tally.notes.get('sent_kib_max', 0)} KiB sent on "
        f"one; viewer RSS {tally.notes.get('web_rss_after_mb', '?')} MB 3 s after they closed"
    )


async def login_body(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally

    async def post() -> None:
        browser = await Browser.open(target.web_port)
        stream = await trio.open_tcp_stream("127.0.0.1", target.web_port, local_address=ATTACKER)
        async with stream:
            head = (
                f"POST /api/login HTTP/1.1\r\nHost: 127.0.0.1:{target.web_port}\r\n"
                f"Cookie: {browser.cookie}\r\nX-CSRF-Token: {browser.csrf}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {LOGIN_BODY}\r\n\r\n"
            )
            await stream.send_all(head.encode() + b'{"password": "')
            answer = b""
            sent = 0

            async def read() -> None:
                nonlocal answer
                with contextlib.suppress(OSError, trio.BrokenResourceError):
                    while data := await stream.receive_some(65536):
                        answer += data

            async with trio.open_nursery() as inner:
                inner.start_soon(read)
                chunk = b"a" * (1 << 20)
                with contextlib.suppress(OSError, trio.BrokenResourceError):
                    while sent < LOGIN_BODY and not answer:
                        await stream.send_all(chunk)
                        sent += len(chunk)
                with trio.move_on_after(5):
                    while not answer:
                        await trio.sleep(0.05)
                inner.cancel_scope.cancel()
            tally.requests += 1
            tally.answers[status_of(answer)] += 1
            tally.held.append(sent / 1e6)

    for _ in range(4):
        nursery.start_soon(again, post, tally)


def login_body_integrity(target: Target) -> str:
    tally = target.tally
    most = max(tally.held, default=0.0)
    return f"{tally.requests} bodies, answers {dict(tally.answers)}, at most {most:.0f} MB sent"


async def login_brute(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally
    tally.notes["began"] = time.monotonic()

    async def guess() -> None:
        browser = await Browser.open(target.web_port)
        for attempt in range(10**9):
            answer = await browser.login(target.web_port, f"guess{attempt}")
            tally.requests += 1
            tally.answers[str(answer.status)] += 1

    for _ in range(8):
        nursery.start_soon(again, guess, tally)


async def login_brute_after(target: Target) -> None:
    tally = target.tally
    tally.notes["seconds"] = time.monotonic() - tally.notes["began"]
    browser = await Browser.open(target.web_port)
    tally.notes["web right password"] = (await browser.login(target.web_port, PASSWORD)).status
    tally.notes["tcp right password"] = await tcp_admin_login(target.server.port, ATTACKER)


async def tcp_admin_login(port: int, local: str) -> str:
    """The game port's admin login from `local`: "accepted" or "refused"."""
    stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=local)
    async with stream:
        await stream.send_all(f'<protocol><authenticate password="{PASSWORD}"/>'.encode())
        # An accepted login is answered by nothing; ask for something that needs it.
        await stream.send_all(b'<prepare gameType="swc_2026_piranhas"><slot/><slot/></prepare>')
        answer = b""
        with trio.move_on_after(15):
            while b"prepared" not in answer and b"error" not in answer.lower():
                data = await stream.receive_some(65536)
                if not data:
                    break
                answer += data
    return "accepted" if b"prepared" in answer else "refused"


def login_brute_integrity(target: Target) -> str:
    tally = target.tally
    seconds = tally.notes.get("seconds", 1.0)
    return (
        f"{tally.requests} guesses in {seconds:.0f} s ({tally.requests / seconds:.1f}/s), "
        f"answers {dict(tally.answers)}; then the right password from that address: web "
        f"{tally.notes.get('web right password')}, "
        f"game port {tally.notes.get('tcp right password')}"
    )


async def sessions(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally
    admin = await Browser.open(target.web_port, local=None)
    tally.notes["admin login"] = (await admin.login(target.web_port, PASSWORD, local=None)).status
    tally.notes["admin"] = admin

    async def anonymous() -> None:
        answer = await http(target.web_port, "GET", "/api/session")
        tally.requests += 1
        tally.answers[str(answer.status)] += 1

    for _ in range(30):
        nursery.start_soon(again, anonymous, tally)


async def sessions_after(target: Target) -> None:
    tally = target.tally
    while tally.requests < SESSION_REQUESTS:  # at least as many as the issue's
        async with trio.open_nursery() as nursery:
            for _ in range(30):
                nursery.start_soon(again_count, target, SESSION_REQUESTS)
    admin: Browser = tally.notes.pop("admin")
    answer = await http(target.web_port, "GET", "/api/session", headers=admin.headers(), local=None)
    with contextlib.suppress(ValueError, KeyError):
        tally.notes["admin kept"] = bool(json.loads(answer.body)["admin"])


async def again_count(target: Target, until: int) -> None:
    tally = target.tally
    while tally.requests < until:
        try:
            answer = await http(target.web_port, "GET", "/api/session")
            tally.answers[str(answer.status)] += 1
        except (OSError, trio.BrokenResourceError, trio.TooSlowError):
            tally.answers["connection error"] += 1
        tally.requests += 1


def sessions_integrity(target: Target) -> str:
    tally = target.tally
    kept = tally.notes.get("admin kept")
    return (
        f"{tally.requests} cookieless sessions, answers {dict(tally.answers)}; admin "
        f"(login {tally.notes.get('admin login')}) still logged in after: {kept}"
    )


BOMB = gzip.compress(b"<protocol>" + b" " * 15_000_000, 9)


async def gzip_bomb(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally
    tally.notes["bomb_kb"] = len(BOMB) // 1024

    async def upload() -> None:
        began = time.monotonic()
        answer = await http(target.web_port, "POST", "/api/replays/upload", body=BOMB, timeout=60)
        tally.requests += 1
        tally.answers[str(answer.status)] += 1
        tally.held.append(time.monotonic() - began)

    for _ in range(8):
        nursery.start_soon(again, upload, tally)


def gzip_integrity(target: Target) -> str:
    tally = target.tally
    median = statistics.median(tally.held) if tally.held else float("nan")
    return (
        f"{tally.requests} uploads of {tally.notes.get('bomb_kb')} KB (15 MB inside), "
        f"median {median:.2f} s, answers {dict(tally.answers)}"
    )


async def slow_body(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally

    async def trickle() -> None:
        stream = await trio.open_tcp_stream("127.0.0.1", target.web_port, local_address=ATTACKER)
        began = time.monotonic()
        async with stream:
            head = (
                f"POST /api/replays/upload HTTP/1.1\r\nHost: 127.0.0.1:{target.web_port}\r\n"
                "Content-Length: 100000\r\n\r\n"
            )
            await stream.send_all(head.encode())
            answer = b""

            async def read() -> None:
                nonlocal answer
                with contextlib.suppress(OSError, trio.BrokenResourceError):
                    while data := await stream.receive_some(65536):
                        answer += data
                answer += b"" if answer else b"-"  # closed without an answer

            async with trio.open_nursery() as inner:
                inner.start_soon(read)
                with contextlib.suppress(OSError, trio.BrokenResourceError):
                    while not answer:
                        await stream.send_all(b"x")
                        with trio.move_on_after(3):
                            while not answer:
                                await trio.sleep(0.1)
                inner.cancel_scope.cancel()
        tally.held.append(time.monotonic() - began)
        tally.answers[status_of(answer)] += 1
        tally.requests += 1

    for _ in range(SLOW_BODIES):
        nursery.start_soon(again, trickle, tally)


async def slow_body_after(target: Target) -> None:
    """Wait (at most 45 s) until every trickling body has been let go once."""
    with trio.move_on_after(45):
        while target.tally.requests < SLOW_BODIES:
            await trio.sleep(0.5)


def slow_integrity(target: Target) -> str:
    tally = target.tally
    held = sorted(tally.held)
    median = statistics.median(held) if held else float("nan")
    return (
        f"{tally.requests} bodies let go (median {median:.0f} s, "
        f"max {max(held, default=0):.0f} s), "
        f"answers {dict(tally.answers)}; tracebacks in the log: {tally.notes.get('tracebacks')}"
    )


def symlink_setup(replays: Path) -> None:
    (replays / "passwd.xml").symlink_to("/etc/passwd")
    (replays / "environ.xml").symlink_to("/proc/self/environ")


SECRET_MARKS = (b"root:x:", b"PATH=", b"PIRANHAS_BENCH_SECRET")


async def symlinks(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally

    async def fetch() -> None:
        for path in ("/api/replays/passwd.xml", "/api/replays/environ.xml", "/api/replays"):
            answer = await http(target.web_port, "GET", path)
            tally.requests += 1
            tally.answers[str(answer.status)] += 1
            if any(mark in answer.body for mark in SECRET_MARKS):
                tally.answers["LEAKED"] += 1
            if path == "/api/replays" and b"passwd.xml" in answer.body:
                tally.answers["link listed"] += 1

    for _ in range(4):
        nursery.start_soon(again, fetch, tally)


def symlink_integrity(target: Target) -> str:
    tally = target.tally
    leaked = tally.answers.get("LEAKED", 0) + tally.answers.get("link listed", 0)
    return f"{tally.requests} requests, leaked or listed {leaked}, answers {dict(tally.answers)}"


def league_file(teams: int, games: int) -> str:
    lines = ['name = "Attack"', f"games_per_match = {games}"]
    for index in range(teams):
        lines += ["[[teams]]", f'id = "t{index}"', 'command = "bot"']
    return "\n".join(lines) + "\n"


async def league_pages(target: Target, nursery: trio.Nursery) -> None:
    tally = target.tally

    async def page() -> None:
        answer = await http(target.web_port, "GET", "/api/league")
        tally.requests += 1
        tally.answers[str(answer.status)] += 1
        tally.notes["said"] = answer.body[:160].decode(errors="replace")
        await trio.sleep(0.2)

    for _ in range(2):
        nursery.start_soon(again, page, tally)


def league_integrity(target: Target) -> str:
    tally = target.tally
    with contextlib.suppress(OSError):
        for line in target.log.read_text(errors="replace").splitlines():
            if "liga.toml:" in line:
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    line = str(entry.get("error") or entry.get("event"))
                tally.notes["said"] = line[line.rindex("liga.toml:") :][:140]
                break
    return (
        f"{tally.requests} league pages, answers {dict(tally.answers)}: {tally.notes.get('said')!r}"
    )


@dataclass(frozen=True)
class WebScenario:
    connections: int
    attack: Callable[[Target, trio.Nursery], Awaitable[None]]
    integrity: Callable[[Target], str]
    after: Callable[[Target], Awaitable[None]] | None = None  # while the server still runs
    setup: Callable[[Path], None] | None = None  # the replay directory
    league: str | None = None  # a --web-league file's text


WEB_SCENARIOS: dict[str, WebScenario] = {
    "replays": WebScenario(4, list_replays, replays_integrity),
    "wsfragments": WebScenario(WS_SOCKETS, ws_fragments, ws_integrity),
    "loginbody": WebScenario(4, login_body, login_body_integrity),
    "loginbrute": WebScenario(8, login_brute, login_brute_integrity, after=login_brute_after),
    "sessions": WebScenario(30, sessions, sessions_integrity, after=sessions_after),
    "gzipbomb": WebScenario(8, gzip_bomb, gzip_integrity),
    "slowbody": WebScenario(SLOW_BODIES, slow_body, slow_integrity, after=slow_body_after),
    "symlink": WebScenario(4, symlinks, symlink_integrity, setup=symlink_setup),
    "leaguegames": WebScenario(
        2, league_pages, league_integrity, league=league_file(4, 1_000_000_000)
    ),
    "leagueteams": WebScenario(2, league_pages, league_integrity, league=league_file(3000, 6)),
}


def make_replays(directory: Path, count: int) -> None:
    """`count` small replay files (the listing reads names and sizes, not contents)."""
    content = b'<protocol><room roomId="r"><data class="memento"/></room></protocol>\n'
    for index in range(count):
        (directory / f"bench-{index:05d}.xml").write_bytes(content)


def descendants(pid: int) -> list[int]:
    """The process ids of `pid`'s children and theirs (the viewer is the server's child)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                found += [int(child), *descendants(int(child))]
    return found


def memory_mb(pid: int, field_name: str = "VmHWM") -> float:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field_name}:"):
                return int(line.split()[1]) / 1024
    return 0.0


def tracebacks(log: Path) -> int:
    with contextlib.suppress(OSError):
        return log.read_bytes().count(b"Traceback")
    return 0


async def run_web_scenario(name: str, args: argparse.Namespace) -> dict[str, object]:
    """One web or input scenario: the server with its viewer, the attack, the probe."""

    scenario = WEB_SCENARIOS[name]
    workdir = Path(tempfile.mkdtemp(prefix="bench-attack-web-"))
    replays, log = workdir / "replays", workdir / "server.log"
    replays.mkdir()
    if name == "replays":
        await trio.to_thread.run_sync(make_replays, replays, REPLAY_FILES)
    if scenario.setup is not None:
        scenario.setup(replays)
    extra = ["--replay-dir", str(replays), "--log-format", "json"]
    if scenario.league is not None:
        (workdir / "liga.toml").write_text(scenario.league)
        extra += ["--web-league", str(workdir / "liga.toml")]
    os.environ["PIRANHAS_BENCH_SECRET"] = "1"  # what /proc/self/environ would leak
    server = start_server_process(extra, cwd=workdir, root=args.server_root, log=log, web=True)
    try:
        assert server.web_port is not None
        target = Target(server, server.web_port, workdir, log, Tally())
        viewers = descendants(server.pid)
        cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()
        async with trio.open_nursery() as nursery:
            await scenario.attack(target, nursery)
            await trio.sleep(args.warmup)
            probe = await trio.run_process(
                probe_command(args, server.port), capture_stdout=True, check=True
            )
            cpu = (cpu_seconds(server.pid) - cpu_before) / (time.monotonic() - wall_before)
            if scenario.after is not None:
                await scenario.after(target)
            nursery.cancel_scope.cancel()
        rss = memory_mb(server.pid)
        web_rss = max((memory_mb(pid) for pid in viewers), default=0.0)
        await trio.sleep(3)  # the attackers are gone: is the memory given back?
        # A viewer in the server's own process (older versions): the server's memory.
        target.tally.notes["web_rss_after_mb"] = round(
            max(memory_mb(pid, "VmRSS") for pid in viewers or [server.pid])
        )
        target.tally.notes["tracebacks"] = tracebacks(log)
        result: dict[str, object] = json.loads(probe.stdout)
        if viewers:
            result["web_rss_mb"] = round(web_rss)
        result.update(
            attack=name,
            connections=scenario.connections,
            rss_mb=round(rss),
            cpu=round(cpu, 2),
            integrity=scenario.integrity(target),
            tracebacks=target.tally.notes["tracebacks"],
        )
        return result
    finally:
        os.environ.pop("PIRANHAS_BENCH_SECRET", None)
        server.__exit__(None, None, None)
        shutil.rmtree(workdir, ignore_errors=True)
