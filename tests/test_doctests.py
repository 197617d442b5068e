"""The examples in the code's docstrings run, and say what they show (python-chess's style:
an example in a docstring is a test)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "protocol", "server", "client", "runner", "league", "web", "bench")


def modules_with_examples() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>> " in path.read_text(encoding="utf-8"):
                relative = path.relative_to(ROOT).with_suffix("")
                names.append(".".join(relative.parts))
    return names


def test_the_code_has_examples() -> None:
    assert "engine.state" in modules_with_examples()


@pytest.mark.parametrize("name", modules_with_examples())
def test_examples_run(name: str) -> None:
    results = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0
    assert results.failed == 0
