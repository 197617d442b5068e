"""Configurable bounds on what a peer may make us buffer or parse."""

from __future__ import annotations

from dataclasses import dataclass

# The defaults, named once: the server's settings start from them.
DEFAULT_MAX_PACKET_BYTES = 65536
DEFAULT_MAX_DEPTH = 16
DEFAULT_MAX_ATTRIBUTE_BYTES = 16384


@dataclass(frozen=True, slots=True)
class ProtocolLimits:
    """`max_packet_bytes` bounds the bytes of one unfinished packet (and of the prolog):
    a peer that streams without ever completing a packet is cut off there instead of
    growing our memory. `max_depth` bounds element nesting (the root is depth 0, a packet
    depth 1; a memento needs 6). `max_attribute_bytes` bounds one attribute value we read."""

    max_packet_bytes: int = DEFAULT_MAX_PACKET_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES

    def __post_init__(self) -> None:
        if self.max_packet_bytes < 1 or self.max_depth < 1 or self.max_attribute_bytes < 1:
            raise ValueError(f"protocol limits must be positive: {self}")
