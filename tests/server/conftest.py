"""The `make_harness` fixture: a running lobby driven by fake peers (tests.helpers.lobby)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import trio

from server.config import Settings
from server.lobby import Lobby
from tests.helpers.lobby import Harness, HarnessFactory


@pytest.fixture
async def make_harness(nursery: trio.Nursery) -> HarnessFactory:
    """`await make_harness(**settings_overrides)` → a Harness with a running lobby."""

    async def make(**overrides: Any) -> Harness:
        settings = replace(Settings(), **overrides)
        lobby = Lobby(settings)
        await nursery.start(lobby.run)
        return Harness(lobby)

    return make
