"""Convert actions, observations and states between Python objects and wire dicts.

Accepts pydantic models and plain ``@dataclass`` classes alike (and dicts for generic use).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from openenv.core.errors import ActionValidationError
from openenv.core.wire import adapter as _adapter
from openenv.core.wire import dumps, loads, to_jsonable

__all__ = [
    "ActionCodec",
    "dumps",
    "json_schema",
    "loads",
    "observation_to_wire",
    "safe_error_text",
    "to_jsonable",
]

_LIFTED = ("reward", "done", "metadata")
_PATH_RE = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.\-@+]+){2,}/?")


def json_schema(cls: type | None) -> dict[str, Any]:
    """JSON schema of a pydantic model or dataclass (``{}`` for ``None``/dict)."""
    if cls is None or cls is dict:
        return {"type": "object"}
    return _adapter(cls).json_schema()


def observation_to_wire(obs: Any) -> dict[str, Any]:
    """``{"observation": {...}, "reward", "done"[, "metadata"]}`` as the published server sends it.

    ``metadata`` is an additive field, present only when non-empty.
    """
    if isinstance(obs, BaseModel):
        fields = obs.model_dump(mode="json")
    elif isinstance(obs, dict):
        fields = {k: to_jsonable(v) for k, v in obs.items()}
    else:
        fields = to_jsonable(obs)
        if not isinstance(fields, dict):
            fields = {"value": fields}
    reward = fields.pop("reward", None)
    done = bool(fields.pop("done", False))
    metadata = fields.pop("metadata", None)
    payload: dict[str, Any] = {"observation": fields, "reward": reward, "done": done}
    if metadata:
        payload["metadata"] = metadata
    return payload


def safe_error_text(exc: BaseException, limit: int = 500) -> str:
    """``Type: message`` with filesystem paths masked; never a traceback."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    text = _PATH_RE.sub("<path>", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ActionCodec:
    """Validates wire dicts into the environment's action type."""

    def __init__(self, action_cls: type | None) -> None:
        self.action_cls = action_cls
        self._is_model = isinstance(action_cls, type) and issubclass(action_cls, BaseModel)
        self._is_dataclass = isinstance(action_cls, type) and dataclasses.is_dataclass(action_cls)
        self._fields: frozenset[str] = frozenset()
        if self._is_dataclass:
            self._fields = frozenset(f.name for f in dataclasses.fields(action_cls))
        self._mcp_actions = _mcp_action_types(action_cls) if self._is_model else None

    def is_mcp_request(self, data: Any) -> bool:
        """True for a ``list_tools``/``call_tool`` action this environment takes (no reset needed)."""
        return self._mcp_actions is not None and isinstance(data, dict) and data.get("type") in self._mcp_actions

    def parse(self, data: Any) -> Any:
        """Validate ``data`` (a dict) into an action; raises ActionValidationError."""
        if not isinstance(data, dict):
            raise ActionValidationError(
                "Action must be a JSON object",
                errors=[{"type": "dict_type", "loc": ["action"], "msg": "Input should be an object"}],
            )
        if self.action_cls is None or self.action_cls is dict:
            return data
        try:
            if self._mcp_actions is not None and data.get("type") in self._mcp_actions:
                return self._mcp_actions[data["type"]].model_validate(data)
            if self._is_model:
                return self.action_cls.model_validate(data)
            if self._is_dataclass:
                data = self._check_dataclass_keys(data)
            return _adapter(self.action_cls).validate_python(data)
        except ValidationError as exc:
            raise ActionValidationError(
                f"Invalid action: {exc.error_count()} validation error(s)", errors=_clean_errors(exc)
            ) from None

    def _check_dataclass_keys(self, data: dict[str, Any]) -> dict[str, Any]:
        extra = [k for k in data if k not in self._fields and k != "metadata"]
        if extra:
            raise ActionValidationError(
                "Invalid action: unknown field(s) " + ", ".join(sorted(map(str, extra))),
                errors=[
                    {"type": "extra_forbidden", "loc": [k], "msg": "Extra inputs are not permitted"}
                    for k in extra
                ],
            )
        if "metadata" in data and "metadata" not in self._fields:
            data = {k: v for k, v in data.items() if k != "metadata"}
        return data


def _mcp_action_types(action_cls: type) -> dict[str, type] | None:
    """``{"list_tools": ListToolsAction, "call_tool": CallToolAction}`` when the action type is the
    base ``Action`` or an MCP action (as published: env-specific action types stay authoritative)."""
    from openenv.core.env_server.types import Action

    mcp_module = "openenv.core.env_server.mcp_types"
    if action_cls is not Action and not any(c.__module__ == mcp_module for c in action_cls.__mro__):
        return None
    from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction

    return {"list_tools": ListToolsAction, "call_tool": CallToolAction}


def _clean_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's error list without ``url``/``ctx`` objects that are not JSON-safe."""
    out = []
    for err in exc.errors(include_url=False):
        item = {"type": err["type"], "loc": list(err["loc"]), "msg": err["msg"]}
        if "input" in err:
            item["input"] = to_jsonable(err["input"]) if _small(err["input"]) else "<large input>"
        out.append(item)
    return out


def _small(value: Any) -> bool:
    try:
        return len(orjson.dumps(value, default=str)) < 2048
    except TypeError:
        return False
