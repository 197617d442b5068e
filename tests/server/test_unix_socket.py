"""The extra Unix-socket listener (Settings.unix_socket, `unixSocket`, `--unix-socket`): the
same lobby as the TCP port, so a bot without a network (in a container) plays against one on
TCP; the socket file goes when the server stops."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import trio

from client import ClientSession
from protocol.messages import WelcomeMessage
from server.app import open_unix_listener, serve
from server.config import ConfigError, Settings, load_settings

pytestmark = pytest.mark.timeout(30)


async def test_a_unix_socket_player_and_a_tcp_player_share_a_room(tmp_path: Path) -> None:
    path = tmp_path / "server.sock"
    settings = Settings(port=0, unix_socket=path, save_replay=False)
    stop = trio.Event()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(partial(serve, settings, stop=stop, handle_signals=False))
            assert path.is_socket()
            over_unix = ClientSession(await trio.open_unix_socket(str(path)))
            over_tcp = ClientSession(await trio.open_tcp_stream("127.0.0.1", port))
            joined = await over_unix.join()
            assert (await over_tcp.join()).room_id == joined.room_id
            # Both seats taken: the game starts and each side is welcomed with its team.
            teams = set()
            for session in (over_unix, over_tcp):
                welcome = await session.expect(WelcomeMessage)
                assert welcome.room_id == joined.room_id
                teams.add(welcome.team)
            assert len(teams) == 2
            await over_unix.aclose()
            await over_tcp.aclose()
            stop.set()
    assert not path.exists()


async def test_a_stale_socket_file_is_replaced_but_another_file_is_not(tmp_path: Path) -> None:
    path = tmp_path / "server.sock"
    first = await open_unix_listener(path)
    await first.aclose()  # a server that died leaves the socket file behind
    assert path.is_socket()
    second = await open_unix_listener(path)
    async with second:
        stream = await trio.open_unix_socket(str(path))
        await stream.aclose()
    regular = tmp_path / "not-a-socket"
    regular.write_text("data")
    with pytest.raises(OSError):
        await open_unix_listener(regular)
    assert regular.read_text() == "data"


def test_the_setting_comes_from_the_file_and_the_flag_relative_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "server.properties").write_text("unixSocket = run/server.sock\n")
    assert load_settings([], tmp_path).unix_socket == tmp_path / "run/server.sock"
    flagged = load_settings(["--unix-socket", "/tmp/x.sock"], tmp_path)
    assert flagged.unix_socket == Path("/tmp/x.sock")
    assert load_settings([], tmp_path / "nowhere").unix_socket is None
    with pytest.raises(ConfigError, match="unix-socket"):
        load_settings(["--unix-socket", " "], tmp_path)
