"""Admission limits: the descriptor budget and "logged once per episode" bookkeeping.

A client that hits a limit does so many times a second; a log line per refusal would let it
fill the disk instead. An `Episode` logs a warning when the pressure starts and one line with
the number of refusals when it is gone.
"""

from __future__ import annotations

import functools
import ipaddress
import resource
from typing import Any

import trio

from server.logs import get_logger

log = get_logger("server.limits")

# Descriptors kept free for the server's own work while connections are at their cap: the
# results log, replay files, worker threads, the listeners, logging. A result must never be
# lost because clients took every descriptor.
DESCRIPTOR_RESERVE = 64
# An episode is over only after this long without a refusal: a client hovering at a limit
# (closing and reopening, descriptors freed and taken again) must not make it start and end,
# two log lines, every time.
EPISODE_QUIET_SECONDS = 10.0
# Asked for when the hard limit is "unlimited" (Linux refuses RLIM_INFINITY above nr_open).
_UNLIMITED_TARGET = 1 << 20


class Episode:
    """One kind of pressure (a limit being reached): `hit()` on every refusal, `relieved()`
    when the limit is no longer reached. Logs once at the start and once at the end, which is
    the first `relieved()` at least `EPISODE_QUIET_SECONDS` after the last refusal. Trio time:
    call both from the trio thread."""

    def __init__(self, event: str, **fields: Any) -> None:
        self.event = event
        self.fields = fields
        self.active = False
        self.refused = 0  # during the current episode
        self.refused_total = 0  # since start-up
        self.last_hit = -float("inf")

    def hit(self, **fields: Any) -> None:
        """One refusal; the first of an episode is logged as a warning."""
        self.refused += 1
        self.refused_total += 1
        self.last_hit = trio.current_time()
        if not self.active:
            self.active = True
            log.warning(self.event, **self.fields, **fields)

    def relieved(self, **fields: Any) -> None:
        """The limit is not reached now: log the end of the episode (once) with its refusals
        if the last refusal is long enough ago."""
        if self.active and trio.current_time() - self.last_hit >= EPISODE_QUIET_SECONDS:
            self.active = False
            log.info(f"{self.event}: over", refused=self.refused, **self.fields, **fields)
            self.refused = 0


def raise_descriptor_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (no privilege needed) and return the
    soft limit now in force. Distributions start processes with a soft limit of 1,024 while
    allowing far more."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as error:
            log.warning("cannot raise the descriptor limit", soft=soft, hard=hard, error=str(error))
    return _UNLIMITED_TARGET if soft == resource.RLIM_INFINITY else soft


def connection_cap(max_connections: int, descriptor_limit: int) -> int:
    """Connections allowed at once: the setting, lowered so that `DESCRIPTOR_RESERVE`
    descriptors stay free (each connection holds one). At least 1."""
    return max(1, min(max_connections, descriptor_limit - DESCRIPTOR_RESERVE))


@functools.lru_cache(maxsize=1024)  # parsed per connection (admit, release), from few hosts
def address_key(host: str) -> str:
    """The remote address a per-address limit counts: IPv4-mapped IPv6 is the IPv4 address."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


@functools.lru_cache(maxsize=1024)
def is_loopback(host: str) -> bool:
    """127.0.0.0/8 and ::1 (also IPv4-mapped)."""
    try:
        return ipaddress.ip_address(address_key(host)).is_loopback
    except ValueError:
        return False
