"""How far a trainer's own re-tokenization of each captured prompt drifts from the engine's.

``measure_retokenization_skew(graph, document, tokenizer)`` renders every agent call's request
messages (tool-call arguments decoded from JSON first, as TRL does) with the tokenizer's chat
template and compares the ids with the engine's ``prompt_ids``: ``exact_match_frac`` 1.0 means
re-tokenizing is safe for that model and harness; anything less means a trainer that re-renders
trains on prompts the model never saw. Needs a Hugging Face-style tokenizer (``apply_chat_template``).
"""

from __future__ import annotations

import json
from typing import Any

from .contract import _agent_nodes
from .graph import RolloutGraph, common_prefix_len

__all__ = ["measure_retokenization_skew"]


def _decoded_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    arguments = (function or call).get("arguments")
    if not isinstance(arguments, str):
        return call
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        parsed = {}
    return {**call, "function": {**function, "arguments": parsed}} if function else {**call, "arguments": parsed}


def _decode_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**m, "tool_calls": [_decoded_call(c) for c in m["tool_calls"]]} if m.get("tool_calls") else m
            for m in messages]


def measure_retokenization_skew(graph: RolloutGraph, document: dict[str, Any], tokenizer: Any, *,
                                chat_template: str | None = None,
                                chat_template_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per agent call: engine length, rebuilt length, their delta, common prefix and exact match
    (or the template's error); plus ``n_turns``, ``n_errors``, ``exact_match_frac``,
    ``max_abs_delta`` and ``min_prefix_match_frac`` over the calls that rendered."""
    turns: list[dict[str, Any]] = []
    for i, node in enumerate(_agent_nodes(graph, document)):
        try:
            rebuilt = list(tokenizer.apply_chat_template(
                _decode_arguments(node.request_messages), tools=node.request_tools, add_generation_prompt=True,
                tokenize=True, return_dict=False, chat_template=chat_template, **(chat_template_kwargs or {})))
        except Exception as exc:  # noqa: BLE001 - a template that raises is itself the finding
            turns.append({"turn": i, "error": f"{type(exc).__name__}: {str(exc)[:160]}", "engine_len": len(node.prompt_ids)})
            continue
        engine = list(node.prompt_ids)
        turns.append({"turn": i, "engine_len": len(engine), "rebuilt_len": len(rebuilt),
                      "delta": len(rebuilt) - len(engine), "prefix_match": common_prefix_len(engine, rebuilt),
                      "exact": rebuilt == engine})
    scored = [t for t in turns if "exact" in t]
    return {
        "n_turns": len(turns),
        "n_errors": len(turns) - len(scored),
        "exact_match_frac": sum(t["exact"] for t in scored) / len(scored) if scored else 0.0,
        "max_abs_delta": max((abs(t["delta"]) for t in scored), default=0),
        "min_prefix_match_frac": min((t["prefix_match"] / max(t["engine_len"], 1) for t in scored), default=0.0),
        "turns": turns,
    }
