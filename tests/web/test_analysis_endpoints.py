"""The replay viewer's new endpoints without a browser: the download, "analyse this game"
(bounded, CSRF-protected, with progress) and "play from here"."""

from __future__ import annotations

import gzip
import urllib.error
import urllib.request

import trio

from .conftest import Running
from .test_analysis_browser import random_game, replay_file


def raw_get(url: str) -> tuple[int, bytes, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as failure:
        return failure.code, failure.read(), dict(failure.headers)


async def test_a_replay_downloads_as_its_own_bytes_and_nothing_else_does(running: Running) -> None:
    states, _ = random_game(moves=12)
    directory = running.viewer.settings.replay_dir
    path = replay_file(directory, states)
    zipped = directory / "zipped.xml.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    (directory / "odd name.xml").write_bytes(path.read_bytes())
    base = running.url + "/api/replays/"
    status, data, headers = await trio.to_thread.run_sync(raw_get, base + "game.xml/download")
    assert status == 200 and data == path.read_bytes()
    assert headers["content-disposition"] == 'attachment; filename="game.xml"'
    status, data, headers = await trio.to_thread.run_sync(raw_get, base + "zipped.xml.gz/download")
    assert status == 200 and gzip.decompress(data) == path.read_bytes()
    assert headers["content-type"] == "application/gzip"
    # A name the header could not carry as it is gets a plain one.
    status, data, headers = await trio.to_thread.run_sync(raw_get, base + "odd%20name.xml/download")
    assert status == 200 and headers["content-disposition"] == 'attachment; filename="replay.xml"'
    for missing in ("missing.xml", "..%2Fsecret.xml", "notes.txt"):
        url = base + missing + "/download"
        assert (await trio.to_thread.run_sync(raw_get, url))[0] == 404, missing
