"""An upload becomes a version: the ZIP is copied out of the request's spool file into the
data directory under a random name, checked with the contest check's own ZIP rules
(`check.upload.check_zip`: zip-slip, absolute paths, links out, entry count, unpacked size,
compression ratio, CRC), and only then given a version id by the store (which applies the
team's quota) and moved to `DIR/uploads/<team_id>/<version_id>.zip`. A file name never comes
from anything the sender typed.

The check unpacks into a scratch directory that is removed at once; at most `CHECKS` run at a
time (beyond that the upload waits for its turn in a worker thread, never on the event loop).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import trio

from check.card import Item, Status
from check.upload import Unrunnable, check_zip
from ladder.work import upload_path

DEFAULT_MAX_UPLOAD = 64 * 1024 * 1024
CHECKS = 1
_check_slots = trio.CapacityLimiter(CHECKS)


class UploadRefused(Exception):
    """The upload is not accepted (the message says why, for the sender)."""


@dataclass(frozen=True)
class Received:
    """An upload copied into the data directory, checked, waiting for its version id."""

    path: Path
    size: int
    sha256: str


def _copy_and_check(source: BinaryIO, data_dir: Path, limit: int) -> Received:
    incoming = data_dir / "uploads" / ".incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    path = incoming / f"{secrets.token_hex(16)}.zip"
    digest = hashlib.sha256()
    size = 0
    try:
        source.seek(0)
        with path.open("xb") as out:
            while chunk := source.read(1 << 20):
                size += len(chunk)
                if size > limit:
                    raise UploadRefused(f"an upload has at most {limit >> 20} MiB")
                digest.update(chunk)
                out.write(chunk)
        if size == 0:
            raise UploadRefused("the upload is empty: send the bot's ZIP as the field bot")
        items: list[Item] = []
        scratch = Path(tempfile.mkdtemp(prefix="check-", dir=incoming))
        try:
            check_zip(path, scratch, items)
        except Unrunnable:
            failed = [i.detail for i in items if i.status is Status.FAIL]
            raise UploadRefused(
                "the ZIP is refused: " + ("; ".join(failed) or "it cannot be read")
            ) from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return Received(path, size, digest.hexdigest())


async def receive_upload(source: BinaryIO, data_dir: Path, limit: int) -> Received:
    """Copy and check an upload (in a worker thread); UploadRefused says why not."""
    return await trio.to_thread.run_sync(
        _copy_and_check, source, data_dir, limit, limiter=_check_slots
    )


def place(received: Received, data_dir: Path, team_id: int, version_id: int) -> Path:
    """Move a received upload to its version's place."""
    target = upload_path(data_dir, team_id, version_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(received.path, target)
    return target


def discard(received: Received) -> None:
    """Forget a received upload that got no version (a quota refusal)."""
    received.path.unlink(missing_ok=True)
