"""Hostile uploads for the ladder's Docker tests (runs inside the bot image: stdlib and this
project's engine/protocol copied next to it, like tests/sandbox/sandbox_bot.py). Started by
start.sh as `hostile_bot.py MODE -h H -p P -r CODE`:

  forkbomb  fork until the kernel refuses, and keep trying: it never joins, never ends
  probe     print what it sees of the network (interfaces, routes, where gameserver
            resolves to), then play; it never sends anything anywhere but to the game server
  reader    look for files outside its folder: the host path in /bot/host-path.txt, any
            ZIP or `SECRET-*` file anywhere, /etc/shadow; then play
  spam      write 2 GB to stdout, without joining
  slow      play, thinking 0.1 s per move

Each prints `MODE: ...` lines that the tests read from the bot's log.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAST_BOT = HERE / "tests" / "bots" / "fast_bot.py"
SKIP = {"/proc", "/sys", "/dev"}


def forkbomb() -> None:
    children = 0
    refused = None
    while True:
        try:
            pid = os.fork()
        except OSError as error:
            if refused is None:
                refused = error.errno
                print(f"forkbomb: {children} forks, then refused (errno {refused})", flush=True)
            time.sleep(0.05)
            continue
        if pid == 0:
            while True:  # every child keeps trying too
                with contextlib.suppress(OSError):
                    os.fork()
                time.sleep(0.05)
        children += 1


def probe() -> None:
    interfaces = sorted(os.listdir("/sys/class/net"))
    print(f"probe: interfaces={','.join(interfaces)}", flush=True)
    with open("/proc/net/route") as routes:
        entries = [line.split() for line in routes.read().splitlines()[1:] if line.strip()]
    print(f"probe: routes={len(entries)}", flush=True)
    print(f"probe: gameserver={socket.gethostbyname('gameserver')}", flush=True)


def reader() -> None:
    host_path = (HERE / "host-path.txt").read_text().strip()
    print(f"reader: host data dir visible={os.path.exists(host_path)}", flush=True)
    found = []
    for root, folders, files in os.walk("/"):
        folders[:] = [f for f in folders if os.path.join(root, f) not in SKIP]
        for name in files:
            if name.endswith(".zip") or name.startswith("SECRET-"):
                found.append(os.path.join(root, name))
    print(f"reader: foreign files={found}", flush=True)
    try:
        Path("/etc/shadow").read_bytes()
        print("reader: /etc/shadow readable", flush=True)
    except OSError as error:
        print(f"reader: /etc/shadow refused ({error.strerror})", flush=True)


def spam() -> None:
    line = b"x" * 1023 + b"\n"
    block = line * 1024  # 1 MiB
    out = sys.stdout.buffer
    for _ in range(2048):  # 2 GiB
        out.write(block)
    out.flush()
    print("spam: all 2 GiB written", flush=True)
    time.sleep(3600)


def main() -> None:
    mode, arguments = sys.argv[1], sys.argv[2:]
    print(f"{mode}: started", flush=True)
    if mode == "forkbomb":
        forkbomb()
    elif mode == "spam":
        spam()
    elif mode == "probe":
        probe()
    elif mode == "reader":
        reader()
    extra = ["--delay", "0.1"] if mode == "slow" else []
    os.execv(sys.executable, [sys.executable, str(FAST_BOT), *arguments, *extra])


if __name__ == "__main__":
    main()
