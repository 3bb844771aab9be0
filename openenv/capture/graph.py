"""The rollout graph: every model call of one rollout, linked by exact token prefix.

    node    one model call: the prompt ids the engine tokenized, the ids it sampled, their logprobs
    parent  the call whose prompt + completion is the longest exact token prefix of this prompt
    root    a call that continues nothing (a new conversation: the agent, a subagent, a title
            generator, or the history after a context compaction)
    path    root -> leaf: one training sequence

Nothing is tokenized here: turn k+1's prompt ids are the engine's own tokenization of everything
before it, so ``concat(context + sampled for each node of a path)`` is exactly what the model saw
and produced. Without ids (an eval endpoint) calls are linked by message prefix instead. Arrival
order does not matter: a call that arrives before its ancestor is re-parented when it comes.
The shapes (``TurnNode``, ``RolloutGraph``, ``TrainingSequence``) match the published OpenEnv 0.10's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RolloutGraph", "TrainingSequence", "TurnNode", "common_prefix_len"]


def common_prefix_len(a: list[int], b: list[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _arguments_key(arguments: Any) -> str:
    """Tool-call arguments compared as parsed JSON (harnesses re-serialise them differently)."""
    if arguments is None:
        return ""
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return str(arguments).strip()


def _message_key(message: Any) -> tuple:
    """What makes two messages the same turn: role, text (text parts only), tool calls by name and
    parsed arguments — not provider extras such as ``refusal`` or a call's generated id."""
    if not isinstance(message, dict):
        return ("", str(message), ())
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content
                          if isinstance(p, dict) and p.get("type") in ("text", "input_text"))
    calls = tuple((str((c.get("function") or {}).get("name", "")), _arguments_key((c.get("function") or {}).get("arguments")))
                  for c in message.get("tool_calls") or [] if isinstance(c, dict))
    return (str(message.get("role") or ""), "" if content is None else str(content).strip(), calls)


def _drop_leading_system(messages: Any) -> list:
    """Messages without their leading system messages (harnesses re-render those every turn)."""
    if not isinstance(messages, list):
        return []
    start = 0
    while start < len(messages) and isinstance(messages[start], dict) and messages[start].get("role") == "system":
        start += 1
    return list(messages[start:])


@dataclass
class TurnNode:
    """One model call and where it sits: ids and logprobs from the engine, plus provenance."""

    node_id: str
    prompt_ids: list[int]
    sampled_ids: list[int]
    sampled_logprobs: list[float] | None = None
    parent_id: str | None = None
    index: int = 0
    model: str | None = None
    finish_reason: str | None = None
    harness_session_id: str | None = None
    system_digest: str | None = None
    n_tools: int = 0
    request_messages: list[dict[str, Any]] = field(default_factory=list)
    request_tools: list[dict[str, Any]] | None = None
    sampling_params: dict[str, Any] = field(default_factory=dict)
    requested_sampling_params: dict[str, Any] = field(default_factory=dict)
    response_message: dict[str, Any] = field(default_factory=dict)
    #: the trainer's own loss mask over ``sampled_ids`` (an on-policy trainer such as TRL's GRPO, which
    #: recomputes logprobs: its tool-result tokens are 0); it decides what is trainable instead of the logprobs
    trainer_mask: list[int] | None = None

    @property
    def end_ids(self) -> list[int]:
        """The token sequence after this call: its prompt and what it sampled."""
        return self.prompt_ids + self.sampled_ids

    def context_ids(self, parent: TurnNode | None) -> list[int]:
        """Tokens this call adds before sampling: the whole prompt for a root, else what the harness
        inserted since the parent stopped (tool results, user turns, template scaffolding)."""
        return list(self.prompt_ids) if parent is None else self.prompt_ids[len(parent.end_ids):]


@dataclass
class TrainingSequence:
    """One root-to-leaf path, flattened into ``input_ids`` / ``loss_mask`` / ``logprobs``."""

    input_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    node_ids: list[str]
    prompt_len: int
    root_id: str
    n_turns: int

    @property
    def n_trainable(self) -> int:
        return sum(self.loss_mask)

    def turn_lengths(self) -> list[int]:
        """Sampled (mask 1) tokens per turn, in order: the join key against a harness's own trace."""
        lengths, run = [], 0
        for m in self.loss_mask:
            if m:
                run += 1
            elif run:
                lengths.append(run)
                run = 0
        if run:
            lengths.append(run)
        return lengths


class RolloutGraph:
    """All model calls of one rollout; ``add_turn`` is the whole ingestion path."""

    def __init__(self) -> None:
        self._nodes: dict[str, TurnNode] = {}
        self._order: list[str] = []
        self._children: dict[str, list[str]] = {}

    def add_turn(self, node: TurnNode) -> TurnNode:
        """Link ``node`` under its parent (and adopt earlier arrivals it is the parent of)."""
        node.index = len(self._order)
        node.parent_id = self._parent_of(node)
        self._nodes[node.node_id] = node
        self._order.append(node.node_id)
        self._children.setdefault(node.node_id, [])
        if node.parent_id is not None:
            self._children[node.parent_id].append(node.node_id)
        self._adopt(node)
        return node

    def _adopt(self, node: TurnNode) -> None:
        """Re-parent calls that arrived before ``node`` when ``node`` is a closer exact prefix of them."""
        end = node.end_ids
        if not end:
            return
        for other_id in self._order:
            other = self._nodes[other_id]
            if other_id == node.node_id or len(node.prompt_ids) >= len(other.prompt_ids) or len(end) > len(other.prompt_ids):
                continue
            if other.parent_id is not None and len(self._nodes[other.parent_id].end_ids) >= len(end):
                continue
            if other.prompt_ids[:len(end)] == end:
                if other.parent_id is not None:
                    self._children[other.parent_id].remove(other_id)
                other.parent_id = node.node_id
                self._children[node.node_id].append(other_id)

    def _parent_of(self, node: TurnNode) -> str | None:
        """The call whose end ids are the longest exact prefix of this prompt (earliest on ties)."""
        if not node.prompt_ids:
            return self._parent_by_messages(node)
        prompt = node.prompt_ids
        best: TurnNode | None = None
        for other_id in self._order:
            other = self._nodes[other_id]
            n_end = len(other.prompt_ids) + len(other.sampled_ids)
            if not (0 < n_end <= len(prompt) and len(other.prompt_ids) < len(prompt)):
                continue
            if best is not None and n_end <= len(best.end_ids):
                continue
            if prompt[:n_end] == other.end_ids:
                best = other
        return best.node_id if best is not None else None

    def _parent_by_messages(self, node: TurnNode) -> str | None:
        """The same rule on message lists, for calls without token ids (system messages aside)."""
        best_id, best_len = None, 0
        mine = _drop_leading_system(node.request_messages)
        for other_id in self._order:
            other = self._nodes[other_id]
            reply = other.response_message
            end = [*other.request_messages, *([{"role": "assistant", **reply}] if reply else [])]
            if not end or len(end) > len(node.request_messages) or len(end) <= best_len:
                continue
            theirs = _drop_leading_system(end)
            if theirs and len(theirs) <= len(mine) and all(_message_key(a) == _message_key(b) for a, b in zip(theirs, mine, strict=False)):
                best_id, best_len = other_id, len(end)
        return best_id

    def nodes(self) -> list[TurnNode]:
        return [self._nodes[i] for i in self._order]

    def get(self, node_id: str) -> TurnNode:
        return self._nodes[node_id]

    def children(self, node_id: str) -> list[TurnNode]:
        return [self._nodes[i] for i in self._children.get(node_id, [])]

    def roots(self) -> list[TurnNode]:
        return [n for n in self.nodes() if n.parent_id is None]

    def leaves(self) -> list[TurnNode]:
        return [n for n in self.nodes() if not self._children.get(n.node_id)]

    def root_of(self, node_id: str) -> str:
        node = self._nodes[node_id]
        while node.parent_id is not None:
            node = self._nodes[node.parent_id]
        return node.node_id

    def path_to(self, leaf_id: str) -> list[TurnNode]:
        path = [self._nodes[leaf_id]]
        while path[-1].parent_id is not None:
            path.append(self._nodes[path[-1].parent_id])
        return path[::-1]

    def paths(self) -> Iterator[list[TurnNode]]:
        for leaf in self.leaves():
            yield self.path_to(leaf.node_id)

    def forks(self) -> list[tuple[str, list[str]]]:
        """Calls with more than one child: retries, resamples, parallel branches."""
        return [(pid, kids) for pid, kids in self._children.items() if len(kids) > 1]

    def discarded_nodes(self) -> list[TurnNode]:
        """Childless siblings of a sibling that continued: sampled, then thrown away (a retry).
        Siblings are the children of one fork, or roots with the very same prompt ids."""
        groups = [kids for _, kids in self.forks()]
        by_prompt: dict[tuple[int, ...], list[str]] = {}
        for root in self.roots():
            if root.prompt_ids:
                by_prompt.setdefault(tuple(root.prompt_ids), []).append(root.node_id)
        groups += [ids for ids in by_prompt.values() if len(ids) > 1]
        found: list[TurnNode] = []
        for kids in groups:
            if any(self._children.get(k) for k in kids):
                found += [self._nodes[k] for k in kids if not self._children.get(k)]
        return found

    def sequence_for(self, leaf_id: str) -> TrainingSequence:
        """One path flattened. A call whose logprobs are missing or misaligned is context (mask 0),
        never a target: a trainable token needs the behaviour policy's real logprob; unless the trainer
        recorded its own mask for the call (``trainer_mask``), which then decides."""
        path = self.path_to(leaf_id)
        ids: list[int] = []
        mask: list[int] = []
        lps: list[float] = []
        prompt_len = 0
        parent: TurnNode | None = None
        for position, node in enumerate(path):
            context = node.context_ids(parent)
            ids += context
            mask += [0] * len(context)
            lps += [0.0] * len(context)
            if position == 0:
                prompt_len = len(context)
            usable = node.sampled_logprobs is not None and len(node.sampled_logprobs) == len(node.sampled_ids)
            logprobs = list(node.sampled_logprobs) if usable else [0.0] * len(node.sampled_ids)  # type: ignore[arg-type]
            ids += node.sampled_ids
            if node.trainer_mask is not None and len(node.trainer_mask) == len(node.sampled_ids):
                mask += [1 if m else 0 for m in node.trainer_mask]
                lps += [lp if m else 0.0 for lp, m in zip(logprobs, node.trainer_mask, strict=True)]
            else:
                mask += [1 if usable else 0] * len(node.sampled_ids)
                lps += logprobs
            parent = node
        return TrainingSequence(ids, mask, lps, [n.node_id for n in path], prompt_len, path[0].node_id, len(path))

    def sequences(self) -> list[TrainingSequence]:
        return [self.sequence_for(leaf.node_id) for leaf in self.leaves()]

    def stats(self) -> dict[str, Any]:
        return {"n_turns": len(self._order), "n_roots": len(self.roots()), "n_leaves": len(self.leaves()),
                "n_forks": len(self.forks()), "n_discarded": len(self.discarded_nodes())}
