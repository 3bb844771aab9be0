"""``openenv collect`` of ours: resume, the episode store (steps, turns, token ids), clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from openenv.cli.main import cli
from openenv.recording import EpisodeStore


def _collect(*args: str) -> object:
    return CliRunner().invoke(cli, ["collect", *args], catch_exceptions=False)


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]


def test_resume_skips_collected_and_no_resume_moves_the_file_aside(ttt_url: str, tmp_path: Path) -> None:
    out, db = tmp_path / "out", str(tmp_path / "e.db")
    first = _collect("openspiel:tic_tac_toe", "--base-url", ttt_url, "-o", str(out), "-n", "2", "--db", db)
    assert first.exit_code == 0, first.output
    assert "Collected=2 skipped=0 dropped=0 failed=0" in first.output
    again = _collect("openspiel:tic_tac_toe", "--base-url", ttt_url, "-o", str(out), "-n", "3", "--db", db)
    assert "Collected=1 skipped=2" in again.output
    assert [r["episode_id"] for r in _rows(out)] == ["ep-000000", "ep-000001", "ep-000002"]
    with pytest.warns(RuntimeWarning, match="resume=False moved existing results file"):
        fresh = CliRunner().invoke(cli, ["collect", "openspiel:tic_tac_toe", "--base-url", ttt_url, "-o", str(out),
                                         "-n", "1", "--no-resume", "--db", db])  # fmt: skip
    assert fresh.exit_code == 0, fresh.output
    assert len(_rows(out)) == 1
    backups = list(out.glob("results.*.bak.jsonl"))
    assert len(backups) == 1 and len(backups[0].read_text().splitlines()) == 3


def test_collected_episodes_are_in_the_store_with_their_steps(ttt_url: str, tmp_path: Path) -> None:
    out, db = tmp_path / "out", str(tmp_path / "e.db")
    result = _collect("openspiel:tic_tac_toe", "--base-url", ttt_url, "-o", str(out), "-n", "2", "--db", db,
                      "--label", "ttt-collect")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = _rows(out)
    with EpisodeStore(db) as store:
        episodes = sorted(store.list_episodes().items, key=lambda e: e.started_at)
        assert [e.source for e in episodes] == ["collect", "collect"]
        assert {e.label for e in episodes} == {"ttt-collect"}
        assert [e.tags for e in episodes] == [("collect", "ep-000000"), ("collect", "ep-000001")]
        for ep, row in zip(episodes, rows, strict=True):
            assert ep.end_reason == "done" and ep.total_reward == row["reward"] == 1.0
            steps = store.load_steps(ep.id)
            assert steps[0].observation["tools"] == ["play_move"]
            assert steps[0].observation["messages"] == row["messages"][:1]
            calls = [(s.action["tool_name"], s.action["arguments"]) for s in steps[1:]]
            assert calls == [(t["tool_name"], t["arguments"]) for t in row["tool_trace"]]
            assert [s.reward for s in steps[1:]] == [t["result"]["metadata"]["reward"] for t in row["tool_trace"]]
            assert all(s.actor == "model" for s in steps[1:])
            assert [s.agent["completion"] for s in steps[1:]] == [
                m["content"] for m in row["messages"] if m["role"] == "assistant"]
            assert steps[1].agent["harness_turn"] == 0 and steps[1].agent["tools"][0]["name"] == "play_move"


def test_llm_endpoint_with_capture_records_token_ids(echo_url: str, engine_url: str, tmp_path: Path) -> None:
    out, db = tmp_path / "out", str(tmp_path / "e.db")
    result = _collect("echo:weather", "--base-url", echo_url, "-o", str(out), "-n", "1", "--db", db,
                      "--llm-endpoint", engine_url, "--model", "vllm", "--capture", "tokens")  # fmt: skip
    assert result.exit_code == 0, result.output
    [row] = _rows(out)
    # the fake engine calls the first tool once, then answers "done: <tool result>"
    assert [t["tool_name"] for t in row["tool_trace"]] == ["echo_message"]
    assert row["reward"] == row["tool_trace"][0]["result"]["metadata"]["reward"] > 0
    assert row["messages"][-1]["content"].startswith("done: ")
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["provider"] == "openai-compatible" and meta["llm_endpoint"] == engine_url
    with EpisodeStore(db) as store:
        [ep] = store.list_episodes().items
        turns = store.load_turns(ep.id)
        assert sorted(turns) == [1, 2]  # the tool call's step, then the final answer (no step)
        first = turns[1][1]
        cap = first["capture"]
        assert cap["level"] == "tokens" and cap["prompt_ids"] and cap["sampled_ids"]
        assert len(cap["logprobs"]) == len(cap["sampled_ids"]) and cap["findings"] == []
        assert first["finish_reason"] == "tool_calls" and first["model"] == "vllm"
        # turn 2's prompt really extends turn 1's prompt + sampled ids, as the engine saw it
        second = turns[2][1]["capture"]
        assert second["prompt_ids"][: len(cap["prompt_ids"]) + len(cap["sampled_ids"])] == cap["prompt_ids"] + cap["sampled_ids"]
    exported = CliRunner().invoke(cli, ["episodes", "--db", db, "export", "--source", "collect", "--format", "training", "-"])
    assert exported.exit_code == 0, exported.output
    [doc] = [json.loads(line) for line in exported.output.splitlines() if line.startswith("{")]
    assert [(t["node_id"], t["root_id"]) for t in doc["turns"]] == [("t0", "t0"), ("t1", "t0")]  # one thread
    sent = httpx.get(engine_url + "/_requests", timeout=10).json()
    assert sent[-1]["body"]["return_token_ids"] is True and sent[-1]["body"]["messages"][0]["role"] == "system"


def test_llm_endpoint_without_capture_uses_the_llm_client(echo_url: str, engine_url: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _collect("echo:rain", "--base-url", echo_url, "-o", str(out), "-n", "2", "--no-record",
                      "--llm-endpoint", engine_url, "--model", "vllm")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Collected=2" in result.output and "Recorded" not in result.output


def test_bad_input_gets_a_clear_error(ttt_url: str, tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    cases = [
        (["nope:x", "--base-url", ttt_url, "-o", out], "Unknown env 'nope:x'"),
        (["openspiel", "--base-url", ttt_url, "-o", out], "Missing variant"),
        (["echo:x", "--base-url", ttt_url, "-o", out, "--provider", "openai"], "--model is required"),
        (["echo:x", "--base-url", ttt_url, "-o", out, "--dataset-config", "{"], "--dataset-config must be valid JSON"),
        (["echo:x", "--base-url", ttt_url, "-o", out, "--model", "m", "--llm-endpoint", "ftp://x"], "Invalid endpoint URL"),
        (["reasoning_gym:chain_sum", "--base-url", ttt_url, "-o", out], "reasoning_gym_env is not importable"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(cli, ["collect", *args, "--no-record"])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    Path(out).mkdir(exist_ok=True)
    (Path(out) / "results.jsonl").write_text("not json\n")
    result = CliRunner().invoke(cli, ["collect", "openspiel:tic_tac_toe", "--base-url", ttt_url, "-o", out, "--no-record"])
    assert result.exit_code == 1 and "results.jsonl:1: invalid JSON" in result.output
