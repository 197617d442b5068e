"""The web viewer: watch games live, replay games, play against a bot and administrate the
server from a browser. It watches games through the lobby's observer feed (server/feed.py)
and acts as an ordinary SC client over loopback; the game server never imports it."""
