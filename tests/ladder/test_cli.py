"""`piranhas-ladder admin` as the deploy files use it: the store named by the environment
(PIRANHAS_LADDER_DATABASE, or its _FILE: a password kept off the command line), a team, and an
API token for the team's CI, printed once and accepted by the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.ladder import main
from ladder.store import LadderStore


def test_admin_token_for_a_team_of_the_store_the_environment_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    database = tmp_path / "elsewhere.sqlite"
    secret = tmp_path / "database-url"
    secret.write_text(f"{database}\n")
    monkeypatch.delenv("PIRANHAS_LADDER_DATABASE", raising=False)
    monkeypatch.setenv("PIRANHAS_LADDER_DATABASE_FILE", str(secret))
    data = ["--data", str(tmp_path / "data")]
    assert main(["admin", "create-team", "CI Team", *data]) == 0
    assert capsys.readouterr().out.strip() == "team 1: CI Team"
    assert main(["admin", "token", "1", *data]) == 0
    token = capsys.readouterr().out.strip()
    assert main(["admin", "token", "2", *data]) == 2
    assert "no team 2" in capsys.readouterr().err
    assert not (tmp_path / "data" / "ladder.sqlite").exists()
    store = LadderStore.open(str(database))
    try:
        assert store.team_for_token(token) == 1
    finally:
        store.close()
