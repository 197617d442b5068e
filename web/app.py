"""The web viewer's HTTP side: pages, JSON, WebSockets (Starlette on hypercorn's trio worker).

`WebViewer` is the `server.feed.Companion` the CLI starts next to the game server: its
`GameHub` is the lobby's observer feed, and its admin actions and human players are SC
clients of the game server over loopback, like any external tool.
"""

from __future__ import annotations

import gc
import json
import random
import secrets
from collections.abc import Awaitable, Callable
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

import structlog
import trio
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from client import ConnectionClosed
from engine import Direction, Move
from protocol import GAME_TYPE
from protocol.events import CancelRequest, PauseRequest, Prepare, SlotDescriptor, StepRequest
from protocol.messages import Memento, ResultMessage
from protocol.replay import write_replay
from runner.processes import SpawnThread
from server.config import Settings
from server.feed import LoginGate, ObserverFeed
from server.limits import connection_cap, is_loopback, raise_descriptor_limit
from web import listen, replays
from web.analysis import AnalysisJobs
from web.auth import (
    COOKIE,
    CSRF_HEADER,
    Session,
    Sessions,
    client_address,
    csrf_ok,
    is_secure,
    same_origin,
    set_session_cookie,
)
from web.fanout import Broadcast, Snapshot, envelope, raw_socket
from web.gate import AsyncGate, GateUnavailable, LocalGate, OpenGate
from web.http import (
    PAGE_HEADERS,
    BodyTimeout,
    BodyTooLarge,
    client_gone,
    error,
    json_body,
    refuse_large_body,
    refuse_slow_body,
)
from web.hub import Change, GameHub
from web.league import LeagueView
from web.league_routes import LeagueRoutes
from web.listen import ProxyHeaders, WebAdmission
from web.playfrom import PlayBots, PlayFromRoutes
from web.replays import ReplayRoutes
from web.sc import HumanPlayer, admin_request, player_json

log = structlog.get_logger("web")

STATIC = Path(str(resources.files("web") / "static"))
# Snapshots per second per viewer at most: latest state wins, nothing queues up.
VIEWER_RATE = 4.0
PLAYER_RATE = 10.0
MAX_HUMANS = 100
# Games a visitor without a login may play at once (open play: see `WebViewer.open_play`).
MAX_GAMES_PER_SESSION = 2
LOGIN_FAILURE_DELAY = 1.0
# Pages send ~50-byte moves only: a larger WebSocket message closes the socket (1009) unread.
WS_MAX_MESSAGE = 4096


class WebViewer:
    """The web viewer as a companion of the game server (see module docstring)."""

    def __init__(
        self,
        settings: Settings,
        *,
        port: int | None = None,
        viewer_rate: float = VIEWER_RATE,
        spawner: SpawnThread | None = None,
    ) -> None:
        """`spawner`: where the bots of "play from here" are started (web.process: a thread
        at the priority the server gave the viewer, before it lowered its own)."""
        self.settings = settings
        self.hub = GameHub()
        self.sessions = Sessions(settings.password)
        self.humans: dict[str, HumanPlayer] = {}
        self.viewer_rate = viewer_rate
        self.port = port if port is not None else settings.web_port
        self.url = ""  # set once it listens
        self.viewers = 0  # open live sockets (each one task pair while open)
        self.sockets_by_address: dict[str, int] = {}
        self._broadcasts: dict[Change, Broadcast] = {}  # by source, while anyone watches
        # A person may play without the admin password when only this machine can reach the
        # viewer: it listens on loopback and no proxy forwards others to it.
        self.open_play = is_loopback(settings.web_host) and not settings.web_trusted_proxies
        self.admission = WebAdmission(
            connection_cap(settings.web_max_connections, raise_descriptor_limit()),
            settings.web_max_connections_per_address,
            limit_loopback=settings.per_address_limit_on_loopback,
            proxies=settings.web_trusted_proxies,
        )
        self.game_port = 0
        self._nursery: trio.Nursery | None = None
        self.league = (
            LeagueView(settings.web_league, settings.web_league_db)
            if settings.web_league is not None
            else None
        )
        self.gate: AsyncGate = LocalGate(OpenGate())
        # Analysing is a core's work for many seconds: as open as playing (see `open_play`).
        self.analyses = AnalysisJobs(
            lambda handler: self._guard(handler, admin=not self.open_play), self.spawn
        )
        self.play = PlayBots(settings, self._cancel_room, spawner)
        self.app = self._build_app()

    @property
    def feed(self) -> ObserverFeed:
        """The lobby's observer feed."""
        return self.hub

    def use_login_gate(self, gate: LoginGate) -> None:
        """Logins from now on count against the game server's lockout (`GuardsLogins`)."""
        self.gate = LocalGate(gate)

    async def run(
        self, game_port: int, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve HTTP until cancelled."""
        self.game_port = game_port
        config = listen.hypercorn_config()
        config.websocket_max_message_size = WS_MAX_MESSAGE
        config.backlog = 1024  # a burst of viewers connecting at once is not refused
        app = ProxyHeaders(self.app, self.settings.web_trusted_proxies)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.url = await nursery.start(
                    listen.serve,
                    app,
                    config,
                    self.settings.web_host,
                    self.port or 0,
                    self.admission,
                )
                log.info("web viewer listening", url=self.url)
                # The viewer's libraries add some ten thousand long-lived objects that every
                # full collection of the cyclic GC would scan again (milliseconds each, while a
                # move waits): move everything that exists now out of its reach.
                gc.freeze()
                task_status.started()
        finally:
            self.play.close()  # the bots of "play from here" were stopped with their tasks

    def spawn(self, task: Callable[[], Awaitable[None]]) -> None:
        """Run `task` in the viewer's nursery (it ends with the viewer)."""
        assert self._nursery is not None, "requests are served only while running"
        self._nursery.start_soon(task)

    # ------------------------------------------------------------------ app

    def _build_app(self) -> Starlette:
        page = self._page
        return Starlette(
            routes=[
                Route("/", page("lobby.html")),
                Route("/game/{room_id}", page("game.html")),
                Route("/replays", page("replays.html")),
                Route("/play", page("play.html")),
                Route("/admin", page("admin.html")),
                Route("/league", page("league.html")),
                Route("/league/match/{match_id:int}", page("match.html")),
                Route("/api/session", self._session_info),
                Route("/api/config", self._config),
                Route("/api/login", self._login, methods=["POST"]),
                Route("/api/logout", self._guard(self._logout, admin=False), methods=["POST"]),
                Route("/api/rooms", self._rooms),
                Route("/api/games/{room_id}/replay", self._game_replay),
                Route("/api/games/{room_id}", self._game),
                *ReplayRoutes(self.settings.replay_dir).routes(),
                *LeagueRoutes(self.league).routes(),
                *self.analyses.routes(),
                Route("/api/admin/prepare", self._guard(self._prepare), methods=["POST"]),
                Route("/api/admin/pause", self._guard(self._pause), methods=["POST"]),
                Route("/api/admin/step", self._guard(self._step), methods=["POST"]),
                Route("/api/admin/cancel", self._guard(self._cancel), methods=["POST"]),
                Route(
                    "/api/play",
                    self._guard(self._play, admin=not self.open_play),
                    methods=["POST"],
                ),
                *PlayFromRoutes(self.play, self).routes(
                    lambda handler: self._guard(handler, admin=not self.open_play)
                ),
                WebSocketRoute("/ws/lobby", self._ws_lobby),
                WebSocketRoute("/ws/game/{room_id}", self._ws_game),
                WebSocketRoute("/ws/play/{token}", self._ws_play),
                Mount("/static", StaticFiles(directory=STATIC), name="static"),
            ],
            exception_handlers={
                BodyTooLarge: refuse_large_body,
                BodyTimeout: refuse_slow_body,
                ClientDisconnect: client_gone,
            },
        )

    def _page(self, name: str) -> Callable[[Request], Awaitable[Response]]:
        async def serve_page(request: Request) -> Response:
            return FileResponse(STATIC / name, headers=PAGE_HEADERS)

        return serve_page

    # ------------------------------------------------------------------ sessions

    def _session(self, request: Request | WebSocket) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE))

    async def _session_info(self, request: Request) -> Response:
        session = self._session(request)
        fresh = session is None
        if session is None:
            session = self.sessions.create()
        response = JSONResponse(
            {
                "admin": session.admin,
                "play": session.admin or self.open_play,
                "csrf": session.csrf,
            }
        )
        if fresh:
            set_session_cookie(response, session, request)
        return response

    async def _config(self, request: Request) -> Response:
        return JSONResponse(
            {
                "softTimeoutMs": self.settings.soft_timeout * 1000,
                "gamePort": self.game_port,
                "viewerRate": self.viewer_rate,
                "league": self.league is not None,
                "playBots": self.play.names,
            }
        )

    async def _login(self, request: Request) -> Response:
        session = self._session(request)
        if session is None or not self._request_allowed(request, session):
            return error(403, "cross-site request or missing CSRF token refused")
        body = await json_body(request)
        password = body.get("password") if isinstance(body, dict) else None
        address = client_address(request)
        try:
            # The game server's lockout, shared with its admin port: a locked-out address
            # is refused without a look at the password.
            remaining = await self.gate.check(address)
            if remaining > 0:
                return error(429, f"too many failed logins: try again in {remaining:.0f} s")
            admin = self.sessions.login(session, password) if isinstance(password, str) else None
            if admin is None:
                failure = await self.gate.fail(address)
                log.info("web login failed", address=address, failures=failure.failures)
                await trio.sleep(LOGIN_FAILURE_DELAY)  # slows down guessing
                return error(403, "wrong password")
            await self.gate.succeed(address)
        except GateUnavailable:
            return error(503, "logins are not possible right now")
        log.info("web login", address=address)
        response = JSONResponse({"admin": True, "play": True, "csrf": admin.csrf})
        set_session_cookie(response, admin, request)
        return response

    async def _logout(self, request: Request, session: Session) -> Response:
        self.sessions.logout(session)
        response = JSONResponse({"admin": False})
        response.delete_cookie(
            COOKIE, path="/", httponly=True, samesite="strict", secure=is_secure(request)
        )
        return response

    def _request_allowed(self, request: Request, session: Session) -> bool:
        return csrf_ok(session, request.headers.get(CSRF_HEADER)) and same_origin(
            request.headers.get("origin"), request.headers.get("host"), request.url.scheme
        )

    def _guard(
        self,
        handler: Callable[[Request, Session], Awaitable[Response]],
        *,
        admin: bool = True,
    ) -> Callable[[Request], Awaitable[Response]]:
        """State-changing endpoints: a session, its CSRF token, this site's Origin, an admin."""

        async def guarded(request: Request) -> Response:
            session = self._session(request)
            if session is None or not self._request_allowed(request, session):
                return error(403, "cross-site request or missing CSRF token refused")
            if admin and not session.admin:
                return error(401, "log in as admin first")
            return await handler(request, session)

        return guarded

    # ------------------------------------------------------------------ watching

    async def _rooms(self, request: Request) -> Response:
        return Response(self.hub.lobby_json(), media_type="application/json")

    async def _game(self, request: Request) -> Response:
        view = self.hub.games.get(request.path_params["room_id"])
        if view is None:
            return error(404, "no such game")
        return Response(view.to_json(), media_type="application/json")

    async def _game_replay(self, request: Request) -> Response:
        """A game so far (or over) as an official replay: the live page's download, history
        and analysis. Built in a worker thread, sharing the replay parsers' slots (503 when
        they are busy); a game holds at most ~60 states."""
        view = self.hub.games.get(request.path_params["room_id"])
        if view is None or not view.states:
            return error(404, "no such game (or no move yet)")
        room = view.room_id
        packets: list[Any] = [Memento(room, state) for state in view.states]
        if view.result is not None:
            packets.append(ResultMessage(room, view.result))
        try:
            replays.parser_slots.acquire_nowait()
        except trio.WouldBlock:
            return error(503, "the server is busy with other replays: try again in a moment")
        try:
            data = await trio.to_thread.run_sync(write_replay, room, packets)
        finally:
            replays.parser_slots.release()
        return Response(
            data,
            media_type="application/xml",
            headers={"Content-Disposition": 'attachment; filename="game.xml"'},
        )

    async def _ws_lobby(self, websocket: WebSocket) -> None:
        if await self._refused(websocket):
            return
        await websocket.accept()
        await self._watch(websocket, self.hub.lobby, self.hub.lobby_json)

    async def _refused(self, websocket: WebSocket) -> bool:
        """Over a WebSocket cap (total, per address): refused before the handshake (an HTTP
        403), so it never holds a socket's buffers. The TCP connections are capped by
        `web.listen` too; this also counts sockets that share a connection (HTTP/2)."""
        address = client_address(websocket)
        settings = self.settings
        exempt = address in self.admission.proxies or (
            is_loopback(address) and not settings.per_address_limit_on_loopback
        )
        if self.viewers >= self.admission.cap or (
            not exempt
            and self.sockets_by_address.get(address, 0) >= settings.web_max_connections_per_address
        ):
            await websocket.close(code=1013)  # before accept: the handshake is refused
            return True
        return False

    async def _ws_game(self, websocket: WebSocket) -> None:
        if await self._refused(websocket):
            return
        await websocket.accept()
        view = self.hub.games.get(websocket.path_params["room_id"])
        if view is None:
            await websocket.send_text(json.dumps({"missing": True}))
            await websocket.close()
            return
        await self._watch(websocket, view.change, view.to_json)

    async def _watch(
        self, websocket: WebSocket, change: Change, payload: Callable[[], str]
    ) -> None:
        """A watcher of `change`'s snapshots: one `web.fanout.Broadcast` per source renders
        each snapshot once for all its watchers, at most `viewer_rate` times a second."""
        broadcast = self._broadcasts.get(change)
        if broadcast is None:
            broadcast = Broadcast(change, payload, self.viewer_rate, self.spawn)
            self._broadcasts[change] = broadcast
        raw = raw_socket(websocket.scope)

        async def send(snapshot: Snapshot) -> None:
            await websocket.send_text(snapshot.text)

        try:
            await self._pump(websocket, partial(broadcast.serve, raw.send if raw else send))
        finally:
            if not broadcast.viewers and self._broadcasts.get(change) is broadcast:
                del self._broadcasts[change]

    async def _pump(
        self,
        websocket: WebSocket,
        sending: Callable[[], Awaitable[None]],
        on_message: Callable[[Any], Awaitable[None]] | None = None,
    ) -> None:
        """Run `sending` until the viewer leaves (its receive side is watched, or its task
        would leak), counted against the WebSocket caps."""
        address = client_address(websocket)
        self.viewers += 1
        self.sockets_by_address[address] = self.sockets_by_address.get(address, 0) + 1
        try:
            await self._pump_until_gone(websocket, sending, on_message)
        finally:
            self.viewers -= 1
            left = self.sockets_by_address.pop(address, 1) - 1
            if left:
                self.sockets_by_address[address] = left

    async def _pump_until_gone(
        self,
        websocket: WebSocket,
        sending: Callable[[], Awaitable[None]],
        on_message: Callable[[Any], Awaitable[None]] | None,
    ) -> None:
        async with trio.open_nursery() as nursery:

            async def receive() -> None:
                try:
                    while True:
                        message = await websocket.receive()
                        if message["type"] == "websocket.disconnect":
                            break
                        text = message.get("text")
                        if text is None:  # a binary frame: the pages send none
                            await websocket.close(code=1003, reason="text messages only")
                            break
                        if on_message is not None:
                            try:
                                decoded = json.loads(text)
                            except ValueError:
                                decoded = None
                            await on_message(decoded)
                except (WebSocketDisconnect, RuntimeError, OSError):
                    pass
                nursery.cancel_scope.cancel()

            nursery.start_soon(receive)
            try:
                await sending()
            except (
                WebSocketDisconnect,
                RuntimeError,
                OSError,
                trio.BrokenResourceError,
                trio.ClosedResourceError,
            ):
                nursery.cancel_scope.cancel()

    async def _poll(
        self, websocket: WebSocket, change: Change, payload: Callable[[], str], rate: float
    ) -> None:
        """One socket's own snapshots (a player's): the latest when it changed, at most `rate`
        times a second."""
        interval = 1.0 / rate
        sent = change.version
        await websocket.send_text(envelope(payload()))
        await trio.sleep(random.uniform(0.0, interval))
        while True:
            if change.version != sent:
                sent = change.version  # the latest snapshot, however many changes came
                await websocket.send_text(envelope(payload()))
            await trio.sleep(interval)

    # ------------------------------------------------------------------ admin

    async def admin(self, *packets: Any) -> tuple[Any, Response | None]:
        """Send `packets` as the admin: the reply, and the error response if it failed."""
        try:
            reply = await admin_request(self.game_port, self.settings.password, packets)
        except (ConnectionClosed, trio.TooSlowError) as failure:
            return None, error(502, f"the game server did not answer: {failure}")
        if reply.errors:
            return reply, error(409, "; ".join(reply.errors))
        return reply, None

    async def _prepare(self, request: Request, session: Session) -> Response:
        body = await json_body(request)
        names = body.get("names", ["", ""])
        if not (
            isinstance(names, list) and len(names) == 2 and all(isinstance(n, str) for n in names)
        ):
            return error(400, "names: two strings")
        timeouts = bool(body.get("timeouts", True))
        slots = tuple(SlotDescriptor(name[:100], timeouts, True) for name in names)
        reply, failed = await self.admin(Prepare(GAME_TYPE, bool(body.get("paused")), slots))
        if failed is not None:
            return failed
        prepared = reply.prepared[0]
        return JSONResponse({"room": prepared.room_id, "reservations": list(prepared.reservations)})

    async def _room_request(
        self, request: Request, make: Callable[[str, dict[str, Any]], Any]
    ) -> Response:
        body = await json_body(request)
        room_id = body.get("room")
        if not isinstance(room_id, str):
            return error(400, "room: a room id")
        _reply, failed = await self.admin(make(room_id, body))
        return failed or JSONResponse({"ok": True})

    async def _pause(self, request: Request, session: Session) -> Response:
        return await self._room_request(
            request, lambda room, body: PauseRequest(room, bool(body.get("pause", True)))
        )

    async def _cancel_room(self, room_id: str) -> None:
        _reply, failed = await self.admin(CancelRequest(room_id))
        if failed is not None:
            log.info("cancel failed", room=room_id, error=bytes(failed.body).decode())

    async def _step(self, request: Request, session: Session) -> Response:
        return await self._room_request(request, lambda room, body: StepRequest(room, True))

    async def _cancel(self, request: Request, session: Session) -> Response:
        return await self._room_request(request, lambda room, body: CancelRequest(room))

    # ------------------------------------------------------------------ playing

    async def _play(self, request: Request, session: Session) -> Response:
        """A person takes a slot: a room prepared for them (their slot never times out, the
        other one is open to the next bot's <join>), or a given reservation code."""
        body = await json_body(request)
        refused = self.no_room_for(session)
        if refused is not None:
            return refused
        reservation = body.get("reservation")
        room_id: str | None = None
        if not isinstance(reservation, str) or not reservation:
            team = body.get("team", "ONE")
            name = str(body.get("name", "") or "Mensch")[:100]
            human = SlotDescriptor(name, False, True)
            bot = SlotDescriptor(str(body.get("opponent", "") or "")[:100], True, False)
            slots = (human, bot) if team == "ONE" else (bot, human)
            reply, failed = await self.admin(Prepare(GAME_TYPE, False, slots))
            if failed is not None:
                return failed
            reservation = reply.prepared[0].reservations[0]
            room_id = reply.prepared[0].room_id
        token = secrets.token_urlsafe(16)
        player = HumanPlayer(token, reservation, session.token)
        self.humans[token] = player
        assert self._nursery is not None
        self._nursery.start_soon(player.run, self.game_port)
        return JSONResponse({"token": token, "room": room_id})

    def no_room_for(self, session: Session) -> Response | None:
        """The refusal when one more game would be too many (in all, or for `session`)."""
        for token in [token for token, human in self.humans.items() if human.ended]:
            del self.humans[token]  # their page has shown the result by now
        if len(self.humans) >= MAX_HUMANS:
            return error(503, "too many people playing")
        mine = sum(1 for human in self.humans.values() if human.owner == session.token)
        if not session.admin and mine >= MAX_GAMES_PER_SESSION:
            return error(429, f"at most {MAX_GAMES_PER_SESSION} games at once without a login")
        return None

    async def _ws_play(self, websocket: WebSocket) -> None:
        if await self._refused(websocket):
            return
        await websocket.accept()
        session = self._session(websocket)
        player = self.humans.get(websocket.path_params["token"])
        # Moves are state-changing: only the session that opened the game, from this site.
        if (
            player is None
            or session is None
            or session.token != player.owner
            or not same_origin(
                websocket.headers.get("origin"),
                websocket.headers.get("host"),
                "https" if websocket.url.scheme == "wss" else "http",
            )
        ):
            await websocket.send_text(json.dumps({"missing": True}))
            await websocket.close()
            return

        async def on_message(message: Any) -> None:
            error = None
            try:
                move = Move(int(message["x"]), int(message["y"]), Direction[message["dir"]])
            except (KeyError, TypeError, ValueError, IndexError):
                error = "malformed move"
            else:
                error = await player.move(move)
            if error is not None:
                player.errors.append(error)
                player.change.bump()

        # A person waits for the bot's answer: a faster rate than for watchers.
        polling = partial(
            self._poll, websocket, player.change, partial(player_json, player), PLAYER_RATE
        )
        await self._pump(websocket, polling, on_message)
