"""Checks on captured calls, flattened sequences and whole rollouts, graded as in OpenEnv 0.10.

    FATAL  the row is not trainable       WARN  trainable, but look at it       INFO  for the notes

A finding prints as ``[LEVEL] code: detail``; the levels and codes are 0.10's, so a trainer that
filters on them reads ours the same way (the detail sentences are our own words).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FATAL", "INFO", "WARN", "Finding", "Report", "check_rollout", "check_sequence", "check_turn",
           "check_turn_eval", "check_upstream_response", "validate_training_turn"]

FATAL, WARN, INFO = "FATAL", "WARN", "INFO"


@dataclass
class Finding:
    level: str
    code: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.level}] {self.code}: {self.detail}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)

    def add(self, level: str, code: str, detail: str) -> None:
        self.findings.append(Finding(level, code, detail))

    @property
    def fatal(self) -> list[Finding]:
        return [f for f in self.findings if f.level == FATAL]

    @property
    def ok(self) -> bool:
        return not self.fatal


def _bad_ids(ids: list[Any]) -> bool:
    return any(type(t) is not int or t < 0 for t in ids)


def check_turn(prompt_ids: list[Any], sampled_ids: list[Any], logprobs: list[Any] | None, *,
               finish_reason: str | None = None, index: int = 0) -> Report:
    """One call at ingest: ids are token ids, logprobs finite, non-positive and one per sampled id."""
    r, tag = Report(), f"turn {index}"
    for name, ids in (("prompt", prompt_ids), ("sampled", sampled_ids)):
        if _bad_ids(ids):
            r.add(FATAL, "invalid_token_id", f"{tag}: {name} ids are not all non-negative integers")
    if logprobs is not None:
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in logprobs):
            r.add(FATAL, "invalid_logprob", f"{tag}: a logprob is not a finite number")
        elif any(v > 0 for v in logprobs):
            r.add(FATAL, "positive_logprob", f"{tag}: a logprob is above 0")
    if not prompt_ids:
        r.add(FATAL, "no_prompt_ids", f"{tag}: the engine sent no prompt_token_ids (serve vLLM with "
              "--return-tokens-as-token-ids, or use an engine that returns them)")
    if not sampled_ids:
        r.add(WARN, "no_sampled_ids", f"{tag}: no completion token ids (finish={finish_reason})")
    if logprobs is None and sampled_ids:
        r.add(FATAL, "no_logprobs", f"{tag}: {len(sampled_ids)} sampled tokens without logprobs: context only")
    if finish_reason == "length":
        r.add(WARN, "truncated_turn", f"{tag}: cut off by the output-token cap after {len(sampled_ids)} tokens")
    if logprobs is not None and len(logprobs) != len(sampled_ids):
        r.add(FATAL, "logprob_misalign", f"{tag}: {len(logprobs)} logprobs for {len(sampled_ids)} sampled ids")
    return r


def check_turn_eval(message: Any, *, finish_reason: str | None = None, index: int = 0) -> Report:
    """One call on an endpoint without ids: only that the model said or called something."""
    r, tag = Report(), f"turn {index}"
    message = message if isinstance(message, dict) else {}
    if not str(message.get("content") or "").strip() and not message.get("tool_calls"):
        r.add(WARN, "empty_completion", f"{tag}: no text and no tool call (finish={finish_reason})")
    if finish_reason == "length":
        r.add(INFO, "truncated_turn", f"{tag}: cut off by the output-token cap")
    return r


def _training_turn_problems(seq: Any) -> list[str]:
    prompt, sampled = seq.input_ids[:seq.prompt_len], seq.input_ids[seq.prompt_len:]
    turn = check_turn(prompt, sampled, seq.logprobs[seq.prompt_len:])
    problems = [str(f) for f in turn.fatal]
    if any(type(m) is not int or m not in (0, 1) for m in seq.loss_mask):
        problems.append(f"[{FATAL}] invalid_loss_mask: loss_mask holds something other than 0 and 1")
    elif any(seq.loss_mask[:seq.prompt_len]):
        problems.append(f"[{FATAL}] trainable_prompt: a prompt token is marked trainable")
    return problems


def check_sequence(seq: Any, *, min_trainable: int = 1) -> Report:
    """A flattened path: the invariants a trainer assumes and never re-checks."""
    r, n = Report(), len(seq.input_ids)
    if len(seq.loss_mask) != n or len(seq.logprobs) != n:
        r.add(FATAL, "length_mismatch", f"input_ids={n} loss_mask={len(seq.loss_mask)} logprobs={len(seq.logprobs)}")
        return r
    problems = _training_turn_problems(seq)
    if problems:
        r.add(FATAL, "invalid_training_sequence", "invalid training turn: " + "; ".join(problems))
        return r
    trainable = sum(seq.loss_mask)
    if trainable < min_trainable:
        r.add(FATAL, "nothing_trainable", f"{trainable} trainable tokens of {n}: no gradient from this row")
    masked = sum(1 for m, lp in zip(seq.loss_mask, seq.logprobs, strict=True) if m == 0 and lp != 0.0)
    if masked:
        r.add(FATAL, "masked_has_logprob", f"{masked} context positions carry a non-zero logprob")
    if seq.prompt_len >= n:
        r.add(FATAL, "empty_response", f"prompt_len={seq.prompt_len} is the whole sequence")
    certain = sum(1 for m, lp in zip(seq.loss_mask, seq.logprobs, strict=True) if m == 1 and lp == 0.0)
    if certain:
        r.add(INFO, "certain_tokens", f"{certain}/{trainable} trainable tokens have logprob 0.0")
    positive = [lp for lp in seq.logprobs if lp > 0.0]
    if positive:
        r.add(FATAL, "positive_logprob", f"{len(positive)} logprobs above 0 (max {max(positive):.4f})")
    return r


def check_rollout(graph: Any, *, expect_single_root: bool = False, capture_level: str = "tokens",
                  budget_stop_count: int = 0) -> Report:
    """The whole graph: no calls, one root per call, several roots, one call, retries, forks."""
    r, s = Report(), graph.stats()
    if s["n_turns"] == 0:
        r.add(FATAL, "no_turns", "no model call reached the proxy (base URL, model name or key?)")
        return r
    if s["n_roots"] == s["n_turns"] > 1:
        if capture_level == "tokens":
            r.add(WARN, "per_turn_capture_only", f"every call is its own root ({s['n_turns']}): the harness "
                  "re-renders its prompt instead of appending, so each row is one turn")
        else:
            r.add(INFO, "per_turn_trace_only", f"every call is its own root ({s['n_turns']}): without ids "
                  "the calls are linked by messages, and these do not extend each other")
    elif s["n_roots"] > 1:
        r.add(WARN, "multiple_roots", f"{s['n_roots']} roots across {s['n_turns']} calls (subagents, "
              "auxiliary calls or a rewritten history)")
    elif expect_single_root and s["n_roots"] != 1:
        r.add(FATAL, "root_count", f"expected 1 root, got {s['n_roots']}")
    if s["n_turns"] == 1 and budget_stop_count <= 0:
        r.add(WARN, "degenerate_rollout", "one model call for the whole task")
    if s["n_discarded"]:
        r.add(WARN, "discarded_turns", f"{s['n_discarded']} sampled call(s) led nowhere (retries); kept out "
              "of training paths")
    if s["n_forks"]:
        r.add(INFO, "forks", f"{s['n_forks']} fork point(s) in the graph")
    return r


def check_upstream_response(payload: dict[str, Any]) -> Report:
    """Whether one raw chat-completions reply carries what token capture needs."""
    r = Report()
    choices = payload.get("choices") or []
    if not choices:
        r.add(FATAL, "no_choices", "the reply has no choices")
        return r
    choice = choices[0]
    if not payload.get("prompt_token_ids") and not choice.get("prompt_token_ids"):
        r.add(FATAL, "no_prompt_token_ids", "no prompt_token_ids: multi-turn stitching is impossible")
    if not choice.get("token_ids"):
        r.add(FATAL, "no_completion_token_ids", "choices[0].token_ids missing (send return_token_ids)")
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        r.add(FATAL, "no_logprobs", "choices[0].logprobs.content missing (send logprobs)")
    elif choice.get("token_ids") and len(content) != len(choice["token_ids"]):
        r.add(FATAL, "logprob_misalign", f"{len(content)} logprobs vs {len(choice['token_ids'])} token ids")
    return r


def validate_training_turn(prompt_ids: list[Any], sampled_ids: list[Any], logprobs: list[Any] | None,
                           loss_mask: list[Any]) -> None:
    """Raise ``ValueError`` naming every fatal problem of one trainer-facing turn: bad ids or logprobs
    (``check_turn``), a ``loss_mask`` that does not cover prompt plus completion, is not all 0/1
    integers, or marks a prompt token trainable. A partial completion mask is fine."""
    report = check_turn(prompt_ids, sampled_ids, logprobs)
    if len(loss_mask) != len(prompt_ids) + len(sampled_ids):
        report.add(FATAL, "length_mismatch", f"loss_mask has {len(loss_mask)} entries for "
                   f"{len(prompt_ids)} prompt + {len(sampled_ids)} completion tokens")
    elif any(type(m) is not int or m not in (0, 1) for m in loss_mask):
        report.add(FATAL, "invalid_loss_mask", "loss_mask entries must be the integers 0 or 1")
    elif any(loss_mask[: len(prompt_ids)]):
        report.add(FATAL, "trainable_prompt", "a prompt token is marked trainable (prompt tokens are context)")
    if not report.ok:
        raise ValueError("invalid training turn: " + "; ".join(str(f) for f in report.fatal))
