"""The game type and the protocol limits have one definition that everything imports."""

from __future__ import annotations

import re
from pathlib import Path

from protocol import GAME_TYPE, ProtocolLimits
from server.config import Settings

REPO = Path(__file__).resolve().parents[2]


def test_game_type_is_assigned_once_in_the_code() -> None:
    assignment = re.compile(r"""^\s*\w+\s*(:\s*[\w\[\]]+\s*)?=\s*["']swc_2026_piranhas["']""", re.M)
    found = [
        str(path.relative_to(REPO))
        for folder in (
            "engine",
            "protocol",
            "server",
            "client",
            "bots",
            "runner",
            "cli",
            "bench",
            "tests",
        )
        for path in sorted((REPO / folder).rglob("*.py"))
        if assignment.search(path.read_text(encoding="utf-8"))
    ]
    assert found == ["protocol/events.py"]
    assert GAME_TYPE == "swc_2026_piranhas"


def test_replay_names_use_the_game_type() -> None:
    from server.replays import PLUGIN_ID

    assert PLUGIN_ID is GAME_TYPE


def test_server_settings_start_from_the_protocol_defaults() -> None:
    assert Settings().max_packet_bytes == ProtocolLimits().max_packet_bytes
