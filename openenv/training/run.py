"""A training run for any loop (verl's agent loop, a custom PPO, ``VectorEnvClient``): open a run,
record each rollout's episode with its training step and group, attach the trainer's reward and
advantage afterwards.

    with TrainingRun(store, "ppo-echo", trainer="custom", config={"lr": 1e-5}) as run:
        env = run.record(EchoEnv(base_url=url).sync())        # a recording client (record())
        for step in range(steps):
            for g, prompt in enumerate(prompts):
                for i in range(G):
                    run.tag(env, step=step, group=g, index=i)  # the next episode this client starts
                    env.reset(seed=g); ...; ids.append(env.episode_id)
            run.outcomes([{"episode_id": e, "trainer_reward": r, "advantage": a} for e, r, a in ...])
    # the run ends "finished" (or "failed" when the block raised)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

from openenv.recording import EpisodeStore, record
from openenv.recording.jsonable import to_jsonable

__all__ = ["TrainingRun", "open_store"]


def open_store(store: EpisodeStore | str | None) -> EpisodeStore:
    """``store`` itself, or the store at a path/URL, or the default store (``None``)."""
    if isinstance(store, EpisodeStore):
        return store
    if store is None:
        from openenv.recording import default_store_target

        store = default_store_target()
    return EpisodeStore(store)


class TrainingRun:
    """One training run in an ``EpisodeStore`` (see the module docstring)."""

    def __init__(
        self, store: EpisodeStore | str | None, name: str, *, trainer: str = "custom", env_name: str | None = None,
        config: Mapping[str, Any] | None = None, info: Mapping[str, Any] | None = None,
    ) -> None:  # fmt: skip
        """Open the run now (status ``running``, this host and pid); ``store`` a store, path or URL."""
        self._owns_store = not isinstance(store, EpisodeStore)
        self.store = open_store(store)
        self.name = name
        cfg = None if config is None else to_jsonable(dict(config))
        self.id = self.store.open_training_run(name, trainer=trainer, env_name=env_name, config=cfg,
                                               info=None if info is None else to_jsonable(dict(info)))  # fmt: skip
        self.status: str | None = None

    def record(self, client: Any, **kwargs: Any) -> Any:
        """``record(client, store=this run's store, label=the run's name, ...)``."""
        kwargs.setdefault("label", self.name)
        return record(client, store=self.store, **kwargs)

    def tags(self, *, step: int | None, group: int | str | None = None, index: int | None = None) -> dict[str, Any]:
        """The ``training`` fields of an episode of this run (``EpisodeStore.start_episode``)."""
        return {"training_run_id": self.id, "train_step": step, "group_id": None if group is None else str(group),
                "group_index": index}  # fmt: skip

    def tag(self, client: Any, *, step: int | None, group: int | str | None = None, index: int | None = None) -> None:
        """Tag the next episode ``client`` (a recording client) starts: it is this run's rollout of
        training step ``step``, in prompt group ``group`` at ``index``. Durable with the episode."""
        client.tag_episodes(**self.tags(step=step, group=group, index=index))

    def tag_episodes(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Put episodes already recorded in this run: rows ``{"episode_id", "step", "group",
        "index"}``; returns how many were found."""
        return self.store.tag_episodes(self.id, [
            {"episode_id": r["episode_id"], "train_step": r.get("step"),
             "group_id": None if r.get("group") is None else str(r["group"]), "group_index": r.get("index")}
            for r in rows
        ])  # fmt: skip

    def outcomes(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Attach the trainer's view of episodes: rows ``{"episode_id", "trainer_reward"?,
        "reward_components"?, "advantage"?, "finish_reason"?}`` (one transaction)."""
        return self.store.set_outcomes(rows)

    def end(self, status: str = "finished", *, info: Mapping[str, Any] | None = None) -> None:
        """End the run (``finished``, ``failed``, ``cancelled``); later calls do nothing."""
        if self.status is not None:
            return
        self.status = status
        self.store.flush()
        self.store.end_training_run(self.id, status=status, info=None if info is None else to_jsonable(dict(info)))
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> TrainingRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.end("finished")
        else:
            self.end("cancelled" if issubclass(kind, KeyboardInterrupt) else "failed",
                     info={"error": f"{kind.__name__}: {exc}"[:2000]})  # fmt: skip
