"""The studio's model runs: saved model endpoints, rollouts started from the "Run a model" page,
and takeovers of a Play session by a model.

Endpoints (name, base URL, model, sampling, the *name* of an environment variable holding the
key) are saved in ``<data_dir>/model_endpoints.json``; a key typed into the page is kept only in
this process's memory (``Endpoints.keys``), never written anywhere. Each run's summary (label,
env, model, per-episode results) is written to ``<data_dir>/model_runs/<id>.json`` when it ends,
so runs can be compared after a restart; the episodes themselves are in the episode store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from openenv.core.errors import OpenEnvError
from openenv.recording import EpisodeStore
from openenv.rollout import ChatClient, ModelEndpoint, Rollout, RolloutSettings
from openenv.rollout.errors import InvalidReplyError, ModelError, RolloutError
from openenv.rollout.loop import play_turn
from openenv.rollout.policy import Policy
from openenv.rollout.results import summarise
from openenv.rollout.spec import EnvSpec, fetch_env_spec
from webui.studio.errors import NotFoundError, StudioError
from webui.studio.play import session_call

__all__ = ["EndpointConfig", "Endpoints", "ModelRun", "ModelRuns", "Takeover", "Takeovers"]

log = logging.getLogger("openenv.studio")
_NAME = re.compile(r"^[\w .:@/-]{1,80}$")
_ENV_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_RUNS_KEPT = 50
MAX_EPISODES = 10_000
MAX_CONCURRENCY = 64


class ModelRunError(StudioError):
    code = "MODEL_RUN_ERROR"
    status = 422


@dataclass
class EndpointConfig:
    """A saved model endpoint; ``api_key_env`` names an environment variable (the key is never saved)."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0


ENDPOINT_BOUNDS = {"temperature": (0.0, 2.0), "max_tokens": (1, 1_000_000), "timeout_s": (0.1, 3600.0)}


def endpoint_field_errors(config: EndpointConfig) -> dict[str, str]:
    """Field name -> message for each sampling setting outside what an OpenAI-compatible server takes."""
    errors = {}
    for name, (lo, hi) in ENDPOINT_BOUNDS.items():
        value = getattr(config, name)
        if value is not None and not lo <= value <= hi:
            errors[name] = f"{name.replace('_', ' ')} must be between {lo} and {hi}"
    return errors


class Endpoints:
    """Saved endpoints (a JSON file in the data dir) and keys typed in the page (memory only)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "model_endpoints.json"
        self.keys: dict[str, str] = {}

    def list(self) -> list[EndpointConfig]:
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return []
        out = []
        for item in raw if isinstance(raw, list) else []:
            try:
                out.append(EndpointConfig(**{k: v for k, v in item.items() if k in EndpointConfig.__dataclass_fields__}))
            except TypeError:
                continue
        return out

    def get(self, name: str) -> EndpointConfig:
        for e in self.list():
            if e.name == name:
                return e
        raise NotFoundError(f"There is no saved model endpoint {name!r}.", what="model endpoint")

    def delete(self, name: str) -> None:
        """Forget a saved endpoint and its typed key (runs already started keep theirs)."""
        self.get(name)
        self._write([e for e in self.list() if e.name != name])
        self.keys.pop(name, None)

    def _write(self, items: list[EndpointConfig]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps([asdict(e) for e in items], indent=2))
        os.replace(tmp, self.path)

    def save(self, config: EndpointConfig, api_key: str | None = None, *, replaces: str | None = None) -> EndpointConfig:
        """Validate and save ``config`` (replacing one of the same name, or the one named
        ``replaces`` when it is renamed in an edit); ``api_key`` stays in memory."""
        if not _NAME.match(config.name or ""):
            raise ModelRunError("An endpoint name is 1-80 letters, digits, spaces or . : @ / - _")
        if not config.base_url.startswith(("http://", "https://")):
            raise ModelRunError("The model URL must start with http:// or https://")
        if not config.model.strip():
            raise ModelRunError("Name the model to ask (e.g. the name vLLM serves).")
        if config.api_key_env and not _ENV_VAR.match(config.api_key_env):
            raise ModelRunError(f"{config.api_key_env!r} is not an environment variable name.")
        problems = endpoint_field_errors(config)
        if problems:
            raise ModelRunError("; ".join(problems.values()))
        current = self.list()
        if replaces is None and any(e.name == config.name for e in current):
            raise ModelRunError(f"An endpoint named {config.name!r} exists already: edit it, or choose another name.")
        if replaces and replaces != config.name:
            if not any(e.name == replaces for e in current):
                raise NotFoundError(f"There is no saved model endpoint {replaces!r}.", what="model endpoint")
            if any(e.name == config.name for e in current):
                raise ModelRunError(f"An endpoint named {config.name!r} exists already; choose another name.")
            if replaces in self.keys and not api_key:
                self.keys[config.name] = self.keys[replaces]
            self.keys.pop(replaces, None)
        gone = {config.name, replaces or config.name}
        pos = next((i for i, e in enumerate(current) if e.name in gone), len(current))
        items = [e for e in current if e.name not in gone]
        items.insert(min(pos, len(items)), config)  # an edited endpoint keeps its place
        self._write(items)
        if api_key:
            self.keys[config.name] = api_key
        return config

    def endpoint(self, name: str) -> ModelEndpoint:
        """The endpoint to call: the typed key, else the named environment variable's value."""
        c = self.get(name)
        key = self.keys.get(name) or (os.environ.get(c.api_key_env) if c.api_key_env else None)
        if c.api_key_env and not key:
            raise ModelRunError(f"The environment variable {c.api_key_env} is not set in the studio's "
                                "environment; type the key instead (it is kept in memory only).")  # fmt: skip
        return ModelEndpoint(c.base_url, model=c.model, api_key=key, temperature=c.temperature,
                             max_tokens=c.max_tokens, timeout_s=c.timeout_s)  # fmt: skip


@dataclass(eq=False)
class ModelRun:
    """One rollout started from the studio (live while its task runs)."""

    id: str
    env_name: str
    env_url: str
    endpoint_name: str
    model: str
    label: str
    settings: dict[str, Any]
    started_at: float = field(default_factory=time.time)
    status: str = "running"  # running, finished, failed, cancelled
    error: str | None = None
    rollout: Rollout | None = None
    task: asyncio.Task[Any] | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    ended_at: float | None = None
    cancel_requested: bool = False

    def episodes(self) -> list[dict[str, Any]]:
        """Per-episode results, live from the rollout while it runs."""
        if self.rollout is not None:
            return [r.to_dict() for r in self.rollout.results]
        return self.results

    def current_summary(self) -> dict[str, Any] | None:
        """The statistics of the episodes that ran to their end (a cancelled one is left out)."""
        if self.summary is not None:
            return self.summary
        return _summary(self.rollout) if self.rollout is not None else None

    def counts(self) -> dict[str, int]:
        """Episodes by outcome: ``finished`` (ran to done or max steps), ``failed`` (ended by an
        error), ``cancelled`` (stopped mid-episode), ``skipped`` (never started), ``running``,
        ``pending``; and ``total``."""
        out = dict.fromkeys(("finished", "failed", "cancelled", "skipped", "running", "pending"), 0)
        episodes = self.episodes()
        for e in episodes:
            out[episode_outcome(e)] += 1
        out["total"] = len(episodes)
        return out

    def failure_reason(self) -> str | None:
        """Why the run failed: its own error, else the commonest error of its episodes."""
        if self.error:
            return self.error
        errors = [e.get("error") for e in self.episodes() if e.get("error")]
        if not errors:
            return None
        common = max(set(errors), key=errors.count)
        return f"{common} ({errors.count(common)} of {len(self.episodes())} episodes)"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "env_name": self.env_name, "env_url": self.env_url, "endpoint_name": self.endpoint_name,
                "model": self.model, "label": self.label, "settings": self.settings, "started_at": self.started_at,
                "ended_at": self.ended_at, "status": self.status, "error": self.error,
                "summary": self.current_summary(), "results": self.episodes()}  # fmt: skip


class ModelRuns:
    """Runs of this studio (the last ``MAX_RUNS_KEPT`` in memory, every finished one on disk)."""

    def __init__(self, store: EpisodeStore, data_dir: Path) -> None:
        self.store = store
        self.folder = data_dir / "model_runs"
        self._live: dict[str, ModelRun] = {}

    async def start(self, *, env_name: str, env_url: str, endpoint_name: str, endpoint: ModelEndpoint,
                    settings: RolloutSettings, env_headers: dict[str, str] | None = None) -> ModelRun:  # fmt: skip
        if not 1 <= settings.episodes <= MAX_EPISODES:
            raise ModelRunError(f"Episodes must be between 1 and {MAX_EPISODES}.")
        if not 1 <= settings.concurrency <= MAX_CONCURRENCY:
            raise ModelRunError(f"Concurrency must be between 1 and {MAX_CONCURRENCY}.")
        rollout = Rollout(env_url, endpoint, self.store, settings, info={"studio": {"env": env_name}},
                          env_headers=env_headers)
        try:
            await rollout.prepare()
        except OpenEnvError as exc:
            raise ModelRunError(f"Could not read the environment: {exc.message}") from exc
        run = ModelRun(id=rollout.id, env_name=env_name, env_url=env_url, endpoint_name=endpoint_name,
                       model=endpoint.model, label=rollout.label, rollout=rollout,
                       settings={"episodes": settings.episodes, "concurrency": settings.concurrency,
                                 "max_steps": settings.max_steps, "seed": settings.seed,
                                 "samples_per_seed": settings.samples_per_seed,
                                 "temperature": endpoint.temperature})  # fmt: skip
        self._live[run.id] = run
        run.task = asyncio.create_task(self._run(run))
        while len(self._live) > MAX_RUNS_KEPT:
            oldest = next(iter(self._live.values()))
            if oldest.status == "running":
                break
            self._live.pop(oldest.id)
        return run

    async def _run(self, run: ModelRun) -> None:
        assert run.rollout is not None
        try:
            run.summary = await run.rollout.run()
            run.status = "finished"
        except asyncio.CancelledError:
            run.status = "cancelled"
        except OpenEnvError as exc:
            run.status, run.error = "failed", str(exc)
        except Exception as exc:  # noqa: BLE001 - a run never takes the studio down
            log.exception("model run %s failed", run.id)
            run.status, run.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            run.ended_at = time.time()
            run.results = [r.to_dict() for r in run.rollout.results]
            run.summary = _summary(run.rollout)
            if run.cancel_requested:
                run.status = "cancelled"
            elif run.status == "finished" and run.results and not any(
                    episode_outcome(e) == "finished" for e in run.results):
                run.status = "failed"  # every episode failed or was skipped: not a good run
                run.error = run.error or f"every episode failed: {run.failure_reason()}"
            self._save(run)

    def _save(self, run: ModelRun) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / f"{run.id}.tmp"
            tmp.write_text(json.dumps(run.to_json(), default=str))
            os.replace(tmp, self.folder / f"{run.id}.json")
        except OSError:
            log.exception("could not save model run %s", run.id)

    def get(self, run_id: str) -> ModelRun:
        run = self._live.get(run_id)
        if run is not None:
            return run
        if re.fullmatch(r"[0-9a-f]{1,32}", run_id):
            try:
                data = json.loads((self.folder / f"{run_id}.json").read_text())
            except (OSError, ValueError):
                data = None
            if isinstance(data, dict):
                return _from_json(data)
        raise NotFoundError(f"There is no model run {run_id!r}.", what="model run")

    def listed(self) -> list[ModelRun]:
        """Every run, newest first (live ones and those saved by earlier studio processes)."""
        runs = dict(self._live)
        if self.folder.is_dir():
            for path in sorted(self.folder.glob("*.json"))[-500:]:
                if path.stem not in runs:
                    try:
                        runs[path.stem] = _from_json(json.loads(path.read_text()))
                    except (OSError, ValueError, TypeError, KeyError):
                        continue
        return sorted(runs.values(), key=lambda r: r.started_at, reverse=True)

    async def cancel(self, run_id: str) -> ModelRun:
        """Stop a run between steps (``Rollout.stop``); returns once it has ended."""
        run = self.get(run_id)
        if run.task is not None and not run.task.done() and run.rollout is not None:
            run.cancel_requested = True
            run.rollout.stop()
            await asyncio.gather(run.task, return_exceptions=True)
            run.status = "cancelled"
            self._save(run)
        return run

    async def close(self) -> None:
        for run in list(self._live.values()):
            if run.task is not None and not run.task.done():
                run.task.cancel()
                await asyncio.gather(run.task, return_exceptions=True)


def episode_outcome(e: dict[str, Any]) -> str:
    """``finished``, ``failed``, ``cancelled``, ``skipped``, ``running`` or ``pending`` for one
    episode's result (the rollout marks a cancelled or failed episode "finished" too)."""
    status = e.get("status")
    if status != "finished":
        return status if status in ("skipped", "running", "pending") else "pending"
    if e.get("end_reason") == "cancelled":
        return "cancelled"
    return "failed" if e.get("error") else "finished"


def _summary(rollout: Rollout) -> dict[str, Any]:
    """The rollout's summary without its cancelled partial episodes."""
    kept = [r for r in rollout.results if r.end_reason != "cancelled"]
    out = summarise(kept, wall_s=rollout.wall_s)
    if rollout.capacity_note:
        out["note"] = rollout.capacity_note
    return out


def _from_json(data: dict[str, Any]) -> ModelRun:
    keys = ("id", "env_name", "env_url", "endpoint_name", "model", "label", "settings", "started_at", "status",
            "error", "results", "summary", "ended_at")  # fmt: skip
    return ModelRun(**{k: data.get(k) for k in keys})


def compare_by_seed(a: ModelRun, b: ModelRun) -> list[dict[str, Any]]:
    """Rows ``{"seed", "a": [results], "b": [results]}`` for every seed either run played."""
    rows: dict[Any, dict[str, Any]] = {}
    for side, run in (("a", a), ("b", b)):
        for r in run.episodes():
            row = rows.setdefault(r["seed"], {"seed": r["seed"], "a": [], "b": []})
            row[side].append(r)
    return sorted(rows.values(), key=lambda r: (r["seed"] is None, r["seed"] if r["seed"] is not None else 0))


@dataclass(eq=False)
class Takeover:
    """A model playing the next ``steps`` steps of a Play session (``status``: running, finished,
    taken back, failed)."""

    session_id: str
    endpoint_name: str
    model: str
    steps: int
    taken: int = 0
    status: str = "running"
    error: str | None = None
    task: asyncio.Task[Any] | None = None
    phase: str = "idle"  # model: waiting for the model (safe to cancel); env: stepping
    stop: bool = False

    def mark(self, phase: str) -> None:
        self.phase = phase
        if self.stop and phase == "model" and self.task is not None:
            self.task.cancel()  # taken back meanwhile: do not ask the model again


class Takeovers:
    """At most one takeover per Play session; "Take back" cancels it between steps."""

    def __init__(self) -> None:
        self._items: dict[str, Takeover] = {}
        self._specs: dict[str, EnvSpec] = {}

    def get(self, session_id: str) -> Takeover | None:
        return self._items.get(session_id)

    async def start(self, ps: Any, endpoint_name: str, endpoint: ModelEndpoint, steps: int) -> Takeover:
        current = self._items.get(ps.id)
        if current is not None and current.status == "running":
            raise ModelRunError("The model is already playing this session; take back first.")
        if ps.episode_id is None:
            raise ModelRunError("Press Reset first: the model plays from the current observation.")
        ps.check("model")  # not on a done episode, nor a closed session
        if not 1 <= steps <= 1000:
            raise ModelRunError("The model can play 1 to 1000 steps at a time.")
        spec = self._specs.get(ps.base_url)
        if spec is None:
            try:
                spec = self._specs[ps.base_url] = await fetch_env_spec(ps.base_url, headers=ps.headers)
            except RolloutError as exc:
                raise ModelRunError(exc.message) from exc
        async with ps.lock:  # a human step in flight ends first; none starts while the model plays
            ps.check("model")
            t = Takeover(session_id=ps.id, endpoint_name=endpoint_name, model=endpoint.model, steps=steps)
            self._items[ps.id] = t
            ps.model_playing = True
        t.task = asyncio.create_task(self._play(t, ps, endpoint, Policy(spec)))
        t.task.add_done_callback(lambda _: setattr(ps, "model_playing", False))  # even if cancelled before it ran
        return t

    async def _play(self, t: Takeover, ps: Any, endpoint: ModelEndpoint, policy: Policy) -> None:
        conv = policy.conversation()
        latest = ps.web.latest
        payload = (latest.payload or {}) if latest is not None else {}
        conv.observe(payload.get("observation"), payload.get("reward"), False, latest.index if latest is not None else 0)
        try:
            async with ChatClient(endpoint) as chat:
                while t.taken < t.steps and not t.stop and ps.closed is None:
                    async with session_call(ps):
                        started = time.perf_counter()
                        result = await play_turn(ps.client, conv, chat, phase=t.mark)
                        action = conv.last_action or {}
                        payload = {"observation": result.observation, "reward": result.reward,
                                   "done": bool(result.done), "metadata": getattr(result, "metadata", None) or None}
                        ps.web.record("model", action, payload, (time.perf_counter() - started) * 1000)
                    t.taken += 1
                    conv.observe(result.observation, result.reward, result.done, ps.client.step_index)
                    if result.done:
                        break
            t.status = "taken back" if t.stop else "finished"
        except asyncio.CancelledError:
            t.status = "taken back"
        except (InvalidReplyError, ModelError, OpenEnvError) as exc:
            t.status, t.error = "failed", str(exc)
        finally:
            ps.model_playing = False

    async def take_back(self, session_id: str) -> Takeover | None:
        """Stop the model between steps: a wait for the model is cancelled, a step being taken
        finishes (and is recorded and shown) first. Returns once the model has stopped."""
        t = self._items.get(session_id)
        if t is not None and t.task is not None and not t.task.done():
            t.stop = True
            if t.phase == "model":
                t.task.cancel()
            await asyncio.gather(t.task, return_exceptions=True)
        return t

    async def close(self) -> None:
        for sid in list(self._items):
            await self.take_back(sid)
