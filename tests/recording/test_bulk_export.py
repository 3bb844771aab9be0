"""The batched export reader gives exactly the per-episode exchange dicts (step rows, step chunks,
model turns and a failed turn, tags, runs), in the same order."""

from __future__ import annotations

from openenv.envs.echo import EchoAction, EchoEnv
from openenv.recording import EpisodeFilter, EpisodeStore, record
from openenv.recording.bulk_export import iter_episode_batches
from openenv.recording.transfer import iter_episode_dicts

from .test_transfer import _rich


def test_batches_match_the_per_episode_export(store: EpisodeStore, echo_url: str) -> None:
    ids = _rich(store)
    store.record_turn(ids[0], 1, "model", {"messages": [{"role": "user", "content": "hi"}], "completion": "m1"})
    store.record_turn(ids[0], 9, "model", {"completion": "no action", "failed": True})
    with record(EchoEnv(base_url=echo_url).sync(), store=store, label="wire") as env:
        env.reset(seed=2)
        for message in ("a", "b"):
            env.step(EchoAction(message=message))
    store.flush()
    expected = list(iter_episode_dicts(store))
    got = [d for batch in iter_episode_batches(store, batch=2) for d in batch]
    assert got == expected and len(got) == len(ids) + 1
    assert any(d.get("failed_turn", {}).get("index") == 9 for d in got)
    picked = [ids[2], ids[0]]
    assert [d["id"] for b in iter_episode_batches(store, episode_ids=picked) for d in b] == picked
    flt = EpisodeFilter(label="a")
    assert [d for b in iter_episode_batches(store, filters=flt) for d in b] == list(iter_episode_dicts(store, filters=flt))
