"""Wire-protocol speed: µs to parse one move packet (server side) and one memento (client
side), and to serialise one memento and one result (best of several rounds, per operation).

    python -m bench.protocol [--number N] [--repeat R]

Run from another checkout's root with PYTHONPATH=<this checkout>, it measures that checkout's
code (`python -m` puts the working directory first on sys.path, this checkout's bench after
it), so two versions can be compared back to back. On a busy machine, compare
versions of the byte reader in one process instead, timed in turns (`git show
<commit>:protocol/_reader.py > /tmp/old_reader.py` for an old one):

    python -m bench.protocol --readers /tmp/old_reader.py protocol/_reader.py

"memento (cold)" renders a state never rendered before (the engine's `rows()` included);
"memento (warm)" is each further send of the same state (both players, observers, replay),
which hits the per-state cache.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import time
from collections.abc import Callable

from engine import GameState, PlayerEntry, Team, game_result
from protocol import NEED_DATA, ClientConnection, ServerConnection
from protocol.limits import ProtocolLimits
from protocol.messages import Memento, ResultMessage, _render_state

# Exactly what socha 4.3.9 sends for a move.
MOVE_PACKET = (
    b'<room roomId="7436c247-5a67-4eca-9b17-fceab576b083">\n  <data class="move">\n'
    b'    <from x="0" y="3"/>\n    <direction>UP_RIGHT</direction>\n  </data>\n</room>\n'
)


def best_us(operation: Callable[[], object], number: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        for _ in range(number):
            operation()
        best = min(best, (time.perf_counter() - began) / number)
    return best * 1e6


def midgame_states(count: int) -> list[GameState]:
    rng = random.Random(1)
    states: list[GameState] = []
    while len(states) < count:
        state = GameState.initial(seed=rng.randrange(2**32))
        for _ in range(10):
            if state.is_over:
                break
            state = state.apply(rng.choice(state.legal_moves()))
        states.append(state)
    return states


def compare_readers(paths: list[str], number: int, repeat: int) -> None:
    """µs per packet of PacketReader (bytes in, packet out; no decoding) from each given
    version of protocol/_reader.py, measured in turns in one process so that the machine's
    load hits every version alike; the best round of each."""
    modules = []
    for index, path in enumerate(paths):
        spec = importlib.util.spec_from_file_location(f"reader_{index}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    memento = (
        ServerConnection().send(Memento("r", midgame_states(1)[0])).removeprefix(b"<protocol>")
    )
    segments = [memento[i : i + 1448] for i in range(0, len(memento), 1448)]
    cases = [
        ("move packet", [MOVE_PACKET], number),
        ("memento, one chunk", [memento], number // 10),
    ]
    cases.append((f"memento, {len(segments)} chunks", segments, number // 10))
    print(
        f"{'µs per packet, best of ' + str(repeat) + ' rounds':<28}"
        + "".join(f"{p[-40:]:>42}" for p in paths)
    )
    for label, chunks, count in cases:
        readers = []
        for module in modules:
            reader = module.PacketReader(ProtocolLimits())
            reader.feed(b"<protocol>")
            assert reader.next_packet() is None
            readers.append(reader)
        best = [float("inf")] * len(readers)
        for _ in range(repeat):
            for index, reader in enumerate(readers):
                began = time.perf_counter()
                for _ in range(count):
                    for chunk in chunks:
                        reader.feed(chunk)
                        reader.next_packet()
                    reader.next_packet()
                best[index] = min(best[index], (time.perf_counter() - began) / count)
        print(f"{label:<28}" + "".join(f"{micros * 1e6:42.2f}" for micros in best))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--readers", nargs="+", metavar="PATH", help="compare versions of protocol/_reader.py"
    )
    args = parser.parse_args()
    number, repeat = args.number, args.repeat
    if args.readers:
        compare_readers(args.readers, number, repeat)
        return

    conn = ServerConnection()
    conn.receive_data(b"<protocol>")
    assert conn.next_event() is NEED_DATA

    def parse_move() -> None:
        conn.receive_data(MOVE_PACKET)
        conn.next_event()
        conn.next_event()  # NEED_DATA: the full cost of one packet

    states = midgame_states(min(number, 2000))
    state_iter = iter(states * (number * repeat // len(states) + 1))
    rows_state = states[0]

    def memento_cold() -> None:
        # The rendering a fresh state needs, without the cache.
        _render_state(next(state_iter), 3)

    memento = Memento("7436c247-5a67-4eca-9b17-fceab576b083", states[0])
    memento_bytes = ServerConnection().send(memento).removeprefix(b"<protocol>")
    client = ClientConnection()
    client.receive_data(b"<protocol>")
    assert client.next_event() is NEED_DATA
    # As TCP may cut it: segments of a typical MSS.
    segments = [memento_bytes[i : i + 1448] for i in range(0, len(memento_bytes), 1448)]

    def parse_memento() -> None:
        client.receive_data(memento_bytes)
        client.next_event()
        client.next_event()

    def parse_memento_in_segments() -> None:
        for segment in segments:
            client.receive_data(segment)
            client.next_event()
        client.next_event()

    players = [PlayerEntry(Team.ONE, "Spieler 1"), PlayerEntry(Team.TWO, "Spieler 2")]
    result = ResultMessage(memento.room_id, game_result(states[0], players))

    figures = [
        ("parse one move packet (receive_data + next_event)", best_us(parse_move, number, repeat)),
        (
            f"parse one memento, client side ({len(memento_bytes)} bytes in one chunk)",
            best_us(parse_memento, number // 10, repeat),
        ),
        (
            f"  same, in {len(segments)} chunks of at most 1448 bytes",
            best_us(parse_memento_in_segments, number // 10, repeat),
        ),
        ("serialise one memento, cold (new state)", best_us(memento_cold, number // 4, repeat)),
        ("  of which engine GameState.rows()", best_us(rows_state.rows, number // 4, repeat)),
        (
            "serialise one memento, warm (same state again)",
            best_us(lambda: conn.send(memento), number, repeat),
        ),
        ("serialise one result", best_us(lambda: conn.send(result), number, repeat)),
    ]
    width = max(len(label) for label, _ in figures)
    for label, micros in figures:
        print(f"{label:<{width}}  {micros:8.2f} µs")


if __name__ == "__main__":
    main()
