"""Test rules (loopback, port 0, MockClock, time limits) and helpers: see tests/README.md.

Session-wide servers for the tests that need them: a real Redis and PostgreSQL from the Debian
packages (tests/distributed/servers.py), started on first use, stopped by process id at the end,
skipped with the reason when the packages are missing. Used by the distributed league tests and
by the store tests' PostgreSQL parametrization (both marked `distributed`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from .distributed.servers import PostgresServer, RedisServer, ServerMissing

# `--no-skips` (tests/helpers/noskip.py): .ci/run's groups with services must not skip.
pytest_plugins = ["tests.helpers.noskip"]


def pytest_itemcollected(item: pytest.Item) -> None:
    """The Docker tests check that no container of any run is left, so two of them must not
    overlap: where a daemon may answer, they skip on the default run's xdist workers (without
    one they skip anyway, but for the one that needs none); .ci/run's Docker step runs them
    in one process (-n 0), where nothing skips."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    daemon = "DOCKER_HOST" in os.environ or os.path.exists("/var/run/docker.sock")
    if workers > 1 and daemon and item.get_closest_marker("docker") is not None:
        item.add_marker(pytest.mark.skip(reason="Docker tests run in one process: -n 0"))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """Redis for the whole session (append-only, loopback, a free port)."""
    try:
        server = RedisServer()
    except ServerMissing as missing:
        pytest.skip(str(missing))
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """PostgreSQL for the whole session (private cluster, loopback, a free port)."""
    try:
        server = PostgresServer()
    except ServerMissing as missing:
        pytest.skip(str(missing))
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def postgres_dsn(postgres_server: PostgresServer) -> str:
    """A new, empty PostgreSQL database for one test."""
    return postgres_server.create_database(f"league_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis, emptied for this test (no message of another test is left)."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    return redis_server.url
