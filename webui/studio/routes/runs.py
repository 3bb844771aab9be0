"""Runs: the list (training runs and labelled recordings, each with a trend), a run's dashboard
(charts and a table per training step), a step's groups (worst first) and one group's rollouts
side by side (best first). Every handler is a plain ``def``: FastAPI runs it, database reads
included, in its thread pool, never on the event loop."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from openenv.recording import run_compare
from openenv.recording import run_queries as rq
from openenv.recording.errors import RecordingError
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.rendering import page
from webui.studio.run_charts import histogram_chart, reasons_chart, sparkline, step_chart
from webui.studio.state import studio_of
from webui.templating import url

__all__ = ["router"]

router = APIRouter()


def _scope(request: Request) -> rq.RunScope:
    key = (request.query_params.get("run") or "").strip()
    if not key:
        raise StudioError("Which run? (?run=<training run id> or ?run=label:<label>)")
    return rq.RunScope(key)


def _int(request: Request, name: str, *, required: bool = False) -> int | None:
    raw = (request.query_params.get(name) or "").strip()
    if not raw:
        if required:
            raise StudioError(f"missing ?{name}= (a whole number)")
        return None
    if not raw.lstrip("-").isdigit() or len(raw) > 18:
        raise StudioError(f"?{name}= must be a whole number, not {raw[:30]!r}")
    return int(raw)


def _info(conn: Any, scope: rq.RunScope) -> rq.RunInfo:
    try:
        return rq.run_info(conn, scope)
    except RecordingError as exc:
        raise NotFoundError(f"There is no run {scope.key!r} (it may have been deleted).", what="run") from exc


def _links(request: Request, scope: rq.RunScope) -> dict[str, Any]:
    base = url(request, "runs_page")

    bases: dict[str, str] = {}  # a route's path, looked up once (hundreds of step links per page)
    run = urlencode({"run": scope.key})

    def link(name: str, **params: Any) -> str:
        if name not in bases:
            bases[name] = f"{url(request, name)}?{run}"
        extra = {k: v for k, v in params.items() if v is not None}
        return f"{bases[name]}&{urlencode(extra)}" if extra else bases[name]

    episodes = url(request, "episodes_page") + "?" + urlencode(
        {"run": scope.key} if scope.training else {"label": scope.label} if scope.label is not None
        else {"source": scope.source})
    return {"runs_url": base, "link": link, "episodes_url": episodes,
            "xlabel": "training step" if scope.training else "episode slice"}


@router.get("/runs", name="runs_page")
def runs_page(request: Request) -> Response:
    store = studio_of(request).store
    with store.engine.connect() as conn:
        runs = rq.list_runs(conn)
    return page(request, "studio/runs.html", nav="runs", runs=runs)


@router.get("/runs/trend", name="run_trend")
def run_trend(request: Request) -> Response:
    """A run's row cells filled in after the list: episodes, last mean reward, a sparkline."""
    scope = _scope(request)
    with studio_of(request).store.engine.connect() as conn:
        n, means = rq.run_trend(conn, scope)
    return page(request, "studio/_run_trend.html", n=n, last=means[-1] if means else None, line=sparkline(means),
                key=scope.key)


@router.get("/runs/dashboard", name="run_dashboard")
def run_dashboard(request: Request) -> Response:
    scope = _scope(request)
    with studio_of(request).store.engine.connect() as conn:
        info = _info(conn, scope)
        steps = rq.run_steps(conn, scope)
        others = [r for r in rq.list_runs(conn) if r.key != scope.key]
    links = _links(request, scope)

    def step_url(x: int) -> str:
        return links["link"]("run_step", step=x)

    tokens = any(s.tokens is not None for s in steps)
    metrics = ("reward", "success", "length", "zero_spread", *(("tokens",) if tokens else ()))
    charts = {m: step_chart(steps, step_url, metric=m, xlabel=links["xlabel"]) for m in metrics}
    charts["reasons"] = reasons_chart(steps, step_url, xlabel=links["xlabel"])
    return page(request, "studio/run.html", nav="runs", info=info, steps=steps, charts=charts, scope=scope,
                n=sum(s.n for s in steps), others=others, tokens=tokens,
                total_tokens=sum(s.tokens or 0 for s in steps), **links)


@router.get("/runs/compare", name="run_compare")
def run_compare_page(request: Request) -> Response:
    """Two runs: their per-step means side by side, reward distributions, and per seed (pass@k)."""
    keys = [(request.query_params.get(k) or "").strip() for k in ("a", "b")]
    if not all(keys):
        raise StudioError("Choose two runs (?a=<run>&b=<run>; a run is a training run id or label:<label>).")
    a, b = rq.RunScope(keys[0]), rq.RunScope(keys[1])
    with studio_of(request).store.engine.connect() as conn:
        info_a, info_b = _info(conn, a), _info(conn, b)
        steps_a, steps_b = rq.run_steps(conn, a), rq.run_steps(conn, b)
        seeds = run_compare.compare_seeds(conn, a, b)
        hist = run_compare.reward_histograms(conn, a, b)
    by_x = {}
    for side, steps in (("a", steps_a), ("b", steps_b)):
        for s in steps:
            by_x.setdefault(s.x, {})[side] = s
    shared = [r for r in seeds if r.a is not None and r.b is not None]
    summary = {side: {"pass": sum(getattr(r, side).pass_at_n for r in shared) / len(shared) if shared else None,
                      "mean": _mean([getattr(r, side).mean for r in shared])} for side in ("a", "b")}
    return page(request, "studio/run_compare.html", nav="runs", a=info_a, b=info_b, rows=sorted(by_x.items()),
                seeds=seeds[:500], more_seeds=max(0, len(seeds) - 500), shared=len(shared), summary=summary,
                histogram=histogram_chart(hist), runs_url=url(request, "runs_page"))


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


@router.get("/runs/step", name="run_step")
def run_step(request: Request) -> Response:
    scope = _scope(request)
    step = _int(request, "step", required=True)
    with studio_of(request).store.engine.connect() as conn:
        info = _info(conn, scope)
        groups = rq.step_groups(conn, scope, step)
        stats = next((s for s in rq.run_steps(conn, scope) if s.x == step), None) if not scope.training else None
    return page(request, "studio/run_step.html", nav="runs", info=info, scope=scope, step=step, groups=groups,
                stats=stats, **_links(request, scope))


@router.get("/runs/group", name="run_group")
def run_group(request: Request) -> Response:
    scope = _scope(request)
    group = (request.query_params.get("group") or "").strip()
    if not group:
        raise StudioError("Which group? (?group=<group id>, or a seed for a labelled run)")
    step = _int(request, "step")
    try:
        with studio_of(request).store.engine.connect() as conn:
            info = _info(conn, scope)
            episodes = rq.group_episodes(conn, scope, group, step=step)
    except RecordingError as exc:
        if exc.code == "NO_RUN":
            raise
        raise StudioError(exc.message) from exc
    if not episodes:
        raise NotFoundError(f"Run {info.name} has no group {group!r}" + (f" at step {step}" if step is not None else ""),
                            what="group")
    rewards = [e.trainer_reward if e.trainer_reward is not None else e.total_reward for e in episodes]
    scored = [r for r in rewards if r is not None]
    return page(request, "studio/run_group.html", nav="runs", info=info, scope=scope, group=group, step=step,
                episodes=episodes, rewards=rewards, spread=(max(scored) - min(scored)) if scored else None,
                mean=sum(scored) / len(scored) if scored else None, **_links(request, scope))
