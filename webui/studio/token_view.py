"""The token view of a captured episode: each training sequence as token cells (context grey,
sampled tokens shaded by their probability, untrainable ones hatched, turn boundaries marked),
the rollout's findings in words, and every model call as a transcript.

Reads the model turns the episode store holds for an episode (``openenv capture`` sessions and
``openenv rollout --capture`` episodes alike) through ``openenv.capture``. A sampled token shows
the engine's own text of it when the call kept it (``capture.sampled_tokens``), else its text in
the tokenizer the user named (``tokenizer_text``), else its id; a context token its tokenizer text,
else its id; ids and logprobs are on hover. A sequence is drawn ``PAGE_TOKENS`` at a time (``offsets``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from openenv.capture.document import rollout_document
from openenv.capture.export import captured_calls
from openenv.capture.recording import findings_of, graph_from_turns
from webui.studio.tokenizer_text import TokenizerError, decode_ids, load_tokenizer

__all__ = ["TokenView", "token_view"]

PAGE_TOKENS = 1024  # cells of a sequence drawn per page
_LEVELS = {"FATAL": "fatal", "WARN": "warn", "INFO": "info"}


@dataclass
class TokenView:
    calls: list[dict[str, Any]] = field(default_factory=list)
    document: dict[str, Any] | None = None
    sequences: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, str]] = field(default_factory=list)
    level: str = "tokens"
    tokenizer: str | None = None  # the tokenizer named, and why it could not be used
    tokenizer_error: str | None = None


def _finding(text: str) -> dict[str, str]:
    """``[WARN] code: detail`` (or 0.10's ``WARN code: detail``) as level, code and words."""
    head, _, detail = text.partition(": ")
    level, _, code = head.replace("[", "").replace("]", " ").strip().partition(" ")
    return {"level": _LEVELS.get(level, "info"), "label": level or "INFO", "code": code.strip(), "detail": detail or text}


def _segments(seq: dict[str, Any], sampled: dict[int, str | None], lo: int, hi: int) -> list[dict[str, Any]]:
    """Runs of context and of sampled cells (id, text, logprob, p, trainable) for positions ``lo..hi``."""
    segments: list[dict[str, Any]] = []
    ids, mask, lps = seq["input_ids"], seq["loss_mask"], seq["logprobs"]
    for pos in range(lo, min(hi, len(ids))):
        kind = "sampled" if pos in sampled else "context"
        if not segments or segments[-1]["kind"] != kind:
            segments.append({"kind": kind, "cells": [], "start": pos})
        lp = lps[pos]
        segments[-1]["cells"].append({"id": ids[pos], "text": sampled.get(pos), "lp": lp, "trainable": bool(mask[pos]),
                                      "p": math.exp(lp) if kind == "sampled" and lp is not None else None})
    return segments


def _sampled_positions(graph: Any, node_ids: list[str], texts: dict[str, list[str] | None]) -> dict[int, str | None]:
    """Position -> the engine's text (or ``None``) of every sampled id along a path (so untrainable
    sampled tokens still show as sampled)."""
    positions: dict[int, str | None] = {}
    parent = None
    offset = 0
    for nid in node_ids:
        node = graph.get(nid)
        offset += len(node.context_ids(parent))
        words = texts.get(nid)
        for k in range(len(node.sampled_ids)):
            positions[offset + k] = words[k] if words is not None and k < len(words) else None
        offset += len(node.sampled_ids)
        parent = node
    return positions


def token_view(store: Any, episode_id: str, offsets: dict[int, int] | None = None,
               tokenizer: str | None = None) -> TokenView:  # fmt: skip
    """The view of one episode (empty ``calls`` when it has no captured model calls); sequence
    ``i`` is drawn from token ``offsets[i]`` (0 by default), ``PAGE_TOKENS`` tokens; ``tokenizer``
    (a path) gives the drawn ids their text."""
    calls = captured_calls(store, episode_id)
    if not calls:
        return TokenView(tokenizer=tokenizer)
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
    view = TokenView(document=doc, level=level, findings=[_finding(f) for f in doc["validation"]], tokenizer=tokenizer)
    texts = {node.node_id: _texts(data) for node, data in zip(graph.nodes(), calls, strict=True)}
    for i, seq in enumerate(doc["sequences"]):
        n = len(seq["input_ids"])
        lo = max(0, min((offsets or {}).get(i, 0), max(0, n - 1)))
        lo -= lo % PAGE_TOKENS
        sampled = _sampled_positions(graph, seq["node_ids"], texts)
        view.sequences.append({**seq, "segments": _segments(seq, sampled, lo, lo + PAGE_TOKENS), "offset": lo,
                               "page_end": min(n, lo + PAGE_TOKENS), "n_tokens": n,
                               "prev_offset": lo - PAGE_TOKENS if lo > 0 else None,
                               "next_offset": lo + PAGE_TOKENS if lo + PAGE_TOKENS < n else None,
                               "findings": [_finding(f) for f in seq["validation"]]})
    if tokenizer:
        _decode(view, tokenizer)
    for i, (node, data) in enumerate(zip(graph.nodes(), calls, strict=True)):
        view.calls.append({"index": i, "node": node, "data": data,
                           "role": "discarded" if node.node_id in discarded else roles.get(node.node_id, "agent"),
                           "parent": graph.get(node.parent_id).index if node.parent_id else None})
    return view


def _decode(view: TokenView, spec: str) -> None:
    """Give the drawn cells their text in tokenizer ``spec`` (``decoded``), or say why it cannot."""
    cells = [c for seq in view.sequences for segment in seq["segments"] for c in segment["cells"]]
    try:
        texts = decode_ids(load_tokenizer(spec), (c["id"] for c in cells))
    except TokenizerError as exc:
        view.tokenizer_error = str(exc)
        return
    for c in cells:
        c["decoded"] = texts.get(c["id"])


def _texts(data: dict[str, Any]) -> list[str] | None:
    words = (data.get("capture") or {}).get("sampled_tokens")
    return list(words) if isinstance(words, list) else None
