"""The league file: defaults, every key, and errors that name the key and its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from league.config import (
    BotKind,
    Format,
    LeagueFileError,
    Tiebreak,
    load_league,
    parse_league,
)

EXAMPLE = Path(__file__).parents[2] / "docs" / "league.example.toml"

MINIMAL = """name = "L"
[[teams]]
id = "a"
image = "a:1"
[[teams]]
id = "b"
command = "python3 bot.py --fast"
"""


def test_the_documented_example_loads() -> None:
    config = load_league(EXAMPLE)
    assert config.name == "Schulliga Piranhas 2026"
    assert [team.id for team in config.teams] == ["zufall", "gierig", "suche"]
    assert {team.bot.kind for team in config.teams} == {BotKind.COMMAND}  # plays as shipped
    assert config.teams[2].bot.command == ("builtin:search", "--budget", "0.1")
    assert config.games_per_match == 6
    assert config.seed == 2026
    assert config.concurrency == 2
    assert config.limits.memory_bytes == 1536 * 1024 * 1024
    assert config.database == EXAMPLE.parent / "league.sqlite"
    assert config.source == EXAMPLE


def test_defaults_are_the_contest_s() -> None:
    config = parse_league(MINIMAL, base=Path("/leagues"))
    assert config.format is Format.ROUND_ROBIN
    assert config.games_per_match == 6
    assert (config.timeouts.soft, config.timeouts.hard) == (2.0, 10.0)
    assert config.limits.cpus == 1.0
    assert config.limits.memory_bytes == 1536 * 1024 * 1024
    assert config.limits.pids == 256
    assert not config.limits.network
    assert config.tiebreaks == (Tiebreak.SIEGPUNKTE, Tiebreak.SCHWARMGROESSE, Tiebreak.LOT)
    assert config.teams[1].name == "b"  # the id when no name is given
    assert config.teams[1].bot.command == ("python3", "bot.py", "--fast")
    assert config.database == Path("/leagues/league.sqlite")


def test_folder_bots_need_a_start_script(tmp_path: Path) -> None:
    (tmp_path / "bot").mkdir()
    text = MINIMAL.replace('image = "a:1"', 'folder = "bot"')
    with pytest.raises(LeagueFileError) as error:
        parse_league(text, base=tmp_path)
    assert error.value.key == "teams[0].folder"
    assert error.value.line == 4
    (tmp_path / "bot" / "start.sh").write_text("#!/bin/sh\n")
    config = parse_league(text, base=tmp_path)
    assert config.teams[0].bot.kind is BotKind.FOLDER
    assert config.teams[0].bot.folder == (tmp_path / "bot").resolve()


def test_tiebreak_chain_is_configurable_and_always_ends_with_lot() -> None:
    config = parse_league('tiebreaks = ["games-won", "siegpunkte"]\n' + MINIMAL)
    assert config.tiebreaks == (Tiebreak.GAMES_WON, Tiebreak.SIEGPUNKTE, Tiebreak.LOT)


def test_gauntlet_names_its_challenger() -> None:
    config = parse_league('format = "gauntlet"\ngauntlet = "b"\n' + MINIMAL)
    assert config.format is Format.GAUNTLET
    assert config.gauntlet == "b"


@pytest.mark.parametrize(
    ("text", "key", "line", "words"),
    [
        ("colour = 3\n" + MINIMAL, "colour", 1, "unknown key"),
        (MINIMAL + "colour = 3\n", "teams[1].colour", 8, "unknown key"),
        ("games_per_match = 5\n" + MINIMAL, "games_per_match", 1, "even"),
        ("games_per_match = 0\n" + MINIMAL, "games_per_match", 1, "at least 2"),
        ('seed = "x"\n' + MINIMAL, "seed", 1, "integer"),
        ('format = "swiss"\n' + MINIMAL, "format", 1, "round-robin"),
        ('format = "gauntlet"\n' + MINIMAL, "format", 1, "gauntlet ="),
        ('format = "gauntlet"\ngauntlet = "zz"\n' + MINIMAL, "gauntlet", 2, "no team"),
        (MINIMAL + '[limits]\nmemory = "lots"\n', "limits.memory", 9, "1536m"),
        (MINIMAL + "[limits]\ncpus = -1\n", "limits.cpus", 9, "positive"),
        (MINIMAL + "[timeouts]\nsoft = 3\nhard = 2\n", "timeouts.hard", 10, "soft"),
        (MINIMAL + "[timeouts]\nturbo = 1\n", "timeouts.turbo", 9, "unknown key"),
        ('tiebreaks = ["lot", "siegpunkte"]\n' + MINIMAL, "tiebreaks", 1, "last"),
        ('tiebreaks = ["elo"]\n' + MINIMAL, "tiebreaks", 1, "unknown criterion"),
        (MINIMAL.replace('id = "b"', 'id = "a"'), "teams[1].id", 6, "duplicate"),
        (MINIMAL.replace('id = "b"', 'id = "b c"'), "teams[1].id", 6, "letters"),
        (MINIMAL.replace('image = "a:1"', 'image = "a:1"\ncommand = "x"'), "teams[0]", 2, "one of"),
        (
            MINIMAL.replace('command = "python3 bot.py --fast"', "command = []"),
            "teams[1].command",
            7,
            "empty",
        ),
        ('name = "L"\n[[teams]]\nid = "a"\nimage = "x"\n', "teams", 2, "at least two"),
        ('name = ""\n' + MINIMAL.split("\n", 1)[1], "name", 1, "non-empty"),
        ("limits.pids = 2\n" + MINIMAL, "limits.pids", 1, "at least 16"),
    ],
)
def test_errors_name_the_key_and_its_line(text: str, key: str, line: int, words: str) -> None:
    with pytest.raises(LeagueFileError) as error:
        parse_league(text, path="my.toml")
    assert error.value.key == key
    assert error.value.line == line
    assert words in error.value.message
    assert str(error.value).startswith(f"my.toml:{line}: {key}: ")


def test_syntax_errors_carry_tomllib_s_line() -> None:
    with pytest.raises(LeagueFileError) as error:
        parse_league(MINIMAL + "oops = \n", path="my.toml")
    assert error.value.line == 8
    assert "not valid TOML" in str(error.value)


def test_an_unreadable_file_is_a_league_file_error(tmp_path: Path) -> None:
    with pytest.raises(LeagueFileError, match="cannot read"):
        load_league(tmp_path / "missing.toml")


def _teams(count: int) -> str:
    return "".join(f'[[teams]]\nid = "t{index}"\ncommand = "bot"\n' for index in range(count))


@pytest.mark.parametrize(
    ("text", "key", "line", "words"),
    [
        ("games_per_match = 1000000000\n" + MINIMAL, "games_per_match", 1, "at most 1000"),
        ('name = "L"\n' + _teams(3000), "teams", 2, "3000 teams: at most 500"),
        (
            'name = "L"\ngames_per_match = 10\n' + _teams(400),
            "games_per_match",
            2,
            "the schedule would have 798000 games",
        ),
        (
            'name = "L"\nformat = "double-round-robin"\n' + _teams(450),
            "teams",
            3,
            "at most 200000",
        ),
        (MINIMAL.replace('id = "b"', 'id = "b"\nname = "B\\u0000x"'), "teams[1].name", 7, "U+0000"),
        (MINIMAL.replace('name = "L"', 'name = "L\\u001b[2J"'), "name", 1, "U+001B"),
        ('database = "/dev/null"\n' + MINIMAL, "database", 1, "not a regular file"),
    ],
)
def test_schedule_size_names_and_the_store_are_bounded(
    text: str, key: str, line: int, words: str
) -> None:
    """Limits checked before the schedule is built (1e9 games per match took 2 GB and 45 s
    before MemoryError); control characters and a device as the store (issue 17 item 14)."""
    with pytest.raises(LeagueFileError) as error:
        parse_league(text, path="liga.toml")
    assert (error.value.key, error.value.line) == (key, line)
    assert words in error.value.message
    assert str(error.value).startswith(f"liga.toml:{line}: {key}: ")


@pytest.mark.parametrize(
    "nested",
    [
        "a = " + "[" * 50_000 + "]" * 50_000,
        "a = " + "{b = " * 5000 + "1" + "}" * 5000,
        "a" + ".a" * 200_000 + " = 1",  # tomllib: quadratic in the parts (40,000: 37 s)
        "[" + "a." * 200_000 + "a]",
    ],
)
def test_deep_nesting_is_a_clear_error(nested: str) -> None:
    with pytest.raises(LeagueFileError, match="nested too deeply"):
        parse_league(MINIMAL + nested + "\n", path="liga.toml")


def test_the_league_file_is_read_bounded(tmp_path: Path) -> None:
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    with pytest.raises(LeagueFileError, match="not a regular file"):
        load_league(zero)
    big = tmp_path / "big.toml"
    big.write_text(MINIMAL + "#" * 2_000_000 + "\n")
    with pytest.raises(LeagueFileError, match="larger than"):
        load_league(big)
