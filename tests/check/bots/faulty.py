"""A bot with one fault of the kind contest bots have, chosen by --fault (tests/check).

    faulty.py --fault NAME -h HOST -p PORT -r CODE

It reads the stream raw (regular expressions over what `recv` returned, as simple bots do) and
computes its moves with the engine. Faults:
- none: plays correctly;
- one-per-read: handles only the first message of each read (the socha client's old bug: a
  memento and a moveRequest in one packet leave the request unanswered);
- early: when its turn's memento came and no moveRequest within 0.5 s, it moves anyway, and
  once more on the request (a slow server makes it move early and twice);
- busy: polls a non-blocking socket in a loop while it waits;
- memory: allocates 2 GB at its first move request;
- network: looks up pypi.org before it connects (needs the network) and exits when it cannot;
- crash: exits with status 3 at its first move request;
- hang: never answers a move request;
- twice: answers every move request twice;
- garbage: answers its first move request with bytes that are no XML;
- orphan: plays correctly but leaves a helper process running (in a session of its own) when
  it exits.
"""

from __future__ import annotations

import argparse
import random
import re
import socket
import subprocess
import sys
import time

from engine import FieldState, GameState

MEMENTO = re.compile(rb'<data class="memento">.*?</data>', re.S)
TURN = re.compile(rb'turn="(\d+)"')
FIELD = re.compile(rb"<field>(\w+)</field>")
MESSAGE = re.compile(rb"<room [^>]*>.*?</room>|<(?:joined|left) [^>]*/>", re.S)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-h", "--host", default="localhost")
    parser.add_argument("-p", "--port", type=int, default=13050)
    parser.add_argument("-r", "--reservation", default=None)
    parser.add_argument("--fault", default="none")
    parser.add_argument("--orphan-seconds", default="317", help="the helper's sleep")
    return parser.parse_args()


def state_of(memento: bytes) -> GameState:
    names = [name.decode() for name in FIELD.findall(memento)]
    rows = [[FieldState[name] for name in names[y * 10 : y * 10 + 10]] for y in range(10)]
    turn_match = TURN.search(memento)
    return GameState.from_rows(rows, turn=int(turn_match.group(1)) if turn_match else 0)


def move_xml(room: str, state: GameState, rng: random.Random) -> bytes:
    move = rng.choice(state.legal_moves())
    return (
        f'<room roomId="{room}"><data class="move"><from x="{move.x}" y="{move.y}"/>'
        f"<direction>{move.direction.name}</direction></data></room>"
    ).encode()


def main() -> int:
    options = parse_arguments()
    fault = options.fault
    rng = random.Random(1)
    if fault == "network":
        try:
            socket.getaddrinfo("pypi.org", 443)
        except OSError as error:
            print(f"cannot download the opening book from pypi.org: {error}", flush=True)
            return 1
    if fault == "orphan":
        subprocess.Popen(["sleep", options.orphan_seconds], start_new_session=True)
    sock = socket.create_connection((options.host, options.port))
    if options.reservation:
        sock.sendall(f'<protocol><joinPrepared reservationCode="{options.reservation}"/>'.encode())
    else:
        sock.sendall(b'<protocol><join gameType="swc_2026_piranhas"/>')
    if fault == "busy":
        sock.setblocking(False)
    buffer = b""
    room = ""
    state: GameState | None = None
    waiting_since: float | None = None  # "early": our turn's memento, no request yet
    moved_early = False
    hog = b""
    while True:
        if fault == "early" and waiting_since is not None and state is not None:
            if time.monotonic() - waiting_since > 0.5 and not moved_early:
                sock.sendall(move_xml(room, state, rng))
                moved_early = True
            sock.settimeout(0.05)
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            continue  # "busy": spin
        except TimeoutError:
            continue
        if not data:
            return 0
        buffer += data
        messages = []
        while (match := MESSAGE.search(buffer)) is not None:
            messages.append(match.group(0))
            buffer = buffer[match.end() :]
        if fault == "one-per-read":
            messages = messages[:1]
        for message in messages:
            if message.startswith(b"<joined"):
                room = re.search(rb'roomId="([^"]*)"', message).group(1).decode()  # type: ignore[union-attr]
            elif message.startswith(b"<left"):
                sock.sendall(b"<close/></protocol>")
                sock.close()
                return 0
            elif b'class="memento"' in message:
                state = state_of(message)
                moved_early = False
                waiting_since = time.monotonic() if fault == "early" else None
            elif b'class="moveRequest"' in message and state is not None:
                waiting_since = None
                if fault == "memory":
                    hog = b"x" * (2 << 30)
                    print(f"holding {len(hog) >> 20} MiB", flush=True)
                if fault == "crash":
                    print("giving up", flush=True)
                    return 3
                if fault == "hang":
                    continue
                if fault == "garbage":
                    sock.sendall(b"<move x=3 y=4 direction=UP/>")
                    continue
                answer = move_xml(room, state, rng)
                sock.sendall(answer + answer if fault == "twice" else answer)


if __name__ == "__main__":
    sys.exit(main())
