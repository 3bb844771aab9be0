"""``VectorEnvClient``: N environment sessions driven together on one event loop.

One object for a training loop: ``reset()`` and ``step(actions)`` act on every session at once
(concurrently, over one server or several URLs: Swarm replicas, several containers), an error
in one session is reported for that session and does not stop the others, and ``auto_reset``
starts a new episode wherever one ended. Blocking in sync code, awaitable in async code::

    with VectorEnvClient("http://127.0.0.1:8000", num_envs=64, auto_reset=True) as envs:
        batch = envs.reset(seed=0)
        while training:
            batch = envs.step([policy(obs) for obs in batch.observations])
            learn(batch.rewards, batch.dones)

    async with VectorEnvClient([url_a, url_b], num_envs=8, store=store) as envs:   # recorded
        batch = await envs.reset()

With ``store=`` every session is recorded like any client (``openenv.recording.record``), its
steps still pipelined (on a journaled store the wire texts go to the journal as they are);
``episode_ids[i]`` is the stored id of session ``i``'s open episode, to tag it with a training step.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.errors import ClientStateError, EpisodeLostError, OpenEnvError, ReconnectFailedError
from openenv.core.generic_client import GenericEnvClient

__all__ = ["VectorEnvClient", "VectorResult"]

_running_loop = asyncio._get_running_loop
#: what counts as one session's failure (anything else, cancellation or a bug, propagates)
_SESSION_ERRORS = (OpenEnvError, OSError, TimeoutError, ValueError, TypeError)


def _new_loop() -> asyncio.AbstractEventLoop:
    """The private loop of the blocking face: uvloop's where installed (less client CPU per step)."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency off Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


@dataclass
class VectorResult:
    """One ``reset``/``step`` over every session: entry ``i`` is session ``i``'s.

    ``results[i]`` is the ``StepResult`` (``None`` where ``errors[i]`` says why, or where that
    session was skipped). With ``auto_reset``, ``reset_results[i]`` is the first observation of the
    episode started because ``results[i].done``: act on it next.
    """

    results: list[StepResult | None]
    errors: list[BaseException | None]
    reset_results: list[StepResult | None] = field(default_factory=list)

    @property
    def observations(self) -> list[Any]:
        """What to act on next: the new episode's first observation where one was auto-reset."""
        out = []
        for i, result in enumerate(self.results):
            fresh = self.reset_results[i] if self.reset_results else None
            chosen = fresh if fresh is not None else result
            out.append(chosen.observation if chosen is not None else None)
        return out

    @property
    def rewards(self) -> list[float | None]:
        return [r.reward if r is not None else None for r in self.results]

    @property
    def dones(self) -> list[bool]:
        return [bool(r.done) if r is not None else False for r in self.results]

    @property
    def ok(self) -> bool:
        """No session failed."""
        return all(e is None for e in self.errors)

    def raise_first(self) -> VectorResult:
        """Raise the first session's error, if any (for code that wants all-or-nothing)."""
        for err in self.errors:
            if err is not None:
                raise err
        return self

    def __len__(self) -> int:
        return len(self.results)


def _with_headers(client_kwargs: dict[str, Any] | None, extra: dict[str, str] | None) -> dict[str, Any]:
    kwargs = dict(client_kwargs or {})
    if extra:
        kwargs["headers"] = {**extra, **(kwargs.get("headers") or {})}
    return kwargs


class VectorEnvClient:
    """N sessions, one event loop; see the module docstring.

    Args:
        base_urls: one server URL (all sessions there) or several (sessions spread round-robin).
        num_envs: number of sessions (default: one per URL).
        client_class: the ``EnvClient`` subclass per session (default ``GenericEnvClient``: dicts).
        auto_reset: reset a session in the same call whose step ended its episode.
        reset_kwargs: kwargs for those automatic resets.
        store, label, info: record every session's episodes into ``store`` (``openenv.recording``),
            ``info`` (JSON-able facts: hyper-parameters, a training run's id) kept with each session's run.
        client_kwargs: options for each session's client (``headers``, ``message_timeout_s``...).
        url_headers: extra headers per base URL (e.g. each Ray env's token; ``from_providers``).
    """

    def __init__(
        self,
        base_urls: str | Sequence[str],
        num_envs: int | None = None,
        *,
        client_class: type[EnvClient] = GenericEnvClient,
        auto_reset: bool = False,
        reset_kwargs: dict[str, Any] | None = None,
        store: Any = None,
        label: str | None = None,
        info: dict[str, Any] | None = None,
        client_kwargs: dict[str, Any] | None = None,
        url_headers: dict[str, dict[str, str]] | None = None,
    ) -> None:
        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        if not urls:
            raise ValueError("VectorEnvClient needs at least one base URL")
        count = len(urls) if num_envs is None else int(num_envs)
        if count < 1:
            raise ValueError("num_envs must be at least 1")
        self.auto_reset = auto_reset
        self.reset_kwargs = dict(reset_kwargs or {})
        self.clients: list[EnvClient] = [
            client_class(base_url=urls[i % len(urls)], **_with_headers(client_kwargs, (url_headers or {}).get(urls[i % len(urls)])))
            for i in range(count)]
        self._envs: list[Any] = list(self.clients)
        if store is not None:
            from openenv.recording import record

            self._envs = [record(c, store=store, label=label, info=info) for c in self.clients]
        self._recorded = store is not None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @classmethod
    def from_providers(cls, providers: Sequence[Any], num_envs: int | None = None, **options: Any) -> VectorEnvClient:
        """Sessions on envs started by providers (e.g. ``RayProvider.start_many``), each sent the
        headers its server requires (``provider.headers``); other options as for the constructor."""
        urls = [p.base_url for p in providers]
        if any(u is None for u in urls):
            raise ValueError("every provider must have started its env (base_url is None)")
        return cls(urls, num_envs, url_headers={u: p.headers(u) for u, p in zip(urls, providers, strict=True)}, **options)

    @property
    def num_envs(self) -> int:
        return len(self.clients)

    def __len__(self) -> int:
        return len(self.clients)

    @property
    def episode_ids(self) -> list[str | None]:
        """Per session, the stored id of its open episode (``None``: not recorded, or no episode open)."""
        return [getattr(e, "episode_id", None) if self._recorded else None for e in self._envs]

    @property
    def run_ids(self) -> list[str | None]:
        """Per session, the stored id of its recording run (``None`` until its first reset or step)."""
        return [getattr(e, "run_id", None) if self._recorded else None for e in self._envs]

    # -- per-session calls (each one's error is its own) ----------------------------------

    def _reset_one(self, i: int, kwargs: dict[str, Any]) -> Coroutine[Any, Any, StepResult]:
        return (self._envs[i] if self._recorded else self.clients[i])._reset_async(**kwargs)

    @staticmethod
    async def _settle(coros: list[Coroutine[Any, Any, Any] | None]) -> tuple[list[Any], list[BaseException | None]]:
        live = [c for c in coros if c is not None]
        outcomes = iter(await asyncio.gather(*live, return_exceptions=True))
        results: list[Any] = []
        errors: list[BaseException | None] = []
        for coro in coros:
            if coro is None:
                results.append(None)
                errors.append(None)
                continue
            outcome = next(outcomes)
            if isinstance(outcome, BaseException):
                if not isinstance(outcome, _SESSION_ERRORS):
                    raise outcome  # cancellation, KeyboardInterrupt, a bug: not a session's error
                results.append(None)
                errors.append(outcome)
            else:
                results.append(outcome)
                errors.append(None)
        return results, errors

    # -- async API ------------------------------------------------------------------------

    async def connect_async(self) -> VectorEnvClient:
        """Open every session; one that cannot connect closes the others and raises."""
        if self._closed:
            raise ClientStateError("This vector client is closed; create a new one")
        _, errors = await self._settle([c._connect_entry() for c in self.clients])
        failed = next((e for e in errors if e is not None), None)
        if failed is not None:
            await self.close_async()
            raise failed
        return self

    async def reset_async(self, indices: Sequence[int] | None = None, **kwargs: Any) -> VectorResult:
        """Reset every session (or those in ``indices``) with ``kwargs``."""
        wanted = set(range(self.num_envs)) if indices is None else set(indices)
        coros = [self._reset_one(i, kwargs) if i in wanted else None for i in range(self.num_envs)]
        results, errors = await self._settle(coros)
        return VectorResult(results, errors)

    async def step_async(self, actions: Sequence[Any]) -> VectorResult:
        """Step session ``i`` with ``actions[i]`` (``None`` skips it); auto-reset where done."""
        if len(actions) != self.num_envs:
            raise ValueError(f"step() needs {self.num_envs} actions (None to skip a session), got {len(actions)}")
        results, errors = await self._step_pipelined(actions)
        resets: list[StepResult | None] = []
        if self.auto_reset:
            ended = [i for i, r in enumerate(results) if r is not None and r.done]
            resets = [None] * self.num_envs
            if ended:
                fresh, reset_errors = await self._settle([self._reset_one(i, self.reset_kwargs) for i in ended])
                for i, result, err in zip(ended, fresh, reset_errors, strict=True):
                    resets[i] = result
                    if err is not None:
                        errors[i] = err
        return VectorResult(results, errors, resets)

    async def _step_pipelined(self, actions: Sequence[Any]) -> tuple[list[Any], list[BaseException | None]]:
        """Send every step, then collect every reply: the sessions run concurrently on the servers
        without a task per session here. One deadline (the longest session timeout) covers them all;
        sessions whose socket is gone reconnect concurrently under one deadline of their own."""
        n = self.num_envs
        results: list[Any] = [None] * n
        errors: list[BaseException | None] = [None] * n
        sent: list[Any] = [None] * n
        for client in self.clients:
            client._defer_reopen = True
        try:
            return await self._step_deferring(actions, results, errors, sent)
        finally:
            for client in self.clients:
                client._defer_reopen = False

    async def _step_deferring(self, actions: Sequence[Any], results: list[Any], errors: list[BaseException | None],
                              sent: list[Any]) -> tuple[list[Any], list[BaseException | None]]:  # fmt: skip
        down: list[int] = []
        wires: list[Any] = [None] * len(actions)  # a recorded session's client whose step is journaled from the wire
        apart: dict[int, asyncio.Future[Any]] = {}  # recorded sessions stepped through their recording client
        journal: list[tuple[Any, ...]] = []  # their wire records, journaled together before this returns
        t0 = time.perf_counter()
        for i, action in enumerate(actions):
            if action is None:
                continue
            if self._recorded:
                try:
                    wires[i] = self._envs[i]._rec.wire_ready()
                except _SESSION_ERRORS as exc:  # the store failed: before this session's env moves
                    errors[i] = exc
                    continue
                if wires[i] is None:  # no episode open yet, or a store that commits rows
                    apart[i] = asyncio.ensure_future(self._envs[i]._step_async(action))
                    continue
            client = self.clients[i]
            if client._needs_reopen():
                down.append(i)  # reconnects go together below, not one after another here
                continue
            try:
                sent[i] = await client._send({"type": "step", "data": client._step_payload(action)}, True)
            except _SESSION_ERRORS as exc:
                errors[i] = exc
        if down:
            def send(i: int) -> Coroutine[Any, Any, Any]:
                client = self.clients[i]
                return client._send({"type": "step", "data": client._step_payload(actions[i])}, True)

            await self._bounded(down, send, errors, sent)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(c._message_timeout for c in self.clients)
        for i, request in enumerate(sent):
            if request is None:
                continue
            client = self.clients[i]
            try:
                reply = await client._reply(request, max(0.001, deadline - loop.time()), True)
                results[i] = client._parse_result(reply["data"])
                if wires[i] is not None:
                    self._envs[i]._rec.save_wire_step(wires[i], t0, actions[i], results[i], journal)
            except _SESSION_ERRORS as exc:
                errors[i] = exc
        if journal:  # durable before step() returns, as for one recording client
            try:
                self._envs[0]._rec.store.journal_wires(journal)
            except _SESSION_ERRORS as exc:
                for i, wire in enumerate(wires):
                    if wire is not None and errors[i] is None:
                        errors[i], results[i] = exc, None
        if apart:
            outcomes, failures = await self._settle(list(apart.values()))
            for i, result, err in zip(apart, outcomes, failures, strict=True):
                results[i], errors[i] = result, err
        lost = [i for i, e in enumerate(errors) if isinstance(e, EpisodeLostError) and self.clients[i]._needs_reopen()]
        if lost:  # their sockets died under this step: open new sessions together, as one client would
            await self._bounded(lost, lambda i: self.clients[i]._reopen(), errors)
        return results, errors

    async def _bounded(self, indices: list[int], make: Any, errors: list[BaseException | None],
                       out: list[Any] | None = None) -> None:  # fmt: skip
        """Run ``make(i)`` (a reconnect, or a send that reconnects first) for every ``i`` concurrently
        under one deadline (the longest ``reconnect_timeout_s`` plus a connect timeout): N dead sessions
        cost about one reconnect, not N. One still down gets its own ``ReconnectFailedError``."""
        tasks = {i: asyncio.ensure_future(make(i)) for i in indices}
        budget = max(self.clients[i]._reconnect_timeout + self.clients[i]._connect_timeout for i in indices)
        loop = asyncio.get_running_loop()
        started = loop.time()
        _, pending = await asyncio.wait(tasks.values(), timeout=budget)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        waited = round(loop.time() - started, 3)
        for i, task in tasks.items():
            if task in pending:
                errors[i] = ReconnectFailedError(
                    f"{self.clients[i].base_url} stayed unreachable: no connection within the batch's "
                    f"reconnect deadline of {budget:g} s", attempts=None, waited_s=waited)
                continue
            exc = task.exception()
            if exc is None:
                if out is not None:
                    out[i] = task.result()
            elif isinstance(exc, _SESSION_ERRORS):
                errors[i] = exc
            else:
                raise exc

    async def state_async(self) -> list[Any]:
        """Every session's state (an exception object where one failed)."""
        results, errors = await self._settle([c._state_async() for c in self.clients])
        return [e if e is not None else r for r, e in zip(results, errors, strict=True)]

    async def close_async(self) -> None:
        """Close every session (recorded ones finish their episodes)."""
        if self._closed:
            return
        self._closed = True
        closers = [e._close_async() if self._recorded else e._close_entry() for e in self._envs]
        await asyncio.gather(*closers, return_exceptions=True)

    async def __aenter__(self) -> VectorEnvClient:
        return await self.connect_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.close_async()

    # -- sync or async by caller ----------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Block on ``coro`` on the private loop (in this thread, or a helper thread if a loop runs here)."""
        if self._loop is None:
            self._loop = _new_loop()
        if self._loop.is_closed():
            coro.close()
            raise ClientStateError("This vector client is closed; create a new one")
        if self._thread is None and _running_loop() is not None:
            self._thread = threading.Thread(target=self._loop.run_forever, name="openenv-vector", daemon=True)
            self._thread.start()
        if self._thread is not None:
            return asyncio.run_coroutine_threadsafe(coro, self._loop).result()
        return self._loop.run_until_complete(coro)

    def _either(self, coro: Coroutine[Any, Any, Any]) -> Any:
        loop = _running_loop()
        if loop is not None and loop is not self._loop:
            return coro
        return self._run(coro)

    def connect(self) -> Any:
        return self._either(self.connect_async())

    def reset(self, indices: Sequence[int] | None = None, **kwargs: Any) -> Any:
        """``VectorResult`` of resetting every session (an awaitable in async code)."""
        return self._either(self.reset_async(indices, **kwargs))

    def step(self, actions: Sequence[Any]) -> Any:
        """``VectorResult`` of stepping every session (an awaitable in async code)."""
        return self._either(self.step_async(actions))

    def state(self) -> Any:
        return self._either(self.state_async())

    def close(self) -> Any:
        if _running_loop() is not None and _running_loop() is not self._loop:
            return self.close_async()
        try:
            if self._loop is None or not self._loop.is_closed():
                self._run(self.close_async())
        finally:
            self._close_loop()
        return None

    def _close_loop(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        from openenv.core.sync_client import _finish_tasks

        try:
            self._run(_finish_tasks())
        finally:
            if self._thread is not None:
                loop.call_soon_threadsafe(loop.stop)
                self._thread.join(timeout=5)
            loop.close()

    def __enter__(self) -> VectorEnvClient:
        try:
            self._run(self.connect_async())
        except BaseException:
            self._close_loop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
