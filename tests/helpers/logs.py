"""The logging configuration of the test process, put back after a test that changes it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import structlog


@contextmanager
def restored_logging() -> Iterator[None]:
    """structlog's defaults and the standard library's root handlers and level afterwards."""
    handlers, level = logging.root.handlers[:], logging.root.level
    try:
        yield
    finally:
        structlog.reset_defaults()
        logging.root.handlers[:] = handlers
        logging.root.setLevel(level)
