"""Steps kept as their wire texts: the ``S`` records the recording client journals, and the step
chunks the committer stores them in (``step_chunk.data``: ``S`` payloads back to back).

A wire step's action, observation and metadata are read out of its texts when the step is read
(``values``), so committing it costs no JSON work at all: the step request's ``data`` is the
action; the reply's ``data.observation`` the observation (without ``reward``/``done``/``metadata``
keys, which the reply carries beside it), ``data.metadata`` the metadata. Reward and done are the
values the client parsed, kept in the record's head.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from . import format as fmt

__all__ = ["MAX_CHUNK_BYTES", "MAX_CHUNK_STEPS", "ChunkStep", "chunk_rewards", "iter_chunk", "outcome", "values"]

MAX_CHUNK_STEPS = 512  # a chunk row holds at most this many steps...
MAX_CHUNK_BYTES = 1 << 20  # ...and about this many bytes (one larger step still goes alone)
_HEAD = fmt.STEP_HEAD
_LIFTED = ("reward", "done", "metadata")


class ChunkStep(NamedTuple):
    """One step of a chunk, its texts not parsed yet (``values`` does that)."""

    idx: int
    t: float
    latency_ms: float
    reward: float | None
    done: bool
    request: bytes
    reply: bytes


def iter_chunk(data: bytes) -> Iterator[ChunkStep]:
    """The steps of a ``step_chunk.data`` blob, in order; ``ValueError`` where it is damaged (a
    record cut short or not a step), after the steps before that point."""
    at, end = 0, len(data)
    while at < end:
        if at + _HEAD.size > end:
            raise ValueError(f"a step record cut short at byte {at} of {end}")
        kind, n, flags, idx, t, latency, reward, n_req, n_rep = _HEAD.unpack_from(data, at)
        body = at + _HEAD.size + n
        stop = body + n_req + n_rep
        if kind != b"S" or stop > end:
            raise ValueError(f"no whole step record at byte {at} of {end}")
        yield ChunkStep(idx, t, latency, reward if flags & fmt.HAS_REWARD else None, flags >= fmt.DONE,
                        data[body : body + n_req], data[body + n_req : stop])  # fmt: skip
        at = stop


def chunk_rewards(data: bytes) -> Iterator[tuple[int, float | None]]:
    """``(index, reward)`` of each step of a ``step_chunk.data`` blob, read from the record heads
    only (no text is parsed); ``ValueError`` where it is damaged, as ``iter_chunk``."""
    at, end, size, has_reward = 0, len(data), _HEAD.size, fmt.HAS_REWARD
    unpack = _HEAD.unpack_from
    while at < end:
        if at + size > end:
            raise ValueError(f"a step record cut short at byte {at} of {end}")
        kind, n, flags, idx, _t, _latency, reward, n_req, n_rep = unpack(data, at)
        stop = at + size + n + n_req + n_rep
        if kind != b"S" or stop > end:
            raise ValueError(f"no whole step record at byte {at} of {end}")
        yield idx, (reward if flags & has_reward else None)
        at = stop


def values(request: bytes | str, reply: bytes | str) -> tuple[Any, Any, Any]:
    """``(action, observation, metadata)`` of a step from its request and reply texts (a text that
    is not a JSON object is kept in a marker, never lost)."""
    try:
        action = orjson.loads(request).get("data")
    except (orjson.JSONDecodeError, AttributeError):  # never expected: the client wrote it
        action = _marker("wire request", request)
    try:
        data = orjson.loads(reply).get("data") or {}
        observation = data.get("observation")
        if isinstance(observation, dict) and any(k in observation for k in _LIFTED):
            observation = {k: v for k, v in observation.items() if k not in _LIFTED}
        return action, observation, data.get("metadata") or None
    except (orjson.JSONDecodeError, AttributeError):  # never expected: the client parsed it
        return action, _marker("wire reply", reply), None


def outcome(reply: bytes | str) -> tuple[float | None, bool]:
    """The reward and done of a step from its reply text (for journal records that do not carry
    them: ``W`` records)."""
    try:
        data = orjson.loads(reply).get("data") or {}
        reward = data.get("reward")
        return (None if reward is None else float(reward)), data.get("done") is True
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return None, False


def _marker(what: str, text: bytes | str) -> dict[str, str]:
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return {"__openenv_unserializable__": what, "repr": text[:2000]}
