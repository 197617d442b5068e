"""One write per connection per lobby handler: what the lobby sends while it handles one packet
(a move: the memento to both players, then the moveRequest to one of them) goes out to each
connection in one write instead of one per message. The bytes are the same; only the number
of system calls (and of wake-ups of the client) changes.

Outside a batch a connection writes each message at once, as before: timers and the recorder
send rarely, and nothing can be left waiting for a flush that never comes.
"""

from __future__ import annotations

from typing import Protocol

from server.logs import get_logger

log = get_logger("server.batch")


class Corked(Protocol):
    """A connection holding back what it was sent during the batch."""

    def flush(self) -> None:
        """Write what was held back (one write); never raises."""
        ...


class SendBatch:
    """`with batch:` around synchronous work that sends; nested use is one batch. Connections
    that were sent something add themselves to `held` and are flushed, in that order, at its
    end."""

    def __init__(self) -> None:
        self.depth = 0
        # The connections that hold messages back, in order: each appends itself once per
        # batch, when it is first sent something (a list, not a method: twice a move).
        self.held: list[Corked] = []

    @property
    def open(self) -> bool:
        """Inside a batch: hold messages back."""
        return self.depth > 0

    def __enter__(self) -> SendBatch:
        self.depth += 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.depth -= 1
        if self.depth:
            return
        held, self.held = self.held, []
        for connection in held:
            try:
                connection.flush()
            except Exception:  # a bug of one connection must not keep the others' messages
                log.exception("flushing a connection failed", connection=repr(connection))
