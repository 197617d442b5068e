"""A test bot for the container tests (runs inside the bot image, stdlib + this project's
engine/protocol copied next to it). Started by start.sh as `sandbox_bot.py MODE -h H -p P -r CODE`:

  play    play a whole game with random legal moves (tests/bots/fast_bot.py)
  crash   play two moves, then exit with status 3
  hang    join, then never answer a move request (and never exit)
  oom     join the game, then allocate memory until the kernel kills it
  probe   print what it sees of the network (interfaces, routes, addresses, where gameserver
          resolves to), then play; it never sends anything anywhere but to the game server
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

FAST_BOT = Path(__file__).with_name("tests") / "bots" / "fast_bot.py"


def contest_options(arguments: list[str]) -> dict[str, str]:
    """-h/-p/-r values by flag."""
    return dict(zip(arguments[::2], arguments[1::2], strict=False))


def probe() -> None:
    """The network as the bot sees it, one `probe:` line per finding."""
    interfaces = sorted(os.listdir("/sys/class/net"))
    print(f"probe: interfaces={','.join(interfaces)}", flush=True)
    with open("/proc/net/route") as routes:
        entries = [line.split() for line in routes.read().splitlines()[1:] if line.strip()]
    default = [entry[0] for entry in entries if len(entry) > 1 and entry[1] == "00000000"]
    print(f"probe: routes={len(entries)} default_routes={len(default)}", flush=True)
    for command in (["ip", "-o", "route"], ["ip", "-o", "addr"]):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        print(f"probe: {' '.join(command)} -> {done.stdout.strip()!r}", flush=True)
    print(f"probe: gameserver={socket.gethostbyname('gameserver')}", flush=True)
    print(f"probe: uid={os.getuid()}", flush=True)


def oom(arguments: list[str]) -> None:
    """Take a seat, wait until the game runs (so this bot loses it), then eat memory."""
    options = contest_options(arguments)
    sock = socket.create_connection((options["-h"], int(options["-p"])))
    code = options["-r"]
    sock.sendall(f'<protocol><joinPrepared reservationCode="{code}"/>'.encode())
    received = b""
    while b"welcomeMessage" not in received:  # both seats taken: the game runs
        chunk = sock.recv(65536)
        if not chunk:
            sys.exit("oom: the server closed the connection before the game started")
        received += chunk
    print("oom: game started, allocating", flush=True)
    hoard = []
    while True:
        hoard.append(bytearray(b"\x01") * (16 << 20))  # written, so really resident


def main() -> None:
    mode, arguments = sys.argv[1], sys.argv[2:]
    print(f"sandbox_bot: mode={mode} arguments={arguments}", flush=True)
    if mode == "oom":
        oom(arguments)
    if mode == "probe":
        probe()
    extra = {"crash": ["--crash-after", "2"], "hang": ["--hang"]}.get(mode, [])
    os.execv(sys.executable, [sys.executable, str(FAST_BOT), *arguments, *extra])


if __name__ == "__main__":
    main()
