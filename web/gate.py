"""The web login's lockout: the game server's own `server.feed.LoginGate`, shared with the
TCP admin port, seen by the viewer's handlers through one async interface whether the viewer
runs in the server's process (`LocalGate`) or in its own (`RemoteGate`: each call one
request over the pipe to the server, answered from the same gate)."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from server.feed import LoginFailure, LoginGate

# The server answers a gate request at once; without an answer the login is refused.
GATE_TIMEOUT = 5.0


class AsyncGate(Protocol):
    """`server.feed.LoginGate`, awaited."""

    async def check(self, address: str) -> float:
        """0 when `address` may try a password now, else the seconds its lockout still runs."""
        ...

    async def fail(self, address: str) -> LoginFailure:
        """A wrong password from `address`."""
        ...

    async def succeed(self, address: str) -> None:
        """The right password from `address`."""
        ...


class LocalGate:
    """A `LoginGate` of this process (its calls return at once)."""

    def __init__(self, gate: LoginGate) -> None:
        self.gate = gate

    async def check(self, address: str) -> float:
        """As `LoginGate.check`."""
        return self.gate.check(address)

    async def fail(self, address: str) -> LoginFailure:
        """As `LoginGate.fail`."""
        return self.gate.fail(address)

    async def succeed(self, address: str) -> None:
        """As `LoginGate.succeed`."""
        self.gate.succeed(address)


class OpenGate:
    """No lockout: a viewer that was given no gate (never so when the game server runs it)."""

    def check(self, address: str) -> float:
        """Never locked out."""
        return 0.0

    def fail(self, address: str) -> LoginFailure:
        """Nothing counted."""
        return LoginFailure(0)

    def succeed(self, address: str) -> None:
        """Nothing to forget."""


class GateUnavailable(Exception):
    """The server did not answer a gate request (the login is refused)."""


class RemoteGate:
    """The gate of the game server's process, asked through `send(("gate", id, method,
    address))`; `answer(id, value)` delivers the reply."""

    def __init__(self, send: Callable[[tuple[Any, ...]], Awaitable[None]]) -> None:
        self._send = send
        self._ids = itertools.count()
        self._pending: dict[int, tuple[trio.Event, list[Any]]] = {}

    async def _call(self, method: str, address: str) -> Any:
        request_id = next(self._ids)
        done, slot = trio.Event(), list[Any]()
        self._pending[request_id] = (done, slot)
        try:
            await self._send(("gate", request_id, method, address))
            with trio.move_on_after(GATE_TIMEOUT):
                await done.wait()
        finally:
            del self._pending[request_id]
        if not slot:
            raise GateUnavailable("the game server did not answer")
        return slot[0]

    def answer(self, request_id: int, value: Any) -> None:
        """The server's reply to request `request_id` (a late one is dropped)."""
        pending = self._pending.get(request_id)
        if pending is not None:
            pending[1].append(value)
            pending[0].set()

    async def check(self, address: str) -> float:
        """As `LoginGate.check`, asked of the server."""
        return float(await self._call("check", address))

    async def fail(self, address: str) -> LoginFailure:
        """As `LoginGate.fail`, told to the server."""
        failure = await self._call("fail", address)
        assert isinstance(failure, LoginFailure)
        return failure

    async def succeed(self, address: str) -> None:
        """As `LoginGate.succeed`, told to the server."""
        await self._call("succeed", address)


def answer_gate(gate: LoginGate, method: str, address: str) -> Any:
    """The server side of a `RemoteGate` request."""
    if method == "check":
        return gate.check(address)
    if method == "fail":
        return gate.fail(address)
    if method == "succeed":
        gate.succeed(address)
        return None
    raise ValueError(f"no gate method {method!r}")
