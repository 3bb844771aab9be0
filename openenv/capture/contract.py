"""Per-call training records from a rollout's graph and document (0.10's trace contract).

``to_trace_entries``: one entry per agent call, in arrival order, with the engine's own prompt ids,
the sampled ids, their logprobs and a loss mask over prompt + completion (0 on the prompt; the
document's mask on the completion) — a loop-owning trainer never re-tokenizes. ``to_turn_records``:
the older ``(prompt_ids, output_ids, output_logprobs)`` tuples, for fully supervised calls only.
Both refuse an eval rollout: an empty contract would read as "nothing to learn" instead of "never
captured". Auxiliary calls and discarded retries are left out; calls whose logprobs were rejected
on ingest are skipped (they cannot be targets).
"""

from __future__ import annotations

from typing import Any

from .checks import check_turn, validate_training_turn
from .graph import RolloutGraph, TurnNode

__all__ = ["to_trace_entries", "to_training_trace", "to_turn_records"]


def _require_trainable(document: dict[str, Any]) -> None:
    if document.get("rollout_type", "train") == "eval":
        raise ValueError(f"an eval rollout (capture_level={document.get('capture_level')!r}) carries no token ids or "
                         "logprobs: there is no training contract to build; capture from vLLM or SGLang at level tokens")


def _usable(node: TurnNode) -> bool:
    lps = node.sampled_logprobs
    return bool(node.sampled_ids) and bool(lps) and len(lps) == len(node.sampled_ids) and \
        check_turn(node.prompt_ids, node.sampled_ids, lps).ok  # type: ignore[arg-type]


def _agent_nodes(graph: RolloutGraph, document: dict[str, Any]) -> list[TurnNode]:
    keep = {nid for row in document["sequences"] if row["role"] == "agent" for nid in row["node_ids"]}
    return [n for n in graph.nodes() if n.node_id in keep]


def _completion_masks(graph: RolloutGraph, document: dict[str, Any]) -> dict[str, list[int]]:
    """Each agent call's completion mask, read from the document's sequences (shared calls once)."""
    masks: dict[str, list[int]] = {}
    for row in document["sequences"]:
        if row["role"] != "agent":
            continue
        offset, parent = 0, None
        for nid in row["node_ids"]:
            node = graph.get(nid)
            offset += len(node.context_ids(parent))
            span = list(row["loss_mask"][offset:offset + len(node.sampled_ids)])
            if len(span) != len(node.sampled_ids):
                raise ValueError(f"incomplete completion mask for call {nid}")
            if nid in masks and masks[nid] != span:
                raise ValueError(f"inconsistent completion masks for shared call {nid}")
            masks[nid] = span
            offset += len(node.sampled_ids)
            parent = node
    return masks


def to_trace_entries(graph: RolloutGraph, document: dict[str, Any]) -> list[dict[str, Any]]:
    """One ``TraceEntry``-shaped dict per usable agent call (``request``, ``response``,
    ``prompt_token_ids``, ``completion_token_ids``, ``per_token_logps``, ``loss_mask``, ``metadata``)."""
    _require_trainable(document)
    masks = _completion_masks(graph, document)
    entries = []
    for node in _agent_nodes(graph, document):
        if not _usable(node):
            continue
        mask = [0] * len(node.prompt_ids) + masks[node.node_id]
        validate_training_turn(node.prompt_ids, node.sampled_ids, node.sampled_logprobs, mask)
        entries.append({
            "request": {"messages": node.request_messages, "tools": node.request_tools},
            "response": {"choices": [{"message": node.response_message, "finish_reason": node.finish_reason}]},
            "prompt_token_ids": node.prompt_ids, "completion_token_ids": node.sampled_ids,
            "per_token_logps": node.sampled_logprobs or [], "loss_mask": mask,
            "metadata": {"node_id": node.node_id, "index": node.index, "model": node.model, "n_tools": node.n_tools,
                         "harness_session_id": node.harness_session_id, "sampling_params": dict(node.sampling_params),
                         "requested_sampling_params": dict(node.requested_sampling_params)},
        })
    return entries


def to_turn_records(graph: RolloutGraph, document: dict[str, Any]) -> list[tuple[list[int], list[int], list[float]]]:
    """``(prompt_ids, output_ids, output_logprobs)`` per fully supervised agent call; a partially
    masked call raises (a tuple cannot say which tokens are targets: use ``to_trace_entries``)."""
    _require_trainable(document)
    masks = _completion_masks(graph, document)
    if any(any(m) and not all(m) for m in masks.values()):
        raise ValueError("to_turn_records cannot represent partial masks; use to_trace_entries")
    return [(n.prompt_ids, n.sampled_ids, list(n.sampled_logprobs or [])) for n in _agent_nodes(graph, document)
            if _usable(n) and any(masks[n.node_id])]


def to_training_trace(graph: RolloutGraph, document: dict[str, Any]) -> Any:
    """The rollout's agent calls as one ``openenv.core.harness.TrainingTrace`` (shared prefixes
    once); refuses a document with fatal findings or an agent call without usable ids/logprobs."""
    from openenv.core.harness.training import TrainingTrace

    if any("[FATAL" in finding for finding in document.get("validation", [])):
        raise ValueError("cannot train on a capture with fatal validation findings")
    _require_trainable(document)
    if any(not _usable(node) for node in _agent_nodes(graph, document)):
        raise ValueError("an agent call of this capture lacks usable engine token ids or logprobs")
    return TrainingTrace.from_entries(to_trace_entries(graph, document))
