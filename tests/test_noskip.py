"""`--no-skips` (tests/helpers/noskip.py), which .ci/run gives the groups it runs with their
services: every kind of skip fails the run, an expected failure does not, and without the
option a skip is a skip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

SKIPS = {
    "test_skip_call.py": "import pytest\n\ndef test_a():\n    pytest.skip('no chromium')\n",
    "test_skip_mark.py": (
        "import pytest\n\n@pytest.mark.skipif(True, reason='no docker-compose')\n"
        "def test_a():\n    pass\n"
    ),
    "test_skip_module.py": (
        "import pytest\n\npytest.importorskip('no_such_module_here')\n\ndef test_a():\n    pass\n"
    ),
    "test_skip_fixture.py": (
        "import pytest\n\n@pytest.fixture\ndef server():\n    pytest.skip('no redis-server')\n\n"
        "def test_a(server):\n    pass\n"
    ),
}


def run_pytest(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (folder / "pytest.ini").write_text("[pytest]\n")
    plugins = ["-p", "tests.helpers.noskip", "-p", "no:cacheprovider"]
    config = ["--rootdir", str(folder), "-c", str(folder / "pytest.ini")]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, *config, "-rs", *options],
        cwd=folder,
        # Only the plugin under test (-p above): loading every installed plugin (trio,
        # hypothesis, playwright, xdist, ...) would double each run's start-up.
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("name", sorted(SKIPS))
def test_a_skip_fails_a_run_with_no_skips(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(SKIPS[name])
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    strict = run_pytest(tmp_path, "--no-skips")
    assert strict.returncode in (1, 2), strict.stdout + strict.stderr  # 2: a collection error
    assert "skipped in a run that must not skip (--no-skips)" in strict.stdout
    relaxed = run_pytest(tmp_path)
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert "1 passed, 1 skipped" in relaxed.stdout


def test_an_expected_failure_and_a_pass_keep_the_run_green(tmp_path: Path) -> None:
    (tmp_path / "test_fine.py").write_text(
        "import pytest\n\n@pytest.mark.xfail(reason='known')\ndef test_x():\n    assert False\n\n"
        "def test_y():\n    pass\n"
    )
    result = run_pytest(tmp_path, "--no-skips")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 xfailed" in result.stdout


def test_ci_runs_every_group_with_no_skips() -> None:
    """Each `pytest -m GROUP` step of .ci/run (slow, browser, distributed, docker) passes
    --no-skips; the default run (the README's command, verbatim) does not."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    groups = [line for line in lines if "-m pytest -m " in line and not line.startswith("#")]
    assert {line.split("-m pytest -m ")[1].split()[0] for line in groups} >= {
        "slow", "browser", "distributed", "docker",
    }  # fmt: skip
    assert [line for line in groups if '"${NO_SKIPS[@]}"' not in line] == []
    assert "--no-skips" in next(line for line in lines if line.startswith("NO_SKIPS="))
