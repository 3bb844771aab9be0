"""Run by either interpreter (ours or the published 0.10's) with ``-P``: reads cases as JSON on
stdin, answers them with the names of ``openenv.core.harness.capture`` and prints JSON."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import sys
from typing import Any

from openenv.core.harness.capture import (
    InferenceClient,
    RolloutGraph,
    TurnNode,
    detect,
    measure_retokenization_skew,
    to_trace_entries,
    to_training_trace,
    to_turn_records,
)
from openenv.core.harness.capture.graph import common_prefix_len
from openenv.core.harness.capture.server import approximate_token_count
from openenv.core.harness.capture.sessions import (
    Upstream,
    clean_session_id,
    extract_api_key,
    extract_harness_session,
)
from openenv.core.harness.capture.upstream import normalize_response, prepare_request
from openenv.core.harness.capture.validate import validate_training_turn


class CharTokenizer:
    """A deterministic stand-in for a Hugging Face tokenizer: one id per character of a rendering."""

    def apply_chat_template(self, messages: list[dict[str, Any]], tools: Any = None, add_generation_prompt: bool = False,
                            tokenize: bool = True, return_dict: bool = False, chat_template: Any = None,
                            **kw: Any) -> list[int]:
        if kw.get("explode"):
            raise RuntimeError("template failed")
        text = "".join(f"<{m['role']}>{m.get('content') or ''}{json.dumps(m.get('tool_calls'), sort_keys=True)}"
                       for m in messages)
        return [ord(c) for c in text + ("<assistant>" if add_generation_prompt else "")]


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return {"ok": fn(*args)}
    except ValueError as exc:
        return {"error": sorted(set(re.findall(r"\[FATAL\] (\w+)", str(exc)))) or type(exc).__name__}


def _graph(nodes: list[dict[str, Any]]) -> RolloutGraph:
    graph = RolloutGraph()
    for n in nodes:
        graph.add_turn(TurnNode(**n))
    return graph


def _document(graph: RolloutGraph) -> dict[str, Any]:
    return {"rollout_type": "train", "validation": [],
            "sequences": [{"role": "agent", "node_ids": s.node_ids, "loss_mask": s.loss_mask} for s in graph.sequences()]}


def main() -> None:
    cases = json.load(sys.stdin)
    out: dict[str, Any] = {}
    out["detect"] = [detect(c["path"], c["headers"], c["body"]).value for c in cases["detect"]]
    out["count"] = [approximate_token_count(b) for b in cases["count"]]
    out["validate"] = [_outcome(validate_training_turn, *c) for c in cases["validate"]]
    out["normalize"] = [normalize_response(copy.deepcopy(p)) for p in cases["normalize"]]
    out["prepare"] = [prepare_request(copy.deepcopy(r), capture_level=lvl) for r, lvl in cases["prepare"]]
    out["sessions"] = [[clean_session_id(v) for v in cases["session_ids"]],
                       [extract_api_key(h) for h in cases["key_headers"]],
                       [extract_harness_session(h, b) for h, b in cases["harness_sessions"]],
                       list(Upstream(llm_url="http://e/v1/", model="m", api_key="k").cache_key)]
    graphs = []
    for nodes in cases["graphs"]:
        g = _graph(nodes)
        doc = _document(g)
        seqs = [{"input_ids": s.input_ids, "loss_mask": s.loss_mask, "logprobs": s.logprobs, "node_ids": s.node_ids,
                 "prompt_len": s.prompt_len, "turn_lengths": s.turn_lengths()} for s in g.sequences()]
        graphs.append({"sequences": seqs, "roots": [n.node_id for n in g.roots()],
                       "parents": {n.node_id: n.parent_id for n in g.nodes()},
                       "entries": to_trace_entries(g, doc),
                       "trace": to_training_trace(g, doc).model_dump(mode="json"), "records": [list(r) for r in to_turn_records(g, doc)],
                       "skew": measure_retokenization_skew(g, doc, CharTokenizer()),
                       "skew_error": measure_retokenization_skew(g, doc, CharTokenizer(),
                                                                 chat_template_kwargs={"explode": True})})
    out["graphs"] = graphs
    out["prefix"] = common_prefix_len([1, 2, 3, 4], [1, 2, 5])
    eval_doc = {"rollout_type": "eval", "capture_level": "text", "sequences": []}
    out["eval_refused"] = _outcome(to_trace_entries, RolloutGraph(), eval_doc)

    async def call() -> dict[str, Any]:
        client = InferenceClient(cases["engine"], api_key=cases["engine_key"], served_model="vllm")
        try:
            reply = await client.completion(cases["completion"])
            models = await client.list_models()
        finally:
            await client.aclose()
        for key in ("id", "created"):
            reply.pop(key, None)
        return {"reply": reply, "models": [m["id"] for m in models["data"]]}

    out["completion"] = asyncio.run(call())
    import openenv

    out["package"] = openenv.__file__
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
