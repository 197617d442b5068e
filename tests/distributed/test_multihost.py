"""A distributed league on five hosts: Redis, PostgreSQL, the coordinator and two workers, each
in its own network namespace with its own address, joined by veth pairs to one bridge (made and
removed here, tests/distributed/netns.py). Passwords as an operator sets them up
(docs/distributed.md): an ACL user on Redis, a scram-sha-256 role owning the league's database,
both URLs from the environment only.

Mid-match one worker's link goes down (`ip link set down`, a pulled cable: its connections to
Redis and PostgreSQL hang, nothing is closed), long enough for its Redis heartbeat to expire, then
comes back. The coordinator's `distribute` ends with status 0; every game has exactly one result,
and the outcomes and standings equal the same league played on one machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT, Outcomes, league_text
from .netns import Network, available
from .servers import SECURE_USER, PostgresServer, RedisServer, ServerMissing, in_netns

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(300)]

DELAY = 0.05  # seconds per move: a match lasts long enough to cut a link in the middle
CUT_FOR = 9.0  # > the Redis heartbeat timeout (5 s): the match is handed to the other worker

# Run in the coordinator's namespace: what the store holds, as JSON.
DUMP = """
import json, sys
from fleet import coordinator
from fleet.stores import open_store
from league.config import load_league
sys.path.insert(0, sys.argv[3])
from conftest import outcomes
config = load_league(sys.argv[1])
store, runs = open_store(sys.argv[2])
progress = store.progress()
print(json.dumps({
    "outcomes": outcomes(store),
    "table": coordinator.standings(config, store).to_dict(),
    "finished": progress.finished, "total": progress.total,
    "runs": [[s.match_id, s.status.value, s.attempt, s.worker] for s in runs.states()],
}))
store.close()
"""


@pytest.fixture
def network() -> Iterator[Network]:
    reason = available()
    if reason is not None:
        pytest.skip(reason)
    net = Network()
    try:
        yield net
    finally:
        net.close()


class Host:
    """Processes started in one host's namespace, each in its own process group, killed with
    their children at the end."""

    def __init__(self, network: Network, name: str, folder: Path, env: dict[str, str]) -> None:
        self.namespace = network.namespace(name)
        self.folder = folder
        self.env = {**os.environ, **env}
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, label: str, *argv: str) -> tuple[subprocess.Popen[bytes], Path]:
        output = self.folder / f"{label}.out"
        with output.open("wb") as out:
            process = subprocess.Popen(
                in_netns(self.namespace, [sys.executable, "-m", "cli.league", *argv]),
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        return process, output

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_for(output: Path, text: str, process: subprocess.Popen[bytes], timeout: float) -> str:
    """Wait until `output` shows `text`; the output then."""
    deadline = time.monotonic() + timeout
    while True:
        seen = output.read_text(errors="replace")
        if text in seen:
            return seen
        if process.poll() is not None:
            raise AssertionError(f"exited with {process.returncode} before {text!r}:\n{seen}")
        if time.monotonic() > deadline:
            raise AssertionError(f"never said {text!r}:\n{seen}")
        time.sleep(0.05)


def test_a_league_on_five_hosts_survives_a_cut_worker_link(
    network: Network, tmp_path: Path, reference: tuple[Outcomes, dict[str, object]]
) -> None:
    for name in ("redis", "postgres", "coordinator", "w1", "w2"):
        network.host(name)
    try:
        redis_server = RedisServer(network.address("redis"), network.namespace("redis"))
        postgres = PostgresServer(network.address("postgres"), network.namespace("postgres"))
    except ServerMissing as missing:
        pytest.skip(str(missing))
    hosts: list[Host] = []
    try:
        redis_server.start()
        postgres.start()
        postgres.create_database("league", owner=SECURE_USER)
        env = {
            "PIRANHAS_DATABASE": postgres.secure_dsn("league"),
            "PIRANHAS_REDIS_URL": redis_server.secure_url,
        }
        league = tmp_path / "league.toml"
        league.write_text(league_text(delay=DELAY))
        coordinator = Host(network, "coordinator", tmp_path, env)
        workers = {name: Host(network, name, tmp_path, env) for name in ("w1", "w2")}
        hosts += [coordinator, *workers.values()]
        distribute, distribute_out = coordinator.start(
            "distribute", "distribute", str(league), "--interval", "0.5"
        )
        wait_for(distribute_out, "3 matches sent to the queue", distribute, 60)
        started = {}
        for name, host in workers.items():
            started[name] = host.start(
                name, "worker", str(league), "--name", name, "--poll", "0.2",
                "--log-dir", str(tmp_path / f"{name}-logs"),
            )  # fmt: skip
        for name, (process, output) in started.items():
            wait_for(output, f"worker {name} ready", process, 60)
        w1, w1_out = started["w1"]
        wait_for(w1_out, "attempt 1, 2 games to play", w1, 60)
        time.sleep(0.5)  # in the middle of its match's first game
        network.cut("w1")
        time.sleep(CUT_FOR)
        network.restore("w1")
        assert distribute.wait(180) == 0, distribute_out.read_text()
        assert w1.poll() is None, w1_out.read_text()  # it came back, it did not crash
        for process, _ in started.values():
            process.send_signal(signal.SIGTERM)
        for process, output in started.values():
            assert process.wait(60) == 0, output.read_text()
        dump = subprocess.run(
            in_netns(
                network.namespace("coordinator"),
                [sys.executable, "-c", DUMP, str(league), env["PIRANHAS_DATABASE"],
                 str(Path(__file__).parent)],
            ),
            cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, check=True,
            timeout=60,
        )  # fmt: skip
        result = json.loads(dump.stdout)
        expected_outcomes, expected_table = json.loads(json.dumps(reference))
        assert (result["finished"], result["total"]) == (6, 6)  # one result per game
        assert result["outcomes"] == expected_outcomes
        assert result["table"] == expected_table
        assert {status for _, status, _, _ in result["runs"]} == {"done"}
        print("runs after the cut:", result["runs"])
    finally:
        for host in hosts:
            host.close()
        redis_server.close()
        postgres.close()
