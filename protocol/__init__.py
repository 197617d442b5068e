"""The Software-Challenge XML wire protocol, sans-IO: bytes ⇄ typed objects, replay files.

See docs/ARCHITECTURE.md ("## protocol") for the contract.
"""

from protocol.connection import NEED_DATA, ClientConnection, NeedData, ServerConnection
from protocol.errors import LocalProtocolError, ProtocolError, RemoteProtocolError
from protocol.events import GAME_TYPE
from protocol.limits import ProtocolLimits

__all__ = [
    "GAME_TYPE",
    "NEED_DATA",
    "ClientConnection",
    "LocalProtocolError",
    "NeedData",
    "ProtocolError",
    "ProtocolLimits",
    "RemoteProtocolError",
    "ServerConnection",
]
