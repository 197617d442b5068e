"""Admin logins: failures counted per remote address, lockout, and a bounded table.

The rule: an address that fails `failures` times within `window` seconds is locked out for
`lockout` seconds; while locked out every attempt is refused without looking at the password
(guessing gains nothing), and the refusals are counted for the log line at its end. A success
forgets the address's failures. At most `max_records` addresses are remembered: records that
no longer matter go first, then the oldest.

Addresses are compared as `server.limits.address_key` spells them (an IPv4-mapped IPv6
address is the IPv4 one), whoever passes them. A pure class: no sockets, no timers, no logs;
the clock is injected (the game server passes its trio run's clock, tests a fake). Its methods
take a lock, so one instance can guard the TCP admin port (the lobby, on the trio thread) and
the web viewer's login (its own thread or its relay) at once: an address locked out on one is
locked out on the other. Other packages see it as `server.feed.LoginGate`.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from server.config import Settings
from server.feed import LoginFailure
from server.limits import address_key

# Addresses with recent failed logins remembered at most, so a client with many addresses
# cannot grow the table without bound.
MAX_LOGIN_RECORDS = 4096


@dataclass(eq=False)
class _Record:
    """Failed logins of one remote address (times of the injected clock)."""

    failures: deque[float] = field(default_factory=deque)
    locked_until: float = -float("inf")
    refused: int = 0  # during the current lockout


class Logins:
    """Per-address failure counting and lockout (the rule is in the module docstring): a
    `server.feed.LoginGate`. `lockout` 0 disables the lockout (failures are still counted)."""

    def __init__(
        self,
        *,
        failures: int,
        window: float,
        lockout: float,
        clock: Callable[[], float],
        max_records: int = MAX_LOGIN_RECORDS,
    ) -> None:
        self.failures = failures
        self.window = window
        self.lockout = lockout
        self.max_records = max_records
        self._clock = clock
        self._records: dict[str, _Record] = {}  # most recently failed last
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, clock: Callable[[], float]) -> Logins:
        """The guard of loginFailures, loginFailureWindow and loginLockout."""
        return cls(
            failures=settings.login_failures,
            window=settings.login_failure_window,
            lockout=settings.login_lockout,
            clock=clock,
        )

    def __len__(self) -> int:
        """Addresses remembered."""
        return len(self._records)

    def check(self, address: str) -> float:
        """0 when `address` may try a password now; else the seconds its lockout still runs
        (the refusal is counted)."""
        address = address_key(address)
        with self._lock:
            record = self._records.get(address)
            if record is None:
                return 0.0
            remaining = record.locked_until - self._clock()
            if remaining <= 0:
                return 0.0
            record.refused += 1
            return remaining

    def fail(self, address: str) -> LoginFailure:
        """Count a wrong password from `address`; lock it out at the `failures`-th failure
        within the window."""
        address = address_key(address)
        with self._lock:
            now = self._clock()
            record = self._records.pop(address, None) or _Record()
            failures = record.failures
            while failures and failures[0] <= now - self.window:
                failures.popleft()
            failures.append(now)
            self._records[address] = record  # most recent last: the oldest are forgotten first
            # Counted before the table is trimmed: a new address's record always matters, so
            # a table full of others evicts the oldest of them, never the failure at hand.
            if len(self._records) > self.max_records:
                self._forget(now)
            if self.lockout > 0 and len(failures) >= self.failures:
                failures.clear()
                record.locked_until = now + self.lockout
                record.refused = 0
                return LoginFailure(self.failures, record.locked_until)
            return LoginFailure(len(failures))

    def succeed(self, address: str) -> None:
        """`address` gave the right password: its failures are forgotten."""
        address = address_key(address)
        with self._lock:
            record = self._records.get(address)
            if record is not None and record.locked_until <= self._clock():
                del self._records[address]

    def lockout_over(self, address: str) -> int | None:
        """Call when a lockout of `address` should be over: the number of attempts refused
        during it, or None if it is not over (locked out again meanwhile) or unknown.
        The record goes once nothing of it matters any more."""
        address = address_key(address)
        with self._lock:
            record = self._records.get(address)
            if record is None or record.locked_until > self._clock():
                return None
            refused, record.refused = record.refused, 0
            if not record.failures:
                del self._records[address]
            return refused

    def _forget(self, now: float) -> None:
        """Drop records that no longer matter; if still too many, the oldest."""
        for address, record in list(self._records.items()):
            if record.locked_until <= now and (
                not record.failures or record.failures[-1] <= now - self.window
            ):
                del self._records[address]
        while len(self._records) > self.max_records:
            del self._records[next(iter(self._records))]
