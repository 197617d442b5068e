"""Bounded bot logs: a player's output goes through a pipe to its log file, of which only the
first `head` and the last `tail` bytes are kept (a bot printing every position put 525 MB in
its log in one game).

The head is written as it comes, so a log is readable while the game runs and after the
runner is killed; past the head a line says that output is being left out, and at the end of
the output the number of bytes left out and the tail follow. The copy runs on a thread of its
own (a blocking read of the pipe), so neither the event loop nor the bot waits for the disk
more than a pipe buffer's worth.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from pathlib import Path

__all__ = ["LOG_HEAD_BYTES", "LOG_TAIL_BYTES", "BoundedLog"]

LOG_HEAD_BYTES = 1024 * 1024
LOG_TAIL_BYTES = 1024 * 1024
_CHUNK = 64 * 1024


class BoundedLog:
    """The log of one player. `writer` is the pipe end to give the process as stdout and
    stderr; call `started()` once the process has it (our copy is closed then, so the pipe
    ends when the process and its children are gone), `finish(timeout)` to wait for the copy
    to reach the end of the output."""

    def __init__(
        self, path: Path, *, head: int = LOG_HEAD_BYTES, tail: int = LOG_TAIL_BYTES
    ) -> None:
        self.path = path
        self.head = head
        self.tail = tail
        self.total = 0  # bytes the process wrote
        self._file = path.open("wb")
        self._reader, self.writer = os.pipe()
        self._broken = False
        self._thread = threading.Thread(target=self._copy, name=f"bot-log {path.name}", daemon=True)
        self._thread.start()

    def started(self) -> None:
        """The process holds the writing end now: close ours."""
        # Once only: the number may belong to another file after the close.
        writer, self.writer = self.writer, -1
        if writer >= 0:
            os.close(writer)

    def finish(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the end of the output (a child that left the bot's
        process group may still hold the pipe); True when the log is complete."""
        self.started()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def cut(self) -> int:
        """Bytes left out of the log so far."""
        return max(0, self.total - self.head - self.tail)

    def _write(self, data: bytes) -> None:
        if self._broken:
            return
        try:
            self._file.write(data)
            self._file.flush()
        except OSError:
            # A full disk: the log stays as far as it got, and the pipe is still drained (a
            # bot blocked on a full pipe would lose on time).
            self._broken = True

    def _copy(self) -> None:
        kept: collections.deque[bytes] = collections.deque()
        kept_bytes = 0
        try:
            while chunk := os.read(self._reader, _CHUNK):
                before = self.total
                self.total += len(chunk)
                if before < self.head:
                    self._write(chunk[: self.head - before])
                    chunk = chunk[self.head - before :]
                    if not chunk:
                        continue
                    self._write(
                        f"\n[piranhas: output beyond {self.head} bytes is left out here; "
                        f"its last {self.tail} bytes follow when the bot ends]\n".encode()
                    )
                kept.append(chunk)
                kept_bytes += len(chunk)
                while kept and kept_bytes - len(kept[0]) >= self.tail:
                    kept_bytes -= len(kept.popleft())
            if self.total > self.head:
                tail = b"".join(kept)[-self.tail :]
                left_out = self.total - self.head - len(tail)
                self._write(
                    f"\n[piranhas: {left_out} bytes left out of {self.total}; "
                    f"the last {len(tail)} follow]\n".encode()
                )
                self._write(tail)
        finally:
            with contextlib.suppress(OSError):
                os.close(self._reader)
            with contextlib.suppress(OSError):
                self._file.close()
