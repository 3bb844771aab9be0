"""Captured calls in the episode store (SQLite and PostgreSQL), durable through a crash of the
proxy, and exported for trainers with ``openenv episodes export --format training``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from openenv.capture import CaptureServer
from openenv.capture.export import training_documents
from openenv.recording import EpisodeFilter, EpisodeStore, ExportFormatError
from tests.recording.conftest import pg_url  # noqa: F401 - a fresh PostgreSQL database
from tests.server_utils import free_port

from .conftest import ENGINE_KEY
from .fake_engine import render_body, render_prompt
from .harness import run_anthropic, run_chat


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path):
    target = tmp_path / "cap.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = EpisodeStore(target)
    yield s
    s.close()


def test_each_call_is_a_recorded_step_with_its_tokens_and_the_export_is_the_live_document(
        engine_url: str, any_store: EpisodeStore) -> None:
    with CaptureServer(llm_url=engine_url, port=0, api_key=ENGINE_KEY, store=any_store, label="stored") as proxy:
        sid = httpx.post(f"{proxy.base_url}/sessions", json={}, timeout=10).json()["session_id"]
        messages = run_chat(f"{proxy.base_url}/v1", sid)
        live = httpx.get(f"{proxy.base_url}/sessions/{sid}/rollout", timeout=10).json()
        episode_id = httpx.get(f"{proxy.base_url}/sessions/{sid}", timeout=10).json()["episode_id"]
    any_store.flush()
    (ep,) = any_store.list_episodes(EpisodeFilter(label="stored")).items
    assert ep.id == episode_id and ep.step_count == 2 and ep.source == "capture"
    steps = any_store.load_steps(ep.id)
    assert steps[0].observation["capture_session"] == sid
    call = steps[2].agent  # the model turn of the second call, as the studio reads it
    assert steps[2].actor == "model" and call["completion"] == "done: 2" and call["finish_reason"] == "stop"
    assert call["capture"]["prompt_ids"] == render_prompt(messages[:-1])
    assert call["capture"]["sampled_ids"] == render_body(messages[-1])
    assert len(call["capture"]["logprobs"]) == len(call["capture"]["sampled_ids"]) and call["latency_ms"] > 0
    assert call["tools"][0]["function"]["name"] == "add" and call["messages"][-1]["role"] == "tool"
    (doc,) = training_documents(any_store, episode_ids=[ep.id])
    assert doc["sequences"] == live["sequences"] and doc["stats"] == live["stats"] and doc["trainable"]
    assert doc["validation"] == live["validation"] and doc["turns"] == live["turns"]
    assert doc["session_id"] == sid and doc["episode_id"] == ep.id


def _cli(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "openenv", *args], capture_output=True, text=True, timeout=120, **kw)


def _serve(engine_url: str, db: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "openenv", "capture", "--llm-url", engine_url, "--port", str(port),
                             "--db", str(db), "--engine-key-env", "CAP_ENGINE_KEY", *extra],
                            env={**os.environ, "CAP_ENGINE_KEY": ENGINE_KEY}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError(proc.stderr.read() if proc.stderr else "capture did not start")


def test_the_cli_proxy_killed_mid_run_keeps_every_answered_call(engine_url: str, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    proc, url = _serve(engine_url, db, "--label", "crashy")
    try:
        sid = httpx.post(f"{url}/sessions", json={}, timeout=10).json()["session_id"]
        messages = run_anthropic(url, sid)
        assert messages[-1]["content"][0]["text"] == "done: 2"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no shutdown, no flush
        proc.wait(timeout=10)
        proc.stderr.close()
    out = tmp_path / "train.jsonl"
    p = _cli("episodes", "--db", str(db), "export", str(out), "--format", "training", "--label", "crashy")
    assert p.returncode == 0, p.stderr
    (doc,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert doc["session_id"] == sid and doc["stats"]["n_turns"] == 2 and doc["trainable"]
    assert set(doc["sequences"][0]) >= {"input_ids", "loss_mask", "logprobs", "prompt_len", "n_turns", "turn_lengths",
                                        "role", "validation", "trainable"}
    table = tmp_path / "train.parquet"
    p = _cli("episodes", "--db", str(db), "export", str(table), "--format", "training-table", "--label", "crashy")
    assert p.returncode == 0 and "1 trainable sequence" in p.stderr, p.stderr
    import pyarrow.parquet as pq

    rows = pq.read_table(table).to_pylist()
    assert rows[0]["input_ids"] == doc["sequences"][0]["input_ids"] and rows[0]["session_id"] == sid
    assert ENGINE_KEY.encode() not in b"".join(f.read_bytes() for f in tmp_path.rglob("*") if f.is_file())


def test_an_eval_rollout_is_refused_for_training_with_a_reason(engine_url: str, tmp_path: Path) -> None:
    db = tmp_path / "eval.db"
    with EpisodeStore(db) as store, CaptureServer(llm_url=engine_url, port=0, capture_level="text", store=store,
                                                  label="eval") as proxy:
        sid = httpx.post(f"{proxy.base_url}/sessions", json={}, timeout=10).json()["session_id"]
        run_chat(f"{proxy.base_url}/v1", sid)
        doc = proxy.rollout(sid)
        assert doc["rollout_type"] == "eval" and doc["trainable"] is False
        assert doc["stats"]["n_roots"] == 1  # linked by messages without ids
        store.flush()
        with pytest.raises(ExportFormatError, match="is an eval rollout"):
            list(training_documents(store, filters=EpisodeFilter(label="eval")))
    p = _cli("episodes", "--db", str(db), "export", str(tmp_path / "x.jsonl"), "--format", "training")
    assert p.returncode == 1 and "eval rollout" in p.stderr and "Traceback" not in p.stderr
