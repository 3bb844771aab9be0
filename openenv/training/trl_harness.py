"""Record TRL's AsyncGRPO harness worker (``trl.experimental.async_grpo.openenv_harness``): one line.

    worker = HarnessRolloutWorker(harness_session_factory=..., harness_adapter=..., ...)
    trainer = AsyncGRPOTrainer(model=..., args=config, train_dataset=dataset, rollout_worker=worker)
    record_trl(trainer, store="episodes.db", name="async-echo")      # the added line
    trainer.train()

The worker runs its rollouts in a spawned process; ``record_trl`` opens the run here and makes the
worker spawn its loop through ``harness_loop.recording_loop``, which records there (see
``harness_loop`` and ``harness_record``): every rollout an episode tagged with the policy version
(the training step TRL stamps on its samples), TRL's group id and the index in the group, its
session's tool calls as steps, the trainer's own training row as its model turn, and, once TRL
scores the group, the reward TRL computed (each reward column a component), the advantage and
why it ended. The run ends with ``train()``; ``record_trl(worker, ...)`` on a worker driven
directly ends it when ``worker.stop()`` returns.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from openenv.recording import EpisodeFilter, EpisodeStore

from .harness_loop import recording_loop
from .harness_record import RecordSpec
from .run import TrainingRun

__all__ = ["AsyncHarnessRecorder", "is_async_harness", "record_async_harness"]

_MARK = "_openenv_recorder"


def _worker_of(obj: Any) -> Any:
    worker = getattr(obj, "rollout_worker", obj)
    return worker if hasattr(worker, "_loop_cls") and hasattr(worker, "_loop_kwargs") else None


def is_async_harness(obj: Any) -> bool:
    """Whether ``obj`` is an AsyncGRPO trainer or rollout worker (``record_trl`` then comes here)."""
    return hasattr(obj, "rollout_worker") or _worker_of(obj) is not None


class AsyncHarnessRecorder:
    """The recording of one AsyncGRPO harness run (build it with ``record_trl``)."""

    def __init__(self, run: TrainingRun, worker: Any, trainer: Any | None) -> None:
        self.run = run
        self.store: EpisodeStore = run.store
        self.worker, self.trainer = worker, trainer

    def _settle(self) -> None:
        """The rollout process is gone: commit what its journal holds, end episodes it left open."""
        self.store.recover_journals()
        self.store.flush()
        open_ = [e.id for e in self.store.iter_episodes(EpisodeFilter(training_run_id=self.run.id)) if e.ended_at is None]
        for eid in open_:
            self.store.finish_episode(eid, "closed")

    def _stop(self, original: Any) -> Any:
        try:
            return original()
        finally:
            if self.run.status is None:
                self._settle()
                if self.trainer is None:
                    self.run.end("finished", info={"model_version": int(self.worker.model_version)})

    def _train(self, original: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:
            self._settle()
            self.run.end("cancelled" if isinstance(exc, KeyboardInterrupt) else "failed",
                         info={"error": f"{type(exc).__name__}: {exc}"[:2000]})  # fmt: skip
            raise
        self._settle()
        self.run.end("finished", info={"global_step": int(self.trainer.state.global_step),
                                       "model_version": int(getattr(self.trainer, "model_version", 0))})  # fmt: skip
        return result

    def end(self, status: str = "finished") -> None:
        """End the run now (a worker driven by hand, stopped some other way)."""
        self._settle()
        self.run.end(status)


def _factory_name(factory: Any) -> str | None:
    while isinstance(factory, functools.partial):
        factory = factory.func
    return getattr(factory, "__name__", None) or type(factory).__name__


def _target(store: EpisodeStore) -> str:
    target = store.target
    return target if "://" in target else os.path.abspath(target)


def record_async_harness(obj: Any, *, store: EpisodeStore | str | None = None, name: str | None = None,
                         info: dict[str, Any] | None = None, env_name: str | None = None) -> AsyncHarnessRecorder:  # fmt: skip
    """Record every rollout of ``obj`` (an ``AsyncGRPOTrainer`` with a ``HarnessRolloutWorker``, or the
    worker) as training run ``name`` in ``store``; call before ``train()`` / ``worker.start()``."""
    worker = _worker_of(obj)
    if worker is None or "harness_session_factory" not in worker._loop_kwargs:
        raise TypeError("record_trl records AsyncGRPO through TRL's HarnessRolloutWorker "
                        "(trl.experimental.async_grpo.openenv_harness); this trainer's rollout worker is "
                        f"{type(getattr(obj, 'rollout_worker', obj)).__name__}")  # fmt: skip
    if getattr(worker, _MARK, None) is not None:
        return getattr(worker, _MARK)
    if getattr(worker, "_process", None) is not None:
        raise RuntimeError("record_trl must be called before the rollout worker starts")
    trainer = None if obj is worker else obj
    env_name = env_name or _factory_name(worker._loop_kwargs["harness_session_factory"])
    config = trainer.args.to_dict() if trainer is not None and hasattr(trainer.args, "to_dict") else {
        k: v for k, v in worker._loop_kwargs.items() if isinstance(v, (int, float, str, bool)) or v is None}  # fmt: skip
    run = TrainingRun(store, name or f"AsyncGRPO-{time.strftime('%Y%m%d-%H%M%S')}", trainer="trl-async-grpo",
                      env_name=env_name, config=config, info=info)  # fmt: skip
    rec = AsyncHarnessRecorder(run, worker, trainer)
    spec = RecordSpec(target=_target(run.store), run_id=run.id, name=run.name, env_name=env_name)
    worker._loop_cls = functools.partial(recording_loop, worker._loop_cls, spec)
    worker.stop = functools.partial(rec._stop, worker.stop)
    if trainer is not None:
        trainer.train = functools.partial(rec._train, trainer.train)
    setattr(worker, _MARK, rec)
    return rec
