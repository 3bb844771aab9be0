"""View models of the /web page: the action/reset editors, observation, state and notices."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from starlette.requests import Request

from webui.forms import Bound, Node, attach_errors, bind, parse_form, strip_invalid
from webui.obs_view import View, build_view, resolve_pointer, schema_at
from webui.templating import url
from webui.web_sessions import Record, WebSession

STATE_INDEX = -1
SUMMARY_CHARS = 100


@dataclass
class Notice:
    """A banner: ``level`` is "error" or "info"; ``reload`` links to a fresh session."""

    level: str
    title: str
    message: str = ""
    code: str | None = None
    reload: str | None = None


@dataclass
class Editor:
    """The action (or reset) editor: generated form (``bound``) or raw JSON text, plus loose errors."""

    mode: str
    bound: Bound | None = None
    raw: str = ""
    loose: list[str] = field(default_factory=list)


@dataclass
class ObsPanel:
    record: Record | None
    view: View | None
    metadata: View | None
    notice: Notice | None
    latest: bool
    latest_index: int | None
    more_url: Callable[[str], str]


@dataclass
class StatePanel:
    view: View | None
    notice: Notice | None
    more_url: Callable[[str], str]


def form_lists(form: Any) -> dict[str, list[str]]:
    """A submitted form as ``name -> [values]`` (uploads ignored)."""
    out: dict[str, list[str]] = {}
    for key, value in form.multi_items():
        if isinstance(value, str):
            out.setdefault(key, []).append(value)
    return out


def _one(form: Mapping[str, list[str]], name: str, default: str = "") -> str:
    values = form.get(name) or [default]
    return values[-1]


def read_action(node: Node, form: Mapping[str, list[str]]) -> tuple[Editor, dict[str, Any] | None]:
    """The action a step form submitted, or ``None`` with an editor showing why it is unusable."""
    if _one(form, "mode", "form") == "raw":
        text = _one(form, "raw_json")
        value, problem = _json_object(text)
        return Editor("raw", raw=text, loose=[problem] if problem else []), value
    return _read_fields(node, form, "a")


def read_reset(node: Node, form: Mapping[str, list[str]]) -> tuple[Editor, dict[str, Any] | None]:
    """Reset keyword arguments from the reset form (``None`` when some input cannot be read)."""
    return _read_fields(node, form, "r")


def _read_fields(node: Node, form: Mapping[str, list[str]], prefix: str) -> tuple[Editor, dict[str, Any] | None]:
    value, errors = parse_form(node, form, prefix=prefix)
    bound = bind(node, value, prefix=prefix)
    if errors:
        return Editor("form", bound, loose=attach_errors(bound, errors)), None
    if not isinstance(value, dict):
        return Editor("form", bound, loose=["The value must be an object"]), None
    return Editor("form", bound), value


def _json_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(text or "{}")
    except ValueError as exc:
        return None, f"Invalid JSON: {exc}"
    if not isinstance(value, dict):
        return None, "The action must be a JSON object"
    return value, None


def payload_schema(obs_schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """A schema for ``{"observation": <obs_schema>, ...}`` (its ``$defs`` kept at the root), so a
    JSON pointer into a step's values finds its schema with ``schema_at``."""
    if not isinstance(obs_schema, dict):
        return None
    return {"type": "object", "properties": {"observation": obs_schema}, "$defs": obs_schema.get("$defs") or {}}


def field_help(schema: Mapping[str, Any]) -> dict[str, str]:
    """Descriptions of an object schema's top-level properties (follows a root ``$ref``)."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        schema = (schema.get("$defs") or {}).get(ref.rsplit("/", 1)[-1], {})
    props = schema.get("properties")
    if not isinstance(props, dict):
        return {}
    return {k: v["description"] for k, v in props.items() if isinstance(v, dict) and isinstance(v.get("description"), str)}


def _loc_text(err: Mapping[str, Any]) -> str:
    loc = ".".join(str(p) for p in err.get("loc") or ())
    msg = str(err.get("msg") or err.get("message") or "invalid value")
    return f"{loc}: {msg}" if loc else msg


@dataclass
class PageViews:
    """Builds the page's view models from the action and reset form trees."""

    action_node: Node
    reset_node: Node
    obs_help: dict[str, str] = field(default_factory=dict)
    obs_schema: dict[str, Any] | None = None
    state_schema: dict[str, Any] | None = None

    def payload_schema(self) -> dict[str, Any] | None:
        """The schema of a kept payload (``{"observation": ..., "metadata": ...}``)."""
        return payload_schema(self.obs_schema)

    def fresh_editor(self) -> Editor:
        return Editor("form", bind(self.action_node, prefix="a"))

    def fresh_reset(self) -> Editor:
        return Editor("form", bind(self.reset_node, prefix="r"))

    def editor_errors(self, editor: Editor, action: dict[str, Any], errors: list[dict[str, Any]]) -> Editor:
        """The editor re-rendered with the server's validation errors next to their fields."""
        if editor.mode == "raw":
            return Editor("raw", raw=editor.raw, loose=[_loc_text(e) for e in errors] or ["Invalid action"])
        bound = bind(self.action_node, action, prefix="a")
        return Editor("form", bound, loose=attach_errors(bound, errors))

    def reset_errors(self, editor: Editor, kwargs: dict[str, Any], errors: list[dict[str, Any]]) -> Editor:
        bound = bind(self.reset_node, kwargs, prefix="r")
        return Editor("form", bound, loose=attach_errors(bound, errors))

    def switch_editor(self, form: Mapping[str, list[str]], to: str) -> Editor:
        """Form -> raw JSON (typed values) or raw JSON -> form (prefilled); bad JSON stays raw."""
        if _one(form, "mode", "form") == "raw":
            text = _one(form, "raw_json")
            if to == "raw":
                return Editor("raw", raw=text)
            value, problem = _json_object(text)
            if problem:
                return Editor("raw", raw=text, loose=[problem + " (fix it to switch back to the form)"])
            return Editor("form", bind(self.action_node, value, prefix="a"))
        value, _ = parse_form(self.action_node, form, prefix="a")
        if to == "raw":
            return Editor("raw", raw=json.dumps(strip_invalid(value), indent=2, ensure_ascii=False))
        return Editor("form", bind(self.action_node, value, prefix="a"))

    @staticmethod
    def more_url(request: Request, sid: str, index: int) -> Callable[[str], str]:
        base = url(request, "web_value", sid=sid, index=index)
        return lambda path: f"{base}?path={quote(path, safe='')}"

    def observation(self, request: Request, ws: WebSession, record: Record | None,
                    notice: Notice | None) -> ObsPanel:
        latest = ws.latest
        record = record or latest
        payload = record.payload if record is not None else None
        view = meta = None
        if payload is not None:
            obs = payload.get("observation")
            top = payload.get("metadata")
            if isinstance(obs, dict) and "metadata" in obs and (not obs["metadata"] or obs["metadata"] == top):
                obs = {k: v for k, v in obs.items() if k != "metadata"}  # the wire nests it too: shown once
            schema = schema_at(self.payload_schema(), "/observation") if isinstance(obs, dict) else None
            view = build_view(obs if isinstance(obs, dict) else {"value": obs}, "/observation", schema=schema)
            if top:
                meta = build_view(top, "/metadata")
        more = self.more_url(request, ws.id, record.index if record else 0)
        return ObsPanel(record, view, meta, notice, record is latest,
                        latest.index if latest else None, more)

    def state(self, request: Request, ws: WebSession, data: Any, notice: Notice | None) -> StatePanel:
        ws.last_state = data
        view = build_view(data, "", schema=self.state_schema) if data is not None else None
        return StatePanel(view, notice, self.more_url(request, ws.id, STATE_INDEX))

    def full_value(self, ws: WebSession | None, index: int, path: str) -> View | None:
        """The whole value at ``path`` of a kept observation (or of the last state), for "show all"."""
        if ws is None:
            return None
        if index == STATE_INDEX:
            source, schema = ws.last_state, self.state_schema
        else:
            record = ws.find(index)
            source, schema = (record.payload if record is not None else None), self.payload_schema()
        if source is None:
            return None
        try:
            return build_view(resolve_pointer(source, path), path, full=True, schema=schema_at(schema, path))
        except KeyError:
            return None

    @staticmethod
    def summarize(action: Any) -> str:
        text = json.dumps(action, ensure_ascii=False, separators=(", ", ": "), default=str)
        return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
