"""Reading a file a person named (a replay to start from, a list of boards): a regular file
only, and only so much of it. A FIFO or a device is refused before it is read: reading
/dev/zero never ends, and opening a FIFO waits for a writer.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     read_regular_file(Path(folder), 10)
Traceback (most recent call last):
server.files.FileReadError: not a regular file but a directory
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["FileReadError", "read_regular_file"]


class FileReadError(Exception):
    """Why a file was not read; the message does not name the file (the caller does)."""


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file `path` (a link to one is followed), at most `max_bytes`.
    Raises FileReadError: "cannot read: REASON", "not a regular file but KIND", "N bytes,
    larger than MAX bytes", or "larger than MAX bytes" for a file that grew while read."""
    try:
        kind = _file_kind(os.stat(path).st_mode)
        if kind is not None:
            raise FileReadError(f"not a regular file but {kind}")
        # O_NONBLOCK: if the path was swapped for a FIFO since the stat, opening it does not
        # wait for a writer; the fstat below then refuses it.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise FileReadError(f"cannot read: {error.strerror}") from None
    try:
        info = os.fstat(descriptor)
        kind = _file_kind(info.st_mode)
        if kind is not None:
            raise FileReadError(f"not a regular file but {kind}")
        if info.st_size > max_bytes:
            raise FileReadError(f"{info.st_size} bytes, larger than {max_bytes} bytes")
        chunks = bytearray()
        # One byte more than allowed tells a file that grew since the fstat.
        while len(chunks) <= max_bytes:
            chunk = os.read(descriptor, max_bytes + 1 - len(chunks))
            if not chunk:
                break
            chunks += chunk
        if len(chunks) > max_bytes:
            raise FileReadError(f"larger than {max_bytes} bytes")
        return bytes(chunks)
    except OSError as error:
        raise FileReadError(f"cannot read: {error.strerror}") from None
    finally:
        os.close(descriptor)


def _file_kind(mode: int) -> str | None:
    """None for a regular file, else what it is, for the error message."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"
