"""The bot's side of process-mode isolation, run as `python -m check.jail CONFIG` (inside
`unshare --net --mount` when the check may create namespaces).

In the new network namespace only `lo` exists. This process brings it up, puts a hosts file
that maps `gameserver` to 127.0.0.1 and an empty resolv.conf over the real ones (private mount
namespace), starts sandbox/relay.py listening on 127.0.0.1:13050 and forwarding to the game
server's Unix socket (the container launcher's relay, run here as a process), then starts the
bot: in its cgroup, with its rlimits and CPU, as an unprivileged user, in its fresh directory.
It exits with the bot's status (128 + N for a signal) once the bot's main process has ended.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

RELAY = Path(__file__).resolve().parent.parent / "sandbox" / "relay.py"


def main(config: dict[str, Any]) -> int:
    relay = None
    if config.get("netns"):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        for target, source in (
            ("/etc/hosts", config["hosts"]),
            ("/etc/resolv.conf", config["resolv"]),
        ):
            subprocess.run(["mount", "--bind", source, target], check=True)
    if config.get("socket"):
        relay = subprocess.Popen(
            [sys.executable, "-S", str(RELAY), config["socket"], str(config["port"])],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert relay.stdout is not None
        if relay.stdout.readline().strip() != "relay ready":
            print("piranhas-check: the relay to the game server did not start", file=sys.stderr)
            return 125

    def prepare() -> None:  # in the bot's process, before exec
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # an ignored signal survives exec
        for procs in config.get("cgroups", []):
            with open(procs, "w") as handle:
                handle.write(str(os.getpid()))
        for name, value in config.get("rlimits", {}).items():
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))
        if config.get("cpu") is not None:
            os.sched_setaffinity(0, {config["cpu"]})
        if config.get("gid") is not None:
            os.setgroups([])
            os.setgid(config["gid"])
        if config.get("uid") is not None:
            os.setuid(config["uid"])

    # The match core's SIGTERM reaches the whole process group, the bot included: this
    # process only waits for the bot to end.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    env = dict(config["env"])
    # The reaper finds the bot's descendants by the token start_process gave this process.
    token = config.get("token_variable")
    if token and token in os.environ:
        env[token] = os.environ[token]
    try:
        bot = subprocess.Popen(
            config["command"],
            cwd=config["cwd"],
            env=env,
            preexec_fn=prepare,
            stdin=subprocess.DEVNULL,
        )
    except OSError as error:
        print(f"piranhas-check: cannot start {config['command'][0]}: {error}", file=sys.stderr)
        return 126 if isinstance(error, PermissionError) else 127
    status = bot.wait()
    if relay is not None:
        relay.kill()
        relay.wait()
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    raise SystemExit(main(json.loads(sys.argv[1])))
