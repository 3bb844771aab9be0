"""Record a TRL ``GRPOTrainer`` run: one line after building the trainer.

    trainer = GRPOTrainer(model=..., environment_factory=EchoToolEnv, reward_funcs=reward_func, ...)
    record_trl(trainer, store="episodes.db")        # the added line
    trainer.train()

``environment_factory``: every environment client the instances hold (an ``EnvClient``, 0.10's,
or a sync client) is replaced by a recording one; each rollout (one ``reset`` TRL makes) is an
episode tagged with the training step (``state.global_step``, the policy version), its prompt
group (rows repeat ``num_generations`` times) and index in it. After each generation batch is
scored, the episode gets the reward TRL used (the weighted sum of its reward functions, each kept
as a component), the advantage, why it ended, and the model's side (prompt, completion, tool
calls, token ids, logprobs when present and the loss mask); then it is ended, so a pooled
instance's episode never runs on until the next step's reset. The run ends with ``train()``.

``rollout_func``: tag each rollout's episode with ``recorder.tag(client, i)`` (``i`` its row in
the prompts TRL passed) before its ``reset``; the rest is the same.
"""

from __future__ import annotations

import functools
import inspect
import math
import time
from typing import TYPE_CHECKING, Any

from openenv.recording import EpisodeFilter, EpisodeStore
from openenv.recording.jsonable import to_jsonable

from .run import TrainingRun

if TYPE_CHECKING:
    from .trl_harness import AsyncHarnessRecorder

__all__ = ["TrlRecorder", "record_trl"]

_MARK = "_openenv_recorder"


def _is_env_client(value: Any) -> bool:
    return (not isinstance(value, type) and callable(getattr(value, "reset", None))
            and callable(getattr(value, "step", None)) and isinstance(getattr(value, "base_url", None), str))  # fmt: skip


def _recordable(client: Any) -> Any:
    """The blocking face of ``client`` (what the user's sync code calls) for ``record``."""
    if inspect.iscoroutinefunction(getattr(type(client), "step", None)) or hasattr(client, "_sync_bound"):
        sync = getattr(client, "sync", None)
        if callable(sync):
            return sync()
    return client


def _text(messages: Any) -> Any:
    if isinstance(messages, list):
        return "".join(str(m.get("content") or "") for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    return messages


def _tool_calls(messages: Any) -> list[Any]:
    if not isinstance(messages, list):
        return []
    return [c for m in messages if isinstance(m, dict) for c in (m.get("tool_calls") or [])]


def _ints(values: Any) -> list[int] | None:
    if values is None:
        return None
    tolist = getattr(values, "tolist", None)
    return [int(v) for v in (tolist() if callable(tolist) else values)]


class TrlRecorder:
    """Records the rollouts of one ``GRPOTrainer`` (build it with ``record_trl``)."""

    def __init__(self, trainer: Any, run: TrainingRun) -> None:
        self.trainer = trainer
        self.run = run
        self.store: EpisodeStore = run.store
        self._clients: dict[int, list[Any]] = {}  # id(instance) -> its recording clients
        self._generated: tuple[list[Any], tuple[Any, ...]] | None = None
        self.missing = 0  # rollouts whose episode was not found (the env never started one)
        self._failed: set[int] = set()  # instances whose env call raised during this batch

    # -- environment_factory ----------------------------------------------------------------------
    def instrument(self, instance: Any) -> Any:
        """Make ``instance`` (an environment object) record through its clients; returns it."""
        if getattr(instance, _MARK, None) is self:
            return instance
        clients = []
        for name, value in list(vars(instance).items()):
            if _is_env_client(value) and not hasattr(value, "tag_episodes"):
                wrapped = self.run.record(_recordable(value))
                setattr(instance, name, wrapped)
                clients.append(wrapped)
            elif hasattr(value, "tag_episodes"):
                clients.append(value)
        for c in clients:
            for method in ("reset", "step"):  # an env call that raised makes the rollout's finish reason env_error
                setattr(c, method, functools.partial(self._watch, instance, getattr(c, method)))
        self._clients[id(instance)] = clients
        reset = instance.reset
        instance.reset = functools.partial(self._reset, instance, reset)
        setattr(instance, _MARK, self)
        return instance

    def _watch(self, instance: Any, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except Exception:
            self._failed.add(id(instance))
            raise

    def _reset(self, instance: Any, reset: Any, **kwargs: Any) -> Any:
        envs = self.trainer.environments or []
        i = next((k for k, e in enumerate(envs) if e is instance), None)
        self._failed.discard(id(instance))
        for c in self._clients.get(id(instance), []):
            c.end_episode("rollout_end")  # defensively: the last batch ended it already
            if i is not None:  # the episode this rollout starts (by a reset, or by its first step)
                c.tag_episodes(**self.tags(i))
        return reset(**kwargs)

    # -- tags ---------------------------------------------------------------------------------------
    def _mode(self) -> str:
        return "train" if self.trainer.model.training else "eval"

    def _g(self) -> int:
        t = self.trainer
        g = t.num_generations if self._mode() == "train" else getattr(t, "num_generations_eval", t.num_generations)
        return max(1, int(g or 1))

    def _offset(self, n: int) -> int:
        return int(self.trainer.accelerator.process_index) * n

    def tags(self, i: int) -> dict[str, Any]:
        """The training tags of row ``i`` of this process's current generation batch."""
        n = len(self.trainer.environments or []) or 0
        k = self._offset(n) + i
        g = self._g()
        group = str(k // g) if self._mode() == "train" else f"eval:{k // g}"
        return self.run.tags(step=int(self.trainer.state.global_step), group=group, index=k % g)

    def tag(self, client: Any, i: int, *, batch_size: int | None = None) -> None:
        """``rollout_func``: the next episode ``client`` starts is the rollout of prompt row ``i``
        (``batch_size``: how many rows this process got, for the group numbering across processes)."""
        n = batch_size or 0
        k = self._offset(n) + i
        g = self._g()
        group = str(k // g) if self._mode() == "train" else f"eval:{k // g}"
        client.tag_episodes(**self.run.tags(step=int(self.trainer.state.global_step), group=group, index=k % g))

    # -- the trainer's hooks ----------------------------------------------------------------------
    def _generate(self, original: Any, prompts: list[Any]) -> Any:
        out = original(prompts)
        self._generated = (list(prompts), out)
        return out

    def _generate_and_score(self, original: Any, inputs: list[Any]) -> Any:
        step, mode = int(self.trainer.state.global_step), self._mode()
        self._generated = None
        out = original(inputs)
        self._after_batch(len(inputs), step, mode)
        return out

    def _train(self, original: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:
            self._end_open("closed")
            self.run.end("cancelled" if isinstance(exc, KeyboardInterrupt) else "failed",
                         info={"error": f"{type(exc).__name__}: {exc}"[:2000]})  # fmt: skip
            raise
        self._end_open("closed")
        self.run.end("finished", info={"global_step": int(self.trainer.state.global_step), "missing": self.missing})
        return result

    def _end_open(self, reason: str) -> None:
        for clients in self._clients.values():
            for c in clients:
                c.end_episode(reason)
                c.tag_episodes()

    # -- after a scored batch ---------------------------------------------------------------------
    def _scores(self, n: int) -> tuple[list[float | None], list[dict[str, float | None]], list[float | None]]:
        """This process's rows of the batch just scored: TRL's reward, its components, advantages."""
        t = self.trainer
        total = n * int(t.accelerator.num_processes)
        start = self._offset(n)
        names = list(t.reward_func_names)
        weights = [float(w) for w in t.reward_weights.tolist()]
        columns = [list(t._logs["rewards"][name])[-total:][start : start + n] for name in names]
        advantages = [float(a) for a in list(t._logs["advantages"])[-total:][start : start + n]]
        rewards, comps = [], []
        for i in range(n):
            values = [col[i] if i < len(col) else math.nan for col in columns]
            scored = [(w, v) for w, v in zip(weights, values, strict=True) if v is not None and not math.isnan(v)]
            rewards.append(sum(w * v for w, v in scored) if scored else None)
            comps.append({name: (None if v is None or math.isnan(v) else float(v)) for name, v in zip(names, values, strict=True)})
        return rewards, comps, advantages + [None] * (n - len(advantages))  # type: ignore[list-item]

    def _begin_missing(self) -> None:
        """A rollout whose environment neither reset nor stepped its session: an empty episode."""
        for instance in self.trainer.environments or []:
            for c in self._clients.get(id(instance), []):
                if c.episode_id is None and getattr(c, "begin_episode", None) is not None:
                    c.begin_episode()

    def _after_batch(self, n: int, step: int, mode: str) -> None:
        rewards, comps, advantages = self._scores(n)
        self._begin_missing()
        self.store.flush()
        found = {(e.group_id, e.group_index): e for e in self.store.iter_episodes(
            EpisodeFilter(training_run_id=self.run.id, step_min=step, step_max=step))}  # fmt: skip
        prompts, gen = self._generated or ([], ())
        t = self.trainer
        stops = {*t.eos_token_ids, t._tokenizer.pad_token_id} if gen else set()
        outcomes, ends = [], []
        for i in range(n):
            g = self._g()
            k = self._offset(n) + i
            key = (str(k // g) if mode == "train" else f"eval:{k // g}", k % g)
            episode = found.get(key)
            if episode is None:
                self.missing += 1
                continue
            envs = t.environments or []
            failed = i < len(envs) and id(envs[i]) in self._failed
            reason = "env_done" if episode.done else "env_error" if failed else "stop"
            if gen:
                prompt_ids, completion_ids, tool_mask, completions, logprobs = gen[0][i], gen[1][i], gen[2], gen[3][i], gen[4]
                ids = _ints(completion_ids) or []
                if reason == "stop":
                    if ids and ids[-1] not in stops:
                        reason = "truncated"
                    elif isinstance(completions, list) and completions and (completions[-1] or {}).get("tool_calls"):
                        reason = "max_turns"
                capture = {"level": "tokens", "prompt_ids": _ints(prompt_ids), "sampled_ids": ids,
                           "logprobs": None if logprobs is None or logprobs[i] is None else [float(x) for x in logprobs[i]],
                           "loss_mask": None if tool_mask is None else _ints(tool_mask[i])}  # fmt: skip
                turn = {"trainer": "trl", "prompt": to_jsonable(prompts[i] if i < len(prompts) else None),
                        "completion": _text(completions), "messages": to_jsonable(completions),
                        "tool_calls": to_jsonable(_tool_calls(completions)), "capture": capture}  # fmt: skip
                self.store.record_turn(episode.id, episode.step_count + 1, "model", turn, journaled=self.store.journaled)
            outcomes.append({"episode_id": episode.id, "trainer_reward": rewards[i], "reward_components": comps[i],
                             "advantage": advantages[i], "finish_reason": reason})  # fmt: skip
            ends.append(episode.id)
        self.store.set_outcomes(outcomes)
        self._end_open("rollout_end")
        for eid in ends:  # rollout_func's clients are the user's: end their episodes in the store
            self.store.journal_end(eid, "rollout_end")


def record_trl(trainer: Any, *, store: EpisodeStore | str | None = None, name: str | None = None,
               info: dict[str, Any] | None = None) -> TrlRecorder | AsyncHarnessRecorder:  # fmt: skip
    """Record every rollout of ``trainer`` (a TRL ``GRPOTrainer``) into ``store`` (a store, a path or
    URL; the default store when ``None``) as training run ``name``; call before ``train()``.

    An AsyncGRPO trainer whose ``rollout_worker`` is TRL's ``HarnessRolloutWorker`` (or that worker)
    is recorded by ``trl_harness.record_async_harness`` and returns its recorder."""
    from .trl_harness import is_async_harness, record_async_harness

    if is_async_harness(trainer):
        return record_async_harness(trainer, store=store, name=name, info=info)  # type: ignore[return-value]
    for attr in ("_generate", "_generate_and_score_completions", "train", "state", "accelerator"):
        if not hasattr(trainer, attr):
            raise TypeError(f"record_trl needs a TRL GRPOTrainer (1.16 or compatible); {type(trainer).__name__} "
                            f"has no {attr!r}")  # fmt: skip
    factories = getattr(trainer, "environment_factories", None) or {}
    env_names = sorted({type(i).__name__ for pool in (getattr(trainer, "_environment_pool", None) or {}).values()
                        for i in pool})  # fmt: skip
    args = trainer.args.to_dict() if hasattr(trainer.args, "to_dict") else {}
    run = TrainingRun(store, name or f"{type(trainer).__name__}-{time.strftime('%Y%m%d-%H%M%S')}", trainer="trl",
                      env_name=",".join(env_names) or None, config=args, info=info)  # fmt: skip
    rec = TrlRecorder(trainer, run)
    for name_, factory in list(factories.items()):
        for instance in trainer._environment_pool.get(name_, []):
            rec.instrument(instance)
        factories[name_] = functools.partial(lambda f: rec.instrument(f()), factory)
    trainer._generate = functools.partial(rec._generate, trainer._generate)
    trainer._generate_and_score_completions = functools.partial(rec._generate_and_score,
                                                                trainer._generate_and_score_completions)  # fmt: skip
    trainer.train = functools.partial(rec._train, trainer.train)
    return rec
