"""A rollout's graph -> the one document a trainer reads (OpenEnv 0.10's rollout document).

    {"session_id", "metadata", "budget_stop_count", "turns": [...every call, in arrival order],
     "stats": {graph shape + n_sequences, n_trainable_sequences, n_trainable_tokens},
     "sequences": [{"role": agent|auxiliary|discarded, "root_id", "node_ids", "n_turns", "prompt_len",
                    "n_trainable", "turn_lengths", "input_ids", "loss_mask", "logprobs", "trainable",
                    "validation"}],
     "validation": [...], "trainable": bool, "capture_level", "rollout_type": train|eval}

Sequences are labelled, never silently dropped: a path ending in a retried call is ``discarded``;
when any path offers tools, the toolless ones (title generators, summarisers) are ``auxiliary``.
Below level ``tokens`` (or for an eval session) it is an eval rollout: the structure is complete,
the token arrays are what came back, and no row is trainable.
"""

from __future__ import annotations

from typing import Any

from .checks import check_rollout, check_sequence
from .graph import RolloutGraph, TrainingSequence

__all__ = ["AGENT", "AUXILIARY", "DISCARDED", "rollout_document", "summarise"]

AGENT, AUXILIARY, DISCARDED = "agent", "auxiliary", "discarded"


def _roles(graph: RolloutGraph, sequences: list[TrainingSequence], trainable: bool) -> list[str]:
    discarded = {n.node_id for n in graph.discarded_nodes()}
    live = [s for s in sequences if s.node_ids[-1] not in discarded]
    any_tools = any(graph.get(i).n_tools > 0 for s in live for i in s.node_ids)
    roles = []
    for seq in sequences:
        if seq.node_ids[-1] in discarded:
            roles.append(DISCARDED)
        elif not any_tools:  # tools tell nothing apart: every live path is the agent's
            usable = seq.n_trainable if trainable else bool(seq.node_ids)
            roles.append(AGENT if usable else AUXILIARY)
        else:
            roles.append(AGENT if any(graph.get(i).n_tools > 0 for i in seq.node_ids) else AUXILIARY)
    return roles


def _turn(graph: RolloutGraph, node: Any, discarded: set[str], with_messages: bool) -> dict[str, Any]:
    row = {"node_id": node.node_id, "index": node.index, "root_id": graph.root_of(node.node_id),
           "n_sampled": len(node.sampled_ids), "n_prompt": len(node.prompt_ids), "n_tools": node.n_tools,
           "finish_reason": node.finish_reason, "harness_session_id": node.harness_session_id,
           "sampling_params": node.sampling_params, "requested_sampling_params": node.requested_sampling_params,
           "sampled_logprobs": node.sampled_logprobs, "discarded": node.node_id in discarded}
    if with_messages:
        row.update(request_messages=node.request_messages, request_tools=node.request_tools,
                   response_message=node.response_message)
    return row


def rollout_document(graph: RolloutGraph, *, session_id: str, metadata: dict[str, Any] | None = None,
                     findings: list[str] | None = None, capture_level: str = "tokens", purpose: str = "auto",
                     budget_stop_count: int = 0, include_discarded: bool = False,
                     include_messages: bool = False) -> dict[str, Any]:
    """The document for one rollout (see the module docstring)."""
    report = check_rollout(graph, capture_level=capture_level, budget_stop_count=budget_stop_count)
    trainable_capture = capture_level == "tokens" and purpose != "eval"
    sequences = graph.sequences()
    rows = []
    for seq, role in zip(sequences, _roles(graph, sequences, trainable_capture), strict=True):
        if role == DISCARDED and not include_discarded:
            continue
        checked = check_sequence(seq) if trainable_capture else None
        rows.append({"role": role, "root_id": seq.root_id, "node_ids": seq.node_ids, "n_turns": seq.n_turns,
                     "prompt_len": seq.prompt_len, "n_trainable": seq.n_trainable if trainable_capture else 0,
                     "turn_lengths": seq.turn_lengths(), "input_ids": seq.input_ids,
                     "loss_mask": seq.loss_mask if trainable_capture else [0] * len(seq.input_ids),
                     "logprobs": seq.logprobs, "trainable": bool(checked and checked.ok and role == AGENT),
                     "validation": [str(f) for f in checked.findings] if checked else []})
    discarded = {n.node_id for n in graph.discarded_nodes()}
    trainable_rows = [r for r in rows if r["trainable"]]
    return {
        "session_id": session_id,
        "metadata": dict(metadata or {}),
        "budget_stop_count": budget_stop_count,
        "turns": [_turn(graph, n, discarded, include_messages) for n in graph.nodes()],
        "stats": {**graph.stats(), "n_sequences": len(rows), "n_trainable_sequences": len(trainable_rows),
                  "n_trainable_tokens": sum(r["n_trainable"] for r in trainable_rows)},
        "sequences": rows,
        "validation": [str(f) for f in report.findings] + list(findings or []),
        "trainable": bool(trainable_rows) and report.ok,
        "capture_level": capture_level,
        "rollout_type": "train" if trainable_capture else "eval",
    }


def summarise(document: dict[str, Any]) -> str:
    """A screen of text about one document: shape, training rows, findings that matter."""
    s = document["stats"]
    lines = [f"session {document['session_id']}  {document.get('rollout_type', 'train')}  trainable={document['trainable']}",
             f"  graph: {s['n_turns']} turns, {s['n_roots']} roots, {s['n_forks']} forks, {s['n_discarded']} discarded",
             f"  training: {s['n_trainable_sequences']} sequence(s), {s['n_trainable_tokens']} trainable tokens"]
    for row in document["sequences"]:
        lines.append(f"  [{row['role']:<10}] turns={row['n_turns']:<3} prompt={row['prompt_len']:<6} "
                     f"len={len(row['input_ids']):<6} trainable={row['n_trainable']:<5} turn_lengths={row['turn_lengths']}")
        lines += [f"      {f}" for f in row["validation"] if not f.startswith("[INFO]")]
    lines += [f"  {f}" for f in document["validation"]]
    return "\n".join(lines)
