"""server.properties parsing and the command line (docs/protocol.md §7.1, §7.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.config import (
    DEFAULT_PASSWORD,
    ConfigError,
    Settings,
    load_settings,
    parse_settings,
)
from server.options import property_keys
from server.properties import parse_properties


def write_properties(directory: Path, text: str, name: str = "server.properties") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


# --- Java properties format --------------------------------------------------------------


def as_dict(text: str) -> dict[str, str]:
    return {prop.key: prop.value for prop in parse_properties(text)}


@pytest.mark.parametrize(
    "line",
    ["port=1234", "port = 1234", "port: 1234", "port 1234", "  port\t=\t1234", "port:1234"],
)
def test_separators(line: str) -> None:
    assert as_dict(line) == {"port": "1234"}


def test_comments_and_blank_lines_are_skipped() -> None:
    text = "# a comment\n! another\n\n   \n  # indented comment\nport=1\n"
    assert as_dict(text) == {"port": "1"}


def test_comment_lines_are_not_continued() -> None:
    assert as_dict("# comment \\\nport=1") == {"port": "1"}


def test_continuation_lines_join_and_drop_leading_whitespace() -> None:
    assert as_dict("password = abc\\\n     def\\\n  ghi\nport=2") == {
        "password": "abcdefghi",
        "port": "2",
    }


def test_even_number_of_backslashes_is_not_a_continuation() -> None:
    assert as_dict("password = abc\\\\\nport=2") == {"password": "abc\\", "port": "2"}


def test_unicode_and_character_escapes() -> None:
    props = as_dict("password = p\\u00e4ss\\tword\\n\nkey\\ with\\=odd\\:chars = v")
    assert props["password"] == "päss\tword\n"
    assert props["key with=odd:chars"] == "v"


def test_value_keeps_trailing_spaces_and_inner_separators() -> None:
    assert as_dict("password = a=b:c d  ") == {"password": "a=b:c d  "}


def test_key_without_value() -> None:
    assert as_dict("password") == {"password": ""}
    assert as_dict("password =") == {"password": ""}


def test_crlf_and_cr_line_endings() -> None:
    assert as_dict("port=1\r\npaused=true\rlocal=false") == {
        "port": "1",
        "paused": "true",
        "local": "false",
    }


def test_line_numbers_are_of_the_logical_line_start() -> None:
    props = parse_properties("# c\n\nport = 1\\\n 2\npaused=true\n")
    assert [(p.key, p.line) for p in props] == [("port", 3), ("paused", 5)]


def test_malformed_unicode_escape_names_the_line() -> None:
    with pytest.raises(ValueError, match="line 2"):
        parse_properties("port=1\npassword=\\u12x4\n")


def test_last_duplicate_wins(tmp_path: Path) -> None:
    write_properties(tmp_path, "port=1000\nport=2000\n")
    assert load_settings([], tmp_path).port == 2000


# --- defaults and official semantics -----------------------------------------------------


def test_defaults_without_properties_file(tmp_path: Path) -> None:
    settings, warnings = parse_settings([], tmp_path)
    assert settings.port == 13050
    assert settings.host == "127.0.0.1"
    assert settings.password == DEFAULT_PASSWORD
    assert settings.paused is False
    assert settings.timeout is True
    assert settings.save_replay is False
    assert settings.replay_dir == tmp_path / "replays"
    assert settings.load_game_file is None
    assert warnings == []


def test_file_without_password_disables_admin_login_with_warning(tmp_path: Path) -> None:
    path = write_properties(tmp_path, "paused = false\n")
    settings, warnings = parse_settings([], tmp_path)
    assert settings.password is None
    assert any("no password" in w and str(path) in w for w in warnings)


def test_official_example_file(tmp_path: Path) -> None:
    write_properties(tmp_path, "password = examplepassword\npaused = false\n")
    settings, warnings = parse_settings([], tmp_path)
    assert settings.password == "examplepassword"
    assert warnings == []


def test_all_official_keys(tmp_path: Path) -> None:
    write_properties(
        tmp_path,
        "password = secret\nport = 14000\npaused = TRUE\ntimeout = False\n"
        "local = false\nsaveReplay = true\nplugins = ./plugins\n",
    )
    settings = load_settings([], tmp_path)
    assert settings == Settings(
        host="0.0.0.0",
        port=14000,
        password="secret",
        paused=True,
        timeout=False,
        save_replay=True,
        replay_dir=tmp_path / "replays",
    )


def test_own_keys_in_camel_case(tmp_path: Path) -> None:
    write_properties(
        tmp_path,
        "password=x\nhost=::1\nreplayDir=out/r\nresultsFile=res.jsonl\nlogFormat=JSON\n"
        "logLevel=Debug\nsoftTimeout=1.5\nhardTimeout=3\nidleTimeout=0\nreservationTtl=60\n"
        "gameWallClockLimit=120\nmaxPacketBytes=4096\nsendBufferMessages=10\n",
    )
    settings = load_settings([], tmp_path)
    assert settings.host == "::1"
    assert settings.replay_dir == tmp_path / "out" / "r"
    assert settings.results_file == tmp_path / "res.jsonl"
    assert settings.log_format == "json"
    assert settings.log_level == "debug"
    assert (settings.soft_timeout, settings.hard_timeout) == (1.5, 3.0)
    assert settings.idle_timeout == 0
    assert settings.reservation_ttl == 60
    assert settings.game_wall_clock_limit == 120
    assert settings.max_packet_bytes == 4096
    assert settings.send_buffer_messages == 10


def test_every_settings_field_has_a_property_key() -> None:
    from dataclasses import fields

    keys = set(property_keys())
    for settings_field in fields(Settings):
        if settings_field.name == "start_state":
            continue  # derived from loadGameFile and turn
        camel = "".join(
            part if i == 0 else part.capitalize()
            for i, part in enumerate(settings_field.name.split("_"))
        )
        assert camel in keys or settings_field.name == "save_replay"
    assert {"saveReplay", "loadGameFile", "local", "plugins"} <= keys


def test_unknown_key_only_warns_with_location(tmp_path: Path) -> None:
    path = write_properties(tmp_path, "password=x\n\nprot = 1\n")
    settings, warnings = parse_settings([], tmp_path)
    assert settings.port == 13050
    assert warnings == [f"{path}:3: unknown key 'prot' ignored"]


def test_default_password_on_public_interface_warns(tmp_path: Path) -> None:
    write_properties(tmp_path, "password=examplepassword\nlocal=false\n")
    _settings, warnings = parse_settings([], tmp_path)
    assert any("default password" in w for w in warnings)


def test_latin1_file_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_bytes("password=pässword\n".encode("latin-1"))
    assert load_settings([], tmp_path).password == "pässword"


# --- command line --------------------------------------------------------------------------


def test_official_flags(tmp_path: Path) -> None:
    settings = load_settings(["-p", "13051", "--no-timeout", "--saveReplay"], tmp_path)
    assert (settings.port, settings.timeout, settings.save_replay) == (13051, False, True)
    assert load_settings(["--port", "0"], tmp_path).port == 0


def test_save_replay_accepts_a_trailing_boolean(tmp_path: Path) -> None:
    # The official docs write `--saveReplay true`.
    assert load_settings(["--saveReplay", "true"], tmp_path).save_replay is True
    assert load_settings(["--saveReplay", "false"], tmp_path).save_replay is False


def test_command_line_wins_over_file(tmp_path: Path) -> None:
    write_properties(tmp_path, "password=file\nport=1111\ntimeout=true\npaused=false\n")
    settings = load_settings(
        ["--port", "2222", "--no-timeout", "--password", "cli", "--paused"], tmp_path
    )
    assert (settings.port, settings.timeout, settings.password, settings.paused) == (
        2222,
        False,
        "cli",
        True,
    )


def test_host_flag_wins_over_local(tmp_path: Path) -> None:
    write_properties(tmp_path, "password=x\nlocal=false\n")
    assert load_settings(["--host", "127.0.0.2"], tmp_path).host == "127.0.0.2"


def test_own_flags(tmp_path: Path) -> None:
    settings = load_settings(
        [
            "--results",
            "r.jsonl",
            "--log-format",
            "json",
            "--log-level",
            "warning",
            "--soft-timeout",
            "0.5",
            "--hard-timeout",
            "1",
            "--idle-timeout",
            "30",
            "--reservation-ttl",
            "0",
            "--game-wall-clock-limit",
            "5",
            "--max-packet-bytes",
            "2048",
            "--send-buffer-messages",
            "7",
            "--replay-dir",
            "/tmp/x",
        ],
        tmp_path,
    )
    assert settings.results_file == tmp_path / "r.jsonl"
    assert (settings.log_format, settings.log_level) == ("json", "warning")
    assert (settings.soft_timeout, settings.hard_timeout, settings.idle_timeout) == (0.5, 1, 30)
    assert (settings.reservation_ttl, settings.game_wall_clock_limit) == (0, 5)
    assert (settings.max_packet_bytes, settings.send_buffer_messages) == (2048, 7)
    assert settings.replay_dir == Path("/tmp/x")


def test_properties_flag_reads_another_file(tmp_path: Path) -> None:
    write_properties(tmp_path, "password=default\n")
    write_properties(tmp_path, "password=other\nport=3000\n", name="other.properties")
    settings = load_settings(["--properties", "other.properties"], tmp_path)
    assert (settings.password, settings.port) == ("other", 3000)


def test_help_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        load_settings(["--help"], tmp_path)
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--port", "--no-timeout", "--saveReplay", "--loadGameFile", "--results"):
        assert flag in out


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("password=x\nport = abc\n", ["server.properties:2", "port", "'abc'", "integer"]),
        ("password=x\nport=70000\n", ["server.properties:2", "port", "'70000'", "65535"]),
        ("paused = maybe\n", ["server.properties:1", "paused", "'maybe'", "true or false"]),
        ("saveReplay=yes\n", ["server.properties:1", "saveReplay", "'yes'"]),
        ("softTimeout=-1\n", ["server.properties:1", "softTimeout", "'-1'", "negative"]),
        ("idleTimeout=nan\n", ["idleTimeout", "finite"]),
        ("hardTimeout=0\n", ["hardTimeout", "greater than 0"]),
        ("logFormat=xml\n", ["logFormat", "console, json"]),
        ("turn=-3\n", ["turn", "negative"]),
        ("password=\\uZZZZ\n", ["server.properties", "line 1", "\\u"]),
        ("softTimeout=5\nhardTimeout=3\n", ["soft timeout", "hard timeout", "server.properties:1"]),
    ],
)
def test_bad_file_values(tmp_path: Path, text: str, fragments: list[str]) -> None:
    write_properties(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_settings([], tmp_path)
    for fragment in fragments:
        assert fragment in str(error.value)


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["--port", "abc"], ["command line", "--port", "'abc'"]),
        (["-p", "-1"], ["command line", "--port", "'-1'"]),
        (["--paused", "maybe"], ["command line", "--paused", "'maybe'"]),
        (["--hard-timeout", "-2"], ["command line", "--hard-timeout", "'-2'", "negative"]),
        (["--frobnicate"], ["command line", "--frobnicate"]),
        (["--port"], ["command line", "--port"]),
        (["--properties", "missing.properties"], ["missing.properties", "does not exist"]),
        (["--loadGameFile", "nothing.xml"], ["loadGameFile", "nothing.xml", "cannot read"]),
    ],
)
def test_bad_command_line_values(tmp_path: Path, argv: list[str], fragments: list[str]) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(argv, tmp_path)
    for fragment in fragments:
        assert fragment in str(error.value)


def test_turn_without_load_game_file_warns(tmp_path: Path) -> None:
    _settings, warnings = parse_settings(["--turn", "4"], tmp_path)
    assert any("turn is ignored" in w for w in warnings)


def test_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_bytes("\ufeffpassword=bom\n".encode())
    settings, warnings = parse_settings([], tmp_path)
    assert settings.password == "bom"
    assert warnings == []


def test_unreadable_default_file_falls_back_to_defaults_with_warning(tmp_path: Path) -> None:
    (tmp_path / "server.properties").mkdir()  # exists, but cannot be read as a file
    settings, warnings = parse_settings([], tmp_path)
    assert settings.password == DEFAULT_PASSWORD
    assert len(warnings) == 1 and "cannot read" in warnings[0]


def test_results_file_in_new_directories_is_accepted(tmp_path: Path) -> None:
    settings = load_settings(["--results", "a/b/results.jsonl"], tmp_path)
    assert settings.results_file == tmp_path / "a" / "b" / "results.jsonl"
    assert not (tmp_path / "a").exists()  # created on the first write, not now


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["--results", "dir"], ["--results", "is a directory"]),
        (["--results", "file/results.jsonl"], ["--results", "file is not a directory"]),
        (["--saveReplay", "--replay-dir", "file"], ["replay directory", "not a directory"]),
        (["--saveReplay", "--replay-dir", "file/sub"], ["replay directory", "not a directory"]),
    ],
)
def test_unusable_output_paths_fail_at_start(
    tmp_path: Path, argv: list[str], fragments: list[str]
) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_settings(argv, tmp_path)
    for fragment in fragments:
        assert fragment in str(error.value)


def test_replay_dir_is_not_checked_without_save_replay(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("", encoding="utf-8")
    assert load_settings(["--replay-dir", "file"], tmp_path).replay_dir == tmp_path / "file"


def test_load_game_file_at_a_finished_game_warns(tmp_path: Path) -> None:
    from engine import GameState
    from protocol.messages import Memento
    from protocol.replay import write_replay

    state = GameState.initial(seed=11)
    packets = [Memento("r", state)]
    while not state.is_over:
        state = state.apply(state.legal_moves()[0])
        packets.append(Memento("r", state))
    (tmp_path / "game.xml").write_bytes(write_replay("r", packets))
    settings, warnings = parse_settings(
        ["--loadGameFile", "game.xml", "--turn", str(state.turn)], tmp_path
    )
    assert settings.start_state == state
    assert any("already over" in warning for warning in warnings)
    _settings, early = parse_settings(["--loadGameFile", "game.xml"], tmp_path)
    assert early == []


def test_play_bots_are_named_commands_and_bad_ones_name_the_key(tmp_path: Path) -> None:
    write_properties(
        tmp_path,
        "webPlayBots = mine=/opt/bot/start.sh --fast; old=builtin:search --budget 0.3;\n"
        "webPlayMaxGames = 2\n",
    )
    settings = load_settings(["--web-play-max-games-per-address", "3"], tmp_path)
    assert settings.web_play_bots == (
        ("mine", "/opt/bot/start.sh --fast"),
        ("old", "builtin:search --budget 0.3"),
    )
    assert (settings.web_play_max_games, settings.web_play_max_games_per_address) == (2, 3)
    assert Settings().web_play_bots == ()
    for value, fragment in [
        ("nameless", "NAME=COMMAND"),
        ("a b=cmd", "NAME=COMMAND"),
        ("search=./x", "taken"),
        ("x=./a; x=./b", "taken"),
        ("x=", "empty"),
        ("x='unclosed", "cannot parse"),
        ("x=docker:image", "docker"),
    ]:
        with pytest.raises(ConfigError) as error:
            load_settings(["--web-play-bots", value], tmp_path)
        assert "--web-play-bots" in str(error.value) and fragment in str(error.value), value


def test_load_game_file_whose_last_move_cannot_have_led_to_its_board_warns(
    tmp_path: Path,
) -> None:
    from engine import GameState
    from protocol.messages import Memento
    from protocol.replay import write_replay

    state = GameState.initial(seed=11)
    packets = [Memento("r", state)]
    for _ in range(6):
        state = state.apply(state.legal_moves()[0])
        packets.append(Memento("r", state))
    # Turn 6 names a move from a field a fish of the side to move stands on.
    wrong = GameState.from_rows(state.rows(), state.turn, None, state.legal_moves()[0])
    packets[-1] = Memento("r", wrong)
    (tmp_path / "game.xml").write_bytes(write_replay("r", packets))
    settings, warnings = parse_settings(["--loadGameFile", "game.xml", "--turn", "6"], tmp_path)
    # Loaded as the official server loads it, with a warning that says why.
    assert settings.start_state == wrong
    assert any("cannot have led to its board (its start" in warning for warning in warnings)
    _settings, fine = parse_settings(["--loadGameFile", "game.xml", "--turn", "5"], tmp_path)
    assert fine == []
