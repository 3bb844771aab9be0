"""Convert actions, observations and states between Python objects and wire dicts.

Accepts pydantic models and plain ``@dataclass`` classes alike (and dicts for generic use).
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from openenv.core.errors import ActionValidationError
from openenv.core.wire import adapter as _adapter
from openenv.core.wire import dumps, loads, to_jsonable

__all__ = [
    "ActionCodec",
    "deserialize_action",
    "deserialize_action_with_preprocessing",
    "dumps",
    "json_schema",
    "loads",
    "nests_metadata",
    "observation_to_wire",
    "safe_error_text",
    "serialize_observation",
    "to_jsonable",
]

_LIFTED = ("reward", "done", "metadata")
_PATH_RE = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.\-@+]+){2,}/?")


def json_schema(cls: type | None) -> dict[str, Any]:
    """JSON schema of a pydantic model or dataclass (``{}`` for ``None``/dict). A model's own
    ``model_json_schema`` is used, so a class that overrides it (a discriminated union of action
    types, as 0.10 envs do) publishes what it says."""
    if cls is None or cls is dict:
        return {"type": "object"}
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return cls.model_json_schema()
    return _adapter(cls).json_schema()


METADATA_SHAPE_ENV = "OPENENV_OBSERVATION_METADATA"


def nests_metadata() -> bool:
    """Whether a non-empty ``metadata`` also goes inside ``observation`` (the default, as 0.10 sends
    it); ``OPENENV_OBSERVATION_METADATA=top`` keeps it only beside (0.3's shape)."""
    return os.environ.get(METADATA_SHAPE_ENV, "nested").strip().lower() != "top"


def observation_to_wire(obs: Any, *, nest_metadata: bool = True) -> dict[str, Any]:
    """``{"observation": {...}, "reward", "done"[, "metadata"]}`` as the published server sends it.

    A non-empty ``metadata`` is sent beside ``observation`` and, with ``nest_metadata``, inside it
    too, where 0.10's typed clients read it (``obs_data.get("metadata", {})``). An empty one is
    left out of both: 0.3 clients that build their observation class from ``observation`` see the
    fields they declared.
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
        if nest_metadata:
            fields["metadata"] = metadata
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
            errors = _clean_errors(exc)
            raise ActionValidationError(validation_summary(exc.error_count(), errors), errors=errors) from None

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


def validation_summary(count: int, errors: list[dict[str, Any]], limit: int = 5) -> str:
    """``Invalid action: 2 validation error(s): message: Field required; n: Input should be ...``."""
    parts = [f"{'.'.join(map(str, e['loc'])) or 'action'}: {e['msg']}" for e in errors[:limit]]
    more = f"; ... ({len(errors) - limit} more)" if len(errors) > limit else ""
    return f"Invalid action: {count} validation error(s): " + "; ".join(parts) + more


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


# -- the published 0.10 helpers (``openenv.core.env_server.serialization``) -------------------

_MCP_TYPES_MODULE = "openenv.core.env_server.mcp_types"


def _mcp_action(data: dict[str, Any], action_cls: type) -> Any:
    """A ``list_tools``/``call_tool`` payload as its MCP action when ``action_cls`` is generic (as 0.10)."""
    kind = data.get("type")
    if kind not in ("list_tools", "call_tool"):
        return None
    import importlib

    try:
        mcp_types = importlib.import_module(_MCP_TYPES_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != _MCP_TYPES_MODULE:
            raise
        return None
    mcp_cls = mcp_types.ListToolsAction if kind == "list_tools" else mcp_types.CallToolAction
    from openenv.core.env_server.types import Action

    if action_cls is Action or action_cls in (mcp_types.ListToolsAction, mcp_types.CallToolAction):
        return mcp_cls.model_validate(data)
    return None


def deserialize_action(action_data: dict[str, Any], action_cls: type) -> Any:
    """``action_cls.model_validate(action_data)`` (MCP actions recognised); raises pydantic's ValidationError."""
    found = _mcp_action(action_data, action_cls)
    return found if found is not None else action_cls.model_validate(action_data)


def deserialize_action_with_preprocessing(action_data: dict[str, Any], action_cls: type) -> Any:
    """Like :func:`deserialize_action`, with the web form conversions 0.10 applies.

    A ``call_tool`` whose ``arguments`` is a JSON string is parsed; ``tokens`` given as a list or
    JSON string becomes a ``torch`` tensor when torch is installed; a string ``action_id`` an int.
    """
    data = dict(action_data)
    if data.get("type") == "call_tool" and isinstance(data.get("arguments"), str):
        try:
            data["arguments"] = orjson.loads(data["arguments"])
        except orjson.JSONDecodeError:
            pass
        found = _mcp_action(data, action_cls)
        if found is not None:
            return found
    if isinstance(data.get("tokens"), (list, str)):
        data["tokens"] = _tokens(data["tokens"])
    if isinstance(data.get("action_id"), str):
        try:
            data["action_id"] = int(data["action_id"])
        except ValueError:
            pass
    return deserialize_action(data, action_cls)


def _tokens(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            value = []
    if not isinstance(value, list):
        return value
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:
        return value
    return torch.tensor(value, dtype=torch.long)


def serialize_observation(observation: Any) -> dict[str, Any]:
    """The 0.10 payload: ``metadata`` stays inside ``observation`` and is copied to the top when non-empty.

    (Our own server sends :func:`observation_to_wire`'s, which leaves an empty ``metadata`` out.)
    """
    if isinstance(observation, BaseModel):
        fields = observation.model_dump(exclude={"reward", "done"})
    else:
        fields = to_jsonable(observation)
        fields = dict(fields) if isinstance(fields, dict) else {"value": fields}
    reward = getattr(observation, "reward", None) if not isinstance(observation, dict) else fields.get("reward")
    done = getattr(observation, "done", False) if not isinstance(observation, dict) else fields.get("done", False)
    fields.pop("reward", None)
    fields.pop("done", None)
    metadata = fields.get("metadata")
    result: dict[str, Any] = {"observation": fields, "reward": reward, "done": bool(done)}
    if metadata:
        result["metadata"] = metadata
    return result
