"""Two captures token by token: each episode's model calls paired by their place in the rollout
graph (``openenv.capture.graph``: which conversation, how many turns into it, the continuing call
before a retry), not by arrival order, so an extra title call or a retry in one episode leaves
the other pairs aligned; with where their prompts stop agreeing, where their samples first
differ, and how likely each sample was.

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
from openenv.capture.graph import RolloutGraph, TurnNode, common_prefix_len
from openenv.capture.recording import graph_from_turns

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
    """The calls at one place of both rollouts (``None`` where one has no call there);
    ``index`` is the pair's position, ``a_call``/``b_call`` each call's arrival number."""

    index: int
    a: CallSide | None
    b: CallSide | None
    prompt_prefix: int = 0
    first_sampled_diff: int | None = None
    a_call: int | None = None
    b_call: int | None = None
    where: str = ""

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


def _places(graph: RolloutGraph) -> dict[str, tuple[int, tuple[int, ...]]]:
    """Each call's place: its conversation (root, by arrival) and the ranks of the calls down to
    it, a call that continued ranked before its siblings (so a retry's discarded attempt is the
    odd one out)."""
    size: dict[str, int] = {}

    def rank(siblings: list[TurnNode]) -> list[TurnNode]:
        return sorted(siblings, key=lambda n: (-_subtree(graph, n, size), n.index))

    out: dict[str, tuple[int, tuple[int, ...]]] = {}
    for r, root in enumerate(graph.roots()):
        stack = [(root, ())]
        while stack and len(out) <= MAX_CALLS * 4:
            node, path = stack.pop()
            out[node.node_id] = (r, path)
            kids = rank(graph.children(node.node_id))
            stack.extend((kid, (*path, k)) for k, kid in enumerate(kids))
    return out


def _subtree(graph: RolloutGraph, node: TurnNode, memo: dict[str, int]) -> int:
    """How many calls continue from ``node`` (itself included)."""
    if node.node_id not in memo:
        memo[node.node_id] = 1 + sum(_subtree(graph, c, memo) for c in graph.children(node.node_id))
    return memo[node.node_id]


def _match_roots(ga: RolloutGraph, gb: RolloutGraph) -> dict[int, int]:
    """A's conversation -> B's: the unmatched B root whose prompt shares the most leading ids
    (at least half of the shorter prompt), else the same first messages; conversations left
    over on both sides then pair in arrival order."""
    out: dict[int, int] = {}
    roots_b = gb.roots()
    for ra, a in enumerate(ga.roots()):
        best, best_score = None, 0.0
        for rb, b in enumerate(roots_b):
            if rb in out.values():
                continue
            if a.prompt_ids and b.prompt_ids:
                score = common_prefix_len(a.prompt_ids, b.prompt_ids) / min(len(a.prompt_ids), len(b.prompt_ids))
            else:
                score = 1.0 if a.request_messages[:2] == b.request_messages[:2] else 0.0
            if score >= 0.5 and score > best_score:
                best, best_score = rb, score
        if best is not None:
            out[ra] = best
    left_b = [rb for rb in range(len(roots_b)) if rb not in out.values()]  # the rest pair in arrival order
    for ra in (ra for ra in range(len(ga.roots())) if ra not in out):
        if left_b:
            out[ra] = left_b.pop(0)
    return out


def compare_tokens(store: Any, a_id: str, b_id: str) -> TokenComparison:
    """Pair the captured calls of episodes ``a_id`` and ``b_id`` by place (empty when neither has any)."""
    calls_a, calls_b = captured_calls(store, a_id)[: MAX_CALLS * 2], captured_calls(store, b_id)[: MAX_CALLS * 2]
    ga, gb = graph_from_turns(calls_a), graph_from_turns(calls_b)
    pa, pb = _places(ga), _places(gb)
    roots = _match_roots(ga, gb)
    by_place_b = {(r, path): node for node in gb.nodes() for r, path in [pb.get(node.node_id, (-1, ()))]}
    used_b: set[str] = set()
    rows: list[tuple[TurnNode | None, TurnNode | None, str]] = []
    for node in ga.nodes():
        r, path = pa.get(node.node_id, (-1, ()))
        other = by_place_b.get((roots[r], path)) if r in roots else None
        if other is not None:
            used_b.add(other.node_id)
        rows.append((node, other, _where(r, path)))
    rows += [(None, node, _where(*pb.get(node.node_id, (-1, ())))) for node in gb.nodes() if node.node_id not in used_b]
    out = TokenComparison(truncated=len(rows) > MAX_CALLS)
    for i, (na, nb) in enumerate((a, b) for a, b, _ in rows[:MAX_CALLS]):
        a = _side(calls_a[na.index]) if na is not None else None
        b = _side(calls_b[nb.index]) if nb is not None else None
        pair = CallPair(index=i, a=a, b=b, a_call=na.index if na else None, b_call=nb.index if nb else None,
                        where=rows[i][2])
        if a is not None and b is not None:
            pair.prompt_prefix = common_prefix_len(a.prompt_ids, b.prompt_ids)
            pair.first_sampled_diff = _first_diff(a.sampled_ids, b.sampled_ids)
        if not pair.same and out.first_divergence is None:
            out.first_divergence = i
        out.pairs.append(pair)
    return out


def _where(root: int, path: tuple[int, ...]) -> str:
    if root < 0:
        return ""
    alt = "" if all(k == 0 for k in path) else " (a retry or branch)"
    return f"conversation {root + 1}, turn {len(path) + 1}{alt}"
