"""``record(client, store=...)``: wrap an ``EnvClient`` (async) or ``SyncEnvClient`` so that
every episode it plays is written to an ``EpisodeStore``.

    env = record(EchoEnv(base_url=url), store=store, label="ppo-3")
    await env.reset(seed=1)            # starts a new episode (the previous one ends: "reset")
    await env.step(EchoAction(...))    # the step is durable when this returns
    await env.close()                  # the open episode ends: "closed"

A process that dies mid-episode leaves it unfinished (``ended_at`` null) with every step it
returned (on SQLite, steps not yet committed are replayed from the store's journal by the next
store that opens: see ``journal.py``). Anything not overridden here (``connect``, ``base_url``...) goes to the wrapped client.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

from pydantic_core import PydanticSerializationError

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from .batching import StepBatcher, batcher_for
from .env_info import EnvInfo, fetch_env_info, fetch_env_info_async
from .jsonable import to_jsonable
from .step_rows import make_step_row
from .store import EpisodeStore

_perf_counter, _time = time.perf_counter, time.time

__all__ = ["RecordingEnvClient", "SyncRecordingEnvClient", "normalise_observation", "record"]

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


def _headers(client: Any) -> dict[str, str] | None:
    """The headers a (sync or async) client sends to its server, for the env-info reads."""
    headers = getattr(client, "headers", None)
    if headers is None:
        headers = getattr(getattr(client, "_client", None), "headers", None)
    return dict(headers) if isinstance(headers, dict) and headers else None


def _provider_kind(runtime: Any) -> str | None:
    if runtime is None:
        return None
    return getattr(runtime, "kind", None) or type(runtime).__name__


class _Recorder:
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
        self.auto_begin = False  # a step outside an episode begins one (``begin_without_reset``)
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

    def save_wire_step(self, wire: EnvClient, t0: float, action: Any, result: StepResult) -> None:
        """Make the step ``wire`` just took (sent at ``t0``, ``perf_counter``) durable: its wire
        texts with the reward and done it returned, or its row when the client has no exchange to
        show (or a reward that is not a number: the row path says why)."""
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
        self.store.journal_wire(self.episode_bytes, self.index, _time(), latency_ms, reward, bool(result.done),
                                request, reply if reply.__class__ is bytes else reply.encode())  # fmt: skip

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

    def begin_without_reset(self) -> None:
        """Start an episode with no reset (a fresh session stepped as it is): no reset observation,
        ``metadata={"reset": False}``."""
        assert self.run_id is not None
        self.end("reset")
        self.episode_id = self.store.start_episode(self.run_id, observation=None, metadata={"reset": False},
                                                   journaled=self.journaled, training=self.training)  # fmt: skip
        self.index = 0
        self.episode_bytes = self.episode_id.encode()

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


class _RecordingClient:
    """What both recording clients share: the wrapped client, the recorder, the ids, and every
    attribute not overridden passed through to the wrapped client."""

    def __init__(self, client: Any, recorder: _Recorder) -> None:
        self._client = client
        self._rec = recorder

    @property
    def episode_id(self) -> str | None:
        """The stored id of the episode being played (``None`` before ``reset``)."""
        return self._rec.episode_id

    @property
    def run_id(self) -> str | None:
        """The stored id of this client's run (``None`` before the first ``reset``)."""
        return self._rec.run_id

    @property
    def step_index(self) -> int:
        """The index of the last step recorded in the open episode (0 right after ``reset``)."""
        return self._rec.index

    def record_turn(self, actor: str, data: dict[str, Any] | None = None, *, index: int | None = None) -> None:
        """Record who took step ``index`` (default: the last one) and, for a model, its prompt and
        completion (``EpisodeStore.record_turn``; durable as the steps are)."""
        if self._rec.episode_id is None:
            return
        self._rec.flush()
        self._rec.store.record_turn(self._rec.episode_id, self._rec.index if index is None else index, actor, data,
                                    journaled=self._rec.journaled)  # fmt: skip

    def tag_episodes(self, **training: Any) -> None:
        """Tag the episodes started from now on with a training run, step, group and index
        (``EpisodeStore.start_episode``'s ``training``); no arguments: stop tagging."""
        self._rec.training = training or None

    def end_episode(self, reason: str) -> None:
        """End the open episode now with ``reason`` (``model_error``, ``invalid_action``...)."""
        self._rec.end(reason)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class RecordingEnvClient(_RecordingClient):
    """An async ``EnvClient`` that records its episodes (build it with ``record``)."""

    def __init__(self, client: Any, recorder: _Recorder) -> None:
        super().__init__(client, recorder)
        self._batcher: StepBatcher | None = None

    async def reset(self, **kwargs: Any) -> StepResult:
        self._rec.store.check()
        if self._rec.needs_env_info:
            self._rec.open_run(await fetch_env_info_async(self._client.base_url, _headers(self._client)))
        t0 = time.perf_counter()
        result = await self._client.reset(**kwargs)
        latency = (time.perf_counter() - t0) * 1000
        state = await self._client.state() if self._rec.capture_state else None
        self._rec.on_reset(kwargs, result, latency, state)
        return result

    async def step(self, action: Any, *args: Any, **kwargs: Any) -> StepResult:
        wire = self._rec.wire_ready()
        if wire is not None:  # the fast path: the wire texts go to the journal as they are
            t0 = time.perf_counter()
            result = await self._client.step(action, *args, **kwargs)
            self._rec.save_wire_step(wire, t0, action, result)
            return result
        payload = self._rec.payload(action)
        batcher = self._batcher
        if batcher is None or batcher.loop is not asyncio.get_running_loop():
            batcher = self._batcher = batcher_for(self._rec.store)
        batcher.in_flight += 1
        t0 = time.perf_counter()
        try:
            result = await self._client.step(action, *args, **kwargs)
        finally:
            batcher.in_flight -= 1
        latency = (time.perf_counter() - t0) * 1000
        state = await self._client.state() if self._rec.capture_state and self._rec.episode_id else None
        row = self._rec.step_row(payload, result, latency, state)
        rows = self._rec.hold(row) if row is not None else []
        if len(rows) == 1 and not self._rec.journaled:
            await batcher.append(rows[0])
        elif rows:
            self._rec.save(rows)
        return result

    async def close(self) -> None:
        """End the episode ("closed"), close the client, and return once every step recorded so
        far is committed (waited for off the event loop; raises a commit error)."""
        try:
            self._rec.end("closed")
        finally:
            await self._client.close()
        if self._rec.journaled:
            await asyncio.to_thread(self._rec.store.flush)

    def sync(self) -> Any:
        """A ``SyncEnvClient`` over this recording client (steps stay recorded)."""
        from openenv.core.sync_client import SyncEnvClient

        return SyncEnvClient(self)

    async def __aenter__(self) -> RecordingEnvClient:
        connect = getattr(self._client, "connect", None)
        if connect is not None:
            try:
                await connect()
            except BaseException:
                await self._client.close()  # no ``__aexit__`` follows a failed ``__aenter__``
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class SyncRecordingEnvClient(_RecordingClient):
    """A ``SyncEnvClient`` that records its episodes (build it with ``record``)."""

    def reset(self, **kwargs: Any) -> StepResult:
        self._rec.store.check()
        if self._rec.needs_env_info:
            self._rec.open_run(fetch_env_info(self._client.base_url, _headers(self._client)))
        t0 = time.perf_counter()
        result = self._client.reset(**kwargs)
        latency = (time.perf_counter() - t0) * 1000
        state = self._client.state() if self._rec.capture_state else None
        self._rec.on_reset(kwargs, result, latency, state)
        return result

    def begin_episode(self) -> None:
        """Record an episode from here on without a reset (TRL's environments that step a session
        they never reset): the steps after this are its steps."""
        self._rec.store.check()
        if self._rec.needs_env_info:
            self._rec.open_run(fetch_env_info(self._client.base_url, _headers(self._client)))
        self._rec.begin_without_reset()

    def step(self, action: Any, *args: Any, **kwargs: Any) -> StepResult:
        if self._rec.auto_begin and self._rec.episode_id is None:
            self.begin_episode()
        wire = self._rec.wire_ready()
        if wire is not None:  # the fast path: the wire texts go to the journal as they are
            t0 = time.perf_counter()
            result = self._client.step(action, *args, **kwargs)
            self._rec.save_wire_step(wire, t0, action, result)
            return result
        payload = self._rec.payload(action)
        t0 = time.perf_counter()
        result = self._client.step(action, *args, **kwargs)
        latency = (time.perf_counter() - t0) * 1000
        state = self._client.state() if self._rec.capture_state and self._rec.episode_id else None
        row = self._rec.step_row(payload, result, latency, state)
        rows = self._rec.hold(row) if row is not None else []
        if rows:
            self._rec.save(rows)
        return result

    def close(self) -> None:
        """End the episode ("closed"), close the client, and return once every step recorded so
        far is committed (raises a commit error)."""
        try:
            self._rec.end("closed")
        finally:
            self._client.close()
        if self._rec.journaled:
            self._rec.store.flush()

    def __enter__(self) -> SyncRecordingEnvClient:
        connect = getattr(self._client, "connect", None)
        if connect is not None:
            try:
                connect()
            except BaseException:
                self._client.close()  # no ``__exit__`` follows a failed ``__enter__``
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def record(
    client: Any,
    *,
    store: EpisodeStore,
    label: str | None = None,
    source: str = "programmatic",
    env_name: str | None = None,
    provider: str | None = None,
    image: str | None = None,
    info: dict[str, Any] | None = None,
    capture_state: bool = False,
    commit_every: int = 1,
) -> Any:
    """Wrap ``client`` so its episodes are recorded into ``store``.

    Args:
        client: an async ``EnvClient`` or a ``SyncEnvClient`` (``client.sync()``).
        store: where episodes go.
        label: free-form agent/run label, for listings.
        source: ``"programmatic"`` (scripts) or ``"human"`` (the studio).
        env_name, provider, image: override what is read from the server / the client's provider.
        info: any JSON-able facts to keep with the run (hyper-parameters, git sha...).
        capture_state: also fetch and store ``state()`` after every reset/step (one more round trip).
        commit_every: 1 (default) makes each step durable before ``step()`` returns. N > 1 holds steps
            and commits them N at a time and at every episode end, reset and close: faster, but a
            crash loses up to N - 1 steps.

    Returns:
        a ``RecordingEnvClient`` (async) or ``SyncRecordingEnvClient`` with the client's methods.
    """
    rec = _Recorder(client, store, label=label, source=source, env_name=env_name, provider=provider, image=image,
                    info=info, capture_state=capture_state, commit_every=commit_every)  # fmt: skip
    if isinstance(client, EnvClient):  # its step is sync or async by caller: go by how it is used
        if client._sync_bound():
            rec.client = client = client.sync()
            return SyncRecordingEnvClient(client, rec)
        return RecordingEnvClient(client, rec)
    if inspect.iscoroutinefunction(getattr(client, "step", None)):
        return RecordingEnvClient(client, rec)
    return SyncRecordingEnvClient(client, rec)
