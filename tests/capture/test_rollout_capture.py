"""``openenv rollout --capture tokens``: our own rollouts record the engine's ids through the same
code as the proxy, and export for training the same way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from openenv.recording import EpisodeFilter, EpisodeStore

from .conftest import engine_requests


def test_rollout_capture_records_token_ids_and_exports_training_documents(engine_url: str, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    run = subprocess.run([sys.executable, "-m", "openenv", "rollout", "--env", "echo", "--model-url", engine_url,
                          "--model", "json", "--episodes", "2", "--max-steps", "3", "--capture", "tokens",
                          "--label", "cap-rollout", "--db", str(db), "--json"],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout)["finished"] == 2
    sent = [r["body"] for r in engine_requests(engine_url) if r["body"].get("model") == "json"][-6:]
    assert all(b["return_token_ids"] and b["logprobs"] and b["top_logprobs"] == 0 for b in sent)
    with EpisodeStore(db) as store:
        (ep, _) = store.list_episodes(EpisodeFilter(label="cap-rollout")).items
        turns = [s.agent["capture"] for s in store.load_steps(ep.id)[1:]]
        assert len(turns) == 3
        for before, after in zip(turns, turns[1:], strict=False):  # each prompt extends the last call
            assert after["prompt_ids"][:len(before["prompt_ids"]) + len(before["sampled_ids"])] == \
                before["prompt_ids"] + before["sampled_ids"]
    out = tmp_path / "train.jsonl"
    p = subprocess.run([sys.executable, "-m", "openenv", "episodes", "--db", str(db), "export", str(out), "--format",
                        "training", "--label", "cap-rollout"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(docs) == 2
    for doc in docs:
        assert doc["trainable"] and doc["stats"]["n_turns"] == 3 and doc["stats"]["n_roots"] == 1
        (seq,) = doc["sequences"]
        assert seq["role"] == "agent" and seq["n_turns"] == 3 and len(seq["turn_lengths"]) == 3
        assert isinstance(doc["return"], float)
