"""Admission limits (issue 9): connections, rooms and admin logins are bounded; reaching a
limit is logged once per episode; the server keeps descriptors to record results."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, MutableMapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio
import trio.testing

from protocol.events import (
    Authenticate,
    CancelRequest,
    Join,
    JoinPrepared,
    JoinRoom,
    Observe,
    Prepare,
    SlotDescriptor,
)
from protocol.messages import ErrorPacket, Joined, Prepared, ResultMessage, ServerMessage
from server import limits
from server.app import accept_from, serve
from server.config import Settings
from server.limits import (
    DESCRIPTOR_RESERVE,
    EPISODE_QUIET_SECONDS,
    Episode,
    address_key,
    connection_cap,
    is_loopback,
)
from server.lobby import MAX_HELD_PACKETS, DisconnectCause
from tests.helpers.lobby import Harness, HarnessFactory
from tests.helpers.rawclient import RawClient, ServerClosed

PASSWORD = "secret"
AUTH_FAILED = "sc.server.network.AuthenticationFailedException: "
LIMIT = 20  # seconds for any I/O test


def error_text(message: ServerMessage) -> str:
    assert isinstance(message, ErrorPacket), message
    return message.message


def events(logs: Sequence[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == event]


# ------------------------------------------------------------------------------ admin logins


async def login_harness(make_harness: HarnessFactory, **overrides: Any) -> Harness:
    settings: dict[str, Any] = {
        "password": PASSWORD,
        "login_failures": 3,
        "login_failure_window": 60.0,
        "login_lockout": 100.0,
        "login_failure_delay": 1.0,
    }
    settings.update(overrides)
    harness: Harness = await make_harness(**settings)
    return harness


async def test_a_failed_login_is_answered_late_and_in_order_without_blocking_others(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness = await login_harness(make_harness)
    guesser, player = harness.peer("guesser"), harness.peer("player")
    harness.send(guesser, Authenticate("wrong"))
    harness.send(guesser, Observe("r"))  # must be answered after the login failure
    harness.send(player, Join())
    assert guesser.messages == []
    assert isinstance(player.messages[0], Joined)  # the lobby went on meanwhile
    await trio.sleep(0.999)
    assert guesser.messages == []
    await trio.sleep(0.002)
    first, second = guesser.take()
    assert first == ErrorPacket(
        AUTH_FAILED + "Failed to authenticate as administrator", Authenticate("wrong")
    )
    assert isinstance(second, ErrorPacket) and second.original_request == Observe("r")


async def test_repeated_failures_lock_the_address_out_without_comparing(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness = await login_harness(make_harness)
    with structlog.testing.capture_logs() as logs:
        guesser = harness.peer("10.0.0.1")
        for _ in range(3):
            harness.send(guesser, Authenticate("wrong"))
        await trio.sleep(3.5)
        assert len(guesser.take()) == 3
        # Locked out: even the right password is refused, at once, without a lookup.
        for _ in range(50):
            harness.send(guesser, Authenticate(PASSWORD))
        answers = guesser.take()
        assert len(answers) == 50
        assert all(
            isinstance(answer, ErrorPacket) and "Too many failed logins" in answer.message
            for answer in answers
        )
        harness.send(guesser, Observe("r"))
        assert "requires authentication" in error_text(guesser.take()[0])
        # Another address is not affected.
        other = harness.peer("10.0.0.2")
        harness.send(other, Authenticate(PASSWORD))
        harness.send(other, Observe("nope"))
        assert "Couldn't find a room" in error_text(other.take()[0])
        await trio.sleep(100)
        harness.send(guesser, Authenticate(PASSWORD))
        harness.send(guesser, Observe("nope"))
        assert "Couldn't find a room" in error_text(guesser.take()[0])
    # Once per episode: three failures, one lockout, one end with the number refused.
    assert len(events(logs, "admin login failed")) == 2
    locked = events(logs, "admin login locked out: too many failures")
    assert len(locked) == 1 and locked[0]["log_level"] == "warning"
    over = events(logs, "admin login lockout over")
    assert len(over) == 1 and over[0]["refused"] == 50
    refused = events(logs, "admin login refused: address locked out")
    assert len(refused) == 50 and all(entry["log_level"] == "debug" for entry in refused)


async def test_failures_outside_the_window_do_not_add_up(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness = await login_harness(make_harness, login_failure_delay=0)
    guesser = harness.peer("10.0.0.3")
    for _ in range(5):
        harness.send(guesser, Authenticate("wrong"))
        await trio.sleep(31)  # two failures per 60 s window at most
    harness.send(guesser, Authenticate(PASSWORD))
    harness.send(guesser, Observe("nope"))
    last = guesser.messages[-1]
    assert isinstance(last, ErrorPacket)
    assert "Couldn't find a room" in last.message


async def test_a_connection_that_floods_during_the_delay_is_closed(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness = await login_harness(make_harness)
    guesser = harness.peer("flood")
    harness.send(guesser, Authenticate("wrong"))
    for _ in range(MAX_HELD_PACKETS):
        harness.send(guesser, Observe("r"))
    assert not guesser.closed
    harness.send(guesser, Observe("r"))
    assert guesser.closed


# ------------------------------------------------------------------------------ rooms


async def test_rooms_per_connection_are_capped_and_logged_once(
    make_harness: HarnessFactory,
) -> None:
    harness: Harness = await make_harness(max_rooms_per_connection=2)
    junk = harness.peer("junk")
    with structlog.testing.capture_logs() as logs:
        for _ in range(4):  # both sides of two games
            harness.send(junk, Join())
        assert len(junk.of(Joined)) == 4
        assert len(harness.lobby.rooms) == 2
        for _ in range(10):
            harness.send(junk, Join())
    refusals = junk.of(ErrorPacket)
    assert len(refusals) == 10
    assert "already in 2 rooms, the server allows 2" in refusals[0].message
    assert refusals[0].message.startswith("sc.api.plugins.exceptions.GameRoomException: ")
    assert len(harness.lobby.rooms) == 2
    assert len(events(logs, "room limit per connection reached: refusing joins")) == 1
    assert all(entry["log_level"] == "debug" for entry in events(logs, "request refused"))
    # Another connection is not affected.
    other = harness.peer("other")
    harness.send(other, Join())
    assert other.of(Joined)


async def test_open_rooms_are_capped(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness(max_rooms=2)
    peers = [harness.peer(f"p{index}") for index in range(6)]
    with structlog.testing.capture_logs() as logs:
        for peer in peers:
            harness.send(peer, Join())
    assert [bool(peer.of(Joined)) for peer in peers] == [True] * 4 + [False] * 2
    assert "2 open rooms, its limit" in peers[4].of(ErrorPacket)[0].message
    assert len(events(logs, "room limit reached: refusing new rooms")) == 1
    # A room that ends makes room again; the episode's end is logged with its refusals.
    harness.send(peers[0], JoinRoom("x"))  # noise: refused, not a room
    harness.lobby.disconnect(peers[0], DisconnectCause.LOST_CONNECTION)
    await harness.settle()
    await trio.sleep(EPISODE_QUIET_SECONDS)
    with structlog.testing.capture_logs() as logs:
        harness.send(peers[4], Join())
    assert peers[4].of(Joined)
    over = events(logs, "room limit reached: refusing new rooms: over")
    assert len(over) == 1 and over[0]["refused"] == 2


async def test_prepared_rooms_are_capped(make_harness: HarnessFactory) -> None:
    harness: Harness = await make_harness(password=PASSWORD, max_prepared_rooms=2)
    admin = harness.peer("admin")
    harness.send(admin, Authenticate(PASSWORD))
    prepare = Prepare("swc_2026_piranhas", False, (SlotDescriptor("a", True, True),) * 2)
    with structlog.testing.capture_logs() as logs:
        for _ in range(5):
            harness.send(admin, prepare)
    assert len(admin.of(Prepared)) == 2
    refusals = admin.of(ErrorPacket)
    assert len(refusals) == 3
    assert "2 prepared rooms that have not started" in refusals[0].message
    assert refusals[0].original_request == prepare
    assert len(events(logs, "prepared room limit reached: refusing <prepare>")) == 1
    # Playing one of them frees a place.
    codes = admin.of(Prepared)[0].reservations
    for code in codes:
        harness.send(harness.peer(code), JoinPrepared(code))
    harness.send(admin, prepare)
    assert len(admin.of(Prepared)) == 3
    # Full again; a cancelled one frees a place too, and rooms made by <join> never count.
    harness.send(admin, prepare)
    assert len(admin.of(ErrorPacket)) == 4
    harness.send(admin, CancelRequest(admin.of(Prepared)[1].room_id))
    for name in ("x", "y", "z"):
        harness.send(harness.peer(name), Join())
    harness.send(admin, prepare)
    assert len(admin.of(Prepared)) == 4
    harness.send(admin, prepare)
    assert len(admin.of(ErrorPacket)) == 5


# ------------------------------------------------------------------------------ health probe


async def test_the_health_probe_is_quiet_and_real_clients_are_not(
    make_harness: HarnessFactory,
) -> None:
    harness: Harness = await make_harness()
    with structlog.testing.capture_logs() as logs:
        probe = harness.peer("probe")
        harness.send(probe, JoinRoom("healthcheck-0f6c"))
        first = probe.messages[0]
        assert isinstance(first, ErrorPacket)
        assert "Couldn't find a room with id healthcheck-0f6c" in first.message
        harness.lobby.disconnect(probe, DisconnectCause.RECEIVED_DISCONNECT)
        client = harness.peer("client")
        harness.send(client, JoinRoom("no-such-room"))
        harness.lobby.disconnect(client, DisconnectCause.RECEIVED_DISCONNECT)
    at_info = [entry for entry in logs if entry["log_level"] != "debug"]
    assert [entry["event"] for entry in at_info] == ["request refused", "connection closed"]
    assert all(entry["peer"] == "client" for entry in at_info)


async def test_a_real_health_probe_logs_nothing_at_info() -> None:
    from server import healthcheck
    from server.lobby import HEALTHCHECK_ROOM_PREFIX

    assert healthcheck.ROOM_PREFIX == HEALTHCHECK_ROOM_PREFIX
    with trio.fail_after(LIMIT):
        async with running_server() as port:
            with structlog.testing.capture_logs() as logs:
                for _ in range(3):
                    await trio.to_thread.run_sync(healthcheck.probe, "127.0.0.1", port, 5.0)
                # The server handles the probe's <close/> after the probe returned.
                while len(events(logs, "connection closed")) < 3:
                    await trio.sleep(0.01)
    assert [entry for entry in logs if entry["log_level"] != "debug"] == []


# ------------------------------------------------------------------------------ connections


@asynccontextmanager
async def running_server(**overrides: Any) -> AsyncIterator[int]:
    settings = replace(Settings(host="127.0.0.1", port=0, password=PASSWORD), **overrides)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:

        async def run(task_status: trio.TaskStatus[int]) -> None:
            await serve(settings, task_status=task_status, stop=stop, handle_signals=False)

        port: int = await nursery.start(run)
        yield port
        stop.set()


async def assert_refused(client: RawClient, text: str) -> None:
    message = await client.expect(ErrorPacket)
    assert text in message.message
    with pytest.raises((ServerClosed, trio.BrokenResourceError)):
        await client.receive()


async def test_connections_per_address_are_capped_and_freed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "EPISODE_QUIET_SECONDS", 0.0)
    with structlog.testing.capture_logs() as logs, trio.fail_after(LIMIT):
        async with running_server(
            max_connections_per_address=3, per_address_limit_on_loopback=True
        ) as port:
            admitted = [await RawClient.connect(port) for _ in range(3)]
            for client in admitted:  # each really is served
                await client.send(JoinRoom("x"))
                await client.expect(ErrorPacket)
            for _ in range(4):
                await assert_refused(
                    await RawClient.connect(port), "Too many connections from 127.0.0.1"
                )
            await admitted.pop().aclose()
            # The server notices the close; then a new connection is served again.
            while True:
                client = await RawClient.connect(port)
                await client.send(JoinRoom("x"))
                message = await client.expect(ErrorPacket)
                if "Couldn't find" in message.message:
                    break
                await trio.sleep(0.01)
    reached = events(logs, "connection limit per address reached: refusing connections")
    assert len(reached) == 1 and reached[0]["cap"] == 3
    over = events(logs, "connection limit per address reached: refusing connections: over")
    assert len(over) == 1 and over[0]["refused"] >= 4


async def test_loopback_is_exempt_from_the_per_address_cap_by_default() -> None:
    with trio.fail_after(LIMIT):
        async with running_server(max_connections_per_address=2) as port:
            clients = [await RawClient.connect(port) for _ in range(4)]
            for client in clients:
                await client.send(JoinRoom("x"))
                assert "Couldn't find" in (await client.expect(ErrorPacket)).message


async def test_total_connections_are_capped() -> None:
    with structlog.testing.capture_logs() as logs, trio.fail_after(LIMIT):
        async with running_server(max_connections=2) as port:
            clients = [await RawClient.connect(port) for _ in range(2)]
            for client in clients:
                await client.send(JoinRoom("x"))
                await client.expect(ErrorPacket)
            for _ in range(3):
                await assert_refused(await RawClient.connect(port), "the server accepts 2 at once")
    assert len(events(logs, "connection limit reached: refusing connections")) == 1


def test_connection_cap_keeps_a_descriptor_reserve() -> None:
    assert connection_cap(1000, 1024) == 1024 - DESCRIPTOR_RESERVE
    assert connection_cap(1000, 1_048_576) == 1000
    assert connection_cap(1000, 10) == 1


def test_addresses_are_counted_as_one_whatever_their_spelling() -> None:
    assert address_key("::ffff:10.1.2.3") == "10.1.2.3"
    assert is_loopback("127.0.0.5") and is_loopback("::1") and is_loopback("::ffff:127.0.0.1")
    assert not is_loopback("10.0.0.1") and not is_loopback("")


class _ExhaustedListener:
    """accept() fails with EMFILE in the given rounds of calls; otherwise it takes the
    connection `arrive` announced (a byte on `readable`, the descriptor a fresh socket)."""

    def __init__(self, *rounds: range) -> None:
        self.rounds = rounds
        self.calls = 0
        self.readable, self._announce = socket.socketpair()
        self.readable.setblocking(False)
        self.taken = trio.Event()

    def accept(self) -> tuple[int, str]:
        self.calls += 1
        if any(self.calls in failing for failing in self.rounds):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        self.readable.recv(1)  # (BlockingIOError when nothing arrived)
        self.taken.set()
        one, two = socket.socketpair()
        two.close()
        return one.detach(), ""

    def close(self) -> None:
        self.readable.close()
        self._announce.close()

    async def arrive(self) -> None:
        """A new connection now, and then a second after each one accepted."""
        while True:
            self._announce.send(b"x")
            await self.taken.wait()
            self.taken = trio.Event()
            await trio.sleep(1)


async def test_descriptor_exhaustion_is_logged_once_and_accepting_recovers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # 50 failures, one connection, 30 failures more (descriptors at the edge: one episode,
    # not two), then connections every second: the episode ends 10 s after the last failure.
    listener = _ExhaustedListener(range(1, 51), range(52, 82))
    admitted: list[object] = []

    def admit(sock: socket.socket, host: str, name: str) -> None:
        assert (host, name) == ("unix", "unix") and not sock.getblocking()
        sock.close()
        admitted.append(listener.calls)

    exhausted = Episode("out of descriptors: not accepting connections")
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.arrive)
            nursery.start_soon(accept_from, listener.readable, listener.accept, admit, exhausted)
            await trio.sleep(30)
            nursery.cancel_scope.cancel()
    listener.close()
    assert admitted[0] == 51 and admitted[1:4] == [82, 83, 84]  # accepting recovered at once
    assert [entry["event"] for entry in logs] == [
        "out of descriptors: not accepting connections",
        "out of descriptors: not accepting connections: over",
    ]
    assert logs[0]["log_level"] == "warning" and logs[1]["refused"] == 80


# ------------------------------------------------------------------------------ subprocesses


def _limit_descriptors(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


async def _start_server(tmp_path: Path, *arguments: str, descriptors: int | None = None) -> Any:
    (tmp_path / "server.properties").write_text("password=pw\n", encoding="utf-8")
    return await trio.lowlevel.open_process(
        [sys.executable, "-m", "cli.server", "--log-format", "json", *arguments],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=None if descriptors is None else (lambda: _limit_descriptors(descriptors)),
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


async def _read_log_until(process: Any, event: str, output: bytearray) -> dict[str, Any]:
    while True:
        for line in bytes(output).splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("event") == event:
                return dict(entry)
        chunk = await process.stderr.receive_some(65536)
        assert chunk, f"server ended before {event!r}: {bytes(output[-2000:])!r}"
        output += chunk


async def test_descriptor_flood_cannot_lock_out_clients_or_lose_results(tmp_path: Path) -> None:
    """With 128 descriptors, idle connections get at most 128 - 64; a game ending meanwhile is
    recorded, refused clients get an answer, and nothing is logged per refusal."""
    results = tmp_path / "results.jsonl"
    output = bytearray()
    with trio.fail_after(LIMIT):
        process = await _start_server(
            tmp_path, "--port", "0", "--results", str(results), descriptors=128
        )
        try:
            listening = await _read_log_until(process, "listening", output)
            port = listening["port"]
            assert listening["max_connections"] == 128 - DESCRIPTOR_RESERVE
            one, two = await RawClient.connect(port), await RawClient.connect(port)
            await one.send(Join())
            await two.send(Join())
            room_id = (await one.expect(Joined)).room_id
            flood = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
            # The cap is reached: a new client is answered and closed, not left hanging.
            late = await RawClient.connect(port)
            await assert_refused(late, "Too many connections")
            # The running game ends (a player leaves) and is recorded all the same.
            await one.aclose()
            await two.receive_until(ResultMessage)
            with trio.fail_after(5):
                while not results.exists() or not results.read_text(encoding="utf-8"):
                    await trio.sleep(0.05)
            record = json.loads(results.read_text(encoding="utf-8").splitlines()[0])
            assert record["room"] == room_id
            for sock in flood:
                sock.close()
        finally:
            process.terminate()
            with trio.move_on_after(10):
                async for chunk in process.stderr:
                    output += chunk
            await process.wait()
    text = output.decode("utf-8", "replace")
    assert "Traceback" not in text
    assert text.count('connection limit reached: refusing connections"') == 1
    assert process.returncode == 0


def _queues(port: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(tx_queue, rx_queue) of every loopback TCP socket of `port`, by (local, remote) port."""
    found: dict[tuple[int, int], tuple[int, int]] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = (int(address.rsplit(":", 1)[1], 16) for address in fields[1:3])
        if port in (local, remote):
            tx_queue, rx_queue = (int(value, 16) for value in fields[4].split(":"))
            found[local, remote] = tx_queue, rx_queue
    return found


async def test_a_second_sigterm_during_shutdown_still_stops_cleanly(tmp_path: Path) -> None:
    """A client that reads nothing keeps the shutdown waiting for it; a second SIGTERM then
    ends the wait at once (not at the grace's deadline), instead of killing the process
    (status 0, "server stopped" logged)."""
    output = bytearray()

    async def drain() -> None:  # the server must never block on a full stderr pipe
        async for chunk in process.stderr:
            output.extend(chunk)

    async def wait_for(event: str) -> None:
        while f'"event": "{event}"'.encode() not in output:
            await trio.sleep(0.02)

    # Errorpackets echo each request: a megabyte of answers nobody reads, where the kernel
    # queues only some 16 kB towards a client whose window is 4 KiB: the server is left
    # with answers that cannot go out.
    request = f'<joinRoom roomId="{"x" * 8000}"/>'.encode()
    payload = b"<protocol>" + request * 250
    enough = len(payload) // 2
    sent = 0

    async def flood(stream: trio.SocketStream) -> None:
        nonlocal sent
        view = memoryview(payload)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            while sent < len(payload):
                sent += await stream.socket.send(view[sent : sent + 65536])

    # A guard against a hang only (a loaded machine read 150 kB/s of the flood): the test
    # waits for what it needs, never for a time.
    with trio.fail_after(LIMIT * 3):
        # Limits out of the way: this client is meant to keep the shutdown waiting.
        process = await _start_server(
            tmp_path,
            "--port",
            "0",
            "--send-buffer-messages",
            "100000",
            "--send-buffer-bytes",
            "100000000",
            "--max-refusals",
            "100000",
            # A loaded machine reads the flood slowly: the first answer must not expire first.
            "--send-deadline",
            "3600",
        )
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain)
                await wait_for("listening")
                port = json.loads(
                    next(line for line in output.splitlines() if b'"listening"' in line)
                )["port"]
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect(("127.0.0.1", port))
                mine = sock.getsockname()[1]
                stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
                nursery.start_soon(flood, stream)
                # What the server has read (so answered): sent, less what is still queued in
                # this client's socket and in the server's receive queue.
                while True:
                    queues = _queues(port)
                    assert (port, mine) in queues, bytes(output).decode()  # not disconnected
                    unsent = queues.get((mine, port), (0, 0))[0]
                    unread = queues.get((port, mine), (0, 0))[1]
                    if sent - unsent - unread >= enough:
                        break
                    await trio.sleep(0.05)
                process.terminate()
                # Signals that arrive together are delivered once: the second comes after
                # the first was taken (the shutdown began). The server may not be in its wait
                # for clients yet; the second signal ends that wait all the same.
                await wait_for("shutting down")
                process.terminate()
                assert await process.wait() == 0
                await wait_for("server stopped")
                await stream.aclose()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert b"signal received again" in output
    # The second signal ended the wait (the server's own clock: before the grace's deadline);
    # without it the wait would have ended at that deadline all the same, status 0.
    entries = [json.loads(line) for line in output.splitlines() if line.startswith(b"{")]
    stopped_waiting = [e for e in entries if e.get("event") == "stopped waiting for clients"]
    assert [(e["connections"], e["ended_by"]) for e in stopped_waiting] == [(1, "signal")]
