"""The whole path in a browser, on `piranhas-ladder serve --no-docker` as a user starts it:
invite → sign up → upload → card → activate → games played → rating moves → a game opened in
the replay viewer with its analysis. The opponent team uploads and activates through the API
with its token, as a CI would. Bots are the check's bash bot (tests/check/bots/shell); the
analysis searches few nodes (`--analysis-nodes`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.ladder.site_client import encode_form, zip_bytes

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]
REPO = Path(__file__).resolve().parents[2]
SHELL_BOT = REPO / "tests" / "check" / "bots" / "shell"
SCREENSHOTS = REPO / "artifacts" / "screenshots"
ADMIN_PASSWORD = "admin password 1"
PASSWORD = "member password 1"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"browser tests need {CHROMIUM}"),
]


def bot_zip() -> bytes:
    """The check's bash bot (bash and /dev/tcp only: the jail's unprivileged user runs it)."""
    return zip_bytes({name: (SHELL_BOT / name).read_text() for name in ("start.sh", "bot.sh")})


def ladder(data: Path, *args: str) -> str:
    """`piranhas-ladder ARGS --data DATA`'s standard output."""
    done = subprocess.run(
        [sys.executable, "-m", "cli.ladder", *args, "--data", str(data)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PIRANHAS_LADDER_PASSWORD": ADMIN_PASSWORD},
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`piranhas-ladder serve --no-docker` on a free port: (its URL, its data directory)."""
    data = tmp_path / "data"
    ladder(data, "init", "--admin", "root")
    out = tmp_path / "serve.out"
    with out.open("w") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli.ladder",
                "serve",
                "--data",
                str(data),
                "--port",
                "0",
                "--no-docker",
                "--workers",
                "1",
                "--analysis-nodes",
                "1000",
            ],
            cwd=REPO,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline and process.poll() is None:
            found = re.search(r"the ladder is at (http://\S+)", out.read_text())
            url = found[1] if found else None
            time.sleep(0.1)
        assert url is not None, out.read_text()
        yield url, data
    finally:
        print(out.read_text()[-6000:])  # shown when the test fails
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(process.pid)], capture_output=True, text=True
        ).stdout.split()
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert process.returncode == 0, out.read_text()
    # The workers' process (and anything else serve started) ended with it.
    assert children, "serve started no workers' process"

    def gone(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    for child in children:
        wait_for(partial(gone, int(child)), 10, f"serve's child {child} to end")


def api(url: str, path: str, token: str, body: Any = None, files: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    data = None
    if files is not None:
        data, content_type = encode_form({}, files)
        headers["Content-Type"] = content_type
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url + path, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def wait_for(check: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"waited {seconds:g} s for {what}")


def test_invite_upload_card_activate_games_rating_replay_analysis(
    served: tuple[str, Path],
) -> None:
    from playwright.sync_api import expect, sync_playwright

    url, data = served
    sharks = int(ladder(data, "admin", "create-team", "Sharks").split()[1].rstrip(":"))
    pikes = int(ladder(data, "admin", "create-team", "Pikes").split()[1].rstrip(":"))
    invite = ladder(data, "admin", "invite", str(sharks), "--base-url", url).strip()
    upload = data.parent / "bot.zip"
    upload.write_bytes(bot_zip())

    # The opponent, as a CI: an API token (made on its team page by a member in real life),
    # an upload, and the activation once its check passed.
    from ladder.store import LadderStore

    store = LadderStore.open(str(data / "ladder.sqlite"))
    try:
        token = store.create_api_token(pikes, by="test")
    finally:
        store.close()
    sent = api(url, "/api/upload", token, files={"bot": ("bot.zip", upload.read_bytes())})
    pikes_version = sent["version"]["id"]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(20_000)
        # Invite → sign up (signed in at once) → the team's private part.
        page.goto(invite)
        page.fill("#invite input[name=username]", "ann")
        page.fill("#invite input[name=password]", PASSWORD)
        page.click("#invite button[type=submit]")
        expect(page.locator("#team-name")).to_have_text("Sharks")
        # Sign out and in again.
        page.click("header .who button")
        page.goto(url + "/login")
        page.fill("#login input[name=username]", "ann")
        page.fill("#login input[name=password]", PASSWORD)
        page.click("#login button[type=submit]")
        expect(page.locator("#private")).to_be_visible()
        # Upload → checked → its card.
        page.set_input_files("#upload input[name=bot]", str(upload))
        page.fill("#upload input[name=label]", "first try")
        page.click("#upload button[type=submit]")
        expect(page.locator("#message")).to_contain_text("queued for the check")

        def passed() -> bool:
            page.reload()
            return page.locator('.state[data-version="1"]').inner_text() == "passed"

        wait_for(passed, 60, "the check of Sharks v1")
        card = page.request.get(url + (page.locator("a.card").first.get_attribute("href") or ""))
        assert card.ok and "items" in card.json()
        # Activate.
        page.click('button.activate[data-version="1"]')
        expect(page.locator("#message")).to_contain_text("Version activated")
        expect(page.locator("#active-version")).to_have_text("Active version: v1")

        # The opponent's check passed too: it activates through the API.
        def pikes_passed() -> bool:
            versions = api(url, "/api/versions", token)["versions"]
            return bool(versions[0]["state"] == "passed")

        wait_for(pikes_passed, 60, "the check of Pikes v1")
        api(url, "/api/activate", token, {"version": pikes_version})

        # Games are played; the rating moves off the prior.
        def rated() -> bool:
            standings = api(url, "/api/standings", token)["standings"]
            return any(int(s["games"]) > 0 for s in standings)

        wait_for(rated, 60, "a ranked match")
        page.goto(url + "/")
        expect(page.locator("#standings")).to_contain_text("Sharks")
        page.goto(url + f"/team/{sharks}")
        expect(page.locator("#rating-graph")).to_be_visible()
        expect(page.locator("#released svg.time-histogram").first).to_be_visible()
        expect(page.locator("#time-profiles")).to_be_visible()
        expect(page.locator("#games a.game").first).to_be_visible()
        log_link = page.locator("#games a.log").first.get_attribute("href") or ""
        assert page.request.get(url + log_link).ok
        # A game in the viewer's replay page, then its analysis.
        page.locator("#games a.game").first.click()
        expect(page.locator("#viewer")).to_be_visible()
        expect(page.locator("#board")).to_have_attribute("data-index", "0")
        # The viewer's page in the ladder's context: the ladder's header, the game's links,
        # nothing of the viewer's own server (Games, Play, "read-only", play from here).
        expect(page.locator("header nav a").first).to_have_text("Ladder")
        expect(page.locator('header nav a[href="/play"]')).to_have_count(0)
        expect(page.locator("header .who")).not_to_have_text("read-only")
        expect(page.locator("#context-links a")).to_have_count(3)
        expect(page.locator('[data-feature="play"]')).to_be_hidden()
        page.click("#analyse")
        expect(page.locator("#analyse-progress")).to_contain_text("analysed", timeout=60_000)
        expect(page.locator("#advantage")).to_be_visible()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "ladder-game.png"), full_page=True)
        browser.close()
