"""The rollout loop against the real echo server and the loopback model server."""

from __future__ import annotations

import asyncio

from openenv.recording import EpisodeFilter, EpisodeStore, export_jsonl, import_jsonl
from openenv.rollout import ModelEndpoint, Rollout, RolloutSettings

from .conftest import model_requests


def _run(env_url: str, model_url: str, store: EpisodeStore, model: str, **settings: object) -> Rollout:
    rollout = Rollout(env_url, ModelEndpoint(model_url, model=model, api_key="sk-secret-123", temperature=0.2),
                      store, RolloutSettings(**settings))  # fmt: skip
    asyncio.run(rollout.run())
    return rollout


def test_concurrent_episodes_record_prompts_and_completions(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    r = _run(echo_url, model_url, store, "echo#loop", episodes=6, concurrency=3, max_steps=4, seed=10, label="l1")
    summary = r.summary()
    assert summary["finished"] == 6 and summary["steps"]["total"] == 24
    page = store.list_episodes(EpisodeFilter(label="l1"), limit=50)
    assert len(page.items) == 6
    assert {e.source for e in page.items} == {"model"}
    assert sorted(e.seed for e in page.items) == [10, 11, 12, 13, 14, 15]
    ep = store.get_episode(page.items[0].id)
    assert ep.end_reason == "max_steps" and ep.step_count == 4
    assert ep.run.info["model"] == {"base_url": model_url, "model": "echo#loop", "temperature": 0.2, "max_tokens": None,
                                    "timeout_s": 120.0}  # fmt: skip
    assert "sk-secret" not in repr(ep.run.info)
    steps = store.load_steps(ep.id)
    assert steps[0].actor is None  # the reset
    assert [s.action for s in steps[1:]] == [{"message": f"m{i}"} for i in (1, 2, 3, 4)]
    assert [s.observation["echoed_message"] for s in steps[1:]] == ["m1", "m2", "m3", "m4"]
    one = steps[2].agent
    assert steps[2].actor == "model" and one["completion"] == '{"message":"m2"}' and one["model"] == "echo#loop"
    assert [m["role"] for m in one["messages"]] == ["system", "user", "assistant", "user"]
    assert "Action schema" in one["messages"][0]["content"] and '"message"' in one["messages"][0]["content"]
    assert one["prompt_tokens"] > 0 and one["completion_tokens"] > 0 and one["latency_ms"] > 0
    assert ep.total_reward == sum(s.reward for s in steps[1:])
    seen = model_requests(model_url, "echo#loop")
    assert seen and all(x["authorization"] == "Bearer sk-secret-123" for x in seen)
    assert all(x["body"]["temperature"] == 0.2 for x in seen)


def test_the_api_key_is_never_stored(echo_url: str, model_url: str, store: EpisodeStore, tmp_path) -> None:  # noqa: ANN001
    _run(echo_url, model_url, store, "echo", episodes=2, max_steps=2, label="nokey")
    store.flush()
    out = tmp_path / "x.jsonl"
    export_jsonl(store, out)
    assert "sk-secret" not in out.read_text()
    data = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"sk-secret" not in data


def test_fenced_json_is_accepted(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    r = _run(echo_url, model_url, store, "fenced", episodes=1, max_steps=2)
    steps = store.load_steps(r.results[0].episode_id)
    assert [s.action for s in steps[1:]] == [{"message": "m1"}, {"message": "m2"}]
    assert "```json" in steps[1].agent["completion"]


def test_a_malformed_reply_is_retried_once_with_the_error(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    r = _run(echo_url, model_url, store, "malformed-once", episodes=1, max_steps=2)
    res = r.results[0]
    assert res.end_reason == "max_steps" and res.steps == 2 and res.invalid_replies == 2
    step = store.load_steps(res.episode_id)[1]
    (failed,) = step.agent["attempts"]
    assert failed["completion"].startswith("I would like") and "no JSON object" in failed["error"]
    assert "not a valid action" in step.agent["messages"][-1]["content"]


def test_a_reply_that_never_parses_is_a_failed_turn_not_a_crash(echo_url: str, model_url: str, store: EpisodeStore,
                                                                 tmp_path) -> None:  # noqa: ANN001
    r = _run(echo_url, model_url, store, "malformed", episodes=2, concurrency=2, max_steps=3, label="bad")
    for res in r.results:
        assert res.status == "finished" and res.end_reason == "invalid_action" and res.steps == 0
        ep = store.get_episode(res.episode_id)
        assert ep.end_reason == "invalid_action" and ep.step_count == 0
        turns = store.load_turns(res.episode_id)
        assert list(turns) == [1]
        actor, data = turns[1]
        assert actor == "model" and data["failed"] and data["completion"].startswith("I would like")
        assert len(data["attempts"]) == 1
    out = tmp_path / "bad.jsonl"
    export_jsonl(store, out, filters=EpisodeFilter(label="bad"))
    other = EpisodeStore(tmp_path / "other.db")
    import_jsonl(other, out)
    again = tmp_path / "again.jsonl"
    export_jsonl(other, again)
    other.close()
    assert out.read_bytes() == again.read_bytes() and b'"failed_turn"' in out.read_bytes()


def test_a_type_error_is_caught_by_the_schema_check(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    r = _run(echo_url, model_url, store, "wrong-type", episodes=1, max_steps=2)
    assert r.results[0].end_reason == "invalid_action"
    (_, data), = store.load_turns(r.results[0].episode_id).values()
    assert "must be string" in data["error"]


def test_transient_model_errors_are_retried(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    r = _run(echo_url, model_url, store, "flaky", episodes=1, max_steps=3)
    res = r.results[0]
    assert res.end_reason == "max_steps" and res.steps == 3 and res.error is None
    assert store.load_steps(res.episode_id)[1].agent["http_attempts"] == 2


def test_a_model_failing_mid_run_keeps_the_recorded_steps(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    endpoint = ModelEndpoint(model_url, model="fail-after-5")
    rollout = Rollout(echo_url, endpoint, store, RolloutSettings(episodes=4, concurrency=1, max_steps=3,
                                                                 model_error_limit=2))  # fmt: skip
    rollout.run_retries = 0
    asyncio.run(rollout.run())
    first, second, *rest = rollout.results
    assert first.end_reason == "max_steps" and first.steps == 3
    assert second.end_reason == "model_error" and second.steps == 2 and "HTTP 500" in second.error
    assert store.get_episode(second.episode_id).end_reason == "model_error"
    assert [s.index for s in store.load_steps(second.episode_id)] == [0, 1, 2]
    assert rest[0].end_reason == "model_error" and rest[1].status == "skipped"
    summary = rollout.summary()
    assert summary["skipped"] == 1 and summary["end_reasons"] == {"max_steps": 1, "model_error": 2}


def test_a_slow_model_times_out_and_the_run_goes_on(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    endpoint = ModelEndpoint(model_url, model="slow-2", timeout_s=0.3)
    rollout = Rollout(echo_url, endpoint, store, RolloutSettings(episodes=2, concurrency=2, max_steps=2))
    asyncio.run(rollout.run())
    assert [r.end_reason for r in rollout.results] == ["model_error", "model_error"]
    assert all("did not answer within 0.3 s" in r.error for r in rollout.results)


def test_tool_calls_drive_an_mcp_shaped_env(tools_url: str, model_url: str, store: EpisodeStore) -> None:
    r = _run(tools_url, model_url, store, "tools", episodes=2, concurrency=2, max_steps=5)
    assert r.policy.mode == "tools"
    for res in r.results:
        assert res.end_reason == "done" and res.steps == 2 and res.success and res.total_reward == 1.0
        steps = store.load_steps(res.episode_id)
        assert [s.action for s in steps[1:]] == [
            {"type": "call_tool", "tool_name": "add", "arguments": {"a": 2, "b": 3}},
            {"type": "call_tool", "tool_name": "finish", "arguments": {"answer": 5}},
        ]
        last = steps[2].agent
        assert last["tool_calls"][0]["name"] == "finish"
        assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "tool"]
    sent = model_requests(model_url, "tools")[0]["body"]
    assert [t["function"]["name"] for t in sent["tools"]] == ["add", "finish"]
    assert sent["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    assert r.summary()["pass_at_k"] == {"pass@1": 1.0}


def test_a_jinja_template_replaces_the_prompt(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    template = ("{% set system %}Play {{ env.name }}. Schema: {{ action_schema | length > 10 }}{% endset %}"
                "Step {{ step }}: {{ observation.echoed_message }}")  # fmt: skip
    r = _run(echo_url, model_url, store, "echo", episodes=1, max_steps=2, template=template)
    msgs = store.load_steps(r.results[0].episode_id)[2].agent["messages"]
    assert msgs[0]["content"] == "Play echo. Schema: True"
    assert [m["content"] for m in msgs if m["role"] == "user"] == ["Step 0: Echo environment ready!", "Step 1: m1"]


def test_a_broken_template_is_a_clear_error(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    import pytest

    from openenv.rollout import Policy, RolloutError
    from openenv.rollout.spec import EnvSpec

    with pytest.raises(RolloutError, match="does not compile"):
        Policy(EnvSpec("echo"), template="{% if %}")
    r = _run(echo_url, model_url, store, "echo", episodes=1, max_steps=2, template="{{ observation.nope }}")
    assert r.results[0].end_reason == "prompt_error" and "nope" in r.results[0].error


def test_summary_of_nothing_finished_yet() -> None:
    from openenv.rollout import EpisodeResult, pass_at_k, summarise

    s = summarise([EpisodeResult(index=0, seed=0)])
    assert s["finished"] == 0 and s["pass_at_k"] == {} and s["return"]["mean"] is None
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 2) == 1.0 and abs(pass_at_k(4, 1, 2) - 0.5) < 1e-9


def test_stop_ends_the_run_between_steps(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    async def go() -> Rollout:
        rollout = Rollout(echo_url, ModelEndpoint(model_url, model="slow-0.2"), store,
                          RolloutSettings(episodes=6, concurrency=2, max_steps=50))  # fmt: skip
        task = asyncio.create_task(rollout.run())
        for _ in range(200):
            await asyncio.sleep(0.05)
            if sum(r.steps for r in rollout.results) >= 2:
                break
        rollout.stop()
        await asyncio.wait_for(task, 30)
        return rollout

    rollout = asyncio.run(go())
    played = [r for r in rollout.results if r.episode_id]
    assert played and all(r.status == "finished" for r in played)
    assert {r.end_reason for r in played} <= {"cancelled", None}
    assert all(r.status == "skipped" for r in rollout.results if not r.episode_id)
    for r in played:  # every step the loop counted is recorded
        ep = store.get_episode(r.episode_id)
        assert ep.finished and ep.step_count == r.steps


def test_parquet_keeps_who_acted_and_the_failed_turn(echo_url: str, model_url: str, store: EpisodeStore,
                                                     tmp_path) -> None:  # noqa: ANN001
    from openenv.recording import export_parquet, import_parquet

    _run(echo_url, model_url, store, "malformed-once", episodes=1, max_steps=2, label="pq")
    _run(echo_url, model_url, store, "malformed", episodes=1, max_steps=2, label="pq")
    export_parquet(store, tmp_path / "x.parquet", filters=EpisodeFilter(label="pq"))
    other = EpisodeStore(tmp_path / "other.db")
    import_parquet(other, tmp_path / "x.parquet")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    export_jsonl(store, a, filters=EpisodeFilter(label="pq"))
    export_jsonl(other, b)
    other.close()
    assert a.read_bytes() == b.read_bytes() and b'"actor":"model"' in a.read_bytes() and b"failed_turn" in a.read_bytes()


def test_the_httpx_transport_behaves_the_same(echo_url: str, model_url: str, store: EpisodeStore) -> None:
    """``https://`` endpoints go through httpx: the same replies, retries and errors."""
    cases = {"echo": "max_steps", "flaky": "max_steps", "fail-after-1": "model_error", "tools": "done"}
    for model, end in cases.items():
        endpoint = ModelEndpoint(model_url, model=model, transport="httpx", timeout_s=5)
        rollout = Rollout(echo_url, endpoint, store, RolloutSettings(episodes=1, max_steps=2, label=f"hx-{model}",
                                                                     tools="off"))  # fmt: skip
        asyncio.run(rollout.run())
        assert rollout.results[0].end_reason == (end if model != "tools" else "invalid_action"), model


def test_lean_http_client_handles_chunked_close_and_stale_connections() -> None:
    import socket
    import threading

    from openenv.rollout.http11 import Pool

    replies = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        b"HTTP/1.1 503 Busy\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-close",
    ]
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]

    def serve() -> None:
        conn, _ = srv.accept()  # one keep-alive connection for the first three, then closed by us
        for reply in replies[:3]:
            conn.recv(65536)
            conn.sendall(reply)
        conn.close()  # stale for the client's next request: it must reconnect
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(replies[3])
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def go() -> list[tuple[int, bytes]]:
        pool = Pool(f"http://127.0.0.1:{port}/v1/chat/completions", {"content-type": "application/json"})
        out = []
        for _ in range(3):
            r = await pool.post(b"{}")
            out.append((r.status, r.content))
        await asyncio.sleep(0.1)
        r = await pool.post(b"{}")
        out.append((r.status, r.content))
        await pool.aclose()
        return out

    assert asyncio.run(asyncio.wait_for(go(), 10)) == [(200, b"ok"), (200, b"abcde"), (503, b""), (200, b"until-close")]
    thread.join(5)
    srv.close()


def test_tool_calls_drive_the_bundled_mcp_toolbox(model_url: str, store: EpisodeStore) -> None:
    """The real MCPEnvironment (``openenv serve toolbox``, FastMCP tools), started by the process
    provider: its tools reach the model, the model's tool calls become ``call_tool`` steps."""
    from openenv.rollout import start_env

    env = start_env("toolbox")
    try:
        r = _run(env.base_url, model_url, store, "tools#toolbox", episodes=2, concurrency=2, max_steps=4)
    finally:
        env.close()
    assert r.policy.mode == "tools" and "add" in [t["name"] for t in r.spec.tools]
    for res in r.results:
        assert res.end_reason == "done" and res.steps == 2
        steps = store.load_steps(res.episode_id)
        assert steps[1].action == {"type": "call_tool", "tool_name": "add", "arguments": {"a": 2, "b": 3}}
        assert "5.0" in str(steps[1].observation)
        assert steps[2].action["tool_name"] == "finish" and steps[2].done
    sent = model_requests(model_url, "tools#toolbox")[0]["body"]
    add = next(t for t in sent["tools"] if t["function"]["name"] == "add")
    assert add["function"]["parameters"]["required"] == ["a"]


def test_an_env_with_fewer_sessions_than_the_concurrency_still_plays_every_episode(
    model_url: str, store: EpisodeStore
) -> None:
    from tests.server_utils import running_server

    from .mcp_env import solo_app

    with running_server(solo_app) as url:
        r = _run(url, model_url, store, "tools#solo", episodes=4, concurrency=3, max_steps=4)
    assert [x.end_reason for x in r.results] == ["done"] * 4
    assert "fewer sessions than the concurrency" in r.summary()["note"]
