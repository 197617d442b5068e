"""server.properties.example stays loadable and documents every key with its default."""

from __future__ import annotations

import shutil
from pathlib import Path

from server.config import Settings, load_settings
from server.options import property_keys
from server.properties import parse_properties
from tests.helpers.process import REPO

EXAMPLE = REPO / "server.properties.example"


def test_example_loads_to_the_defaults(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "server.properties")
    assert load_settings([], tmp_path) == Settings(replay_dir=tmp_path / "replays")


def test_example_mentions_every_key() -> None:
    # Uncommented, the commented-out assignments become ordinary lines.
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    uncommented = "\n".join(line[1:] for line in lines if line.startswith("#") and "=" in line)
    mentioned = {prop.key for prop in parse_properties(uncommented)}
    mentioned |= {prop.key for prop in parse_properties("\n".join(lines))}
    assert set(property_keys()) <= mentioned
