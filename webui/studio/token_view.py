"""The token view of a captured episode: each training sequence as token cells (context grey,
sampled tokens shaded by their probability, untrainable ones hatched, turn boundaries marked),
the rollout's findings in words, and every model call as a transcript.

Reads the model turns the episode store holds for an episode (``openenv capture`` sessions and
``openenv rollout --capture`` episodes alike) through ``openenv.capture``: no tokenizer, so tokens
are shown as the engine's ids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from openenv.capture.document import rollout_document
from openenv.capture.export import captured_calls
from openenv.capture.recording import findings_of, graph_from_turns

__all__ = ["TokenView", "token_view"]

MAX_CELLS = 20_000  # per sequence; the rest is counted, not drawn
_LEVELS = {"FATAL": "fatal", "WARN": "warn", "INFO": "info"}


@dataclass
class TokenView:
    calls: list[dict[str, Any]] = field(default_factory=list)
    document: dict[str, Any] | None = None
    sequences: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, str]] = field(default_factory=list)
    level: str = "tokens"


def _finding(text: str) -> dict[str, str]:
    """``[WARN] code: detail`` (or 0.10's ``WARN code: detail``) as level, code and words."""
    head, _, detail = text.partition(": ")
    level, _, code = head.replace("[", "").replace("]", " ").strip().partition(" ")
    return {"level": _LEVELS.get(level, "info"), "label": level or "INFO", "code": code.strip(), "detail": detail or text}


def _segments(seq: dict[str, Any], sampled: set[int]) -> tuple[list[dict[str, Any]], int]:
    """Runs of context and of sampled cells (id, logprob, p, trainable); the count not drawn."""
    segments: list[dict[str, Any]] = []
    hidden = 0
    for pos, (tid, mask, lp) in enumerate(zip(seq["input_ids"], seq["loss_mask"], seq["logprobs"], strict=True)):
        if pos >= MAX_CELLS:
            hidden += 1
            continue
        kind = "sampled" if pos in sampled else "context"
        if not segments or segments[-1]["kind"] != kind:
            segments.append({"kind": kind, "cells": []})
        segments[-1]["cells"].append({"id": tid, "lp": lp, "p": math.exp(lp) if kind == "sampled" else None,
                                      "trainable": bool(mask)})
    return segments, hidden


def _sampled_positions(graph: Any, node_ids: list[str]) -> set[int]:
    """Positions of sampled ids along a path (so untrainable sampled tokens still show as sampled)."""
    positions: set[int] = set()
    parent = None
    offset = 0
    for nid in node_ids:
        node = graph.get(nid)
        offset += len(node.context_ids(parent))
        positions.update(range(offset, offset + len(node.sampled_ids)))
        offset += len(node.sampled_ids)
        parent = node
    return positions


def token_view(store: Any, episode_id: str) -> TokenView:
    """The view of one episode (empty ``calls`` when it has no captured model calls)."""
    calls = captured_calls(store, episode_id)
    if not calls:
        return TokenView()
    levels = {(c.get("capture") or {}).get("level", "tokens") for c in calls}
    level = "tokens" if levels == {"tokens"} else sorted(levels - {"tokens"})[0]
    graph = graph_from_turns(calls)
    session = (calls[0].get("capture") or {}).get("session_id") or episode_id
    doc = rollout_document(graph, session_id=session, capture_level=level, include_discarded=True,
                           findings=findings_of(calls))
    roles = {}
    for seq in doc["sequences"]:
        for nid in seq["node_ids"]:
            roles.setdefault(nid, seq["role"])
    discarded = {t["node_id"] for t in doc["turns"] if t["discarded"]}
    view = TokenView(document=doc, level=level, findings=[_finding(f) for f in doc["validation"]])
    for seq in doc["sequences"]:
        segments, hidden = _segments(seq, _sampled_positions(graph, seq["node_ids"]))
        view.sequences.append({**seq, "segments": segments, "hidden": hidden,
                               "findings": [_finding(f) for f in seq["validation"]]})
    for i, (node, data) in enumerate(zip(graph.nodes(), calls, strict=True)):
        view.calls.append({"index": i, "node": node, "data": data,
                           "role": "discarded" if node.node_id in discarded else roles.get(node.node_id, "agent"),
                           "parent": graph.get(node.parent_id).index if node.parent_id else None})
    return view
