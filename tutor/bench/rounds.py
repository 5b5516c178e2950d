"""Latency as a ratio to a trivial endpoint (SPEC §10): interleaved requests
in rounds, each figure the median over the rounds.

Interleaving (the two requests of a pair alternate which goes first) makes
both see the same machine: a busy neighbour slows both, not one. A round's
ratio divides its two medians (or p99s); the reported figure is the median
of the rounds' ratios, so one disturbed round does not decide it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from tutor.bench.drivers import Failed

ROUNDS = 3

# One timed call: () -> (seconds, HTTP status, body).
Call = Callable[[], tuple[float, int, bytes]]


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(math.ceil(pct / 100 * len(ordered)) - 1, 0)]


@dataclass(frozen=True)
class Pair:
    """Two calls timed against each other; ``expect`` their OK statuses."""

    name: str
    call: Call
    trivial: Call
    expect: tuple[int, int] = (200, 200)


@dataclass(frozen=True)
class RoundFigures:
    median: float
    trivial_median: float
    p99: float
    trivial_p99: float

    @property
    def median_ratio(self) -> float:
        return self.median / self.trivial_median

    @property
    def p99_ratio(self) -> float:
        return self.p99 / self.trivial_p99


def _timed(call: Call, expected: int, label: str) -> float:
    elapsed, status, body = call()
    if status != expected:
        raise Failed(f"{label} answered {status} (expected {expected}): {body[:300]!r}")
    return elapsed


def one_round(pair: Pair, *, requests: int, warmup: int) -> RoundFigures:
    for _ in range(warmup):
        _timed(pair.call, pair.expect[0], pair.name)
        _timed(pair.trivial, pair.expect[1], "trivial")
    measured, trivial = [], []
    for i in range(requests):
        if i % 2 == 0:
            measured.append(_timed(pair.call, pair.expect[0], pair.name))
            trivial.append(_timed(pair.trivial, pair.expect[1], "trivial"))
        else:
            trivial.append(_timed(pair.trivial, pair.expect[1], "trivial"))
            measured.append(_timed(pair.call, pair.expect[0], pair.name))
    return RoundFigures(
        median=statistics.median(measured),
        trivial_median=statistics.median(trivial),
        p99=percentile(measured, 99),
        trivial_p99=percentile(trivial, 99),
    )


def median_round(rounds: list[RoundFigures], key: Callable[[RoundFigures], float]) -> RoundFigures:
    """The round whose ``key`` ratio is the median one (an odd count of rounds)."""
    return sorted(rounds, key=key)[len(rounds) // 2]


def run_rounds(
    pairs: list[Pair], *, requests: int, warmup: int, write: Callable[[str], None], rounds: int = ROUNDS
) -> dict[str, list[RoundFigures]]:
    """Every pair in every round; the pairs take turns within a round."""
    figures: dict[str, list[RoundFigures]] = {pair.name: [] for pair in pairs}
    for number in range(1, rounds + 1):
        parts = []
        for pair in pairs:
            result = one_round(pair, requests=requests, warmup=warmup if number == 1 else 0)
            figures[pair.name].append(result)
            parts.append(
                f"{pair.name} {result.median * 1000:.2f} ms / trivial {result.trivial_median * 1000:.2f} ms"
            )
        write(f"  round {number}/{rounds}: " + "; ".join(parts))
    return figures
