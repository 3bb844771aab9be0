"""Two captures token by token: each episode's model calls paired in arrival order, with where
their prompts stop agreeing, where their samples first differ, and how likely each sample was.

    cmp = compare_tokens(store, a, b)
    cmp.pairs[0].prompt_prefix      # leading prompt ids the two calls share
    cmp.pairs[0].first_sampled_diff # index of the first differing sampled id (None: identical)

Reads the model turns the store holds (``openenv capture`` sessions, ``openenv rollout
--capture``, ``openenv collect --capture`` alike) through ``openenv.capture.export.captured_calls``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from openenv.capture.export import captured_calls
from openenv.capture.graph import common_prefix_len

__all__ = ["MAX_CALLS", "MAX_CELLS", "CallSide", "CallPair", "TokenComparison", "compare_tokens"]

MAX_CALLS = 200  # model calls paired per episode
MAX_CELLS = 4000  # sampled tokens drawn per side of a pair


@dataclass
class CallSide:
    """One episode's call: its ids and logprobs, and summary figures."""

    data: dict[str, Any]
    prompt_ids: list[int]
    sampled_ids: list[int]
    logprobs: list[float] | None
    level: str

    @property
    def total_logprob(self) -> float | None:
        return sum(self.logprobs) if self.logprobs else None

    @property
    def mean_p(self) -> float | None:
        return sum(math.exp(x) for x in self.logprobs) / len(self.logprobs) if self.logprobs else None

    def cells(self, first_diff: int | None) -> list[dict[str, Any]]:
        lps = self.logprobs or []
        return [{"id": tid, "lp": lps[i] if i < len(lps) else None,
                 "p": math.exp(lps[i]) if i < len(lps) else None,
                 "state": "same" if first_diff is None or i < first_diff else ("diff" if i == first_diff else "after")}
                for i, tid in enumerate(self.sampled_ids[:MAX_CELLS])]


@dataclass
class CallPair:
    """Call ``index`` of both episodes (``None`` where one made fewer calls)."""

    index: int
    a: CallSide | None
    b: CallSide | None
    prompt_prefix: int = 0
    first_sampled_diff: int | None = None

    @property
    def same(self) -> bool:
        return (self.a is not None and self.b is not None and self.a.prompt_ids == self.b.prompt_ids
                and self.first_sampled_diff is None)


@dataclass
class TokenComparison:
    pairs: list[CallPair] = field(default_factory=list)
    first_divergence: int | None = None  # the first pair that differs
    truncated: bool = False

    @property
    def empty(self) -> bool:
        return not self.pairs


def _side(data: dict[str, Any]) -> CallSide:
    cap = data.get("capture") or {}
    lps = cap.get("logprobs")
    return CallSide(data=data, prompt_ids=list(cap.get("prompt_ids") or []), sampled_ids=list(cap.get("sampled_ids") or []),
                    logprobs=[float(x) for x in lps] if isinstance(lps, list) and lps else None,
                    level=str(cap.get("level", "tokens")))


def _first_diff(a: list[int], b: list[int]) -> int | None:
    n = common_prefix_len(a, b)
    return None if n == len(a) == len(b) else n


def compare_tokens(store: Any, a_id: str, b_id: str) -> TokenComparison:
    """Pair the captured calls of episodes ``a_id`` and ``b_id`` (empty when neither has any)."""
    calls_a, calls_b = captured_calls(store, a_id), captured_calls(store, b_id)
    truncated = max(len(calls_a), len(calls_b)) > MAX_CALLS
    out = TokenComparison(truncated=truncated)
    for i in range(min(max(len(calls_a), len(calls_b)), MAX_CALLS)):
        a = _side(calls_a[i]) if i < len(calls_a) else None
        b = _side(calls_b[i]) if i < len(calls_b) else None
        pair = CallPair(index=i, a=a, b=b)
        if a is not None and b is not None:
            pair.prompt_prefix = common_prefix_len(a.prompt_ids, b.prompt_ids)
            pair.first_sampled_diff = _first_diff(a.sampled_ids, b.sampled_ids)
        if not pair.same and out.first_divergence is None:
            out.first_divergence = i
        out.pairs.append(pair)
    return out
