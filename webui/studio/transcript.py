"""An episode as a conversation: each model turn's new prompt messages, its reply (text and tool
calls), what the environment answered, and a turn that failed (a reply that never became an
action: it is stored as a model turn with no step). Values are shown as text (strings as they
are, structures as indented JSON with their characters, no ``\\uXXXX``); the raw turn is kept for
a toggle."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from openenv.recording import EpisodeStore, StepRecord

__all__ = ["Message", "TranscriptPage", "message_text", "transcript_page"]

TEXT_KEYS = ("text", "content", "stdout", "output", "result", "message", "echoed_message")
PAGE_TURNS = 40


@dataclass
class Message:
    role: str  # system, user, assistant, tool, env, error
    text: str
    index: int | None = None  # the step it belongs to
    name: str | None = None
    failed: bool = False


@dataclass
class Turn:
    index: int
    actor: str
    messages: list[Message] = field(default_factory=list)
    failed: bool = False
    error: str | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    raw: Any = None
    latency_ms: float | None = None
    finish_reason: str | None = None
    reward: float | None = None


@dataclass
class TranscriptPage:
    turns: list[Turn]
    start: int
    next_start: int | None
    prev_start: int | None


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def message_text(value: Any) -> str:
    """Readable text of a message content or an observation: strings as they are, chat content
    parts joined, MCP results' text items, else indented JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [message_text(v.get("text") if isinstance(v, dict) and "text" in v else v) for v in value]
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        for key in ("structured_content", "structuredContent"):
            inner = value.get(key)
            if isinstance(inner, dict) and "result" in inner and len(inner) == 1:
                return message_text(inner["result"])
        for key in TEXT_KEYS:
            if key in value and isinstance(value[key], (str, list)) and value[key] not in ("", []):
                text = message_text(value[key])
                rest = {k: v for k, v in value.items() if k != key and v not in (None, "", [], {}, False)}
                rest.pop("structured_content", None)
                return text if not rest else f"{text}\n\n{_dump(rest)}"
    return _dump(value)


def _calls_text(calls: Any) -> str:
    out = []
    for call in calls or []:
        fn = call.get("function", call) if isinstance(call, dict) else {}
        name = fn.get("name", "?")
        args = fn.get("arguments", "")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        out.append(f"{name}({args if isinstance(args, str) else _dump(args)})")
    return "\n".join(out)


def _prompt_messages(data: dict[str, Any], seen: int, index: int) -> list[Message]:
    msgs = data.get("messages") or []
    if len(msgs) < seen:
        seen = 0  # the prompt was rebuilt (a trimmed context): show it whole
    out = []
    for m in msgs[seen:]:
        if not isinstance(m, dict):
            continue
        role = str(m.get("role") or "user")
        if role == "assistant":
            continue  # the previous turn's reply, shown there
        text = message_text(m.get("content"))
        if m.get("tool_calls"):
            text = (text + "\n" if text else "") + _calls_text(m["tool_calls"])
        out.append(Message(role=role, text=text, index=index, name=m.get("name")))
    return out


def _raw(data: dict[str, Any]) -> dict[str, Any]:
    """The turn as stored, its token arrays counted rather than listed (the Tokens page has them)."""
    cap = data.get("capture")
    if not isinstance(cap, dict):
        return data
    short = {k: f"({len(v)} items: see Tokens)" if isinstance(v, list) and len(v) > 20 else v for k, v in cap.items()}
    return {**data, "capture": short}


def _turn(step: StepRecord | None, index: int, actor: str, data: Any, seen: int) -> tuple[Turn, int]:
    data = data if isinstance(data, dict) else {}
    # a turn past the last step failed, unless a trainer recorded the rollout's whole completion there
    failed = bool(data.get("failed")) or (step is None and "trainer" not in data)
    turn = Turn(index=index, actor=actor, failed=failed, error=data.get("error"), raw=_raw(data),
                attempts=list(data.get("attempts") or []), latency_ms=data.get("latency_ms"),
                finish_reason=data.get("finish_reason"), reward=step.reward if step else None)
    turn.messages += _prompt_messages(data, seen, index)
    reply = message_text(data.get("completion"))
    calls = _calls_text(data.get("tool_calls"))
    if reply or calls or actor == "model":
        turn.messages.append(Message("assistant", "\n".join(t for t in (reply, calls) if t) or "(empty reply)",
                                     index, failed=failed))  # fmt: skip
    if failed and turn.error:
        turn.messages.append(Message("error", str(turn.error), index, failed=True))
    return turn, len(data.get("messages") or []) + 1


def transcript_page(store: EpisodeStore, episode_id: str, *, start: int = 0, turns: int = PAGE_TURNS) -> TranscriptPage:
    """Steps ``start``.. (at most ``turns``) as a conversation, with a failed turn at the end."""
    steps = store.load_steps(episode_id, start=start, limit=turns + 1)
    more = len(steps) > turns
    steps = steps[:turns]
    out: list[Turn] = []
    seen = 0
    last_index = steps[-1].index if steps else start - 1
    for s in steps:
        if s.index == 0:
            out.append(Turn(index=0, actor="env", messages=[Message("env", message_text(s.observation), 0)], raw=s.observation))
            continue
        if s.actor is not None:
            turn, seen = _turn(s, s.index, s.actor, s.agent, seen)
        else:
            turn = Turn(index=s.index, actor="script", raw=s.action,
                        messages=[Message("assistant", message_text(s.action), s.index)], reward=s.reward)
        turn.messages.append(Message("env", message_text(s.observation), s.index))
        out.append(turn)
    if not more:
        for index, (actor, data) in sorted(store.load_turns(episode_id, start=last_index + 1).items()):
            turn, seen = _turn(None, index, actor, data, seen)
            out.append(turn)
    prev = max(0, start - turns) if start > 0 else None
    return TranscriptPage(turns=out, start=start, next_start=(last_index + 1) if more else None, prev_start=prev)
