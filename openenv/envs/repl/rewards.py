"""Rewards of the REPL environment: outcome score, per-error penalty, exhaustion penalty."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

Metric = Callable[[str, str], float]


def exact_match(answer: str, expected: str) -> float:
    """1.0 when the answers are equal after trimming surrounding whitespace, else 0.0."""
    return 1.0 if answer.strip() == expected.strip() else 0.0


def normalized_match(answer: str, expected: str) -> float:
    """1.0 when equal ignoring case, punctuation at the ends and runs of whitespace."""

    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", text.strip().strip(".\"'`").lower())

    return 1.0 if norm(answer) == norm(expected) else 0.0


def contains_match(answer: str, expected: str) -> float:
    """1.0 when the expected answer appears in the given one (case-insensitive)."""
    return 1.0 if expected.strip().lower() in answer.lower() else 0.0


def numeric_match(answer: str, expected: str, *, rel_tol: float = 1e-6) -> float:
    """1.0 when both parse as numbers that agree within ``rel_tol``; else exact match."""
    try:
        a, b = float(answer.strip().replace(",", "")), float(expected.strip().replace(",", ""))
    except ValueError:
        return exact_match(answer, expected)
    return 1.0 if abs(a - b) <= rel_tol * max(1.0, abs(b)) else 0.0


METRICS: dict[str, Metric] = {
    "exact": exact_match,
    "normalized": normalized_match,
    "contains": contains_match,
    "numeric": numeric_match,
}


@dataclass(frozen=True)
class RewardConfig:
    """How steps are rewarded.

    A final answer earns ``success * metric(answer, expected)`` (just ``success`` when
    the episode has no expected answer); a failing cell adds ``error_penalty``; running
    out of iterations adds ``exhausted_penalty``; other steps earn ``per_step``.
    """

    success: float = 1.0
    per_step: float = 0.0
    error_penalty: float = -0.05
    exhausted_penalty: float = -0.1
    metric: Metric | str = field(default="exact")

    def __post_init__(self) -> None:
        if isinstance(self.metric, str) and self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; choose one of {sorted(METRICS)} or pass a callable")

    def score(self, answer: str, expected: str | None) -> float:
        """The outcome part of the reward for ``answer``."""
        if expected is None:
            return self.success
        metric = METRICS[self.metric] if isinstance(self.metric, str) else self.metric
        return self.success * float(metric(answer, expected))

    def step(self, *, failed: bool, answer: str | None, expected: str | None, exhausted: bool) -> float:
        """Reward of one step."""
        reward = self.per_step
        if failed:
            reward += self.error_penalty
        if answer is not None:
            reward += self.score(answer, expected)
        elif exhausted:
            reward += self.exhausted_penalty
        return round(reward, 10)
