""" "Analyse this game" for the replay page: a replay or game record posted by the page is
analysed move by move (`analysis.Analyser`, docs/analysis.md) in a worker thread of the
viewer's process, never on the game server's thread; the page polls the job for progress
and gets the analysis JSON, with each best move's target field for the arrow.

Rule: the work is bounded in every dimension. A posted game is at most `MAX_UPLOAD_BYTES`
(`MAX_ANALYSIS_BYTES` after gunzip) and `MAX_MOVES` moves; at most `RUNNING` analyses run at
once and one per session (beyond that: 503/429 at once, nothing queues); a job that runs
longer than `DEADLINE` seconds stops at its next position and fails; at most `KEEP` jobs are
remembered (the oldest finished one is forgotten first). The same game with the same
settings is analysed once: the analysis is deterministic, so a finished job is answered again.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import zlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from analysis import DEFAULT_NODES, Analyser, AnalysisError, Game, Settings
from analysis.annotate import AnnotationError, read_annotation
from analysis.game import summarise
from analysis.sources import SourceError, game_from_record, game_from_replay
from engine import Direction, Move
from web.auth import Session
from web.board import move_target
from web.http import error, read_body
from web.league import looks_like_record

log = structlog.get_logger("web.analysis")

MAX_UPLOAD_BYTES = 1024 * 1024  # as the replay page's upload (web.replays)
MAX_ANALYSIS_BYTES = 2 * 1024 * 1024  # after gunzip, as the replay page's own parser
MAX_MOVES = 200  # a game of the rules has at most 60; a loaded start position no more
RUNNING = 1  # analyses at once: each keeps one core busy for ~20 s (60 moves, 12 000 nodes)
DEADLINE = 180.0  # seconds one analysis may take before it stops and fails
KEEP = 32  # jobs remembered (running and finished)

Guard = Callable[[Callable[[Request, Session], Awaitable[Response]]], Any]


class _TooLong(Exception):
    pass


@dataclass
class Job:
    """One analysis: its progress, then its JSON or why it failed."""

    id: str
    owner: str  # the session that asked (one running job per session)
    total: int
    done: int = 0
    result: dict[str, Any] | None = None
    failure: str | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def running(self) -> bool:
        return self.result is None and self.failure is None

    def to_json(self) -> dict[str, Any]:
        state = "running" if self.running else "done" if self.result is not None else "failed"
        return {
            "job": self.id,
            "state": state,
            "done": self.done,
            "total": self.total,
            "error": self.failure,
            "analysis": self.result,
        }


class AnalysisJobs:
    """`POST /api/analysis` (a game's bytes; guarded like every state-changing endpoint) and
    `GET /api/analysis/{job}` (progress, then the analysis)."""

    def __init__(
        self, guard: Guard, start_soon: Callable[[Callable[[], Awaitable[None]]], None]
    ) -> None:
        self.settings = Settings(nodes=DEFAULT_NODES)
        self.deadline = DEADLINE
        self._guard = guard
        self._start_soon = start_soon
        self.jobs: OrderedDict[str, Job] = OrderedDict()
        self._by_game: dict[str, str] = {}  # the game's digest → its job

    def routes(self) -> list[Route]:
        """The routes."""
        return [
            Route("/api/analysis", self._guard(self.start), methods=["POST"]),
            Route("/api/analysis/{job}", self.progress),
        ]

    async def start(self, request: Request, session: Session) -> Response:
        """Start analysing the posted replay or record (or answer the job that did)."""
        data = await read_body(request, MAX_UPLOAD_BYTES)
        try:
            game = await trio.to_thread.run_sync(_game, data)
        except (SourceError, ValueError, zlib.error) as failure:
            return error(400, str(failure))
        if len(game.moves) > MAX_MOVES:
            return error(413, f"at most {MAX_MOVES} moves are analysed here")
        if not game.moves:
            return error(400, "the game has no moves to analyse")
        digest = _digest(game, self.settings)
        known = self.jobs.get(self._by_game.get(digest, ""))
        if known is not None and known.failure is None:
            return JSONResponse(known.to_json())
        running = [job for job in self.jobs.values() if job.running]
        if any(job.owner == session.token for job in running):
            return error(429, "one analysis at a time: wait for yours to finish")
        if len(running) >= RUNNING:
            return error(503, "the server is analysing another game: try again in a moment")
        job = Job(secrets.token_urlsafe(12), session.token, len(game.moves))
        self._remember(job, digest)
        self._start_soon(lambda: self._run(job, game))
        return JSONResponse(job.to_json(), status_code=202)

    async def progress(self, request: Request) -> Response:
        """A job's progress, then its analysis (404 for an unknown or forgotten job)."""
        job = self.jobs.get(request.path_params["job"])
        if job is None:
            return error(404, "no such analysis (it may have been forgotten)")
        return JSONResponse(job.to_json())

    def _remember(self, job: Job, digest: str) -> None:
        self.jobs[job.id] = job
        self._by_game[digest] = job.id
        while len(self.jobs) > KEEP:
            finished = next((key for key, old in self.jobs.items() if not old.running), None)
            if finished is None:
                break
            del self.jobs[finished]
        known = set(self.jobs)
        self._by_game = {key: value for key, value in self._by_game.items() if value in known}

    async def _run(self, job: Job, game: Game) -> None:
        settings, deadline = self.settings, job.started + self.deadline
        stopped = False  # set when the viewer stops: the thread ends at its next position

        def progress(done: int, total: int) -> None:
            job.done = done  # one int, read by the loop's thread: no lock needed
            if stopped or time.monotonic() > deadline:
                raise _TooLong

        def work() -> dict[str, Any]:
            with Analyser(settings) as analyser:
                return _with_targets(game, analyser.analyse(game, progress).as_json())

        try:
            # Abandoned on cancellation (a viewer shutting down does not wait for a search);
            # `stopped` then ends the thread too.
            job.result = await trio.to_thread.run_sync(work, abandon_on_cancel=True)
        except trio.Cancelled:
            stopped = True
            job.failure = "the viewer stopped"
            raise
        except _TooLong:
            job.failure = f"the analysis took longer than {self.deadline:g} s and was stopped"
        except (AnalysisError, ValueError) as failure:
            job.failure = f"the game cannot be analysed: {failure}"
        except Exception:  # never takes the viewer down; the log has the trace
            log.exception("analysis failed", job=job.id)
            job.failure = "the analysis failed (the server log says why)"
        log.info("analysis finished", job=job.id, moves=job.total, failure=job.failure)


def _game(data: bytes) -> Game:
    """The game of a replay (plain or gzip) or a league game record."""
    if data[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(wbits=31)
        data = inflater.decompress(data, MAX_ANALYSIS_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError(f"more than {MAX_ANALYSIS_BYTES} bytes uncompressed")
    if looks_like_record(data):
        return game_from_record(data, "record")[1]
    return game_from_replay(data, "replay")


def _digest(game: Game, settings: Settings) -> str:
    text = repr((game.start.rows(), game.start.turn, game.moves, game.names, settings))
    return hashlib.sha256(text.encode()).hexdigest()


def _with_targets(game: Game, document: dict[str, Any]) -> dict[str, Any]:
    """The analysis JSON with each best move's target field (`best.to`) for the arrow."""
    for state, move in zip(game.states(), document["moves"], strict=False):
        best = move["best"]
        target = move_target(state, Move(best["x"], best["y"], Direction[best["direction"]]))
        best["to"] = list(target)
    return document


def recorded_analysis(data: bytes) -> dict[str, Any] | None:
    """The analysis written into a league game record (`piranhas-analyze --annotate`), as the
    JSON of "Analyse this game"; None without one, or when it does not fit the record's moves
    (`piranhas-analyze` checks those: docs/game-records.md)."""
    try:
        annotation = read_annotation(data)
        if annotation is None:
            return None
        _, game = game_from_record(data, "record")
    except (AnnotationError, SourceError):
        return None
    if not annotation.moves or len(annotation.moves) != len(game.moves):
        return None
    states = game.states()
    answers = [answer for answer, _, _ in annotation.moves]
    if any(state.check_move(a.best) is not None for a, state in zip(answers, states, strict=False)):
        return None
    analysed = summarise(game, annotation.settings, states, answers)
    return _with_targets(game, analysed.as_json())
