"""Token ids, logprobs and loss masks of a model turn are stored packed (``step_agent.tokens``)
and read back unchanged, through the journal and without it, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
import struct

import orjson
import pytest
from sqlalchemy import text

from openenv.capture.recording import graph_from_turns
from openenv.recording import EpisodeStore
from openenv.recording.tokens import pack, unpack


def _turn(n_prompt: int, n_sampled: int, seed: int = 0) -> dict:
    rng = random.Random(seed)
    f32 = [struct.unpack("<f", struct.pack("<f", -rng.random() * 5))[0] for _ in range(n_sampled)]
    return {"model": "m", "completion": "hi", "messages": [{"role": "user", "content": "x"}],
            "capture": {"level": "tokens", "node_id": "t0", "prompt_ids": [rng.randrange(150_000) for _ in range(n_prompt)],
                        "sampled_ids": [rng.randrange(150_000) for _ in range(n_sampled)], "logprobs": f32,
                        "loss_mask": [rng.randrange(2) for _ in range(n_sampled)], "findings": []}}  # fmt: skip


def test_codec_round_trips_and_keeps_what_it_cannot_type() -> None:
    data = _turn(50, 20)
    rest, blob = pack(data)
    assert blob is not None and "prompt_ids" not in rest["capture"] and "prompt_ids" in data["capture"]
    assert unpack(rest, blob) == data
    odd = {"capture": {"prompt_ids": [1, 2**40], "sampled_ids": [1, None], "logprobs": [-0.1, -1e-300],
                       "loss_mask": [True, False]}}  # fmt: skip
    rest, blob = pack(odd)
    assert unpack(rest, blob) == odd  # int64 ids, float64 logprobs; a None or bools stay JSON
    assert rest["capture"]["sampled_ids"] == [1, None] and rest["capture"]["loss_mask"] == [True, False]
    assert pack({"completion": "x"}) == ({"completion": "x"}, None)
    with pytest.raises(ValueError):
        unpack(rest, blob[:-3])


@pytest.mark.parametrize("journaled", [True, False])
def test_a_big_captured_turn_is_small_in_the_store_and_reads_back(tmp_path, journaled: bool) -> None:
    with EpisodeStore(tmp_path / "t.db", journal=journaled) as store:
        run = store.create_run(env_name="capture", journaled=store.journaled)
        eid = store.start_episode(run, observation={}, journaled=store.journaled)
        data = _turn(8192, 8192)
        store.record_turn(eid, 1, "model", data, journaled=store.journaled)
        ((_, got),) = store.load_turns(eid).values()
        assert got == data
        assert graph_from_turns([got]).nodes()[0].sampled_ids == data["capture"]["sampled_ids"]
        size = store.write(lambda c: c.execute(text("SELECT length(data) + length(tokens) FROM step_agent")).scalar())
        as_json = len(orjson.dumps(data))  # ~270 KB; packed: 4 bytes per id and logprob, 1 per mask entry
        assert size < 8192 * 13 + 1000 and size < as_json * 0.45


def test_tokens_on_postgres(any_store: EpisodeStore) -> None:
    run = any_store.create_run(env_name="capture")
    eid = any_store.start_episode(run, observation={})
    data = _turn(300, 200, seed=3)
    any_store.record_turn(eid, 1, "model", data)
    assert any_store.load_turns(eid)[1] == ("model", data)
    assert any_store.load_steps(eid)[0].index == 0
