"""The store side of a recording client: one run, at most one open episode (``record`` in
``recorder.py`` wraps a client around it)."""

from __future__ import annotations

import time
from typing import Any

from pydantic_core import PydanticSerializationError

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from .env_info import EnvInfo
from .jsonable import to_jsonable
from .step_rows import make_step_row
from .store import EpisodeStore

_perf_counter, _time = time.perf_counter, time.time

__all__ = ["Recorder", "headers_of", "normalise_observation"]

_LIFTED_SET = frozenset(("reward", "done", "metadata"))


def normalise_observation(observation: Any) -> Any:
    """The observation as stored: its JSON form without the ``reward``/``done``/``metadata`` that
    the wire lifts out of it (they have their own columns), so typed and dict clients agree.

    Pydantic models use their own JSON serialisation (as on the wire); what even that cannot
    encode falls back to ``to_jsonable`` and its markers. Dicts are stored as they are.
    """
    dump = getattr(observation, "model_dump", None)
    if callable(dump) and not isinstance(observation, type):
        try:
            return dump(mode="json", exclude=_LIFTED_SET)
        except (PydanticSerializationError, TypeError, ValueError):
            value = to_jsonable(observation)
    elif isinstance(observation, dict):
        value = observation
    else:
        value = to_jsonable(observation)
    if isinstance(value, dict) and not _LIFTED_SET.isdisjoint(value):
        value = {k: v for k, v in value.items() if k not in _LIFTED_SET}
    return value


def _metadata(result: StepResult) -> dict[str, Any] | None:
    """The step's metadata: the result's, else the observation's (a 0.10 dict nests it there)."""
    meta = getattr(result, "metadata", None) or getattr(result.observation, "metadata", None)
    if not meta and isinstance(result.observation, dict):
        meta = result.observation.get("metadata")
    return meta or None


def headers_of(client: Any) -> dict[str, str] | None:
    """The headers a (sync or async) client sends to its server, for the env-info reads."""
    headers = getattr(client, "headers", None)
    if headers is None:
        headers = getattr(getattr(client, "_client", None), "headers", None)
    return dict(headers) if isinstance(headers, dict) and headers else None


def _provider_kind(runtime: Any) -> str | None:
    if runtime is None:
        return None
    return getattr(runtime, "kind", None) or type(runtime).__name__


class Recorder:
    """The store side of a recording client: one run, at most one open episode."""

    def __init__(
        self,
        client: Any,
        store: EpisodeStore,
        *,
        label: str | None,
        source: str,
        env_name: str | None,
        provider: str | None,
        image: str | None,
        info: dict[str, Any] | None,
        capture_state: bool,
        commit_every: int = 1,
    ) -> None:
        self.client = client
        self.store = store
        self.capture_state = capture_state
        self.commit_every = max(1, int(commit_every))
        self.pending: list[dict[str, Any]] = []
        self.run_id: str | None = None
        self.episode_id: str | None = None
        self.episode_bytes = b""
        self.index = 0
        self.training: dict[str, Any] | None = None  # training run tags of the episodes started next
        self.wire = self._wire_source(client)
        self._run_args = {
            "label": label,
            "source": source,
            "env_name": env_name,
            "provider": provider,
            "image": image,
            "info": info,
        }

    def _wire_source(self, client: Any) -> EnvClient | None:
        """The ``EnvClient`` whose ``last_exchange`` can be journaled as it is, when steps may take
        that path (journaled store, one commit per step, no state capture, stock ``step``)."""
        inner = getattr(client, "async_client", client)
        if not (isinstance(inner, EnvClient) and self.store.journaled and self.commit_every == 1):
            return None
        stock = type(inner).step is EnvClient.step and type(inner)._request is EnvClient._request
        return inner if stock and not self.capture_state else None

    def wire_ready(self) -> EnvClient | None:
        """Before a step: raise an error the store met (``EpisodeStore.check``: before the env moves,
        so no step is lost to it); then the wire source, cleared for the step, if this step can be
        journaled from the wire."""
        self.store.check()
        wire = self.wire
        if wire is None or self.episode_id is None:
            return None
        wire.last_exchange = None
        return wire

    def save_wire_step(self, wire: EnvClient, t0: float, action: Any, result: StepResult,
                       batch: list[tuple[Any, ...]] | None = None) -> None:  # fmt: skip
        """Make the step ``wire`` just took (sent at ``t0``, ``perf_counter``) durable: its wire
        texts with the reward and done it returned, or its row when the client has no exchange to
        show (or a reward that is not a number: the row path says why). ``batch``: the wire record
        is appended there instead, for the caller to journal with others (``journal_wires``)."""
        exchange = wire.last_exchange
        latency_ms = (_perf_counter() - t0) * 1000
        reward = result.reward
        if reward is not None and reward.__class__ is not float:
            try:
                reward = float(reward)
            except (TypeError, ValueError):
                exchange = None
        if exchange is None:
            self.save([self.step_row(self.payload(action), result, latency_ms, None)])
            return
        request, reply = exchange
        self.index += 1
        record = (self.episode_bytes, self.index, _time(), latency_ms, reward, bool(result.done), request,
                  reply if reply.__class__ is bytes else reply.encode())  # fmt: skip
        if batch is not None:
            batch.append(record)
        else:
            self.store.journal_wire(*record)

    @property
    def needs_env_info(self) -> bool:
        return self.run_id is None

    def open_run(self, env: EnvInfo) -> None:
        a = self._run_args
        inner = getattr(self.client, "async_client", self.client)
        runtime = getattr(inner, "_provider", None)
        name = a["env_name"] or env.name or type(inner).__name__
        self.run_id = self.store.create_run(
            env_name=name,
            env_version=env.version,
            base_url=getattr(self.client, "base_url", None),
            provider=a["provider"] or _provider_kind(runtime),
            image=a["image"] or getattr(runtime, "image", None),
            action_schema_hash=env.action_schema_hash,
            observation_schema_hash=env.observation_schema_hash,
            source=a["source"],
            label=a["label"],
            info=a["info"],
            journaled=self.journaled,
        )

    def on_reset(self, kwargs: dict[str, Any], result: StepResult, latency_ms: float, state: Any) -> None:
        assert self.run_id is not None
        self.flush()
        replaces = self.episode_id
        if replaces is not None and self.journaled:  # queued behind its steps: no wait for them
            self.store.journal_end(replaces, "reset")
            replaces = None
        self.episode_id = self.store.start_episode(
            self.run_id,
            replaces=replaces,
            reset_kwargs=kwargs,
            observation=normalise_observation(result.observation),
            reward=result.reward,
            done=result.done,
            metadata=_metadata(result),
            latency_ms=latency_ms,
            state=state,
            journaled=self.journaled,
            training=self.training,
        )
        self.index = 0
        self.episode_bytes = self.episode_id.encode()

    def start_without_reset(self) -> None:
        """Open an episode at a step taken with no reset before it (0.10 steps a fresh session);
        its step 0 holds no observation and its ``reset_kwargs`` are ``None``."""
        assert self.run_id is not None
        self.flush()
        self.episode_id = self.store.start_episode(self.run_id, observation=None, reset=False,
                                                   journaled=self.journaled, training=self.training)  # fmt: skip
        self.index = 0
        self.episode_bytes = self.episode_id.encode()

    def first_step(self, payload: Any, result: StepResult, latency_ms: float, state: Any) -> None:
        """Record a step taken with no episode open: the episode starts without a reset, this is step 1."""
        self.start_without_reset()
        row = self.step_row(payload, result, latency_ms, state)
        rows = self.hold(row) if row is not None else []
        if rows:
            self.save(rows)

    def payload(self, action: Any) -> Any:
        return self.client._step_payload(action) if self.episode_id is not None else None

    def step_row(
        self, payload: Any, result: StepResult, latency_ms: float, state: Any
    ) -> dict[str, Any] | None:
        """The store row of a step just taken (``None`` outside an episode)."""
        if self.episode_id is None:
            return None
        self.index += 1
        observation = normalise_observation(result.observation)
        return make_step_row(self.episode_id, self.index, payload, observation, result.reward, result.done,
                             _metadata(result), latency_ms, time.time(), state)  # fmt: skip

    def hold(self, row: dict[str, Any]) -> list[dict[str, Any]]:
        """The rows to commit now: ``[row]``, or with ``commit_every > 1`` a full batch or none."""
        if self.commit_every == 1:
            return [row]
        self.pending.append(row)
        if len(self.pending) < self.commit_every and not row["done"]:
            return []
        rows, self.pending = self.pending, []
        return rows

    @property
    def journaled(self) -> bool:
        """Steps go through the store's journal (SQLite, one commit per step asked for)."""
        return self.commit_every == 1 and self.store.journaled

    def save(self, rows: list[dict[str, Any]]) -> None:
        """Make ``rows`` durable before ``step()`` returns: journaled, or committed."""
        if self.journaled:
            self.store.journal_steps(rows)
        else:
            self.store.append_steps(rows)

    def flush(self) -> None:
        """Commit held steps (episode boundaries and close)."""
        if self.pending:
            rows, self.pending = self.pending, []
            self.store.append_steps(rows)

    def end(self, reason: str) -> None:
        self.flush()
        if self.episode_id is None:
            return
        if self.journaled:  # queued behind its steps: no wait for them
            self.store.journal_end(self.episode_id, reason)
        else:
            self.store.finish_episode(self.episode_id, reason)
        self.episode_id = None
