"""Instructions per connection of the server's protocol object (callgrind): what a
`ServerConnection` costs to make, and to read a player's or an admin's opening chunk.

`bench.server_instructions` counts per move; a connection's set-up is spread over a game's
moves there and lost in their noise. Here the sans-IO `ServerConnection` alone reads, once
per connection, the chunk the server's clients send first: nothing (`connection`: made
only), `<protocol>` with a prepared game's `<joinPrepared>` (`join`), or `<protocol>` with
a `<prepare>` of two slots (`prepare`), or with four such prepares in the one chunk, as an
admin's batch may arrive (`batch`); then the end of the stream. The count is
(instructions(long) - instructions(short)) / (connections difference), PYTHONHASHSEED
fixed, the code from the checkout on PYTHONPATH (only the public protocol API is used, so
any checkout that has it can be counted).

Run:  .venv/bin/python -m bench.connection_instructions [--connections 2000] [--checkout OLD]
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCENARIOS = ("connection", "join", "prepare", "batch")
BATCH = 4  # the prepares of `batch`


def _inner(scenario: str, connections: int) -> None:
    from protocol import NEED_DATA, ClientConnection, ProtocolLimits, ServerConnection
    from protocol.errors import RemoteProtocolError
    from protocol.events import JoinPrepared, Prepare, SlotDescriptor

    client = ClientConnection()
    if scenario == "join":
        first = client.send(JoinPrepared("0b7e6c2a-5f3d-4e8a-9c1b-2d4f6a8e0c13"))
    else:
        slots = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))
        prepare = Prepare("swc_2026_piranhas", False, slots, seed=2026)
        first = client.send(prepare)
        if scenario == "batch":
            first += b"".join(client.send(prepare) for _ in range(BATCH - 1))
    limits = ProtocolLimits(max_packet_bytes=65536)  # as the server makes them, once
    read = 0
    for _ in range(connections):
        connection = ServerConnection(limits)
        if scenario == "connection":
            continue
        connection.receive_data(first)
        while connection.next_event() is not NEED_DATA:
            read += 1
        connection.receive_data(b"")
        with contextlib.suppress(RemoteProtocolError):  # the stream ended early
            connection.next_event()
    print(f"read {read}")


def _count(root: Path, scenario: str, connections: int) -> int:
    """The instructions of one run under callgrind, the code from checkout `root`."""
    # Here, not at the top: the inner run imports this file from `root`, which may predate
    # bench._callgrind.
    from bench._callgrind import count_in_checkout, reported

    instructions, output = count_in_checkout(
        __file__, ["--inner", scenario, str(connections)], root
    )
    read = reported(output, "read")
    expected = {"connection": 0, "batch": BATCH}.get(scenario, 1) * connections
    if read != expected:
        raise SystemExit(f"{scenario}: read {read} packets, expected {expected}")
    return instructions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=2000, help="of the longer run")
    parser.add_argument("--checkout", type=Path, help="also count this checkout")
    parser.add_argument("--inner", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:
        _inner(args.inner[0], int(args.inner[1]))
        return
    short = max(1, args.connections // 4)
    targets = [("this", REPO)]
    if args.checkout is not None:
        targets.append(("old", args.checkout.resolve()))
    for scenario in SCENARIOS:
        for label, root in targets:
            low = _count(root, scenario, short)
            high = _count(root, scenario, args.connections)
            each = (high - low) / (args.connections - short)
            print(f"{label:>5} {scenario:>10}: {each:,.0f} instructions a connection")


if __name__ == "__main__":
    main()
