"""The chaos tests (the package's docstring says what they prove): 5 s by default, as long as
`CHAOS_SECONDS` says on request."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.server.chaos.runner import chaos_seed, run_chaos


async def test_chaos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await run_chaos(
        tmp_path, monkeypatch, chaos_seed(20260), seconds=5.0, concurrency=24, wall_clock=30.0
    )


@pytest.mark.skipif(not os.environ.get("CHAOS_SECONDS"), reason="set CHAOS_SECONDS to run")
async def test_chaos_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seconds = float(os.environ.get("CHAOS_SECONDS") or 60)
    seed = chaos_seed(random.SystemRandom().randrange(2**32))
    await run_chaos(tmp_path, monkeypatch, seed, seconds, concurrency=80, wall_clock=15.0)
