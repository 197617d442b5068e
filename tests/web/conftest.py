"""Fixtures for the web viewer tests: a game server with the viewer, and a headless chromium
driven by Playwright's sync API on one dedicated thread next to the trio server."""

from __future__ import annotations

import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

from server.app import serve
from server.config import Settings
from web.app import WebViewer

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"

T = TypeVar("T")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(reason=f"browser tests need {CHROMIUM} (apt-get install chromium)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@dataclass
class Running:
    """A running game server with its web viewer."""

    port: int
    viewer: WebViewer
    stop: trio.Event

    @property
    def url(self) -> str:
        return self.viewer.url


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(port=0, replay_dir=tmp_path / "replays", save_replay=True, password="secret-pw")


@pytest.fixture
async def running(settings: Settings, nursery: trio.Nursery) -> AsyncIterator[Running]:
    viewer = WebViewer(settings, port=0)
    stop = trio.Event()

    async def run(task_status: trio.TaskStatus[int]) -> None:
        await serve(
            settings, task_status=task_status, stop=stop, handle_signals=False, companion=viewer
        )

    port = await nursery.start(run)
    yield Running(port, viewer, stop)
    stop.set()


class BrowserThread:
    """Playwright's sync API is bound to the thread that started it: every call runs on this
    one thread; `await browser.run(fn)` runs `fn(page)` there without blocking trio."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[Any], Any], queue.Queue[Any]] | None] = (
            queue.Queue()
        )
        self._ready: queue.Queue[BaseException | None] = queue.Queue()
        self._thread = threading.Thread(target=self._main, name="playwright", daemon=True)
        self._thread.start()
        error = self._ready.get(timeout=60)
        if error is not None:
            raise error

    def _main(self) -> None:
        from playwright.sync_api import sync_playwright

        try:
            playwright = sync_playwright().start()
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
        except BaseException as error:
            self._ready.put(error)
            return
        self._ready.put(None)
        contexts: list[Any] = []
        while (job := self._jobs.get()) is not None:
            fn, reply = job
            try:
                if fn is _new_context:
                    context = browser.new_context(viewport={"width": 1280, "height": 860})
                    context.set_default_timeout(15_000)
                    contexts.append(context)
                    reply.put((True, context.new_page()))
                elif fn is _close_contexts:
                    for context in contexts:
                        context.close()
                    contexts.clear()
                    reply.put((True, None))
                else:
                    reply.put((True, fn(None)))
            except BaseException as error:
                reply.put((False, error))
        browser.close()
        playwright.stop()

    def call(self, fn: Callable[[Any], T]) -> T:
        reply: queue.Queue[Any] = queue.Queue()
        self._jobs.put((fn, reply))
        ok, value = reply.get(timeout=300)
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(*args)` on the browser thread."""
        return await trio.to_thread.run_sync(self.call, lambda _: fn(*args))

    async def new_page(self) -> Any:
        """A fresh page in a fresh context (no cookies from an earlier test)."""
        return await trio.to_thread.run_sync(self.call, _new_context)

    def close_pages(self) -> None:
        """Close every page and context (between tests)."""
        self.call(_close_contexts)

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=30)


def _new_context(_: Any) -> None:
    raise AssertionError("handled by the browser thread")


def _close_contexts(_: Any) -> None:
    raise AssertionError("handled by the browser thread")


@pytest.fixture(scope="session")
def browser_thread() -> Iterator[BrowserThread]:
    thread = BrowserThread()
    yield thread
    thread.close()


@pytest.fixture
def browser(browser_thread: BrowserThread) -> Iterator[BrowserThread]:
    """The browser, with fresh pages (no cookies) for each test."""
    yield browser_thread
    browser_thread.close_pages()


@pytest.fixture
def screenshot() -> Callable[[Any, str], None]:
    """Save a page's screenshot into artifacts/screenshots/ (call on the browser thread)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(page: Any, name: str) -> None:
        # Down to the end of the content, not the empty rest of the window.
        bottom = page.evaluate(
            "Math.ceil(document.querySelector('main').getBoundingClientRect().bottom)"
        )
        width = page.viewport_size["width"]
        page.screenshot(
            path=str(SCREENSHOTS / f"{name}.png"),
            full_page=True,
            clip={"x": 0, "y": 0, "width": width, "height": max(200, bottom)},
        )

    return save
