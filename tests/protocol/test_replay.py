"""Replay files (§8): the official layout, plain and gzip, both directions."""

from __future__ import annotations

import gzip

import pytest

from engine import Direction, FieldState, GameResult, GameState, Move, PlayerEntry, Team
from protocol import RemoteProtocolError
from protocol.messages import Memento, ReplayPacket, ResultMessage, RoomError
from protocol.replay import gunzip_bounded, read_replay, write_replay

# A replay in the official form, written out by hand: "<protocol>\n", each packet at
# column 0 followed by "\n", then "</protocol>" (GameRoomTest.minimalReplay's layout).
OFFICIAL = """<protocol>
<room roomId="PLACEHOLDERID">
  <data class="memento">
    <state class="state" startTeam="ONE" turn="0">
      <board>
        <row>
          <field>ONE_S</field>
          <field>EMPTY</field>
          <field>TWO_M</field>
        </row>
      </board>
    </state>
  </data>
</room>
<room roomId="PLACEHOLDERID">
  <data class="memento">
    <state class="state" startTeam="ONE" turn="1" firstUnion="ONE">
      <lastMove>
        <from x="0" y="0"/>
        <direction>RIGHT</direction>
      </lastMove>
      <board>
        <row>
          <field>EMPTY</field>
          <field>ONE_S</field>
          <field>TWO_M</field>
        </row>
      </board>
    </state>
  </data>
</room>
<room roomId="PLACEHOLDERID">
  <data class="error" message="Ungueltiger Zug von &apos;Marta&apos;.&#xa;X">
    <originalMessage class="move">
      <from x="2" y="0"/>
      <direction>RIGHT</direction>
    </originalMessage>
  </data>
</room>
<room roomId="PLACEHOLDERID">
  <data class="result">
    <definition>
      <fragment name="Siegpunkte">
        <aggregation>SUM</aggregation>
        <relevantForRanking>true</relevantForRanking>
      </fragment>
      <fragment name="Schwarmgröße">
        <aggregation>AVERAGE</aggregation>
        <relevantForRanking>true</relevantForRanking>
      </fragment>
    </definition>
    <scores>
      <entry>
        <player name="Fred" team="ONE"/>
        <score>
          <part>2</part>
          <part>1</part>
        </score>
      </entry>
      <entry>
        <player name="Marta" team="TWO"/>
        <score>
          <part>0</part>
          <part>0</part>
        </score>
      </entry>
    </scores>
    <winner team="ONE" regular="false" reason="Regelverletzung von Marta: X"/>
  </data>
</room>
</protocol>"""

STATE0 = GameState.from_rows([[FieldState.ONE_S, FieldState.EMPTY, FieldState.TWO_M]])
STATE1 = GameState.from_rows(
    [[FieldState.EMPTY, FieldState.ONE_S, FieldState.TWO_M]],
    1,
    Team.ONE,
    Move(0, 0, Direction.RIGHT),
)
RESULT = GameResult(
    [(PlayerEntry(Team.ONE, "Fred"), (2, 1)), (PlayerEntry(Team.TWO, "Marta"), (0, 0))],
    Team.ONE,
    False,
    "Regelverletzung von Marta: X",
)
PACKETS: list[ReplayPacket] = [
    Memento("PLACEHOLDERID", STATE0),
    Memento("PLACEHOLDERID", STATE1),
    RoomError("PLACEHOLDERID", "Ungueltiger Zug von 'Marta'.\nX", Move(2, 0, Direction.RIGHT)),
    ResultMessage("PLACEHOLDERID", RESULT),
]


def test_writer_produces_the_official_layout_byte_for_byte() -> None:
    assert write_replay("PLACEHOLDERID", PACKETS) == OFFICIAL.encode()


def test_writer_uses_the_given_room_id() -> None:
    data = write_replay("real", [Memento("other", STATE0)])
    assert b'<room roomId="real">' in data and b"other" not in data


@pytest.mark.parametrize("compress", [False, True])
def test_official_replay_loads(compress: bool) -> None:
    data = OFFICIAL.encode()
    replay = read_replay(gzip.compress(data) if compress else data)
    assert replay.states == [STATE0, STATE1]
    assert replay.result == RESULT


def test_state_at_turn_is_the_first_state_reaching_it() -> None:
    replay = read_replay(OFFICIAL.encode())
    assert replay.state_at_turn(0) == STATE0
    assert replay.state_at_turn(-1) == STATE0
    assert replay.state_at_turn(1) == STATE1
    with pytest.raises(LookupError):
        replay.state_at_turn(2)


def test_a_real_game_round_trips() -> None:
    state = GameState.initial(seed=42)
    states = [state]
    while not state.is_over:
        state = state.apply(state.legal_moves()[-1])
        states.append(state)
    packets = [Memento("r", s) for s in states]
    replay = read_replay(gzip.compress(write_replay("r", packets)))
    assert replay.states == states
    assert replay.result is None


@pytest.mark.parametrize("cut", [len(b"</protocol>"), 1, len(OFFICIAL) // 2, 20])
@pytest.mark.parametrize("compress", [False, True])
def test_a_truncated_replay_is_refused(cut: int, compress: bool) -> None:
    data = OFFICIAL.encode()[:-cut]
    with pytest.raises(RemoteProtocolError, match=r"truncated.*</protocol>"):
        read_replay(gzip.compress(data) if compress else data)


def test_a_truncated_gzip_stream_is_refused() -> None:
    data = gzip.compress(OFFICIAL.encode())
    with pytest.raises(RemoteProtocolError, match="truncated"):
        read_replay(data[: len(data) // 2])


def test_a_gzip_bomb_stops_at_the_limit() -> None:
    # 8 MiB of spaces compress to a few KiB: 1000 times more out than in.
    bomb = gzip.compress(b"<protocol>" + b" " * (8 << 20))
    assert len(bomb) < 65536 // 4
    with pytest.raises(RemoteProtocolError, match=r"larger than 65536 bytes after decompression"):
        read_replay(bomb, max_bytes=65536)


def test_plain_replays_are_bounded_too() -> None:
    assert read_replay(OFFICIAL.encode(), max_bytes=len(OFFICIAL.encode())).states
    with pytest.raises(RemoteProtocolError, match=r"larger than 100 bytes"):
        read_replay(OFFICIAL.encode(), max_bytes=100)


def test_gzip_members_are_concatenated_like_gzip_decompress() -> None:
    data = OFFICIAL.encode()
    two_members = gzip.compress(data[:100]) + gzip.compress(data[100:])
    assert gunzip_bounded(two_members, len(data)) == data
    with pytest.raises(RemoteProtocolError, match="larger than"):
        gunzip_bounded(two_members, len(data) - 1)
    with pytest.raises(RemoteProtocolError, match="garbage"):
        gunzip_bounded(gzip.compress(data) + b"\0\0", len(data))


def test_non_room_packets_are_refused() -> None:
    with pytest.raises(RemoteProtocolError, match="joined"):
        read_replay(b'<protocol>\n<joined roomId="x"/>\n</protocol>')


def test_broken_files_raise_the_protocol_error() -> None:
    with pytest.raises(RemoteProtocolError):
        read_replay(b"\x1f\x8bnot really gzip")
    with pytest.raises(RemoteProtocolError):
        read_replay(OFFICIAL.encode().replace(b"ONE_S", b"ONE_X", 1))
