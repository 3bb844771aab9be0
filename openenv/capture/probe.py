"""What an inference endpoint can return, asked before anything is spent on it (0.10's
``validate_llm``): one real completion with the capture parameters, graded into a capture level.

    tokens    prompt ids, sampled ids and aligned logprobs: trainable (vLLM with
              ``--return-tokens-as-token-ids --logprobs-mode processed_logprobs``, SGLang from main)
    logprobs  logprobs without ids: an eval backend
    text      neither: an eval backend

A 400 that names a capture parameter drops it (``max_tokens`` becomes ``max_completion_tokens``)
and asks again, so a hosted API is classified instead of refused; each change is listed in
``param_fixes``. Two optional probes: a tool manifest (can an agent work here?) and, at ``tokens``,
whether the logprobs follow the temperature (raw pre-temperature logprobs demote to ``logprobs``:
a trainer's importance ratio would be wrong). Blocking (httpx); nothing is tokenized here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import httpx

from .checks import check_upstream_response
from .inference import normalize_response, openai_api_base

__all__ = ["ENGINE_HINT", "LLMReport", "list_models", "probe_logprobs_mode", "probe_tool_support", "require_llm",
           "validate_llm"]

ENGINE_HINT = ("Token capture needs an engine that returns its own token ids and logprobs:\n"
               "  - vLLM served with --return-tokens-as-token-ids --logprobs-mode processed_logprobs\n"
               "  - SGLang built from main (return_token_ids on its OpenAI routes)\n"
               "Any other OpenAI-compatible endpoint works as an EVAL backend: reward and trace, nothing trainable.")
_BELOW_TOKENS = frozenset({"no_prompt_token_ids", "no_completion_token_ids", "no_logprobs", "token_strings"})
_NEGOTIABLE = ("return_token_ids", "top_logprobs", "logprobs", "max_tokens", "temperature")
_TOOL = [{"type": "function", "function": {"name": "bash", "description": "Run a shell command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]
_SENTINEL = 100.0  # a |logprob| above this is an engine's stand-in for -inf


@dataclass
class LLMReport:
    """The probe's outcome: ``ok`` means trainable, ``reachable`` means usable at all."""

    ok: bool
    llm_url: str
    model: str
    findings: list[str] = field(default_factory=list)
    n_prompt_ids: int = 0
    n_completion_ids: int = 0
    served_models: list[str] = field(default_factory=list)
    capture_level: str = ""  # tokens | logprobs | text, "" when nothing came back
    reachable: bool = False
    param_fixes: list[str] = field(default_factory=list)
    tool_support: str = ""  # ok | no-tool-call | rejected | unknown, "" when not asked
    logprobs_mode: str = ""  # processed | raw | unknown, "" when not asked

    @property
    def trainable(self) -> bool:
        return self.capture_level == "tokens"

    @property
    def rollout_type(self) -> str:
        return "train" if self.trainable else "eval"

    def summary(self) -> str:
        if self.ok:
            return f"engine OK: {self.n_completion_ids} completion ids, {self.n_prompt_ids} prompt ids"
        if self.reachable:
            what = "logprobs but no token ids" if self.capture_level == "logprobs" else "no token ids and no logprobs"
            return f"endpoint is EVAL ONLY ({what}); rollouts carry reward and trace but nothing trainable"
        return "engine NOT reachable:\n  " + "\n  ".join(self.findings)


def _headers(api_key: str | None, auth_header: str) -> dict[str, str]:
    if not api_key:
        return {}
    return {auth_header: f"Bearer {api_key}" if auth_header.lower() == "authorization" else api_key}


def list_models(llm_url: str, timeout: float = 30.0, api_key: str | None = None,
                auth_header: str = "Authorization") -> list[str]:
    """The served model ids, or [] when the endpoint is unreachable or publishes no list."""
    try:
        resp = httpx.get(f"{openai_api_base(llm_url)}/models", headers=_headers(api_key, auth_header), timeout=timeout,
                         trust_env=False)
        return [m.get("id", "") for m in resp.json().get("data", [])] if resp.is_success else []
    except (httpx.HTTPError, ValueError, AttributeError):
        return []


def _negotiate(body: dict[str, Any], error_text: str) -> str | None:
    """Change ``body`` to get past a 400 that names one of the capture parameters; what changed."""
    text = error_text.lower()
    for param in _NEGOTIABLE:
        if param in text and param in body:
            if param == "max_tokens":
                body["max_completion_tokens"] = body.pop("max_tokens")
                return "max_tokens sent as max_completion_tokens"
            body.pop(param)
            if param == "logprobs":
                body.pop("top_logprobs", None)
            return f"dropped {param}"
    return None


def _post(base: str, body: dict[str, Any], timeout: float, headers: dict[str, str], fixes: list[str],
          limit: int = 5) -> tuple[dict[str, Any] | None, str]:
    """POST ``/chat/completions``, negotiating 400s; the payload or why there is none."""
    while True:
        try:
            resp = httpx.post(f"{base}/chat/completions", json=body, headers=headers, timeout=timeout, trust_env=False)
        except httpx.HTTPError as exc:
            return None, f"probe failed: {type(exc).__name__}: {str(exc)[:300]}"
        if resp.is_success:
            try:
                payload = resp.json()
            except ValueError:
                return None, "probe failed: the reply is not JSON"
            return (payload, "") if isinstance(payload, dict) else (None, "probe failed: the reply is not an object")
        change = _negotiate(body, resp.text[:600]) if resp.status_code == 400 and len(fixes) < limit else None
        if change is None:
            return None, f"probe failed: HTTP {resp.status_code}: {resp.text[:300]}"
        fixes.append(change)


def _grade(payload: dict[str, Any]) -> tuple[str, list[str]]:
    report = check_upstream_response(payload)
    if report.ok:
        return "tokens", [str(f) for f in report.findings]
    choice = (payload.get("choices") or [{}])[0]
    entries = (choice.get("logprobs") or {}).get("content") or []
    level = "logprobs" if any(isinstance(e, dict) and e.get("logprob") is not None for e in entries) else "text"
    return level, [str(f) for f in report.findings if f.code not in _BELOW_TOKENS]


def probe_tool_support(base: str, model: str, *, timeout: float = 60.0, api_key: str | None = None,
                       auth_header: str = "Authorization") -> str:
    """``ok`` (a tool call came back), ``no-tool-call`` (prose instead), ``rejected`` or ``unknown``."""
    body = {"model": model, "messages": [{"role": "user", "content": "Use the bash tool to list the files in /tmp."}],
            "tools": _TOOL, "tool_choice": "auto", "max_tokens": 512, "temperature": 1.0}
    payload, why = _post(openai_api_base(base), body, timeout, _headers(api_key, auth_header), [])
    if payload is None:
        return "rejected" if "HTTP 4" in why else "unknown"
    choice = (payload.get("choices") or [{}])[0]
    if (choice.get("message") or {}).get("tool_calls"):
        return "ok"
    return "unknown" if choice.get("finish_reason") == "length" else "no-tool-call"


def probe_logprobs_mode(base: str, model: str, *, timeout: float = 60.0, api_key: str | None = None,
                        auth_header: str = "Authorization") -> str:
    """``processed`` when the gap between the two likeliest first tokens shrinks with temperature
    (``logsoftmax(logits / T)``), ``raw`` when it does not, ``unknown`` without the evidence."""
    gaps = []
    for temperature in (1.0, 2.0):
        body = {"model": model, "messages": [{"role": "user", "content": "Reply with exactly: hello"}],
                "max_tokens": 1, "temperature": temperature, "logprobs": True, "top_logprobs": 5}
        payload, _ = _post(openai_api_base(base), body, timeout, _headers(api_key, auth_header), [], limit=0)
        entries = (((payload or {}).get("choices") or [{}])[0].get("logprobs") or {}).get("content") or []
        if not entries:
            return "unknown"
        values = sorted((float(t["logprob"]) for t in (entries[0] or {}).get("top_logprobs") or []
                         if isinstance(t, dict) and t.get("logprob") is not None), reverse=True)
        if len(values) < 2 or abs(values[1]) > _SENTINEL:
            return "unknown"
        gaps.append(values[0] - values[1])
    if gaps[0] < 0.5:
        return "unknown"
    ratio = gaps[1] / gaps[0]
    return "raw" if abs(ratio - 1.0) < abs(ratio - 0.5) else "processed"


def validate_llm(llm_url: str, model: str, *, provider: str = "openai", timeout: float = 120.0,
                 api_key: str | None = None, auth_header: str = "Authorization", check_logprobs_mode: bool = True,
                 check_tools: bool = True) -> LLMReport:
    """Send one real completion and report what the endpoint returns (see the module docstring)."""
    if provider not in ("openai", "hf", "vllm"):
        raise ValueError(f"upstream provider {provider!r} cannot be probed here (openai, vllm, hf)")
    base = openai_api_base(llm_url)
    served = list_models(base, timeout=min(timeout, 30.0), api_key=api_key, auth_header=auth_header)
    listed = model.rsplit(":", 1)[0] if provider == "hf" else model
    if served and model not in served and listed not in served:
        return LLMReport(ok=False, llm_url=base, model=model, served_models=served,
                         findings=[f"model {model!r} is not served here; available: {served}"])
    body = {"model": model, "messages": [{"role": "user", "content": "Reply with the single word: ok"}],
            "max_tokens": 8, "temperature": 0.0, "logprobs": True, "top_logprobs": 0, "return_token_ids": True}
    fixes: list[str] = []
    payload, why = _post(base, body, timeout, _headers(api_key, auth_header), fixes)
    if payload is None:
        return LLMReport(ok=False, llm_url=base, model=model, served_models=served, findings=[why], param_fixes=fixes)
    payload = normalize_response(payload)
    level, findings = _grade(payload)
    tools = ""
    if check_tools:
        tools = probe_tool_support(base, model, timeout=min(timeout, 60.0), api_key=api_key, auth_header=auth_header)
        if tools == "rejected":
            findings.append("[FATAL] no_tool_calling: the endpoint refuses a tool manifest; agent harnesses send one "
                            "on every call, so agent rollouts cannot work here")
        elif tools == "no-tool-call":
            findings.append("[WARN] no_tool_call_emitted: the endpoint took the tool manifest but answered in prose")
    mode = ""
    if level == "tokens" and check_logprobs_mode:
        mode = probe_logprobs_mode(base, model, timeout=min(timeout, 60.0), api_key=api_key, auth_header=auth_header)
        if mode == "raw":
            if os.environ.get("OPENENV_ALLOW_RAW_LOGPROBS", "").strip().lower() in ("1", "true", "yes"):
                findings.append("[WARN] raw_logprobs_forced: RAW (pre-temperature) logprobs treated as trainable "
                                "because OPENENV_ALLOW_RAW_LOGPROBS is set")
            else:
                level = "logprobs"
                findings.append("[FATAL] raw_logprobs: the logprobs do not follow the temperature (RAW, "
                                "pre-temperature): restart vLLM with --logprobs-mode processed_logprobs; "
                                "classified as EVAL (OPENENV_ALLOW_RAW_LOGPROBS=1 overrides)")
    choice = (payload.get("choices") or [{}])[0]
    return LLMReport(ok=level == "tokens", llm_url=base, model=model, served_models=served, findings=findings,
                     n_prompt_ids=len(payload.get("prompt_token_ids") or []),
                     n_completion_ids=len(choice.get("token_ids") or []), capture_level=level, reachable=True,
                     param_fixes=fixes, logprobs_mode=mode, tool_support=tools)


def require_llm(llm_url: str, model: str, *, timeout: float = 120.0, api_key: str | None = None,
                auth_header: str = "Authorization", require_tokens: bool = False) -> LLMReport:
    """``validate_llm`` that raises ``RuntimeError`` when the endpoint is unreachable, or (with
    ``require_tokens``) when it cannot return token ids."""
    report = validate_llm(llm_url, model, timeout=timeout, api_key=api_key, auth_header=auth_header)
    if not report.reachable:
        raise RuntimeError(report.summary() + "\n\n" + ENGINE_HINT)
    if require_tokens and not report.trainable:
        raise RuntimeError(report.summary() + "\n\nThis path needs trainable rollouts.\n" + ENGINE_HINT)
    return report
