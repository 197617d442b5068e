"""The game server: sockets, lobby, rooms, timeouts, admin, config, CLI, logs, results, replays.

`server.app.serve(settings)` runs it; `server.lobby.Lobby` is the state machine behind it.
"""
