"""The refusals the lobby answers with an errorpacket, worded as the official server words
them (§3.9): the exception class names, and `ClientError`."""

from __future__ import annotations

from protocol.events import GAME_TYPE

# Official exception class names: the errorpacket message is Throwable.toString() (§3.9).
ROOM_EXCEPTION = "sc.api.plugins.exceptions.GameRoomException"
GAME_EXCEPTION = "sc.api.plugins.exceptions.GameException"
RESERVATION_EXCEPTION = "sc.server.gaming.UnknownReservationException"
AUTH_FAILED = "sc.server.network.AuthenticationFailedException"
UNAUTHENTICATED = "sc.server.network.UnauthenticatedException"
RESCUABLE = "sc.api.plugins.exceptions.RescuableClientException"
PLUGIN_LOADER = "sc.server.plugins.PluginLoaderException"
TOO_MANY_PLAYERS = "sc.api.plugins.exceptions.TooManyPlayersException"


class ClientError(Exception):
    """A request the official server refuses with an errorpacket; the connection stays open.
    `quiet` refusals are logged at debug: they are counted and logged once per episode
    elsewhere (a limit), or expected (the health probe)."""

    def __init__(self, message: str, *, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet


def unknown_game_type(game_type: str) -> str:
    """The refusal of a gameType other than Piranhas'."""
    return f"{PLUGIN_LOADER}: Unknown gameType '{game_type}'; available game types: {GAME_TYPE}"
