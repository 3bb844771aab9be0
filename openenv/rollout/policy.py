"""The policy: observations → chat messages, and a model's reply → one action.

JSON mode (any environment): the system prompt shows the env's metadata and its action and
observation JSON schemas; the model answers with one JSON action. Tool mode (an MCP environment:
``list_tools`` gave tools): the tools go to the model as OpenAI ``tools``; its first tool call
becomes a ``call_tool`` step action and the observation comes back as the ``tool`` message.

A Jinja2 template (``--prompt FILE.j2``) replaces the per-turn user message; a top-level
``{% set system %}...{% endset %}`` in it replaces the system prompt. Variables: ``env`` (name,
description, version), ``action_schema``, ``observation_schema`` (JSON text), ``tools``,
``observation`` (the value) and ``observation_json``, ``reward``, ``done``, ``step``, ``max_steps``.
"""

from __future__ import annotations

from typing import Any

import orjson

from .actions import parse_json_action, parse_tool_call
from .chat import Completion
from .errors import InvalidReplyError, RolloutError
from .spec import EnvSpec, openai_tools

__all__ = ["Conversation", "Policy"]


def _json(value: Any, indent: bool = False) -> str:
    opts = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    try:
        return orjson.dumps(value, option=opts).decode()
    except TypeError:
        return repr(value)


def _render(fn: Any) -> Any:
    from jinja2 import TemplateError

    try:
        return fn()
    except TemplateError as exc:
        raise RolloutError(f"the prompt template failed: {exc}", code="PROMPT_TEMPLATE") from exc


class Policy:
    """Shared by every episode of a rollout; ``conversation()`` starts one episode's messages."""

    def __init__(
        self, spec: EnvSpec, *, template: str | None = None, history_turns: int = 16, max_steps: int | None = None
    ) -> None:
        self.spec = spec
        self.history_turns = max(1, history_turns)
        self.max_steps = max_steps
        self.tools = openai_tools(spec.tools) if spec.tools else None
        self._template = self._system_template = None
        if template is not None:
            from jinja2 import ChainableUndefined, StrictUndefined, TemplateError
            from jinja2.sandbox import SandboxedEnvironment

            try:  # strict for the turns; the system block is read with no observation to hand
                self._template = SandboxedEnvironment(undefined=StrictUndefined).from_string(template)
                self._system_template = SandboxedEnvironment(undefined=ChainableUndefined).from_string(template)
            except TemplateError as exc:
                raise RolloutError(f"the prompt template does not compile: {exc}", code="PROMPT_TEMPLATE") from exc
        self._system: str | None = None

    @property
    def mode(self) -> str:
        return "tools" if self.tools else "json"

    def _vars(self, observation: Any = None, reward: float | None = None, done: bool = False, step: int = 0) -> dict[str, Any]:
        s = self.spec
        return {
            "env": {"name": s.name, "description": s.description, "version": s.version},
            "action_schema": _json(s.action_schema, indent=True),
            "observation_schema": _json(s.observation_schema, indent=True),
            "tools": s.tools or [],
            "observation": observation,
            "observation_json": _json(observation),
            "reward": reward,
            "done": done,
            "step": step,
            "max_steps": self.max_steps,
        }

    def system_prompt(self) -> str:
        if self._system is None:
            custom = None
            if self._system_template is not None:
                custom = _render(lambda: getattr(self._system_template.make_module(self._vars()), "system", None))
            self._system = str(custom).strip() if custom is not None else self._default_system()
        return self._system

    def _default_system(self) -> str:
        s = self.spec
        about = f'You act in the environment "{s.name}"' + (f": {s.description}" if s.description else ".")
        if self.tools:
            return (f"{about}\nEach turn, call exactly one of the tools you are given. Tool results come back as "
                    "tool messages; the episode ends when the environment says so.")  # fmt: skip
        return (
            f"{about}\nEach turn you get the current observation as JSON. Answer with exactly one action: "
            "a single JSON object that matches the action schema below, and nothing else.\n\n"
            f"Action schema:\n{_json(s.action_schema, indent=True)}\n\n"
            f"Observation schema:\n{_json(s.observation_schema, indent=True)}"
        )

    def user_message(self, observation: Any, reward: float | None, done: bool, step: int) -> str:
        if self._template is not None:
            template = self._template
            return _render(lambda: template.render(self._vars(observation, reward, done, step)).strip())
        if step == 0:
            return f"The episode starts. Observation:\n{_json(observation)}"
        return f"Observation after step {step} (reward {reward}):\n{_json(observation)}"

    def conversation(self) -> Conversation:
        return Conversation(self)


class Conversation:
    """One episode's messages: ``observe`` each observation, ``prompt()`` what to send,
    ``take(completion)`` the action (or ``InvalidReplyError``), ``retry(error)`` after a bad one."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.system = {"role": "system", "content": policy.system_prompt()}
        self.turns: list[list[dict[str, Any]]] = []  # each turn: the messages from one observation on
        self._pending_calls: list[str] = []  # tool call ids the next messages must answer
        self.last_action: dict[str, Any] | None = None  # the action of the last valid reply

    def observe(self, observation: Any, reward: float | None = None, done: bool = False, step: int = 0) -> None:
        """Add an observation (the reset's, or a step's) as the next message(s)."""
        text = self.policy.user_message(observation, reward, done, step)
        if self._pending_calls:
            first, *rest = self._pending_calls
            msgs = [{"role": "tool", "tool_call_id": first, "content": text}]
            msgs += [{"role": "tool", "tool_call_id": c, "content": "not run: one tool call per turn"} for c in rest]
            self._pending_calls = []
            self.turns[-1].extend(msgs)
            self.turns.append([])
        else:
            self.turns.append([{"role": "user", "content": text}])

    def prompt(self) -> list[dict[str, Any]]:
        """The messages to send: the system prompt and the last ``history_turns`` turns."""
        keep = self.turns[-self.policy.history_turns :]
        return [self.system, *(m for turn in keep for m in turn)]

    def take(self, completion: Completion) -> dict[str, Any]:
        """Record the model's reply in the conversation and return the action it names."""
        self.turns[-1].append(completion.message())
        self.last_action = self._action(completion)
        return self.last_action

    def _action(self, completion: Completion) -> dict[str, Any]:
        tools = self.policy.spec.tools
        if tools and completion.tool_calls:
            self._pending_calls = [c["id"] for c in completion.tool_calls]
            return parse_tool_call(completion.tool_calls[0], tools)
        if tools:
            try:
                return parse_json_action(completion.text, self.policy.spec.action_schema)
            except InvalidReplyError:
                raise InvalidReplyError("the reply made no tool call", completion=completion.text) from None
        return parse_json_action(completion.text, self.policy.spec.action_schema)

    def retry(self, error: str) -> None:
        """Tell the model its last reply was not a valid action (the one retry of a turn)."""
        note = f"That was not a valid action: {error}."
        if self._pending_calls:
            self.turns[-1].extend({"role": "tool", "tool_call_id": c, "content": note} for c in self._pending_calls)
            self._pending_calls = []
            self.turns[-1].append({"role": "user", "content": "Call one tool with valid arguments."})
        else:
            self.turns[-1].append({"role": "user", "content": note + " Answer with only a JSON object that "
                                   "matches the action schema."})  # fmt: skip
