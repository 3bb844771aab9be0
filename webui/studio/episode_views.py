"""Episode pages' data: listing filters from a query string, the reward series, one step with
its neighbour window and its diff against the previous step."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import text

from openenv.recording import Diff, EpisodeFilter, EpisodeRecord, EpisodeStore, StepRecord, diff, run_queries
from openenv.recording.run_queries import FilterStats
from webui.env_views import payload_schema
from webui.obs_view import View, build_view, schema_at

__all__ = ["FILTER_FIELDS", "SORT_LABELS", "FilterStats", "ListingQuery", "filter_stats", "StepPanel", "distinct_values", "load_step_panel",
           "parse_listing", "reward_series"]

FILTER_FIELDS = ("env", "source", "label", "tag", "since", "until", "min_return", "max_return",
                 "min_length", "max_length", "finished", "run", "step", "group", "seed", "sort", "dir")
SORT_LABELS = {"started": "started", "return": "return", "length": "steps", "reward": "trainer reward",
               "advantage": "advantage", "step": "training step"}
INT_LIMIT = 2**63 - 1  # what every store's integer columns hold
SUMMARY_CHARS = 90


@dataclass
class ListingQuery:
    """The list page's filters as typed (``values``), parsed (``filters``) and their errors."""

    values: dict[str, str]
    filters: EpisodeFilter
    errors: dict[str, str] = field(default_factory=dict)
    cursor: str | None = None
    sort: str = "started"
    descending: bool = True

    def query_string(self, **extra: str) -> str:
        from urllib.parse import urlencode

        items = {k: v for k, v in self.values.items() if v}
        items.update({k: v for k, v in extra.items() if v})
        return urlencode(items)


def _date(text_value: str, *, end: bool) -> float:
    day = datetime.strptime(text_value, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    return day.timestamp() + (86400 if end else 0)


def parse_listing(query: Mapping[str, str]) -> ListingQuery:
    values = {k: (query.get(k) or "").strip() for k in FILTER_FIELDS}
    errors: dict[str, str] = {}
    kwargs: dict[str, Any] = {}
    for name in ("env", "source", "label", "tag"):
        if values[name]:
            kwargs[name] = values[name]
    for name, end in (("since", False), ("until", True)):
        if values[name]:
            try:
                kwargs[name] = _date(values[name], end=end)
            except ValueError:
                errors[name] = "a date like 2026-01-31"
    for name, conv in (("min_return", float), ("max_return", float), ("min_length", int), ("max_length", int),
                       ("step", int), ("seed", int)):
        if values[name]:
            kwargs[{"step": "train_step"}.get(name, name)] = _number(values[name], conv, name, errors)
    if values["run"]:
        kwargs["training_run_id"] = values["run"]
    if values["group"]:
        kwargs["group_id"] = values["group"]
    if values["finished"] in ("yes", "no"):
        kwargs["finished"] = values["finished"] == "yes"
    sort = values["sort"] or "started"
    if sort not in SORT_LABELS:
        errors["sort"] = f"one of {', '.join(SORT_LABELS)}"
        sort = "started"
    cursor = (query.get("cursor") or "").strip() or None
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    return ListingQuery(values, EpisodeFilter(**kwargs), errors, cursor, sort, values["dir"] != "asc")


def _number(raw: str, conv: type, name: str, errors: dict[str, str]) -> float | int | None:
    try:
        value = conv(raw)
    except ValueError:
        errors[name] = "a number" if conv is float else "a whole number"
        return None
    if conv is float and not math.isfinite(value):
        errors[name] = "a finite number"
        return None
    if conv is int and abs(value) > INT_LIMIT:
        errors[name] = f"a whole number between {-INT_LIMIT} and {INT_LIMIT}"
        return None
    return value


def distinct_values(store: EpisodeStore, column: str, limit: int = 200) -> list[str]:
    """Distinct ``env_name``/``source``/``label`` values, read from the (small) run table (the
    episode table's facet read, ``store.distinct_values``, walks every episode: 20-30 ms each at
    100,000 episodes)."""
    if column not in ("env_name", "source", "label"):
        raise ValueError(column)
    sql = text(f"SELECT DISTINCT {column} FROM env_run WHERE {column} IS NOT NULL ORDER BY {column} LIMIT :n")
    with store.engine.connect() as conn:
        return [r[0] for r in conn.execute(sql, {"n": limit})]


def filter_stats(store: EpisodeStore, filters: EpisodeFilter) -> FilterStats:
    """A count and the means over the matching episodes (a scan of what matches: load it after the list)."""
    with store.engine.connect() as conn:
        return run_queries.filter_stats(conn, filters)


def reward_series(store: EpisodeStore, episode_id: str) -> list[float | None]:
    """Every step's reward in order (index 0 is the reset), wherever the store keeps the step."""
    return store.load_rewards(episode_id)


def summarize(value: Any) -> str:
    if value is None:
        return "null"
    out = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return out if len(out) <= SUMMARY_CHARS else out[: SUMMARY_CHARS - 1] + "…"


@dataclass
class StepPanel:
    """The shown step, its views, its diff against the previous step, and the neighbour window."""

    step: StepRecord
    source: dict[str, Any]
    action: View | None
    observation: View
    metadata: View | None
    state: View | None
    diff: Diff | None
    window: list[StepRecord]
    last_index: int


def step_source(step: StepRecord) -> dict[str, Any]:
    return {"action": step.action, "observation": step.observation, "metadata": step.metadata,
            "state": step.state}


def recorded_schema(ep: EpisodeRecord) -> dict[str, Any] | None:
    """The step values' schema kept with the episode's run (the studio's Play keeps the env's
    observation schema in the run's info), for ``schema_at``."""
    info = ep.run.info if ep.run is not None and isinstance(ep.run.info, dict) else {}
    obs = info.get("observation_schema")
    return payload_schema(obs) if isinstance(obs, dict) else None


def load_step_panel(store: EpisodeStore, episode_id: str, index: int, last_index: int,
                    window: int, schema: dict[str, Any] | None = None) -> StepPanel | None:
    """Step ``index`` (clamped) with the previous one for the diff and ``window`` steps around it."""
    index = max(0, min(index, last_index))
    start = max(0, min(index - window // 2, last_index - window + 1))
    steps = store.load_steps(episode_id, start=start, limit=window)
    by_index = {s.index: s for s in steps}
    step = by_index.get(index)
    if step is None:
        found = store.load_steps(episode_id, start=index, limit=1)
        if not found:
            return None
        step = found[0]
    prev = by_index.get(step.index - 1)
    if prev is None and step.index > 0:
        prev_found = store.load_steps(episode_id, start=step.index - 1, limit=1)
        prev = prev_found[0] if prev_found else None
    obs = step.observation if isinstance(step.observation, dict) else {"value": step.observation}
    source = {**step_source(step), "observation": obs}
    return StepPanel(
        step=step,
        source=source,
        action=build_view(step.action, "/action") if step.action is not None else None,
        observation=build_view(obs, "/observation", schema=schema_at(schema, "/observation")
                               if isinstance(step.observation, dict) else None),
        metadata=build_view(step.metadata, "/metadata") if step.metadata else None,
        state=build_view(step.state, "/state") if step.state is not None else None,
        diff=diff(prev.observation, step.observation) if prev is not None else None,
        window=steps,
        last_index=last_index,
    )
