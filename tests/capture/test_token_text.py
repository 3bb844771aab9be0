"""The engine's own token strings are kept with a captured call (``sampled_tokens``) when it sent
them, and not when it sent ids as ``token_id:N`` or the entries do not pair with the ids."""

from __future__ import annotations

from openenv.capture.engine import read_reply


def _body(tokens: list[str], ids: list[int]) -> dict:
    entries = [{"token": t, "logprob": -0.1} for t in tokens]
    return {"choices": [{"message": {"role": "assistant", "content": "".join(tokens)}, "finish_reason": "stop",
                         "token_ids": ids, "logprobs": {"content": entries}}], "prompt_token_ids": [1, 2]}


def test_token_strings_are_kept_when_the_engine_sends_them() -> None:
    reply = read_reply(_body(["Hel", "lo", "\n"], [11, 12, 13]))
    assert reply.sampled_tokens == ["Hel", "lo", "\n"] and reply.sampled_ids == [11, 12, 13]


def test_ids_as_tokens_or_unpaired_entries_keep_no_text() -> None:
    assert read_reply(_body(["token_id:11", "token_id:12"], [11, 12])).sampled_tokens is None
    assert read_reply(_body(["a", "b"], [11, 12, 13])).sampled_tokens is None
