"""The protocol's own errors, split by whose fault they are (as in h11)."""

from __future__ import annotations


class ProtocolError(Exception):
    """Base of both error kinds; `message` says what was wrong and where."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RemoteProtocolError(ProtocolError):
    """The peer broke the protocol. The stream is dead afterwards.

    `eof` is true when the peer's stream simply ended (EOF before `</protocol>`, or after
    it): the official server reports that as LOST_CONNECTION rather than PROTOCOL_ERROR.
    """

    def __init__(self, message: str, *, eof: bool = False) -> None:
        super().__init__(message)
        self.eof = eof


class LocalProtocolError(ProtocolError):
    """We tried to do something the protocol does not allow (our bug, not the peer's)."""
