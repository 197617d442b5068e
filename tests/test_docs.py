"""The repository explains itself: every section the code cites exists in `docs/`, and nothing
points outside the repository to material a clone does not have."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

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


# ---------------------------------------------------------------- what a newcomer reads

README = ROOT / "README.md"
TESTS_README = ROOT / "tests" / "README.md"
MKDOCS = ROOT / "mkdocs.yml"
_COMMAND = re.compile(r"^\s*(piranhas-[a-z]+)(?=\s|$)", re.MULTILINE)  # a bare command line
_ACTIVATE = ". .venv/bin/activate"
_TEST_TIME = re.compile(r"about\s+(\d+)\s+minutes\s+on\s+2\s+cores")


def test_the_readme_is_a_newcomers_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for heading in ("## Quick start", "## Differences from the official server"):
        assert heading in text
    # The test command exactly as .ci/run runs it.
    command = (
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
        ".venv/bin/python -m pytest"
    )
    assert command in text
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_commands_say_how_to_call_them_after_the_quick_start() -> None:
    """A bare `piranhas-league` after the quick start is "command not found": the README
    writes `.venv/bin/...`, and a page of docs/ that shows bare commands says to activate the
    environment."""
    bare_in_readme = _COMMAND.findall(README.read_text(encoding="utf-8"))
    assert bare_in_readme == []
    unexplained = [
        page.name
        for page in sorted(DOCS.glob("*.md"))
        if _COMMAND.search(text := page.read_text(encoding="utf-8")) and _ACTIVATE not in text
    ]
    assert unexplained == [], f"say `{_ACTIVATE}` (or write .venv/bin/...) in {unexplained}"


def test_the_default_test_time_is_one_figure() -> None:
    """The README, tests/README.md, docs/development.md and pyproject.toml give the default
    run's time, and give the same one."""
    places = [README, TESTS_README, DOCS / "development.md", ROOT / "pyproject.toml"]
    figures = {
        place.name: _TEST_TIME.findall(place.read_text(encoding="utf-8")) for place in places
    }
    assert all(figures.values()), figures  # each says it
    assert len({figure for found in figures.values() for figure in found}) == 1, figures


def test_tests_readme_lists_every_tests_folder() -> None:
    text = TESTS_README.read_text(encoding="utf-8")
    folders = sorted(
        path.name
        for path in (ROOT / "tests").iterdir()
        if path.is_dir() and not path.name.startswith((".", "__"))
    )
    assert len(folders) >= 12
    missing = [name for name in folders if f"`tests/{name}/`" not in text]
    assert missing == [], f"tests/README.md does not list {missing}"


def nav_pages(config: Path) -> list[str]:
    """The pages the nav of an mkdocs.yml lists (`- Title: page.md` or `- page.md`)."""
    text = config.read_text(encoding="utf-8")
    nav = text[text.index("\nnav:") :]
    return re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", nav, re.MULTILINE)


def test_every_docs_page_is_in_the_site_nav() -> None:
    """The strict site build (.ci/run) fails on a page missing from the nav; this says so in
    the default run already, for whoever adds a page."""
    pages = sorted(str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md"))
    listed = nav_pages(MKDOCS)
    assert sorted(set(listed)) == sorted(listed)  # each once
    assert [page for page in pages if page not in listed] == [], "add them to mkdocs.yml's nav"
    assert [page for page in listed if page not in pages] == [], "no such page in docs/"


def build_site(root: Path) -> subprocess.CompletedProcess[str]:
    # Not --quiet: it hides the warnings, and then --strict has none to fail on.
    where = ["--config-file", str(root / "mkdocs.yml"), "--site-dir", str(root / "site")]
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", *where],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_strict_site_build_fails_on_a_broken_link_or_a_page_left_out(
    tmp_path: Path,
) -> None:
    """The site as it is builds (strictly); a copy with a link to a missing page, one with a
    link to a missing heading, and one with a page that the nav leaves out each fail."""
    pytest.importorskip("mkdocs")  # the dev extra; .ci/run runs this with it (--no-skips)
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("*.sqlite*"))
    shutil.copy(MKDOCS, tmp_path / "mkdocs.yml")
    built = build_site(tmp_path)
    assert built.returncode == 0, built.stderr
    index = tmp_path / "docs" / "index.md"
    original = index.read_text(encoding="utf-8")
    breakages = {
        "[gone](no-such-page.md)": "no-such-page.md",
        "[gone](server.md#no-such-heading)": "no-such-heading",
    }
    for link, named in breakages.items():
        index.write_text(original + f"\n{link}\n", encoding="utf-8")
        broken = build_site(tmp_path)
        assert broken.returncode != 0 and named in broken.stderr, broken.stderr
    index.write_text(original, encoding="utf-8")
    (tmp_path / "docs" / "left-out.md").write_text("# Left out\n", encoding="utf-8")
    left_out = build_site(tmp_path)
    assert left_out.returncode != 0 and "left-out.md" in left_out.stderr, left_out.stderr


def test_every_link_of_the_readmes_leads_somewhere() -> None:
    """README.md and tests/README.md are read on the forge, outside the site: their relative
    links name files of the repository."""
    broken = []
    for readme in (README, TESTS_README):
        text = readme.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (readme.parent / target.split("#")[0]).exists():
                broken.append(f"{readme.relative_to(ROOT)}: {target}")
    assert broken == []
