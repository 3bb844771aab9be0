"""Two runs compared: per seed (the episodes each run played from the same seed: how many, mean
reward, pass@k) and their reward distributions over shared bins. Read queries, one scan of each
run; call them off the event loop. Runs are ``run_queries.RunScope``s (a training run or a label).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, case, cast, func, select
from sqlalchemy.engine import Connection

from .models import Episode
from .run_queries import RunScope

__all__ = ["BINS", "Histogram", "SeedRow", "compare_seeds", "reward_histograms"]

_EP = Episode.__table__
BINS = 20
MAX_SEEDS = 2000


@dataclass
class SeedSide:
    n: int
    mean: float | None
    successes: int

    @property
    def pass_at_n(self) -> float:
        """Whether any of the seed's episodes succeeded (pass@k with k = its episodes)."""
        return 1.0 if self.successes else 0.0


@dataclass
class SeedRow:
    seed: int
    a: SeedSide | None
    b: SeedSide | None

    @property
    def delta(self) -> float | None:
        if self.a is None or self.b is None or self.a.mean is None or self.b.mean is None:
            return None
        return self.b.mean - self.a.mean


@dataclass
class Histogram:
    lo: float
    hi: float
    a: list[int]
    b: list[int]

    @property
    def edges(self) -> list[float]:
        width = (self.hi - self.lo) / len(self.a)
        return [self.lo + i * width for i in range(len(self.a) + 1)]


def _reward() -> Any:
    return func.coalesce(_EP.c.trainer_reward, _EP.c.total_reward)


def _per_seed(conn: Connection, scope: RunScope) -> dict[int, SeedSide]:
    r = _reward()
    stmt = (select(_EP.c.seed, func.count(), func.avg(r), func.sum(case((r > 0, 1), else_=0)))
            .where(scope.where(), _EP.c.seed.is_not(None)).group_by(_EP.c.seed).limit(MAX_SEEDS))  # fmt: skip
    return {int(seed): SeedSide(int(n), mean, int(wins or 0)) for seed, n, mean, wins in conn.execute(stmt)}


def compare_seeds(conn: Connection, a: RunScope, b: RunScope) -> list[SeedRow]:
    """One row per seed either run played, seeds both played first, then by seed."""
    sa, sb = _per_seed(conn, a), _per_seed(conn, b)
    seeds = sorted(set(sa) | set(sb), key=lambda s: (not (s in sa and s in sb), s))
    return [SeedRow(s, sa.get(s), sb.get(s)) for s in seeds]


def reward_histograms(conn: Connection, a: RunScope, b: RunScope, *, bins: int = BINS) -> Histogram | None:
    """Both runs' rewards counted in the same ``bins`` equal bins (``None``: no rewards)."""
    r = _reward()
    lo = hi = None
    for scope in (a, b):
        mn, mx = conn.execute(select(func.min(r), func.max(r)).where(scope.where())).one()
        if mn is not None:
            lo = mn if lo is None else min(lo, mn)
            hi = mx if hi is None else max(hi, mx)
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    if hi == lo:
        hi = lo + 1.0
    width = (hi - lo) / bins
    out = []
    for scope in (a, b):
        counts = [0] * bins
        index = cast((r - lo) / width, Integer)
        for k, n in conn.execute(select(index, func.count()).where(scope.where(), r.is_not(None)).group_by(index)):
            counts[max(0, min(bins - 1, int(k)))] += int(n)
        out.append(counts)
    return Histogram(lo, hi, out[0], out[1])
