"""The one request edit an engine's HTTP 400 asks for (0.10's ``capture.compat``).

Hosted providers refuse parameters a local vLLM takes (``max_tokens`` on newer OpenAI models,
``return_token_ids`` everywhere but vLLM/SGLang, a temperature other than the default...), and
say which one in their error: in ``error.param`` when they fill it, else in the message's prose.
``diagnose(body)`` reads the usual shapes and returns a :class:`ParamFix` (drop, rename or set one
parameter) only when it can name the parameter, never for a field the request cannot lose
(``PROTECTED``); a caller accepts at most ``MAX_FIXES`` per endpoint. Fixes that change what the
model does (``BEHAVIOUR_ALTERING``) come with a warning (``behaviour_warnings``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["BEHAVIOUR_ALTERING", "BEHAVIOUR_WARNINGS", "LEGACY_ALIASES", "MAX_FIXES", "PROTECTED", "ParamFix",
           "behaviour_warnings", "diagnose"]

#: fields whose loss would make another request (or an invalid one): never edited
PROTECTED = frozenset({"model", "messages", "input", "stream", "tools", "tool_choice"})
#: the most fixes one endpoint may need before its disagreement is not about spelling
MAX_FIXES = 6
#: a legacy spelling and the modern one it collides with (which half of a conflicting pair to drop)
LEGACY_ALIASES = {"max_tokens": "max_completion_tokens", "functions": "tools", "function_call": "tool_choice"}
#: fixes that change how the model behaves, not just how a field is spelled
BEHAVIOUR_ALTERING = frozenset({"reasoning_effort", "temperature", "top_p", "top_k"})
BEHAVIOUR_WARNINGS = {
    "reasoning_effort": (
        "reasoning has been turned OFF for this model, because it refuses function tools on /v1/chat/completions "
        "otherwise; an agent may then make one model call and stop. Prefer a non-reasoning model for agent "
        "rollouts, or the Responses route, which keeps reasoning on."
    ),
    "temperature": (
        "the requested temperature was rejected and dropped, so sampling uses the provider default: the policy "
        "evaluated is not the one the harness asked for, which makes an eval number hard to reproduce."
    ),
    "top_p": "the requested top_p was dropped; sampling uses the provider default.",
    "top_k": "the requested top_k was dropped; sampling uses the provider default.",
}

_NAME = r"[A-Za-z0-9_.]+"
_LOGPROBS_REFUSED = "you are not allowed to request logprobs from this model"
_CONFLICT = re.compile(rf"[Ss]etting ['`]({_NAME})['`] and ['`]({_NAME})['`].*?(?:not supported|cannot|at the same time)")
_SET_TO = re.compile(rf"set ({_NAME}) to ['`]([A-Za-z0-9_.-]+)['`]")
_UNRECOGNISED = re.compile(r"[Uu]nrecognized request argument supplied:\s*([A-Za-z0-9_.\[\]]+)")
_QUOTED = re.compile(rf"['`]({_NAME})['`]")
_USE_INSTEAD = re.compile(rf"[Uu]se ['`]({_NAME})['`] instead")
_REJECTED = re.compile(rf"['`]({_NAME})['`]\s+is\s+(?:deprecated|not supported|unsupported)")  # quotes required
_UNSUPPORTED_CODES = frozenset({"unsupported_parameter", "unsupported_value", "unknown_parameter"})
_UNSUPPORTED_OPENINGS = ("Unsupported parameter", "Unsupported value", "Unknown parameter")


@dataclass(frozen=True)
class ParamFix:
    """One edit to a request body: drop ``param``, rename it to ``replacement``, or set it to ``value``."""

    param: str
    replacement: str = ""
    value: str | None = None

    @property
    def action(self) -> str:
        """``"set"``, ``"rename"`` or ``"drop"``."""
        if self.value is not None:
            return "set"
        return "rename" if self.replacement else "drop"

    def apply(self, body: dict[str, Any]) -> bool:
        """Edit ``body`` in place; whether anything changed. A rename keeps the value (an uncapped
        completion would be a silent change); dropping ``logprobs`` drops ``top_logprobs`` too; only
        a ``set`` adds a key."""
        if self.value is not None:
            changed = body.get(self.param) != self.value
            body[self.param] = self.value
            return changed
        if self.param == "logprobs" and not self.replacement:
            found = [body.pop(key) for key in ("logprobs", "top_logprobs") if key in body]
            return bool(found)
        if self.param not in body:
            return False
        moved = body.pop(self.param)
        if self.replacement:
            body[self.replacement] = moved
        return True

    def __str__(self) -> str:
        if self.value is not None:
            return f"set {self.param}={self.value}"
        return f"renamed {self.param} -> {self.replacement}" if self.replacement else f"dropped {self.param}"


def behaviour_warnings(fixes: Iterable[Any] | None) -> list[str]:
    """What each behaviour-changing fix in ``fixes`` costs, one line each (spelling fixes give none)."""
    out = []
    for fix in fixes or ():
        named = str(getattr(fix, "param", None) or fix)
        hit = next((k for k in BEHAVIOUR_ALTERING if k in named and k in BEHAVIOUR_WARNINGS), None)
        if hit is not None:
            out.append(f"{hit}: {BEHAVIOUR_WARNINGS[hit]}")
    return out


def _error_fields(body: Any) -> tuple[Any, str, str] | None:
    """``(param, message, code)`` of an error payload (``{"error": {...}}``, the error itself, or text)."""
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict):
        return error.get("param"), str(error.get("message") or ""), str(error.get("code") or "")
    if isinstance(error, str):
        return None, error, ""
    return None


def _named(name: str, message: str) -> ParamFix | None:
    """Drop ``name``, or rename it when the message offers another field instead."""
    if not name or name in PROTECTED:
        return None
    offered = _USE_INSTEAD.search(message)
    replacement = offered.group(1) if offered else ""
    return ParamFix(param=name, replacement="" if replacement in PROTECTED or replacement == name else replacement)


def _conflict(a: str, b: str) -> ParamFix | None:
    """Two fields that may not be sent together: drop the legacy one of a known pair, else nothing."""
    for legacy, modern in ((a, b), (b, a)):
        if LEGACY_ALIASES.get(legacy) == modern and legacy not in PROTECTED:
            return ParamFix(param=legacy)
    return None


def diagnose(body: dict[str, Any] | str | None) -> ParamFix | None:
    """The fix an engine's 400 body asks for, or ``None`` when it names no parameter to change."""
    fields = _error_fields(body)
    if fields is None:
        return None
    param, message, code = fields
    if message.strip().lower() == _LOGPROBS_REFUSED:
        return ParamFix(param="logprobs")
    if found := _CONFLICT.search(message):  # both named, neither wrong alone: before any other rule
        return _conflict(found.group(1), found.group(2))
    if (found := _SET_TO.search(message)) and found.group(1) not in PROTECTED:  # the provider's own remedy
        return ParamFix(param=found.group(1), value=found.group(2))
    if found := _UNRECOGNISED.search(message):
        return _named(found.group(1), message)
    if code in _UNSUPPORTED_CODES or message.startswith(_UNSUPPORTED_OPENINGS):
        quoted = _QUOTED.search(message)
        return _named(param or (quoted.group(1) if quoted else ""), message)
    if found := _REJECTED.search(message):
        return _named(found.group(1), message)
    return None
