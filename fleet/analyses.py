"""Analysis jobs of a distributed league: the second kind of work on the league's queue.

Rule: **one job per recorded game and analysis settings; its annotated record is written
once.** A job's row in `fleet_analyses` (next to `fleet_runs`, same database) goes new →
queued → running → done (or failed). Every delivery of the job's message starts a new
attempt (`start`), and only the current attempt's `finish` writes the annotated record, in
the same transaction that marks the job done: a worker presumed dead whose message went to
another worker cannot write over it, and a duplicate delivery of a done job does nothing.
The analysis is deterministic (`analysis.game`), so every attempt would write the same bytes
anyway; the fencing makes "written once" a fact rather than a hope.

The message is the job's key — match id, game number, nodes, depth — and nothing more: the
worker reads the game record from the league store (`results.game_record`).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from analysis import Analyser, Settings
from analysis.annotate import annotate
from analysis.sources import game_from_record
from league.store import Backend

__all__ = [
    "ANALYSIS_STATEMENTS",
    "Analyses",
    "AnalysisJob",
    "AnalysisProgress",
    "AnalysisStatus",
    "JobKey",
    "analyse_record",
    "record_name",
]

ANALYSIS_STATEMENTS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS fleet_analyses (
        match_id INTEGER NOT NULL,
        game_number INTEGER NOT NULL,
        settings VARCHAR(64) NOT NULL,
        status VARCHAR(16) NOT NULL,
        attempt INTEGER NOT NULL,
        worker VARCHAR(200),
        enqueued_at BIGINT,
        started_at BIGINT,
        finished_at BIGINT,
        annotated TEXT,
        error TEXT,
        PRIMARY KEY (match_id, game_number, settings)
    )""",
)


class AnalysisStatus(enum.Enum):
    """Where an analysis job stands."""

    NEW = "new"
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def final(self) -> bool:
        """No worker will touch the job again."""
        return self in (AnalysisStatus.DONE, AnalysisStatus.FAILED)


@dataclass(frozen=True)
class JobKey:
    """One game's analysis with one setting: what a message carries."""

    match_id: int
    number: int
    nodes: int | None
    depth: int | None

    @property
    def settings(self) -> Settings:
        """The analysis settings (AnalysisError when out of range)."""
        return Settings(nodes=self.nodes, depth=self.depth)

    @property
    def settings_key(self) -> str:
        """The settings as the table's key column holds them."""
        return settings_key(self.settings)

    def as_args(self) -> tuple[int, int, int | None, int | None]:
        """The message's arguments."""
        return (self.match_id, self.number, self.nodes, self.depth)


def settings_key(settings: Settings) -> str:
    """`nodes=12000 depth=-`: the settings as one column (jobs of other settings are others)."""
    nodes = "-" if settings.nodes is None else str(settings.nodes)
    depth = "-" if settings.depth is None else str(settings.depth)
    return f"nodes={nodes} depth={depth}"


@dataclass(frozen=True)
class AnalysisJob:
    """A job handed to one worker under `attempt`, with the game record to analyse."""

    key: JobKey
    attempt: int
    worker: str
    record: str


@dataclass(frozen=True)
class AnalysisProgress:
    """How many jobs of one setting stand where."""

    total: int
    done: int
    failed: int
    running: int

    @property
    def final(self) -> bool:
        """Every job done or failed."""
        return self.done + self.failed == self.total


def record_name(match_id: int, number: int) -> str:
    """The record's file name, as the one-machine league writes it (`league.play`)."""
    return f"match{match_id:03d}-game{number}.xml"


def analyse_record(
    record: bytes,
    label: str,
    settings: Settings,
    progress: Callable[[int, int], None] | None = None,
) -> bytes:
    """The record with its analysis written in: what `piranhas-league analyze` writes on one
    machine, byte for byte (SourceError, AnnotationError for a record it cannot read).
    `progress(done, total)` after every position (what it raises ends the analysis)."""
    _, game = game_from_record(record, label)
    with Analyser(settings) as analyser:
        analysis = analyser.analyse(game, progress)
    return annotate(record, analysis)


class Analyses:
    """The `fleet_analyses` table on a league store's backend. `clock` returns seconds since
    the epoch."""

    def __init__(self, backend: Backend, *, clock: Callable[[], float] = time.time) -> None:
        self.backend = backend
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def initialize(self) -> None:
        """Create the table (the coordinator does; workers never create tables)."""
        with self.backend.transaction() as tx:
            for statement in ANALYSIS_STATEMENTS:
                tx.execute(statement)

    def request(self, settings: Settings) -> list[JobKey]:
        """A `new` job for every recorded game with a record that has none with these
        settings; every job of these settings, in schedule order."""
        key = settings_key(settings)
        with self.backend.transaction() as tx:
            games = tx.query(
                "SELECT match_id, game_number FROM results WHERE game_record IS NOT NULL "
                "ORDER BY match_id, game_number"
            )
            known = {
                (int(row[0]), int(row[1]))
                for row in tx.query(
                    "SELECT match_id, game_number FROM fleet_analyses WHERE settings = ?", (key,)
                )
            }
            for match_id, number in games:
                if (int(match_id), int(number)) not in known:
                    tx.execute(
                        "INSERT INTO fleet_analyses (match_id, game_number, settings, status, "
                        "attempt) VALUES (?, ?, ?, 'new', 0)",
                        (int(match_id), int(number), key),
                    )
        return [JobKey(int(m), int(n), settings.nodes, settings.depth) for m, n in games]

    def statuses(self, settings: Settings) -> dict[JobKey, AnalysisStatus]:
        """Every job of these settings and its status."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT match_id, game_number, status FROM fleet_analyses WHERE settings = ? "
                "ORDER BY match_id, game_number",
                (settings_key(settings),),
            )
        return {
            JobKey(int(m), int(n), settings.nodes, settings.depth): AnalysisStatus(status)
            for m, n, status in rows
        }

    def mark_queued_all(self, keys: Iterable[JobKey]) -> None:
        """These jobs' messages were sent (one transaction)."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            for key in keys:
                tx.execute(
                    "UPDATE fleet_analyses SET status = 'queued', enqueued_at = ? "
                    "WHERE match_id = ? AND game_number = ? AND settings = ? AND status = 'new'",
                    (now, key.match_id, key.number, key.settings_key),
                )

    def start(self, key: JobKey, worker: str) -> AnalysisJob | None:
        """A new attempt of the job for `worker`, or None when there is nothing to do (done,
        failed, or another delivery won the race). Raises KeyError for a job not requested."""
        now = self._now_ms()
        where = "match_id = ? AND game_number = ? AND settings = ?"
        args = (key.match_id, key.number, key.settings_key)
        with self.backend.transaction() as tx:
            rows = tx.query(f"SELECT status, attempt FROM fleet_analyses WHERE {where}", args)
            if not rows:
                raise KeyError(key)
            status, previous = AnalysisStatus(rows[0][0]), int(rows[0][1])
            if status.final:
                return None
            changed = tx.execute(
                "UPDATE fleet_analyses SET status = 'running', attempt = ?, worker = ?, "
                f"started_at = ?, error = NULL WHERE {where} AND attempt = ?",
                (previous + 1, worker, now, *args, previous),
            )
            if changed != 1:
                return None
            records = tx.query(
                "SELECT game_record FROM results WHERE match_id = ? AND game_number = ?",
                (key.match_id, key.number),
            )
        record = str(records[0][0]) if records and records[0][0] is not None else ""
        return AnalysisJob(key, previous + 1, worker, record)

    def finish(self, job: AnalysisJob, annotated: str) -> bool:
        """Write the annotated record and mark the job done, if `job` is still the current
        attempt; False (nothing written) otherwise."""
        return self._end(job, AnalysisStatus.DONE, annotated=annotated)

    def fail(self, job: AnalysisJob, error: str) -> bool:
        """Mark the job failed (a record that cannot be analysed; a retry cannot help)."""
        return self._end(job, AnalysisStatus.FAILED, error=error)

    def requeue(self, job: AnalysisJob) -> bool:
        """Give the job back (the worker is stopping, or it failed and will be retried)."""
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE fleet_analyses SET status = 'queued', worker = NULL, enqueued_at = ? "
                "WHERE match_id = ? AND game_number = ? AND settings = ? AND attempt = ? "
                "AND status = 'running'",
                (self._now_ms(), *self._where(job)),
            )
        return changed == 1

    def _end(
        self,
        job: AnalysisJob,
        status: AnalysisStatus,
        *,
        annotated: str | None = None,
        error: str | None = None,
    ) -> bool:
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE fleet_analyses SET status = ?, finished_at = ?, annotated = ?, "
                "error = ? WHERE match_id = ? AND game_number = ? AND settings = ? "
                "AND attempt = ? AND status = 'running'",
                (status.value, self._now_ms(), annotated, error, *self._where(job)),
            )
        return changed == 1

    @staticmethod
    def _where(job: AnalysisJob) -> tuple[int, int, str, int]:
        return (job.key.match_id, job.key.number, job.key.settings_key, job.attempt)

    def fail_for_good(self, key: JobKey, error: str) -> None:
        """Mark the job failed whatever its attempt (its message went to the dead-letter set)."""
        with self.backend.transaction() as tx:
            tx.execute(
                "UPDATE fleet_analyses SET status = 'failed', finished_at = ?, error = ? "
                "WHERE match_id = ? AND game_number = ? AND settings = ? AND status <> 'done'",
                (self._now_ms(), error, key.match_id, key.number, key.settings_key),
            )

    def progress(self, settings: Settings) -> AnalysisProgress:
        """The counts of these settings' jobs."""
        counts = {status: 0 for status in AnalysisStatus}
        for status in self.statuses(settings).values():
            counts[status] += 1
        return AnalysisProgress(
            sum(counts.values()),
            counts[AnalysisStatus.DONE],
            counts[AnalysisStatus.FAILED],
            counts[AnalysisStatus.RUNNING],
        )

    def results(self, settings: Settings) -> list[tuple[JobKey, str | None, str | None]]:
        """(job, annotated record or None, error or None) of every final job, in order."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT match_id, game_number, annotated, error FROM fleet_analyses "
                "WHERE settings = ? AND status IN ('done', 'failed') "
                "ORDER BY match_id, game_number",
                (settings_key(settings),),
            )
        return [
            (JobKey(int(m), int(n), settings.nodes, settings.depth), annotated, error)
            for m, n, annotated, error in rows
        ]

    def attempts(self, key: JobKey) -> int:
        """The job's attempt counter (how many deliveries started it)."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT attempt FROM fleet_analyses WHERE match_id = ? AND game_number = ? "
                "AND settings = ?",
                (key.match_id, key.number, key.settings_key),
            )
        return int(rows[0][0]) if rows else 0
