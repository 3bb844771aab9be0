"""Captured episodes out of the store, for trainers.

``training_documents`` rebuilds each episode's rollout graph from its recorded model turns (a
capture session, or a rollout run with ``--capture tokens``) and yields the rollout document (the
same one ``GET /sessions/{id}/rollout`` serves). ``export_training`` writes them one JSON line per
rollout; ``export_training_table`` writes one row per trainable sequence (``input_ids``,
``loss_mask``, ``logprobs``, ``prompt_len``, ``reward`` = the episode's return), as JSONL or Parquet,
which a TRL or verl loop reads as it is. An episode whose calls carry no token ids (an eval rollout,
or one recorded without capture) is refused with an error naming it, never exported empty.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from openenv.recording.errors import ExportFormatError

from .document import rollout_document
from .recording import findings_of, graph_from_turns

__all__ = ["captured_calls", "export_training", "export_training_table", "training_documents"]


def captured_calls(store: Any, episode_id: str) -> list[dict[str, Any]]:
    """Every captured call in order: a rollout turn's rejected attempts (retries) before the turn."""
    calls: list[dict[str, Any]] = []
    for _, (actor, data) in sorted(store.load_turns(episode_id).items()):
        if actor != "model" or not data:
            continue
        calls += [a for a in data.get("attempts") or [] if isinstance(a, dict) and a.get("capture")]
        if data.get("capture"):
            calls.append(data)
    return calls


def training_documents(store: Any, *, filters: Any = None, episode_ids: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
    """The rollout document of each chosen episode (``episode_id`` and ``return`` added)."""
    chosen = list(episode_ids) if episode_ids is not None else None
    episodes = (store.get_episode(i) for i in chosen) if chosen is not None else store.iter_episodes(filters)
    for ep in episodes:
        turns = captured_calls(store, ep.id)
        if not turns:
            if chosen is None and ep.step_count == 0:
                continue
            raise ExportFormatError(f"episode {ep.id} has no captured model calls: record it through `openenv capture` "
                                    "or `openenv rollout --capture tokens` to export it for training")
        levels = {(t.get("capture") or {}).get("level", "tokens") for t in turns}
        if not any(t["capture"].get("prompt_ids") for t in turns) or levels != {"tokens"}:
            raise ExportFormatError(f"episode {ep.id} is an eval rollout (captured at level {', '.join(sorted(levels))}, "
                                    "no token ids): there is nothing a trainer can learn from; capture at level tokens")
        session_id = turns[0]["capture"].get("session_id") or ep.id
        doc = rollout_document(graph_from_turns(turns), session_id=session_id, capture_level="tokens",
                               findings=findings_of(turns))
        yield {**doc, "episode_id": ep.id, "return": ep.total_reward}


def _open(dest: str | Path | IO[str]) -> tuple[IO[str], bool]:
    if hasattr(dest, "write"):
        return dest, False  # type: ignore[return-value]
    return Path(dest).open("w", encoding="utf-8"), True  # type: ignore[arg-type]


def export_training(store: Any, dest: str | Path | IO[str], **selection: Any) -> int:
    """One rollout document per line into ``dest``; the number written."""
    out, owned = _open(dest)
    n = 0
    try:
        for doc in training_documents(store, **selection):
            out.write(json.dumps(doc, separators=(",", ":")) + "\n")
            n += 1
    finally:
        if owned:
            out.close()
    return n


def _table_rows(store: Any, **selection: Any) -> Iterator[dict[str, Any]]:
    for doc in training_documents(store, **selection):
        for i, seq in enumerate(doc["sequences"]):
            if seq["trainable"]:
                yield {"session_id": doc["session_id"], "episode_id": doc["episode_id"], "sequence": i,
                       "role": seq["role"], "input_ids": seq["input_ids"], "loss_mask": seq["loss_mask"],
                       "logprobs": seq["logprobs"], "prompt_len": seq["prompt_len"], "n_turns": seq["n_turns"],
                       "reward": doc["return"]}


def export_training_table(store: Any, dest: str | Path | IO[str], *, fmt: str = "jsonl", **selection: Any) -> int:
    """One row per trainable sequence into ``dest`` (``jsonl`` or ``parquet``); the number of rows."""
    rows = list(_table_rows(store, **selection))
    if fmt == "parquet":
        from openenv.recording.parquet import _pa

        pa = _pa()
        pa.parquet.write_table(pa.Table.from_pylist(rows), str(dest))
        return len(rows)
    out, owned = _open(dest)
    try:
        for row in rows:
            out.write(json.dumps(row, separators=(",", ":")) + "\n")
    finally:
        if owned:
            out.close()
    return len(rows)
