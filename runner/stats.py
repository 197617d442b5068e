"""Match statistics: Elo, normalized Elo, LOS and the generalised SPRT, as fastchess and fishtest
compute them, so figures from this runner can be compared with theirs digit for digit.

Pure and stdlib-only. Counts are always from the first player's point of view. Two ways to count:

* `Trinomial` — per game: losses, draws, wins (scores 0, ½, 1).
* `Pentanomial` — per pair of games on the same start board with sides swapped, bucketed by the
  pair's mean score: LL 0, LD ¼, WL or DD ½, WD ¾, WW 1. Pairs cancel the board's and the first
  move's bias, so their error bars are honest and an SPRT on them needs fewer games.

The formulas and the meaning of every figure are in docs/statistics.md.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, TypeAlias

__all__ = [
    "NELO_SCALE",
    "Z95",
    "Counts",
    "Estimate",
    "Pentanomial",
    "Sprt",
    "SprtModel",
    "SprtStatus",
    "Trinomial",
    "elo_from_score",
    "estimate",
    "score_from_elo",
]

Z95 = 1.959963984540054
"""The standard normal's two-sided 95 % quantile: the error bars are 95 % intervals."""

NELO_SCALE = 800 / math.log(10)
"""Normalized Elo per unit of t = (μ − ½)/σ: chosen so that nElo ≈ Elo for a draw-free match."""

# Zero counts are replaced by this in the SPRT, as fishtest and fastchess do: the MLE needs every
# outcome to have positive probability.
_REGULARIZE = 1e-3

_STANDARD_NORMAL = NormalDist()


def elo_from_score(score: float) -> float:
    """The logistic Elo difference of an expected score: −400·log10(1/score − 1).

    A score of 1 or more gives `inf`, 0 or less `-inf`, NaN gives NaN (never a math error).
    """
    if math.isnan(score):
        return math.nan
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_from_elo(elo: float) -> float:
    """The expected score of a logistic Elo difference: 1/(1 + 10^(−elo/400)); ±inf gives 1 or 0."""
    if math.isnan(elo):
        return math.nan
    exponent = -elo / 400.0
    if exponent > 300.0:  # 10**exponent would overflow; the score is 0 to double precision
        return 0.0
    return 1.0 / (1.0 + math.pow(10.0, exponent))


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")


def _game_outcome(score: float) -> int:
    """0, 1, 2 for a game score of 0, ½, 1; anything else is a caller's bug."""
    if score == 0.0:
        return 0
    if score == 0.5:
        return 1
    if score == 1.0:
        return 2
    raise ValueError(f"a game score must be 0, 0.5 or 1, got {score!r}")


@dataclass(frozen=True, slots=True)
class Trinomial:
    """Per-game counts (first player's view). `Trinomial() + Trinomial.of_game(1.0)` adds a win."""

    losses: int = 0
    draws: int = 0
    wins: int = 0

    OUTCOME_SCORES = (0.0, 0.5, 1.0)
    """The score of each outcome, in the order of `frequencies`."""

    def __post_init__(self) -> None:
        for name in ("losses", "draws", "wins"):
            _check_count(name, getattr(self, name))

    @property
    def games(self) -> int:
        """Number of games counted."""
        return self.losses + self.draws + self.wins

    @property
    def points(self) -> float:
        """Points of the first player: a win 1, a draw ½."""
        return self.wins + self.draws / 2

    @property
    def frequencies(self) -> tuple[int, int, int]:
        """(losses, draws, wins): counts in the order of `OUTCOME_SCORES`."""
        return (self.losses, self.draws, self.wins)

    def __add__(self, other: Trinomial) -> Trinomial:
        if not isinstance(other, Trinomial):
            return NotImplemented
        return Trinomial(
            self.losses + other.losses, self.draws + other.draws, self.wins + other.wins
        )

    @classmethod
    def of_game(cls, score: float) -> Trinomial:
        """One game with the first player's score 0, 0.5 or 1 (ValueError otherwise)."""
        counts = [0, 0, 0]
        counts[_game_outcome(score)] = 1
        return cls(*counts)

    @classmethod
    def from_results(cls, scores: Iterable[float]) -> Trinomial:
        """Counts of many games, each the first player's score 0, 0.5 or 1."""
        counts = [0, 0, 0]
        for score in scores:
            counts[_game_outcome(score)] += 1
        return cls(*counts)


@dataclass(frozen=True, slots=True)
class Pentanomial:
    """Per-pair counts (first player's view), fastchess's `Ptnml(0-2)`: [LL, LD, WL+DD, WD, WW].

    `wl` optionally tells how many of the `dd_wl` pairs were one win and one loss (the rest were two
    draws); it is only for the WL/DD ratio in reports and is `None` when unknown (for example after
    adding counts that did not track it). The statistics never use it. To track it while counting,
    start from `Pentanomial(wl=0)` and add `Pentanomial.of_pair(...)`.
    """

    ll: int = 0
    ld: int = 0
    dd_wl: int = 0
    wd: int = 0
    ww: int = 0
    wl: int | None = None

    OUTCOME_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
    """The pair's mean score of each bucket, in the order of `frequencies`."""

    def __post_init__(self) -> None:
        for name in ("ll", "ld", "dd_wl", "wd", "ww"):
            _check_count(name, getattr(self, name))
        if self.wl is not None:
            _check_count("wl", self.wl)
            if self.wl > self.dd_wl:
                raise ValueError(f"wl ({self.wl}) cannot exceed dd_wl ({self.dd_wl})")

    @property
    def pairs(self) -> int:
        """Number of game pairs counted."""
        return self.ll + self.ld + self.dd_wl + self.wd + self.ww

    @property
    def games(self) -> int:
        """Number of games counted (two per pair)."""
        return 2 * self.pairs

    @property
    def dd(self) -> int | None:
        """Pairs of two draws, when `wl` is known."""
        return None if self.wl is None else self.dd_wl - self.wl

    @property
    def frequencies(self) -> tuple[int, int, int, int, int]:
        """(LL, LD, WL+DD, WD, WW): counts in the order of `OUTCOME_SCORES`."""
        return (self.ll, self.ld, self.dd_wl, self.wd, self.ww)

    def __add__(self, other: Pentanomial) -> Pentanomial:
        if not isinstance(other, Pentanomial):
            return NotImplemented
        wl = None if self.wl is None or other.wl is None else self.wl + other.wl
        return Pentanomial(
            self.ll + other.ll,
            self.ld + other.ld,
            self.dd_wl + other.dd_wl,
            self.wd + other.wd,
            self.ww + other.ww,
            wl,
        )

    @classmethod
    def of_pair(cls, first: float, second: float) -> Pentanomial:
        """One pair from the first player's scores (0, 0.5 or 1) in its two games; tracks `wl`."""
        outcome_a, outcome_b = _game_outcome(first), _game_outcome(second)
        counts = [0, 0, 0, 0, 0]
        # Outcomes 0/1/2 per game sum to 0..4: exactly the bucket index (LL, LD, WL|DD, WD, WW).
        counts[outcome_a + outcome_b] = 1
        ll, ld, dd_wl, wd, ww = counts
        return cls(ll, ld, dd_wl, wd, ww, wl=1 if {outcome_a, outcome_b} == {0, 2} else 0)

    @classmethod
    def from_results(cls, pairs: Iterable[tuple[float, float]]) -> Pentanomial:
        """Counts of many pairs, each the first player's two game scores (0, 0.5 or 1)."""
        total = cls(wl=0)
        for first, second in pairs:
            total = total + cls.of_pair(first, second)
        return total


Counts: TypeAlias = Trinomial | Pentanomial


@dataclass(frozen=True, slots=True)
class Estimate:
    """The running figures of a match (first player's view); see docs/statistics.md.

    Degenerate inputs never raise; they give IEEE values instead:

    * no games: every float is NaN;
    * a perfect or a zero score (σ = 0 or not): `elo` is ±inf and `elo_error` NaN;
    * σ = 0 with score ½ (all draws, or all WL/DD pairs): `elo` 0 ± 0, `nelo` and `nelo_error`
      NaN, `los` 0.5;
    * σ = 0 otherwise: `los` is 1 or 0, `nelo` ±inf;
    * an interval end beyond 0 or 1 gives `elo_error` inf (the interval is unbounded).
    """

    games: int
    """Games counted (twice the pairs for a pentanomial estimate)."""
    pairs: int | None
    """Pairs counted, None for a trinomial estimate."""
    score: float
    """Mean score per game μ, 0..1."""
    elo: float
    """Logistic Elo difference of μ."""
    elo_error: float
    """Half width of the 95 % interval of `elo`."""
    nelo: float
    """Normalized Elo: (μ − ½)/σ_game · 800/ln 10 (σ_game = √2·σ_pair for pairs)."""
    nelo_error: float
    """Half width of the 95 % interval of `nelo`."""
    los: float
    """Likelihood of superiority, 0..1: the probability that the first player is stronger."""
    draw_ratio: float
    """Drawn games per game (trinomial) or WL+DD pairs per pair (pentanomial), 0..1."""


def _mean_and_variance(scores: Sequence[float], weights: Sequence[float]) -> tuple[float, float]:
    """Mean and variance of a distribution given by (not necessarily normalized) weights."""
    total = math.fsum(weights)
    mean = math.fsum(w * a for a, w in zip(scores, weights, strict=True)) / total
    variance = math.fsum(w * (a - mean) ** 2 for a, w in zip(scores, weights, strict=True)) / total
    return mean, variance


def estimate(counts: Counts) -> Estimate:
    """Elo ±, nElo ±, LOS and the draw ratio of `counts` (formulas in docs/statistics.md)."""
    if isinstance(counts, Pentanomial):
        is_pairs, samples, draws, pairs = True, counts.pairs, counts.dd_wl, counts.pairs
    else:
        is_pairs, samples, draws, pairs = False, counts.games, counts.draws, None
    if samples == 0:
        nan = math.nan
        return Estimate(counts.games, pairs, nan, nan, nan, nan, nan, nan, nan)

    score, variance = _mean_and_variance(counts.OUTCOME_SCORES, counts.frequencies)
    sigma = math.sqrt(variance)
    standard_error = sigma / math.sqrt(samples)
    # nElo is per game: a pair's score is the mean of two games, so σ_game = √2·σ_pair.
    sigma_game = math.sqrt(2.0) * sigma if is_pairs else sigma
    deviation = score - 0.5

    elo = elo_from_score(score)
    if math.isinf(elo):
        elo_error = math.nan
    else:
        upper = elo_from_score(score + Z95 * standard_error)
        lower = elo_from_score(score - Z95 * standard_error)
        elo_error = (upper - lower) / 2

    if sigma > 0.0:
        nelo = deviation / sigma_game * NELO_SCALE
        nelo_error = Z95 * standard_error / sigma_game * NELO_SCALE
        los = _STANDARD_NORMAL.cdf(deviation / standard_error)
    else:
        nelo = math.copysign(math.inf, deviation) if deviation else math.nan
        nelo_error = math.nan
        los = 0.5 if deviation == 0.0 else (1.0 if deviation > 0.0 else 0.0)

    return Estimate(
        games=counts.games,
        pairs=pairs,
        score=score,
        elo=elo,
        elo_error=elo_error,
        nelo=nelo,
        nelo_error=nelo_error,
        los=los,
        draw_ratio=draws / samples,
    )


class SprtStatus(enum.Enum):
    """The state of an SPRT; `exit_code` is the match runner's exit status (docs/statistics.md)."""

    H1 = "H1"
    """LLR reached the upper bound: accept H1, the data favour Elo = elo1 over elo0."""
    H0 = "H0"
    """LLR reached the lower bound: accept H0, the data favour Elo = elo0 over elo1."""
    CONTINUE = "continue"
    """Neither bound reached: play more games (or, when the games ran out, inconclusive)."""

    @property
    def exit_code(self) -> int:
        """0 for H1 (a CI gate passes), 1 for H0, 3 for inconclusive; 2 is left to usage errors."""
        return _EXIT_CODES[self]


_EXIT_CODES = {SprtStatus.H1: 0, SprtStatus.H0: 1, SprtStatus.CONTINUE: 3}

SprtModel = Literal["normalized", "logistic"]
_MODELS: tuple[SprtModel, ...] = ("normalized", "logistic")


def _solve_decreasing(
    function: Callable[[float], float],
    derivative: Callable[[float], float],
    low: float,
    high: float,
) -> float:
    """The root of a strictly decreasing function on the open interval (low, high), which goes
    from +inf at `low` to −inf at `high` (both ends are poles, so they are never evaluated).

    Newton steps from 0 (inside the interval here), each kept inside the shrinking bracket and
    replaced by bisection when it would leave it: monotonicity makes bisection always safe, Newton
    makes it take a handful of steps instead of ~50.
    """
    x = 0.0 if low < 0.0 < high else (low + high) / 2
    for _ in range(200):
        value = function(x)
        if value > 0.0:
            low = x
        elif value < 0.0:
            high = x
        else:
            return x
        slope = derivative(x)
        following = x - value / slope if slope < 0.0 else math.nan
        if not low < following < high:
            following = (low + high) / 2
        if abs(following - x) <= 1e-15 * max(1.0, abs(x)) or following in (low, high):
            return following
        x = following
    return x


def _secular_mle(observed: Sequence[float], phi: Sequence[float]) -> list[float] | None:
    """The distribution p̂ᵢ/(1 + θ·φᵢ), θ solving Σ p̂ᵢ·φᵢ/(1 + θ·φᵢ) = 0 (Van den Bergh).

    None when φ has no value of each sign (no root: the constraint cannot be met this way).
    """
    smallest, largest = min(phi), max(phi)
    if not smallest < 0.0 < largest:
        return None

    def secular(theta: float) -> float:
        return math.fsum(p * f / (1.0 + theta * f) for p, f in zip(observed, phi, strict=True))

    def slope(theta: float) -> float:
        return -math.fsum(
            p * f * f / (1.0 + theta * f) ** 2 for p, f in zip(observed, phi, strict=True)
        )

    theta = _solve_decreasing(secular, slope, -1.0 / largest, -1.0 / smallest)
    return [p / (1.0 + theta * f) for p, f in zip(observed, phi, strict=True)]


def _mle_logistic(scores: Sequence[float], observed: Sequence[float], s: float) -> list[float]:
    """The most likely distribution with expected score s given the observed one."""
    mle = _secular_mle(observed, [a - s for a in scores])
    if mle is None:  # s outside (0, 1): cannot happen for a finite Elo
        raise ValueError(f"expected score {s} is not strictly between 0 and 1")
    return mle


def _iterate_normalized(
    scores: Sequence[float], observed: Sequence[float], t: float, start: list[float]
) -> list[float] | None:
    """Van den Bergh's fixed-point iteration for the most likely distribution with
    (μ − ½)/σ = t: each step solves the secular equation with
    φᵢ = aᵢ − ½ − t·σ/2·(1 + ((aᵢ − μ)/σ)²) at the current distribution's μ and σ.
    None when a step has no solution (the start is too far from the answer).
    """
    current = start
    for _ in range(100):
        mu, variance = _mean_and_variance(scores, current)
        sigma = math.sqrt(variance)
        phi = [a - 0.5 - t * sigma / 2 * (1.0 + ((a - mu) / sigma) ** 2) for a in scores]
        following = _secular_mle(observed, phi)
        if following is None:
            return None
        change = max(abs(new - old) for new, old in zip(following, current, strict=True))
        current = following
        if change < 1e-13:
            break
    return current


def _mle_normalized(scores: Sequence[float], observed: Sequence[float], t: float) -> list[float]:
    """The most likely distribution with (μ − ½)/σ = t given the observed one.

    Starts from the uniform distribution, as fishtest and fastchess do. For a large |t| (hundreds of
    nElo) a step from there can have no solution; then t is approached in steps from 0 (where
    every start works), each step starting from the previous answer, which is then close enough.
    """
    uniform = [1.0 / len(scores)] * len(scores)
    direct = _iterate_normalized(scores, observed, t, uniform)
    if direct is not None:
        return direct
    steps = 4
    while steps <= 1 << 16:
        current: list[float] | None = uniform
        for step in range(1, steps + 1):
            assert current is not None
            current = _iterate_normalized(scores, observed, t * step / steps, current)
            if current is None:
                break
        if current is not None:
            return current
        steps *= 4
    raise ValueError(f"no distribution found with normalized t={t}")  # not seen in practice


@dataclass(frozen=True, slots=True)
class Sprt:
    """A generalised sequential probability ratio test of H0: Elo = elo0 against H1: Elo = elo1.

    `model` says what elo0/elo1 mean: "normalized" (nElo, fastchess's default) or "logistic"
    (plain Elo). alpha is the false-H1 rate, beta the false-H0 rate.
    """

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    model: SprtModel = "normalized"

    def __post_init__(self) -> None:
        for name in ("elo0", "elo1", "alpha", "beta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"SPRT {name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"SPRT {name} must be finite, got {value!r}")
        if not self.elo0 < self.elo1:
            raise ValueError(f"SPRT elo0 ({self.elo0}) must be less than elo1 ({self.elo1})")
        for name in ("alpha", "beta"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"SPRT {name} must be between 0 and 1, got {getattr(self, name)}")
        if self.alpha + self.beta >= 1.0:
            raise ValueError(
                f"SPRT alpha + beta must be less than 1, got {self.alpha} + {self.beta}"
            )
        if self.model not in _MODELS:
            raise ValueError(f"SPRT model must be one of {', '.join(_MODELS)}, got {self.model!r}")

    @classmethod
    def parse(cls, text: str) -> Sprt:
        """Parse `elo0=0,elo1=10[,alpha=0.05][,beta=0.05][,model=normalized|logistic]`.

        alpha and beta default to 0.05 and model to normalized. A ValueError names the bad key.
        """
        values: dict[str, str] = {}
        for item in text.split(","):
            item = item.strip()
            if not item:
                continue
            key, sep, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key:
                raise ValueError(f"SPRT setting {item!r} is not key=value")
            if key not in ("elo0", "elo1", "alpha", "beta", "model"):
                raise ValueError(
                    f"unknown SPRT key {key!r} (known: elo0, elo1, alpha, beta, model)"
                )
            if key in values:
                raise ValueError(f"SPRT key {key!r} given twice")
            values[key] = value
        for required in ("elo0", "elo1"):
            if required not in values:
                raise ValueError(f"SPRT key {required!r} is missing")
        numbers: dict[str, float] = {}
        for key in ("elo0", "elo1", "alpha", "beta"):
            if key in values:
                try:
                    numbers[key] = float(values[key])
                except ValueError:
                    raise ValueError(f"SPRT {key} must be a number, got {values[key]!r}") from None
        model = values.get("model", "normalized")
        if model not in _MODELS:
            raise ValueError(f"SPRT model must be one of {', '.join(_MODELS)}, got {model!r}")
        return cls(
            elo0=numbers["elo0"],
            elo1=numbers["elo1"],
            alpha=numbers.get("alpha", 0.05),
            beta=numbers.get("beta", 0.05),
            model="logistic" if model == "logistic" else "normalized",
        )

    def __str__(self) -> str:
        return (
            f"elo0={self.elo0:g},elo1={self.elo1:g},alpha={self.alpha:g},beta={self.beta:g},"
            f"model={self.model}"
        )

    @property
    def bounds(self) -> tuple[float, float]:
        """(lower, upper) = (ln(β/(1−α)), ln((1−β)/α)): LLR ≤ lower accepts H0, ≥ upper H1."""
        return (
            math.log(self.beta / (1.0 - self.alpha)),
            math.log((1.0 - self.beta) / self.alpha),
        )

    def llr(self, counts: Counts) -> float:
        """The generalised log-likelihood ratio of H1 over H0 for `counts`; 0.0 without games."""
        if counts.games == 0:
            return 0.0
        scores = counts.OUTCOME_SCORES
        regularized = [float(c) if c else _REGULARIZE for c in counts.frequencies]
        total = math.fsum(regularized)
        observed = [c / total for c in regularized]
        if self.model == "logistic":
            p0 = _mle_logistic(scores, observed, score_from_elo(self.elo0))
            p1 = _mle_logistic(scores, observed, score_from_elo(self.elo1))
        else:
            # t is per game; a pair's σ is 1/√2 of a game's, so its t is √2 times larger.
            factor = math.sqrt(2.0) if isinstance(counts, Pentanomial) else 1.0
            p0 = _mle_normalized(scores, observed, factor * self.elo0 / NELO_SCALE)
            p1 = _mle_normalized(scores, observed, factor * self.elo1 / NELO_SCALE)
        return total * math.fsum(
            p * (math.log(b) - math.log(a)) for p, a, b in zip(observed, p0, p1, strict=True)
        )

    def status_of(self, llr: float) -> SprtStatus:
        """H1, H0 or CONTINUE for an LLR already computed."""
        lower, upper = self.bounds
        if llr >= upper:
            return SprtStatus.H1
        if llr <= lower:
            return SprtStatus.H0
        return SprtStatus.CONTINUE

    def status(self, counts: Counts) -> SprtStatus:
        """H1, H0 or CONTINUE for `counts`."""
        return self.status_of(self.llr(counts))

    def fraction(self, llr: float) -> float:
        """How far the LLR has gone towards the bound on its side: llr/upper or llr/lower (≥ 0)."""
        lower, upper = self.bounds
        return llr / upper if llr >= 0.0 else llr / lower
