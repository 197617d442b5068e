"""What `ServerConnection`s share to cost less a connection: one decoder per distinct
`ProtocolLimits`, which must keep every connection's limits and hold nothing of one."""

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
