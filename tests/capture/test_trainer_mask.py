"""A trainer's own loss mask decides what is trainable in the token view's rows: TRL's GRPO recomputes
logprobs, so its rollouts carry no sampling logprobs, and its tool-result tokens are masked out."""

from __future__ import annotations

from openenv.capture.document import rollout_document
from openenv.capture.recording import graph_from_turns


def _turn(**capture: object) -> dict:
    return {"trainer": "trl", "completion": "x", "messages": [],
            "capture": {"level": "tokens", "prompt_ids": [1, 2, 3], "sampled_ids": [4, 5, 6, 7], **capture}}


def test_a_trainer_turn_without_logprobs_is_trainable_where_its_mask_says() -> None:
    doc = rollout_document(graph_from_turns([_turn(logprobs=None, loss_mask=[1, 1, 0, 1])]), session_id="s")
    (row,) = doc["sequences"]
    assert doc["trainable"] and row["role"] == "agent" and row["trainable"]
    assert row["loss_mask"] == [0, 0, 0, 1, 1, 0, 1] and row["n_trainable"] == 3


def test_logprobs_are_kept_only_where_the_trainer_trains() -> None:
    doc = rollout_document(graph_from_turns([_turn(logprobs=[-0.5, -0.1, -2.0, -0.3], loss_mask=[1, 1, 0, 1])]),
                           session_id="s")  # fmt: skip
    assert doc["sequences"][0]["logprobs"] == [0.0, 0.0, 0.0, -0.5, -0.1, 0.0, -0.3]


def test_a_capture_without_a_trainer_still_needs_logprobs() -> None:
    turn = _turn(logprobs=None, loss_mask=[1, 1, 1, 1])
    del turn["trainer"]
    doc = rollout_document(graph_from_turns([turn]), session_id="s")
    assert not doc["trainable"] and doc["sequences"][0]["loss_mask"] == [0] * 7
