"""``record(client, store=...)``: wrap an ``EnvClient`` or ``SyncEnvClient`` so that every
episode it plays is written to an ``EpisodeStore``. The wrapper is called as the client it wraps:

    env = record(EchoEnv(base_url=url), store=store, label="ppo-3")
    env.reset(seed=1)                  # in sync code, as EchoEnv's own calls; ``await`` it in async code
    env.step(EchoAction(...))          # the step is durable when this returns
    env.close()                        # the open episode ends: "closed"

A reset starts an episode (the previous one ends: "reset"); a step with no episode open (a client
that never reset, as in TRL's echo example) starts one without a reset. ``env.sync()`` is a
recording ``SyncRecordingEnvClient`` sharing the same run. A process that dies mid-episode leaves
it unfinished (``ended_at`` null) with every step it returned (on SQLite, steps not yet committed
are replayed from the store's journal by the next store that opens: see ``journal.py``). Anything
not overridden here (``connect``, ``base_url``...) goes to the wrapped client.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Coroutine
from typing import Any

from openenv.core.client_handles import AutoResult
from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from .batching import StepBatcher, batcher_for
from .env_info import fetch_env_info, fetch_env_info_async
from .episode_recorder import Recorder, headers_of, normalise_observation
from .store import EpisodeStore

__all__ = ["RecordingEnvClient", "SyncRecordingEnvClient", "normalise_observation", "record"]

_running_loop = asyncio._get_running_loop  # None outside a running loop


class _RecordingClient:
    """What both recording clients share: the wrapped client, the recorder, the ids, and every
    attribute not overridden passed through to the wrapped client."""

    def __init__(self, client: Any, recorder: Recorder) -> None:
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
    """An ``EnvClient`` that records its episodes (build it with ``record``): like the client it
    wraps, its calls return the result in sync code and an awaitable where an event loop runs."""

    def __init__(self, client: Any, recorder: Recorder) -> None:
        super().__init__(client, recorder)
        self._batcher: StepBatcher | None = None
        self._sync_face: SyncRecordingEnvClient | None = None

    def _call(self, make: Callable[[], Coroutine[Any, Any, Any]], blocking: Callable[[], Any]) -> Any:
        """As ``EnvClient._dispatch``: ``blocking()`` in sync code (or when the client is bound to
        its blocking face), else an awaitable that also resolves when read without ``await``."""
        inner = self._client
        if not isinstance(inner, EnvClient):  # a client whose methods are coroutines: async only
            return make()
        loop = _running_loop()
        if loop is None:
            return blocking()
        face = inner._sync_face
        if face is not None and loop is face._loop:  # on the blocking face's own loop
            return make()
        if inner._sync_bound() and face is not None and inner._ws_loop is face._loop:
            return blocking()
        return AutoResult(make, blocking)

    def _is_async(self) -> bool:
        """Whether calls are to be awaited (``is_async_client``)."""
        return not isinstance(self._client, EnvClient) or not self._client._sync_bound()

    def reset(self, **kwargs: Any) -> Any:
        """Start an episode (the open one ends: "reset")."""
        return self._call(lambda: self._reset_async(**kwargs), lambda: self.sync().reset(**kwargs))

    def step(self, action: Any, *args: Any, **kwargs: Any) -> Any:
        """Apply and record one action (an episode starts here when none is open)."""
        return self._call(lambda: self._step_async(action, *args, **kwargs),
                          lambda: self.sync().step(action, *args, **kwargs))  # fmt: skip

    def close(self) -> Any:
        """End the episode ("closed"), close the client, and return once every step recorded so
        far is committed (raises a commit error)."""
        return self._call(self._close_async, lambda: self.sync().close())

    def sync(self) -> Any:
        """The blocking face: a ``SyncRecordingEnvClient`` on the same run (steps stay recorded)."""
        if self._sync_face is None:
            if isinstance(self._client, EnvClient):
                self._sync_face = SyncRecordingEnvClient(self._client.sync(), self._rec)
                self._sync_face._async_face = self
            else:  # an async-only client: driven blocking through this recording client
                from openenv.core.sync_client import SyncEnvClient

                return SyncEnvClient(self)
        return self._sync_face

    async def _open_run(self) -> None:
        self._rec.store.check()
        if self._rec.needs_env_info:
            self._rec.open_run(await fetch_env_info_async(self._client.base_url, headers_of(self._client)))

    async def _reset_async(self, **kwargs: Any) -> StepResult:
        await self._open_run()
        t0 = time.perf_counter()
        result = await self._client.reset(**kwargs)
        latency = (time.perf_counter() - t0) * 1000
        state = await self._client.state() if self._rec.capture_state else None
        self._rec.on_reset(kwargs, result, latency, state)
        return result

    async def _step_async(self, action: Any, *args: Any, **kwargs: Any) -> StepResult:
        if self._rec.episode_id is None:
            return await self._first_step(action, args, kwargs)
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

    async def _first_step(self, action: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> StepResult:
        """A step with no episode open: the episode starts here, without a reset, once it succeeds."""
        await self._open_run()
        payload = self._rec.client._step_payload(action)
        t0 = time.perf_counter()
        result = await self._client.step(action, *args, **kwargs)
        latency = (time.perf_counter() - t0) * 1000
        state = await self._client.state() if self._rec.capture_state else None
        self._rec.first_step(payload, result, latency, state)
        return result

    async def _close_async(self) -> None:
        try:
            self._rec.end("closed")
        finally:
            await self._client.close()
        if self._rec.journaled:
            await asyncio.to_thread(self._rec.store.flush)

    def __enter__(self) -> RecordingEnvClient:
        self.sync().__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sync().close()

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
        await self._close_async()


class SyncRecordingEnvClient(_RecordingClient):
    """A ``SyncEnvClient`` that records its episodes (build it with ``record``, or ``.sync()``)."""

    _async_face: RecordingEnvClient | None = None

    def sync(self) -> SyncRecordingEnvClient:
        """This client (it is the blocking face already)."""
        return self

    @property
    def async_client(self) -> RecordingEnvClient:
        """The recording client over the wrapped async client (same run, same episode)."""
        if self._async_face is None:
            face = RecordingEnvClient(self._client.async_client, self._rec)
            face._sync_face, self._async_face = self, face
        return self._async_face

    def _open_run(self) -> None:
        self._rec.store.check()
        if self._rec.needs_env_info:
            self._rec.open_run(fetch_env_info(self._client.base_url, headers_of(self._client)))

    def begin_episode(self) -> None:
        """Open an episode here without a reset or a step (a rollout whose env was never called):
        the steps after this are its steps."""
        self._open_run()
        self._rec.end("reset")
        self._rec.start_without_reset()

    def reset(self, **kwargs: Any) -> StepResult:
        self._open_run()
        t0 = time.perf_counter()
        result = self._client.reset(**kwargs)
        latency = (time.perf_counter() - t0) * 1000
        state = self._client.state() if self._rec.capture_state else None
        self._rec.on_reset(kwargs, result, latency, state)
        return result

    def step(self, action: Any, *args: Any, **kwargs: Any) -> StepResult:
        if self._rec.episode_id is None:  # no episode open: it starts here, without a reset
            self._open_run()
            payload = self._rec.client._step_payload(action)
            t0 = time.perf_counter()
            result = self._client.step(action, *args, **kwargs)
            latency = (time.perf_counter() - t0) * 1000
            self._rec.first_step(payload, result, latency, self._client.state() if self._rec.capture_state else None)
            return result
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
        a ``RecordingEnvClient`` (called as the client is: sync or async) or, for a blocking client,
        a ``SyncRecordingEnvClient``.
    """
    rec = Recorder(
        client,
        store,
        label=label,
        source=source,
        env_name=env_name,
        provider=provider,
        image=image,
        info=info,
        capture_state=capture_state,
        commit_every=commit_every,
    )
    if isinstance(client, EnvClient):  # its step is sync or async by caller: go by how it is used
        if client._sync_bound():
            rec.client = client = client.sync()
            return SyncRecordingEnvClient(client, rec)
        return RecordingEnvClient(client, rec)
    if inspect.iscoroutinefunction(getattr(client, "step", None)):
        return RecordingEnvClient(client, rec)
    return SyncRecordingEnvClient(client, rec)
