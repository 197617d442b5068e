"""What `ServerConnection`s share to cost less a connection: one decoder and one set of
shortcut patterns per distinct `ProtocolLimits` (and class), which must keep every
connection's limits and hold nothing of one."""

from __future__ import annotations

import pytest

from protocol import NEED_DATA, ProtocolLimits, RemoteProtocolError, ServerConnection
from protocol.events import Join


def test_connections_with_equal_limits_share_one_decoder_and_keep_their_limits() -> None:
    roomy = [ServerConnection(ProtocolLimits(max_attribute_bytes=8)) for _ in range(2)]
    tight = ServerConnection(ProtocolLimits(max_attribute_bytes=3))
    assert roomy[0]._decoder is roomy[1]._decoder  # equal limits: made once
    assert tight._decoder is not roomy[0]._decoder
    assert ServerConnection()._decoder is ServerConnection(ProtocolLimits())._decoder
    data = b'<protocol><join gameType="abcd"/>'
    # A connection's error leaves the decoder it shares as it was: the next reads on.
    tight.receive_data(data)
    with pytest.raises(RemoteProtocolError, match="exceeds 3 characters"):
        tight.next_event()
    for connection in roomy:
        connection.receive_data(data)
        assert connection.next_event() == Join("abcd")
        assert connection.next_event() is NEED_DATA


class _NoShortcuts(ServerConnection):
    _move_shortcut = False
    _join_shortcut = False
    _prepare_shortcut = False


def test_the_last_limits_setup_is_reused_only_for_the_same_limits_and_class() -> None:
    limits = ProtocolLimits(max_attribute_bytes=8)
    first, plain, second = ServerConnection(limits), _NoShortcuts(limits), ServerConnection(limits)
    assert first._packet_pattern is second._packet_pattern is not None
    assert plain._packet_pattern is None and plain._move_pattern is None  # its own class's
    shallow = ServerConnection(ProtocolLimits(max_attribute_bytes=8, max_depth=2))
    assert shallow._move_pattern is None  # its own limits' (a move needs depth 3)
    assert shallow._decoder is not first._decoder
    assert ServerConnection(limits)._decoder is first._decoder
    # A code of 9 characters is over this limit: the pattern made for it refuses it too.
    data = b'<protocol>\n  <joinPrepared reservationCode="123456789"/>'
    second.receive_data(data)
    with pytest.raises(RemoteProtocolError, match="exceeds 8 characters"):
        second.next_event()
