"""``openenv.core.harness.capture`` (0.10's import path) answers as the published 0.10 does: the
same cases through tests/capture/compat_probe.py in 0.10's venv and in ours, compared whole —
dialect detection, token estimates, training-turn validation, reply normalisation, request
preparation, session ids, the graph's sequences, the trace contract, retokenization skew and the
InferenceClient against the loopback engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.peer010 import _clean_env, peer010_python

from .conftest import ENGINE_KEY

PROBE = Path(__file__).with_name("compat_probe.py")
SYS = {"role": "system", "content": "You are terse."}
USER = {"role": "user", "content": "add 2 and 3"}
CALL = {"role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]}


def _node(node_id: str, prompt: list[int], sampled: list[int], messages: list[dict], index: int, **kw: Any) -> dict:
    return {"node_id": node_id, "prompt_ids": prompt, "sampled_ids": sampled,
            "sampled_logprobs": [-0.1 * (i + 1) for i in range(len(sampled))], "index": index,
            "request_messages": messages, "model": "m", "finish_reason": "stop", **kw}


def _cases(engine_url: str) -> dict[str, Any]:
    tool_turn = _node("a", [1, 2, 3], [4, 5], [SYS, USER], 0, finish_reason="tool_calls",
                      response_message=CALL, request_tools=[{"type": "function", "function": {"name": "add"}}])
    follow = _node("b", [1, 2, 3, 4, 5, 6, 7], [8, 9, 10], [SYS, USER, CALL, {"role": "tool", "content": "5"}], 1)
    fork = _node("c", [1, 2, 3, 4, 5, 6, 11], [12], [SYS, USER, CALL, {"role": "tool", "content": "6"}], 2)
    other_root = _node("d", [40, 41], [42, 43], [{"role": "user", "content": "title?"}], 3)
    return {
        "detect": [
            {"path": "/v1/messages", "headers": {}, "body": {}},
            {"path": "/v1/chat/completions", "headers": {"anthropic-version": "x"}, "body": {}},
            {"path": "/v1/responses", "headers": {}, "body": {}},
            {"path": "/v1beta/models/g:streamGenerateContent", "headers": {}, "body": {}},
            {"path": "/other", "headers": {"Anthropic-Version": "2023"}, "body": {}},
            {"path": "/other", "headers": {}, "body": {"contents": []}},
            {"path": "/other", "headers": {}, "body": {"input": "x", "instructions": "y"}},
            {"path": "/other", "headers": {}, "body": {"input": "x"}},
        ],
        "count": [
            {},
            {"messages": [{"role": "user", "content": "x" * 400}]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "abcd" * 30}, {"content": "zz" * 8}]}],
             "system": "s" * 41, "tools": [{"name": "add"}]},
            {"system": [{"text": "t" * 80}, {"type": "x"}], "messages": []},
            {"contents": [{"parts": [{"text": "g" * 120}, "raw text"]}], "systemInstruction": {"parts": [{"text": "i" * 9}]}},
            {"contents": [], "system_instruction": "inst" * 10},
        ],
        "validate": [
            [[1, 2], [3], [-0.5], [0, 0, 1]],
            [[1, 2], [3, 4], [-0.5, -0.2], [0, 0, 1, 0]],
            [[1, 2], [3], [-0.5], [0, 1]],
            [[1, 2], [3], [-0.5], [0, 0, 2]],
            [[1, 2], [3], [-0.5], [1, 0, 1]],
            [[1, -2], [3], [0.5], [0, 0, 1]],
            [[], [3], [-0.5], [1]],
            [[1], [3], None, [0, 1]],
        ],
        "normalize": [
            {"choices": [{"prompt_token_ids": [1, 2], "token_ids": [7, 8],
                          "message": {"role": "assistant", "content": "hi", "reasoning": "think"},
                          "logprobs": {"content": [{"token": "token_id:7", "logprob": -0.1},
                                                   {"token": "token_id:8", "logprob": -0.2}]}}]},
            {"prompt_token_ids": [5], "choices": [{"prompt_token_ids": [1], "token_ids": [7, 8],
                                                    "logprobs": {"content": [{"token": "token_id:7", "logprob": -0.1},
                                                                             {"token": "token_id:9", "logprob": -0.2}]}}]},
            {"choices": "not a list"},
        ],
        "prepare": [
            [{"messages": [SYS, {"role": "assistant", "content": "a", "reasoning_content": "r"}], "top_p": 0.9,
              "top_k": 20, "temperature": 0.7, "top_logprobs": None, "_served_model": "x"}, "tokens"],
            [{"messages": [{"role": "assistant", "content": "a", "reasoning_content": "r"}], "top_p": 0.9}, "logprobs"],
            [{"messages": [{"role": "assistant", "content": "a", "reasoning_content": "r"}], "top_p": 0.9}, "text"],
        ],
        "session_ids": ["good-id_1.x", " padded ", "", "bad id!", "-leading", "x" * 129, 7],
        "key_headers": [{"Authorization": "Bearer sk-1"}, {"x-api-key": "k2"}, {"X-Goog-Api-Key": "g3"}, {}],
        "harness_sessions": [[{"X-Session-Id": "h1"}, {}], [{}, {"user": "u-2"}], [{}, {"_session_id": "bad id"}]],
        "graphs": [[tool_turn, follow, fork], [tool_turn, follow, other_root]],
        "engine": engine_url, "engine_key": ENGINE_KEY,
        "completion": {"model": "vllm", "messages": [SYS, USER], "top_p": 0.5, "temperature": 0.0},
    }


def _run(python: str, cases: dict[str, Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run([python, "-P", str(PROBE)], input=json.dumps(cases), capture_output=True, text=True,
                          timeout=120, cwd="/", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def answers(engine_url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    cases = _cases(engine_url)
    published = _run(peer010_python(), cases, _clean_env())
    ours = _run(sys.executable, cases)
    assert "peer-openenv-0.10" in published["package"] and "peer-openenv" not in ours["package"]
    return published, ours


@pytest.mark.parametrize("part", ["detect", "count", "validate", "normalize", "prepare", "sessions", "prefix",
                                  "eval_refused", "completion"])
def test_same_answers_as_published(answers: tuple[dict, dict], part: str) -> None:
    published, ours = answers
    assert ours[part] == published[part]


def test_same_graph_sequences_and_trace_contract(answers: tuple[dict, dict]) -> None:
    published, ours = answers
    assert len(ours["graphs"]) == 2
    for got, want in zip(ours["graphs"], published["graphs"], strict=True):
        for key in ("sequences", "roots", "parents", "entries", "trace", "records", "skew", "skew_error"):
            assert got[key] == want[key], key


def test_the_cases_exercise_what_they_claim(answers: tuple[dict, dict]) -> None:
    _, ours = answers
    forked, two_roots = ours["graphs"]
    assert len(forked["sequences"]) == 2 and forked["parents"]["c"] == "a"  # c forks off a after the tool call
    assert len(two_roots["roots"]) == 2
    assert [v for v in ours["validate"] if "error" in v] and [v for v in ours["validate"] if "ok" in v]
    assert ours["completion"]["reply"]["prompt_token_ids"] and ours["completion"]["models"] == ["vllm"]
    assert forked["skew"]["n_turns"] == 3 and forked["skew_error"]["n_errors"] == 3
