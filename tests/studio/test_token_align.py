"""Token compare pairs calls by their place in the rollout graph: an extra title call and a retry
in one episode leave the other calls paired with their counterparts (by order they would not be)."""

from __future__ import annotations

from pathlib import Path

from openenv.recording import EpisodeStore
from webui.studio.token_compare import compare_tokens

SYS = [1, 2, 3, 4, 5, 6]


def _call(node: str, prompt: list[int], sampled: list[int]) -> dict:
    return {"completion": node, "capture": {"node_id": node, "level": "tokens", "prompt_ids": prompt,
                                            "sampled_ids": sampled, "logprobs": [-0.1] * len(sampled)}}


def _episode(store: EpisodeStore, calls: list[dict]) -> str:
    eid = store.start_episode(store.create_run(env_name="capture"), observation={})
    for i, data in enumerate(calls, start=1):
        store.record_turn(eid, i, "model", data)
    return eid


def test_a_title_call_and_a_retry_do_not_shift_the_pairs(tmp_path: Path) -> None:
    c1 = SYS + [10]
    c2 = c1 + [20, 21, 30]
    c3 = c2 + [40, 50]
    with EpisodeStore(tmp_path / "t.db") as store:
        a = _episode(store, [_call("a1", c1, [20, 21]), _call("a2", c2, [40]), _call("a3", c3, [60])])
        b = _episode(store, [_call("title", [90, 91, 92], [93]), _call("b1", c1, [20, 21]),
                             _call("b2-dropped", c2, [41]), _call("b2", c2, [40]), _call("b3", c3, [61])])
        cmp = compare_tokens(store, a, b)
    pairs = [((p.a.data["completion"] if p.a else None), (p.b.data["completion"] if p.b else None)) for p in cmp.pairs]
    assert pairs[:3] == [("a1", "b1"), ("a2", "b2"), ("a3", "b3")]
    assert sorted(pairs[3:]) == [(None, "b2-dropped"), (None, "title")]
    assert cmp.pairs[0].same and cmp.pairs[1].same
    assert cmp.first_divergence == 2 and cmp.pairs[2].first_sampled_diff == 0
    assert cmp.pairs[2].where == "conversation 1, turn 3"
