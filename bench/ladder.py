"""The ladder's two figures (issue 22): ratings of 100 teams over 10,000 games recomputed in
under a second, and W workers kept at least 90 % busy by the scheduler's pairing policy.

    python -m bench.ladder [--teams 100] [--games 10000] [--workers 8] [--hours 1]
                           [--interval 5] [--mean 60] [--deaths 0.02]

1. Ratings: `ladder.rating.fit` of `--games` games between `--teams` versions (simulated from
   known strengths), cold (no earlier ratings; best of 5); the store's `recompute_ratings()`
   over as many stored games (read them, fit from scratch, write the ratings); and the refit
   inside `record_match` (warm-started; one SQLite transaction with the games and history).
2. Workers: a discrete-event simulation on the real store (SQLite, a simulated clock) with the
   real scheduler step (`ladder.pairing.top_up`, every `--interval` simulated seconds) and W
   workers that claim a match, play it for a simulated duration (lognormal, mean `--mean` s,
   half as wide), record it and claim the next at once. A share `--deaths` of the matches'
   workers die half-way: the match is handed out again when its lease runs out (as in a real
   crash). Busy = the time workers spend in matches over W × the simulated time; reported for
   the policy (a queue beside the running matches) and without the queue, to show what it buys.

Prints the figures and the load average before and after.
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from ladder import pairing, rating
from ladder.store import GameResultRow, LadderStore, MatchClaim

LEASE = 120.0  # seconds: a dead worker's match is handed out again after this
HEARTBEAT = 30.0  # seconds between a live worker's heartbeats


def load() -> str:
    """The load average, as `uptime` shows it."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def simulated_games(
    teams: int, games: int, rng: random.Random
) -> tuple[dict[int, float], list[tuple[int, int, float]]]:
    """True ratings and `games` games between random pairs (some drawn)."""
    true = {v: rng.gauss(1500, 250) for v in range(1, teams + 1)}
    results = []
    for _ in range(games):
        a, b = rng.sample(range(1, teams + 1), 2)
        p = 1 / (1 + 10 ** ((true[b] - true[a]) / 400))
        # Draws keep a's expected score p (the model's): drawn with 0.2·min(p, 1-p).
        drawn = 0.2 * min(p, 1 - p)
        win = (p - drawn / 2) / (1 - drawn)
        score = 0.5 if rng.random() < drawn else 1.0 if rng.random() < win else 0.0
        results.append((a, b, score))
    return true, results


def bench_fit(teams: int, games: int) -> None:
    """Cold fits of the whole history, best of 5."""
    rng = random.Random(1)
    true, results = simulated_games(teams, games, rng)
    times = []
    fitted: dict[int, tuple[float, float]] = {}
    for _ in range(5):
        began = time.perf_counter()
        fitted = rating.fit(results)
        times.append(time.perf_counter() - began)
    centre_true = statistics.fmean(true.values())
    centre_fit = statistics.fmean(r for r, _ in fitted.values())
    errors = [abs((fitted[v][0] - centre_fit) - (true[v] - centre_true)) for v in true]
    deviations = [d for _, d in fitted.values()]
    print(
        f"ratings: {teams} versions, {games} games: cold fit {min(times) * 1000:.0f} ms "
        f"(best of 5; worst {max(times) * 1000:.0f} ms); mean |error| "
        f"{statistics.fmean(errors):.1f} Elo, mean deviation {statistics.fmean(deviations):.1f}"
    )


def bench_recompute(directory: Path, teams: int, games: int) -> None:
    """`LadderStore.recompute_ratings` on a store holding `games` ranked games (matches of 2
    games, written straight into the tables: recording them one by one would take minutes)."""
    rng = random.Random(2)
    true, results = simulated_games(teams, games, rng)
    store = LadderStore.open(str(directory / "recompute.sqlite"), clock=Clock())
    try:
        versions = {}
        for number in true:
            team = store.create_team(f"Team {number}")
            versions[number] = store.add_version(team, size=1, sha256="0" * 64, label="x")
        points = {1.0: (2, 0), 0.5: (1, 1), 0.0: (0, 2)}
        with store.backend.transaction() as tx:
            for index in range(0, len(results) - 1, 2):
                (a, b, first), (_, _, second) = results[index], results[index + 1]
                match_id = index // 2 + 1
                tx.execute(
                    "INSERT INTO ladder_matches (match_id, version_a, version_b, ranked, "
                    "challenge_id, games, board_seed, status, attempt, lease_until, "
                    "finished_attempt, created, finished) "
                    "VALUES (?, ?, ?, 1, NULL, 2, 0, 'finished', 1, NULL, 1, 0, 0)",
                    (match_id, versions[a], versions[b]),
                )
                for number, score in ((1, first), (2, second)):
                    tx.execute(
                        "INSERT INTO ladder_games (match_id, game_number, first_version, "
                        "points_a, points_b, reason_a, reason_b, replay) "
                        "VALUES (?, ?, ?, ?, ?, '', '', NULL)",
                        (match_id, number, versions[a], *points[score]),
                    )
        times = []
        for _ in range(3):
            began = time.perf_counter()
            rated = store.recompute_ratings()
            times.append(time.perf_counter() - began)
        print(
            f"ratings: recompute_ratings() of {rated} versions from {games} stored games "
            f"(SQLite: read, fit from scratch, write): {min(times) * 1000:.0f} ms (best of 3; "
            f"worst {max(times) * 1000:.0f} ms)"
        )
    finally:
        store.close()


def results_for(
    claim: MatchClaim, rng: random.Random, strength: dict[int, float]
) -> list[GameResultRow]:
    """A claimed match's games from the versions' simulated strengths."""
    rows = []
    p = 1 / (1 + 10 ** ((strength[claim.version_b] - strength[claim.version_a]) / 400))
    for number in range(1, claim.games + 1):
        won = rng.random() < p
        first = claim.version_a if number % 2 else claim.version_b
        rows.append(GameResultRow(number, first, 2 if won else 0, 0 if won else 2, "", "", None))
    return rows


class Clock:
    """The simulation's clock (seconds since the epoch)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def simulate(
    directory: Path,
    *,
    teams: int,
    workers: int,
    hours: float,
    interval: float,
    mean: float,
    deaths: float,
    queued: int | None,
) -> tuple[float, float, int, float]:
    """(busy share, useful share, matches recorded, mean ms per record_match) of one
    simulated run."""
    rng = random.Random(7)
    clock = Clock()
    path = directory / f"sim-{queued}.sqlite"
    store = LadderStore.open(str(path), clock=clock)
    strength: dict[int, float] = {}
    for number in range(1, teams + 1):
        team = store.create_team(f"Team {number}")
        version = store.add_version(team, size=1, sha256="0" * 64, label="bench")
        store.set_check_result(version, True, "ok")
        store.activate(team, version)
        strength[version] = rng.gauss(1500, 250)
    sigma = math.sqrt(math.log(1 + 0.5**2))
    mu = math.log(mean) - sigma**2 / 2
    start = clock.now
    end = start + hours * 3600
    # Events: (time, order, kind, worker, claim, started); kinds "tick" (the scheduler's
    # step), "beat" (a heartbeat), "done" (a match played), "dead" (its worker died).
    events: list[tuple[float, int, str, int, MatchClaim | None, float]] = []
    order = 0
    idle = set(range(workers))
    busy_time = 0.0
    useful_time = 0.0  # in matches that were recorded (not those of dying workers)
    recorded = 0
    record_seconds = 0.0

    def claim_for(worker: int) -> None:
        nonlocal order
        claim = store.claim_match(f"w{worker}", lease_seconds=LEASE)
        if claim is None:
            idle.add(worker)
            return
        idle.discard(worker)
        duration = rng.lognormvariate(mu, sigma)
        kind = "done"
        if rng.random() < deaths:
            duration, kind = duration / 2, "dead"
        order += 1
        heapq.heappush(events, (clock.now + duration, order, kind, worker, claim, clock.now))
        # A live worker's heartbeats (a dead one's stop: its lease runs out).
        beat = HEARTBEAT
        while kind == "done" and beat < duration:
            order += 1
            heapq.heappush(events, (clock.now + beat, order, "beat", worker, claim, clock.now))
            beat += HEARTBEAT

    heapq.heappush(events, (start, 0, "tick", -1, None, start))
    while events:
        at, _, kind, worker, claim, started = heapq.heappop(events)
        if at > end:
            # Matches still running at the end count up to the end.
            busy_time += sum(
                end - e[5]
                for e in [(at, 0, kind, worker, claim, started), *events]
                if e[2] in ("done", "dead")
            )
            break
        clock.now = at
        if kind == "tick":
            pairing.top_up(store, workers=workers, queued=queued, rng=rng)
            for waiting in sorted(idle):
                claim_for(waiting)
            order += 1
            heapq.heappush(events, (at + interval, order, "tick", -1, None, at))
            continue
        assert claim is not None
        if kind == "beat":
            store.heartbeat(claim, lease_seconds=LEASE)
            continue
        busy_time += at - started
        if kind == "done":
            useful_time += at - started
            began = time.perf_counter()
            store.record_match(claim, results_for(claim, rng, strength))
            record_seconds += time.perf_counter() - began
            recorded += 1
        # A dead worker's replacement starts at once; its match waits for the lease to end.
        claim_for(worker)
    store.close()
    capacity = workers * (end - start)
    per_record = record_seconds / max(1, recorded) * 1000
    return busy_time / capacity, useful_time / capacity, recorded, per_record


def main() -> int:
    """Run both measurements and print the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=100)
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--hours", type=float, default=1.0, help="simulated hours")
    parser.add_argument("--interval", type=float, default=5.0, help="scheduler step, seconds")
    parser.add_argument("--mean", type=float, default=60.0, help="mean match duration, seconds")
    parser.add_argument("--deaths", type=float, default=0.02, help="share of workers dying")
    args = parser.parse_args()
    print(f"load average before: {load()}  ({os.cpu_count()} CPUs)")
    bench_fit(args.teams, args.games)
    with tempfile.TemporaryDirectory(prefix="bench-ladder-") as folder:
        bench_recompute(Path(folder), args.teams, args.games)
        for queued, what in ((None, "policy (queue of W beside W running)"), (0, "no queue")):
            began = time.perf_counter()
            busy, useful, recorded, per_record = simulate(
                Path(folder),
                teams=args.teams,
                workers=args.workers,
                hours=args.hours,
                interval=args.interval,
                mean=args.mean,
                deaths=args.deaths,
                queued=queued,
            )
            print(
                f"workers, {what}: {args.workers} workers, {args.teams} teams, "
                f"{args.hours:g} h simulated, matches {args.mean:g} s on average, scheduler "
                f"every {args.interval:g} s, {args.deaths:.0%} dying: busy {busy:.1%} (in "
                f"matches that were recorded: {useful:.1%}), "
                f"{recorded} matches recorded, record_match {per_record:.1f} ms "
                f"(wall {time.perf_counter() - began:.1f} s)"
            )
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
