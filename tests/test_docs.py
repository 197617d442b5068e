"""The repository explains itself: every section the code cites exists in `docs/`, and nothing
points outside the repository to material a clone does not have."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

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


# ---------------------------------------------------------------- the package table

ARCHITECTURE = DOCS / "ARCHITECTURE.md"
_MAY_IMPORT = "may import"
_NAME = re.compile(r"`([A-Za-z_][\w.]*)/?`")


def _importlinter() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        config: dict[str, Any] = tomllib.load(file)["tool"]["importlinter"]
    return config


def allowed_by_contracts() -> dict[str, set[str]]:
    """For each root package, the root packages pyproject's import contracts let it import.
    A package counts as forbidden only when a contract forbids it whole (`server.lobby`
    forbidden still allows `server.feed`); `ignore_imports` are exceptions inside a
    contract, not permissions."""
    config = _importlinter()
    roots: list[str] = config["root_packages"]
    forbidden: dict[str, set[str]] = {root: set() for root in roots}
    for contract in config["contracts"]:
        kind = contract["type"]
        if kind == "forbidden":
            for source in contract["source_modules"]:
                if source in forbidden:  # a submodule's contract restricts only part of it
                    forbidden[source] |= set(contract["forbidden_modules"]) & set(roots)
        elif kind == "layers":
            layers = [re.split(r"\s*[|:]\s*", layer.strip("()")) for layer in contract["layers"]]
            for index, layer in enumerate(layers):  # listed from the top: none imports up
                above = {name for upper in layers[:index] for name in upper}
                for name in layer:
                    if name in forbidden:
                        forbidden[name] |= above & set(roots)
        elif kind == "independence":
            modules = set(contract["modules"]) & set(roots)
            for name in modules:
                forbidden[name] |= modules - {name}
        else:
            raise AssertionError(
                f"tests/test_docs.py does not understand import contracts of type {kind!r} "
                f"(contract {contract.get('id')!r}): teach allowed_by_contracts()"
            )
    return {root: set(roots) - {root} - forbidden[root] for root in roots}


def package_table() -> dict[str, set[str]]:
    """docs/ARCHITECTURE.md's package table: package → the packages its "may import" cell
    names (backticked; `server.feed` names `server`)."""
    lines = ARCHITECTURE.read_text(encoding="utf-8").splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| package |"))
    columns = [cell.strip() for cell in lines[header].strip("|").split("|")]
    column = next(i for i, name in enumerate(columns) if name.startswith(_MAY_IMPORT))
    table: dict[str, set[str]] = {}
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        (package,) = _NAME.findall(cells[0])
        table[package] = {name.split(".")[0] for name in _NAME.findall(cells[column])}
    return table


def test_the_package_table_says_what_the_import_contracts_allow() -> None:
    """One table of who may import whom (docs/ARCHITECTURE.md), and it is the contracts':
    a row per root package of pyproject.toml, its "may import" cell naming exactly the root
    packages no contract forbids it."""
    allowed, table = allowed_by_contracts(), package_table()
    roots = set(_importlinter()["root_packages"])
    wrong = [f"no row for `{name}/`" for name in sorted(roots - set(table))]
    wrong += [f"`{name}/` is no root package of pyproject" for name in sorted(set(table) - roots)]
    for name in sorted(roots & set(table)):
        table[name] &= roots  # third-party names (`lxml`, `trio`) are free text
        if table[name] != allowed[name]:
            wrong.append(
                f"`{name}/` may import {sorted(allowed[name])} by the contracts, the table says "
                f"{sorted(table[name])}: add {sorted(allowed[name] - table[name])}, "
                f"remove {sorted(table[name] - allowed[name])} (or change the contracts)"
            )
    assert wrong == [], "docs/ARCHITECTURE.md's package table:\n" + "\n".join(wrong)


def test_the_package_table_check_sees_a_disagreement() -> None:
    """The check above is no tautology: the contracts forbid the engine everything, and a
    table that let it import `protocol` would be caught."""
    assert allowed_by_contracts()["engine"] == set()
    assert "protocol" in allowed_by_contracts()["server"]
