"""Real Redis and PostgreSQL servers from the Debian packages, private to a test session.

Each server gets its own data directory in a fresh temporary folder, listens on 127.0.0.1 (or
the address given, inside the network namespace given) on a free port, and is stopped by its
process id (never by name: other servers on the machine are left alone). Both can be restarted on
the same port and data, to test that nothing is lost. Both also have a login with a password
(`SECURE_USER`, `SECURE_PASSWORD`), for the tests of wrong passwords and of the operator's
set-up; the default login needs none.

PostgreSQL's `initdb` refuses to run as root: as root the server runs as the `postgres` user the
Debian package creates (the process switches user before exec, so its id is the postmaster's),
with its folder handed over to that user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
SECURE_USER = "league"
SECURE_PASSWORD = "s3cret/p@ss"  # needs percent-encoding in a URL
SECURE_PASSWORD_URL = "s3cret%2Fp%40ss"


class ServerMissing(Exception):
    """The server's binaries are not installed (the tests skip with this reason)."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def in_netns(netns: str | None, argv: list[str]) -> list[str]:
    """`argv` run inside the network namespace `netns` (None: this one)."""
    return argv if netns is None else ["ip", "netns", "exec", netns, *argv]


def _wait_for_port(
    port: int,
    process: subprocess.Popen[bytes],
    log: Path,
    host: str = "127.0.0.1",
    netns: str | None = None,
) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{log.read_text()}")
        if netns is not None:
            code = f"import socket; socket.create_connection(({host!r}, {port}), 0.2)"
            probe = [sys.executable, "-c", code]
            if subprocess.run(in_netns(netns, probe), capture_output=True).returncode == 0:
                return
        else:
            with contextlib.suppress(OSError), socket.create_connection((host, port), 0.2):
                return
        time.sleep(0.05)
    raise RuntimeError(f"the server did not listen on {port} within {START_TIMEOUT:g} s")


def _stop(process: subprocess.Popen[bytes] | None, signum: signal.Signals) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signum)
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class RedisServer:
    """`redis-server` with append-only persistence (every write fsynced: a restart in a test
    must lose nothing) on a free loopback port."""

    def __init__(self, host: str = "127.0.0.1", netns: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServerMissing("redis-server is not installed (Debian package redis-server)")
        self.binary = binary
        self.host = host
        self.netns = netns
        self.folder = Path(tempfile.mkdtemp(prefix="piranhas-redis-"))
        self.port = free_port() if netns is None else 6379
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL Dramatiq's broker connects to (the default user, no password)."""
        return f"redis://{self.host}:{self.port}/0"

    @property
    def secure_url(self) -> str:
        """The URL of the user with a password (an ACL user, as docs/distributed.md sets up)."""
        return f"redis://{SECURE_USER}:{SECURE_PASSWORD_URL}@{self.host}:{self.port}/0"

    def start(self) -> None:
        """Start (or restart) the server on the same port and data."""
        log = self.folder / "redis.log"
        argv = [
            self.binary,
            "--bind", self.host,
            "--port", str(self.port),
            "--dir", str(self.folder),
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--save", "",
            "--protected-mode", "yes",
            "--logfile", str(log),
            # docs/distributed.md's ACL: the league's user may touch Dramatiq's keys only.
            "--user", SECURE_USER, "on", f">{SECURE_PASSWORD}", "~dramatiq*", "+@all",
        ]  # fmt: skip
        if self.netns is not None:  # reachable from other hosts: no login without a password
            argv += ["--user", "default", "off"]
        self.process = subprocess.Popen(in_netns(self.netns, argv), stdin=subprocess.DEVNULL)
        _wait_for_port(self.port, self.process, log, self.host, self.netns)

    def stop(self) -> None:
        """SIGTERM to its process id: Redis flushes the append-only file and exits."""
        _stop(self.process, signal.SIGTERM)

    def close(self) -> None:
        """Stop it and remove its data."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def _postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise ServerMissing(
            "PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb, Debian package "
            "postgresql)"
        )
    return Path(found[-1]).parent


class PostgresServer:
    """A private PostgreSQL cluster (`initdb` + `postgres`) on a free loopback port (or `host`
    in `netns`): trust authentication for the `postgres` role, scram-sha-256 for the role
    SECURE_USER (created with SECURE_PASSWORD, allowed to create databases)."""

    def __init__(self, host: str = "127.0.0.1", netns: str | None = None) -> None:
        self.bin = _postgres_bin()
        self.host = host
        self.netns = netns
        self.user: str | None = None
        self.folder = Path(tempfile.mkdtemp(prefix="piranhas-postgres-"))
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise ServerMissing("running as root and there is no postgres user") from None
            self.user = "postgres"
            os.chmod(self.folder, 0o700)
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        self.data = self.folder / "data"
        self.port = free_port() if netns is None else 5432
        self.process: subprocess.Popen[bytes] | None = None
        self._created_role = False
        subprocess.run(
            [
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            ],
            check=True,
            user=self.user,
            group=self.user,
            cwd=self.folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        # First match wins: the password role by password from anywhere, everyone else trusted.
        (self.data / "pg_hba.conf").write_text(
            "local all all trust\n"
            f"host all {SECURE_USER} 0.0.0.0/0 scram-sha-256\n"
            "host all all 0.0.0.0/0 trust\n"
        )

    @property
    def dsn(self) -> str:
        """The connection string for psycopg."""
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    def secure_dsn(self, database: str) -> str:
        """The password role's URL for `database`."""
        return (
            f"postgresql://{SECURE_USER}:{SECURE_PASSWORD_URL}@{self.host}:{self.port}/{database}"
        )

    def start(self) -> None:
        """Start (or restart) the server on the same port and data."""
        log = self.folder / "postgres.log"
        argv = [
            str(self.bin / "postgres"),
            "-D", str(self.data),
            "-p", str(self.port),
            "-c", f"listen_addresses={self.host}",
            "-c", f"unix_socket_directories={self.folder}",
            "-c", "max_connections=60",
            "-c", "fsync=on",
        ]  # fmt: skip
        if self.netns is not None and self.user is not None:
            # `ip netns exec` needs root: switch user after it (setpriv execs, same PID).
            ids = [f"--reuid={self.user}", f"--regid={self.user}", "--clear-groups"]
            argv = ["setpriv", *ids, *argv]
            user = None
        else:
            user = self.user
        with log.open("ab") as log_file:
            self.process = subprocess.Popen(
                in_netns(self.netns, argv),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                user=user,
                group=user,
                cwd=self.folder,
            )
        _wait_for_port(self.port, self.process, log, self.host, self.netns)
        if not self._created_role:
            self.execute(f"CREATE ROLE {SECURE_USER} LOGIN CREATEDB PASSWORD '{SECURE_PASSWORD}'")
            self._created_role = True
        else:
            self.execute("SELECT 1")  # a restart: wait until it accepts connections again

    def execute(self, sql: str) -> None:
        """Run one statement as the postgres role (autocommit), waiting for the server to
        accept connections; from inside the server's namespace when it has one."""
        if self.netns is None:
            import psycopg

            deadline = time.monotonic() + START_TIMEOUT
            while True:
                try:
                    connection = psycopg.connect(self.dsn, connect_timeout=2, autocommit=True)
                    break
                except psycopg.OperationalError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            with connection:
                connection.execute(sql.encode())
            return
        code = (
            "import sys\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "from servers import PostgresServer\n"
            "server = PostgresServer.__new__(PostgresServer)\n"
            "server.netns, server.host, server.port = None, sys.argv[2], int(sys.argv[3])\n"
            "server.execute(sys.argv[4])\n"
        )
        argv = [sys.executable, "-c", code, str(Path(__file__).parent), self.host, str(self.port)]
        subprocess.run(in_netns(self.netns, [*argv, sql]), check=True, timeout=START_TIMEOUT + 10)

    def create_database(self, name: str, owner: str = "postgres") -> str:
        """A new empty database owned by `owner`; its connection string (the postgres role's)."""
        self.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        return f"postgresql://postgres@{self.host}:{self.port}/{name}"

    def stop(self) -> None:
        """SIGINT to the postmaster's process id: PostgreSQL's fast shutdown (clients are
        disconnected, committed data stays)."""
        _stop(self.process, signal.SIGINT)

    def close(self) -> None:
        """Stop it and remove its data."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
