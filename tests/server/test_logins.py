"""The admin-login guard (server/logins.py) on its own, and shared through server.feed.LoginGate
with a companion (the web viewer's login): one lockout for both."""

from __future__ import annotations

import threading
from dataclasses import replace

import trio

from protocol.events import Authenticate, Observe
from protocol.messages import ErrorPacket
from server.app import serve
from server.config import Settings
from server.feed import LoginGate, NoFeed, ObserverFeed
from server.logins import Logins
from tests.helpers.rawclient import RawClient
from tests.helpers.server import LIMIT, PASSWORD


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def guard(clock: FakeClock, **overrides: float) -> Logins:
    options: dict[str, float] = {"failures": 3, "window": 60.0, "lockout": 100.0}
    options.update(overrides)
    return Logins(
        failures=int(options["failures"]),
        window=options["window"],
        lockout=options["lockout"],
        clock=clock,
        max_records=int(options.get("max_records", 4096)),
    )


def test_the_third_failure_in_the_window_locks_out_and_refusals_are_counted() -> None:
    clock = FakeClock()
    logins = guard(clock)
    assert logins.fail("10.0.0.1").failures == 1
    clock.now += 10
    assert logins.fail("10.0.0.1").failures == 2
    assert logins.check("10.0.0.1") == 0
    third = logins.fail("10.0.0.1")
    assert third.locked_until == clock.now + 100 and third.failures == 3
    clock.now += 40
    assert logins.check("10.0.0.1") == 60.0
    assert logins.check("10.0.0.2") == 0  # another address is not affected
    assert logins.lockout_over("10.0.0.1") is None  # not over yet
    assert logins.check("::ffff:10.0.0.1") == 60.0  # the same address, spelled as IPv6
    clock.now += 60
    assert logins.check("10.0.0.1") == 0
    assert logins.lockout_over("10.0.0.1") == 2
    assert len(logins) == 0


def test_failures_outside_the_window_do_not_add_up() -> None:
    clock = FakeClock()
    logins = guard(clock)
    for _ in range(10):
        assert logins.fail("a").locked_until is None
        clock.now += 31  # at most two failures in any 60 s
    assert logins.check("a") == 0


def test_a_success_forgets_the_failures_but_a_lockout_holds() -> None:
    clock = FakeClock()
    logins = guard(clock)
    logins.fail("a")
    logins.fail("a")
    logins.succeed("a")
    assert logins.fail("a").failures == 1
    logins.fail("a")
    assert logins.fail("a").locked_until is not None
    logins.succeed("a")  # cannot happen through the gate (check refuses first): no effect
    assert logins.check("a") > 0


def test_lockout_zero_counts_but_never_locks() -> None:
    clock = FakeClock()
    logins = guard(clock, lockout=0)
    assert all(logins.fail("a").locked_until is None for _ in range(10))
    assert logins.check("a") == 0


def test_the_table_is_bounded_and_keeps_locked_out_addresses_longest() -> None:
    clock = FakeClock()
    logins = guard(clock, failures=2, window=1, lockout=1000, max_records=10)
    logins.fail("locked")
    logins.fail("locked")
    for index in range(100):
        logins.fail(f"10.1.0.{index}")
        clock.now += 2  # each earlier failure no longer matters
        assert len(logins) <= 10
    assert logins.check("locked") > 0  # outlived a hundred others: it still mattered
    # Too many that all still matter: the oldest go first.
    for index in range(20):
        logins.fail(f"10.2.0.{index}")
    assert len(logins) == 10
    assert logins.check("locked") == 0


def test_the_gate_is_safe_to_share_across_threads() -> None:
    clock = FakeClock()
    logins = guard(clock, failures=1000 * 4 + 1, lockout=100)

    def hammer() -> None:
        for _ in range(1000):
            logins.fail("shared")
            logins.check("shared")

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Every one of the 4000 failures was counted (no update lost): one more locks out.
    assert logins.check("shared") == 0
    assert logins.fail("shared").locked_until is not None


class GuardedCompanion:
    """A companion that takes passwords itself (as the web viewer's login does)."""

    def __init__(self) -> None:
        self.gate: LoginGate | None = None

    @property
    def feed(self) -> ObserverFeed:
        return NoFeed()

    def use_login_gate(self, gate: LoginGate) -> None:
        self.gate = gate

    async def run(
        self, game_port: int, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        await trio.sleep_forever()


async def test_failures_on_the_companion_lock_the_address_out_of_the_admin_port() -> None:
    settings = Settings(
        host="127.0.0.1", port=0, password=PASSWORD, login_failures=3, login_failure_delay=0
    )
    companion = GuardedCompanion()
    stop = trio.Event()
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:

            async def run(task_status: trio.TaskStatus[int]) -> None:
                await serve(
                    replace(settings),
                    task_status=task_status,
                    stop=stop,
                    handle_signals=False,
                    companion=companion,
                )

            port = await nursery.start(run)
            gate = companion.gate
            assert gate is not None, "serve() hands a guarding companion the lobby's gate"
            for _ in range(3):  # three wrong passwords on the web viewer's login
                assert gate.check("127.0.0.1") == 0
                gate.fail("127.0.0.1")
            admin = await RawClient.connect(port)
            await admin.send(Authenticate(PASSWORD))  # the right one, on the TCP admin port
            refusal = await admin.expect(ErrorPacket)
            assert "Too many failed logins from 127.0.0.1" in refusal.message
            await admin.send(Observe("r"))
            assert "requires authentication" in (await admin.expect(ErrorPacket)).message
            # And the other way round: the port's lockout holds on the companion's login.
            assert gate.check("::ffff:127.0.0.1") > 0
            stop.set()
