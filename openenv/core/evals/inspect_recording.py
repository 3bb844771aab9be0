"""An Inspect AI ``EvalLog`` into the episode store: one episode per sample (and epoch).

The run (source ``eval``, env name = the task's name) keeps the model, the eval's ids, its log
location and the aggregate scores. Each sample's episode: step 0 holds the sample (input, target,
metadata), step 1 the model's answer (action) and the scores (observation), with the first
scorer's value as the reward; the conversation is that step's model turn, so the studio's episode
page shows prompt and completion. Episodes are tagged ``eval`` and with the task name.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EVAL_SOURCE", "record_eval_log", "score_to_reward"]

EVAL_SOURCE = "eval"
_LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}


def score_to_reward(value: Any) -> float | None:
    """A score value as a number (Inspect's letters C/P/I/N, booleans, numbers, numeric or yes/no
    strings); None for anything else (lists, dicts)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        if value in _LETTERS:
            return _LETTERS[value]
        low = value.strip().lower()
        if low in ("yes", "true"):
            return 1.0
        if low in ("no", "false"):
            return 0.0
        try:
            return float(low)
        except ValueError:
            return None
    return None


def _message(m: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.text}
    calls = getattr(m, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.function, "arguments": c.arguments}}
                             for c in calls]
    return out


def _input(sample: Any) -> Any:
    return sample.input if isinstance(sample.input, str) else [_message(m) for m in sample.input]


def _scores(sample: Any) -> dict[str, dict[str, Any]]:
    return {name: {"value": s.value, "answer": s.answer, "explanation": s.explanation, "metadata": s.metadata}
            for name, s in (sample.scores or {}).items()}


def _usage(sample: Any) -> dict[str, int]:
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for u in (sample.model_usage or {}).values():
        usage["prompt_tokens"] += u.input_tokens
        usage["completion_tokens"] += u.output_tokens
        usage["total_tokens"] += u.total_tokens
    return usage


def _run_info(log: Any, scores: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    spec = log.eval
    return {"model": spec.model, "model_base_url": spec.model_base_url, "task": spec.task, "task_id": spec.task_id,
            "eval_id": spec.eval_id, "inspect_run_id": spec.run_id, "log_location": log.location,
            "status": log.status, "scores": scores, **context}


def record_eval_log(store: Any, log: Any, *, scores: dict[str, Any], label: str | None = None,
                    **context: Any) -> list[str]:
    """Record every sample of ``log`` (an ``EvalLog`` with samples) in ``store``; returns the
    episode ids in sample order. ``context`` (harness, versions, dataset) goes into the run's info."""
    spec = log.eval
    task = spec.task
    run_id = store.create_run(env_name=task, env_version=str(spec.task_version), source=EVAL_SOURCE,
                              label=label or task, provider="inspect-ai", base_url=spec.model_base_url,
                              info=_run_info(log, scores, context))
    ids = []
    for sample in log.samples or []:
        ids.append(_record_sample(store, run_id, task, spec.model, sample))
    return ids


def _record_sample(store: Any, run_id: str, task: str, model: str, sample: Any) -> str:
    target = sample.target
    eid = store.start_episode(run_id, reset_kwargs={"sample_id": sample.id, "epoch": sample.epoch},
                              observation={"input": _input(sample), "target": target, "metadata": sample.metadata})
    scores = _scores(sample)
    first = next(iter(scores.values()), None)
    reward = score_to_reward(first["value"]) if first else None
    completion = sample.output.completion if sample.output else ""
    error = sample.error.message if sample.error else None
    observation = {"scores": scores, "target": target, **({"error": error} if error else {})}
    latency = None if sample.total_time is None else round(sample.total_time * 1000, 3)
    store.append_step(eid, 1, action={"completion": completion}, observation=observation, reward=reward,
                      done=error is None, metadata={"sample_id": sample.id, "epoch": sample.epoch, "model": model},
                      latency_ms=latency)
    usage = _usage(sample)
    store.record_turn(eid, 1, "model", {"model": model, "messages": [_message(m) for m in sample.messages],
                                        "completion": completion, "prompt_tokens": usage["prompt_tokens"],
                                        "completion_tokens": usage["completion_tokens"], "usage": usage,
                                        "latency_ms": latency})
    if error is not None:
        store.finish_episode(eid, "error")
    store.set_tags(eid, ["eval", task])
    return eid
