"""Forks that never took a step of their own are not kept: a studio fork (source "human") whose
recorded actions are only a replayed prefix of its parent's adds nothing, so once its Play session
has ended (or it is discarded) it is deleted."""

from __future__ import annotations

from openenv.recording import EpisodeNotFoundError, EpisodeRecord, EpisodeStore

__all__ = ["discard_fork", "is_unplayed_fork", "prune_unplayed_forks", "same_kind"]

MAX_CHECKED_STEPS = 10_000  # a longer prefix is not compared (the fork is kept)


def same_kind(runtime_name: str, env_name: str) -> bool:
    """Whether a running env named ``runtime_name`` is of the kind episodes of ``env_name`` came
    from (``echo``, ``echo_env`` and ``Echo-Env`` are one kind)."""
    def norm(name: str) -> str:
        n = name.strip().lower().replace("-", "_").replace(" ", "_")
        return n[:-4] if n.endswith("_env") else n

    return bool(runtime_name) and norm(runtime_name) == norm(env_name)


def is_unplayed_fork(store: EpisodeStore, fork: EpisodeRecord) -> bool:
    """A fork with no step beyond the replay of its parent's steps ``1..fork_step``."""
    if fork.parent_episode_id is None or fork.fork_step is None or fork.step_count > fork.fork_step:
        return False
    if fork.step_count > MAX_CHECKED_STEPS:
        return False
    own = store.load_steps(fork.id, start=1, limit=fork.step_count)
    parent = store.load_steps(fork.parent_episode_id, start=1, limit=fork.step_count)
    return len(parent) == len(own) and all(a.action == b.action for a, b in zip(own, parent, strict=True))


def prune_unplayed_forks(store: EpisodeStore, parent_id: str, *, keep_live: bool = True) -> int:
    """Delete the studio forks of ``parent_id`` that never took a step of their own (those still
    being recorded are kept when ``keep_live``); how many were deleted."""
    store.flush()
    doomed = [f.id for f in store.list_forks(parent_id)
              if f.source == "human" and (f.finished or not keep_live) and is_unplayed_fork(store, f)]
    return store.delete_episodes(doomed) if doomed else 0


def discard_fork(store: EpisodeStore, episode_id: str | None) -> bool:
    """Delete a discarded fork's episode if it never took a step of its own."""
    if episode_id is None:
        return False
    store.flush()
    try:
        ep = store.get_episode(episode_id)
    except EpisodeNotFoundError:
        return False
    if is_unplayed_fork(store, ep):
        store.delete_episodes([ep.id])
        return True
    return False
