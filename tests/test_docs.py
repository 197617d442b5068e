"""The repository explains itself: every section the code cites exists in `docs/`, and nothing
points outside the repository to material a clone does not have."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# "§4.2", "§11", "tournament.md §2": a bare § cites docs/protocol.md, a named file cites itself.
_CITATION = re.compile(r"(?:([\w-]+)\.md`?\s+)?§\s?(\d+(?:\.\d+)?)")
_HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)?)\.?\s", re.MULTILINE)
_SOURCE_SUFFIXES = {".py", ".md", ".sh", ".toml", ".yml", ".yaml", ".example", ".properties"}


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def _sections(doc: Path) -> set[str]:
    return set(_HEADING.findall(doc.read_text(encoding="utf-8")))


def _texts() -> list[tuple[Path, str]]:
    texts = []
    for path in _tracked_files():
        if path.suffix in _SOURCE_SUFFIXES or path.name in {"Dockerfile", "run"}:
            texts.append((path, path.read_text(encoding="utf-8", errors="replace")))
    return texts


def test_nothing_cites_material_outside_the_repository() -> None:
    outside = [
        f"{path.relative_to(ROOT)}:{number}"
        for path, text in _texts()
        if path != Path(__file__).resolve()
        for number, line in enumerate(text.splitlines(), 1)
        if "shared/spec" in line or "sc-protocol.md" in line
    ]
    assert outside == []


def test_every_cited_section_exists() -> None:
    known: dict[str, set[str]] = {}
    missing = []
    for path, text in _texts():
        if path.parent == DOCS and path.name != "ARCHITECTURE.md":
            continue  # a reference document's own cross-references are its own business
        for number, line in enumerate(text.splitlines(), 1):
            for doc_name, section in _CITATION.findall(line):
                doc = DOCS / f"{doc_name or 'protocol'}.md"
                if not doc.exists():
                    missing.append(f"{path.relative_to(ROOT)}:{number}: no {doc.name} in docs/")
                    continue
                sections = known.setdefault(doc.name, _sections(doc))
                if section not in sections:
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {doc.name} §{section}")
    assert missing == []
