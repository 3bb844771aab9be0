"""The whole-episode rollout API on a real env server (tic-tac-toe/echo on 127.0.0.1) and the
loopback engine: the MCP bridge, reserved names, reward resolution, limits, training traces,
``build_model_step`` and the store recorder used as a library."""

from __future__ import annotations

import pytest
from openspiel_env.client import OpenSpielEnv
from openspiel_env.harness import OpenSpielSessionFactory

from openenv.core.env_server.mcp_types import Tool
from openenv.core.harness import (
    RESERVED_TOOL_NAMES,
    CLIHarnessAdapter,
    HarnessRolloutResult,
    HarnessRunLimits,
    LoopOwningSession,
    MCPHarnessAdapter,
    ModelStepResult,
    SessionMCPBridge,
    StepEnvSessionAdapter,
    ToolResult,
    ToolTraceEntry,
    TrainingTrace,
    VerifyResult,
    _resolve_env_reward,
)
from openenv.core.harness.collect import CollectRunner, RolloutSerializer, build_model_step
from openenv.core.harness.collect_store import CollectRecorder
from openenv.core.llm_client import LLMResponse, OpenAIClient, ToolCall


def _factory(url: str) -> OpenSpielSessionFactory:
    return OpenSpielSessionFactory(lambda: OpenSpielEnv(base_url=url), game_name="tic_tac_toe")


def _always(cell: int):
    def step(messages, tools, sampling):
        return ModelStepResult(response=LLMResponse(content="", tool_calls=[ToolCall(id="c", name="play_move",
                                                                                     args={"action_id": cell})]))
    return step


def test_bridge_answers_mcp_and_refuses_bad_requests(ttt_url: str) -> None:
    session = _factory(ttt_url).create(task=None)
    try:
        bridge = SessionMCPBridge(session)
        listed = bridge.handle_request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert [t["name"] for t in listed["result"]["tools"]] == ["play_move"]
        ok = bridge.handle_request({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                    "params": {"name": "play_move", "arguments": {"action_id": 4}}})
        assert ok["result"]["data"]["legal_actions"] == [0, 1, 2, 3, 5, 6, 7] and ok["result"]["done"] is False
        errors = {
            "bad version": ({"jsonrpc": "1.0", "id": 3, "method": "tools/list"}, -32600),
            "no name": ({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {}}, -32602),
            "reserved": ({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "reset"}}, -32602),
            "unknown tool": ({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "x"}}, -32601),
            "unknown method": ({"jsonrpc": "2.0", "id": 7, "method": "prompts/list"}, -32601),
            # as 0.10: a KeyError inside the tool reads as "not found", a ValueError as bad params
            "tool KeyError": ({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                               "params": {"name": "play_move", "arguments": {}}}, -32601),
            "tool ValueError": ({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                 "params": {"name": "play_move", "arguments": {"action_id": 99}}}, -32602),
        }
        for what, (request, code) in errors.items():
            reply = bridge.handle_request(request)
            assert reply["error"]["code"] == code, what
            assert reply["id"] == request["id"]
    finally:
        session.close()


def test_reserved_tool_names_are_refused(ttt_url: str) -> None:
    assert RESERVED_TOOL_NAMES == {"reset", "step", "state", "close"}
    with pytest.raises(ValueError, match="reserved for orchestration controls: reset"):
        StepEnvSessionAdapter(OpenSpielEnv(base_url=ttt_url), tool_specs=[Tool(name="reset")],
                              action_builder=lambda n, a: None, initial_messages_builder=lambda r, t: [])
    session = _factory(ttt_url).create()
    try:
        with pytest.raises(KeyError, match="Reserved orchestration tool: step"):
            session.call_tool("step", {})
        with pytest.raises(KeyError, match="Unknown tool: nope"):
            session.call_tool("nope", {})
    finally:
        session.close()


def test_reward_comes_from_the_env_and_verify_may_not_contradict_it() -> None:
    rollout = HarnessRolloutResult(tool_trace=[
        ToolTraceEntry("t", {}, ToolResult(metadata={"reward": 0.5})), ToolTraceEntry("t", {}, ToolResult(data={"x": 1}))])
    assert _resolve_env_reward(rollout, VerifyResult()) == 0.5
    assert _resolve_env_reward(rollout, VerifyResult(env_reward=0.5000000001)) == 0.5
    with pytest.raises(ValueError, match="must forward the environment reward"):
        _resolve_env_reward(rollout, VerifyResult(env_reward=1.0))
    assert _resolve_env_reward(HarnessRolloutResult(), VerifyResult(env_reward=2)) == 2.0
    with pytest.raises(ValueError, match="did not produce an environment reward"):
        _resolve_env_reward(HarnessRolloutResult(), VerifyResult())


def test_limits_bound_the_white_box_loop(ttt_url: str) -> None:
    session = _factory(ttt_url).create()
    try:  # an illegal repeat ends the game at once; the total-call limit truncates before that
        out = MCPHarnessAdapter().run_white_box(_always(0), session, HarnessRunLimits(max_turns=5, max_total_tool_calls=1))
        assert out.metrics == {"truncated": True} and len(out.tool_trace) == 1 and not out.done
    finally:
        session.close()
    session = _factory(ttt_url).create()
    try:
        out = MCPHarnessAdapter().run_white_box(_always(0), session, HarnessRunLimits(max_turns=1))
        assert out.metrics == {"turns": 1, "tool_calls": 1} and [e.type for e in out.events] == ["model_response", "tool_call"]
    finally:
        session.close()
    with pytest.raises(NotImplementedError):
        MCPHarnessAdapter().run_black_box(session)
    with pytest.raises(NotImplementedError):
        CLIHarnessAdapter(lambda b, s, lim: HarnessRolloutResult()).run_white_box(_always(0), session)


def test_black_box_runner_gets_a_bridge(ttt_url: str) -> None:
    def runner(bridge, session, limits):
        reply = bridge.handle_request({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": "play_move", "arguments": {"action_id": 0}}})
        return HarnessRolloutResult(done=reply["result"]["done"], metrics={"max_turns": limits.max_turns})

    session = _factory(ttt_url).create()
    try:
        assert CLIHarnessAdapter(runner).run_black_box(session).metrics == {"max_turns": 10}
    finally:
        session.close()


def test_training_trace_validates_captures() -> None:
    entry = {"prompt_token_ids": [1, 2], "completion_token_ids": [3], "per_token_logps": [-0.1], "loss_mask": [0, 0, 1],
             "metadata": {"node_id": "n1", "task": "t"}}
    trace = TrainingTrace.from_entries([entry])
    assert trace.to_trace_entries()[0]["metadata"] == {"task": "t", "node_id": "n1"}
    for bad, code in [({"loss_mask": [1, 0, 1]}, "trainable_prompt"), ({"loss_mask": [0, 1]}, "length_mismatch"),
                      ({"per_token_logps": [0.5]}, "positive_logprob"), ({"prompt_token_ids": []}, "no_prompt_ids")]:
        with pytest.raises(ValueError, match=code):
            TrainingTrace.from_entries([{**entry, **bad, "loss_mask": bad.get("loss_mask", [0] * (
                len(bad.get("prompt_token_ids", [1, 2])) + 1 - 1) + [1])}])
    with pytest.raises(ValueError, match="duplicate node_ids"):
        TrainingTrace.from_entries([entry, entry])

    class Loop:
        def wait_for_completion(self, timeout_s=None):
            return 0

        def fetch_proxy_trace(self):
            return []

    assert isinstance(Loop(), LoopOwningSession)


def test_build_model_step_on_the_loopback_engine(echo_url: str, engine_url: str, tmp_path, store) -> None:
    from openenv.cli.collect_envs import EchoSessionFactory

    step = build_model_step(OpenAIClient(engine_url, None, model="vllm"), system_prompt="be brief")
    with pytest.warns(RuntimeWarning, match="Dropping unsupported sampling keys: seed"):
        first = step([{"role": "user", "content": "hi"}], [Tool(name="echo_message")], {"seed": 1, "temperature": 0})
    assert [c.name for c in first.response.tool_calls] == ["echo_message"]
    recorder = CollectRecorder(store, env_name="echo", label="lib")
    runner = CollectRunner(session_factory=recorder.session_factory(EchoSessionFactory(echo_url, "tea")),
                           harness_adapter=MCPHarnessAdapter(), serializer=RolloutSerializer(tmp_path / "o"))
    result = runner.run(model_step=recorder.model_step(step, model="vllm"), num_episodes=2)
    assert result.num_collected == 2 and result.success_rate == 1.0
    [a, b] = recorder.episode_ids
    assert store.get_episode(a).end_reason == "done" and store.get_episode(a).source == "collect"
    assert sorted(store.load_turns(b)) == [1, 2]


def test_a_training_script_imports_no_server_code() -> None:
    import subprocess
    import sys

    code = ("import sys; import openenv.core.harness.collect, openenv.core.harness.rollout, "
            "openenv.core.harness.collect_store; from openenv.core.harness import build_harness_rollout_func; "
            "from openenv.core.harness.capture import RolloutGraph, to_training_trace, detect; "
            "import openenv.core.harness.capture.validate, openenv.core.harness.capture.contract; "
            "print([m for m in ('fastapi', 'uvicorn', 'starlette', 'webui', 'sqlalchemy', 'openenv.recording', "
            "'openenv.rollout', 'openenv.core.env_server.http_server') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_a_trl_rollout_func_can_record_into_the_store(ttt_url: str, store) -> None:
    from openenv.core.harness import build_harness_rollout_func

    def step(messages, tools, sampling):
        cell = len(messages) // 2  # 0, 1, 2: the top row, a win
        return ModelStepResult(response=LLMResponse(content="", tool_calls=[ToolCall(id=f"c{cell}", name="play_move",
                                                                                     args={"action_id": cell})]),
                               prompt_ids=[1, 2, 3 + cell], completion_ids=[50 + cell], logprobs=[-0.5])

    recorder = CollectRecorder(store, env_name="ttt", label="grpo")
    func = build_harness_rollout_func(session_factory=recorder.session_factory(_factory(ttt_url)),
                                      harness_adapter=MCPHarnessAdapter(),
                                      model_step_builder=lambda trainer, session: recorder.model_step(step))
    batch = func(["p0", "p1"], None)
    assert batch["env_reward"] == [1.0, 1.0] and batch["completion_ids"] == [[50, 51, 52]] * 2
    for eid, prompt in zip(recorder.episode_ids, ["p0", "p1"], strict=True):
        ep = store.get_episode(eid)
        assert ep.reset_kwargs["task"] == prompt and ep.end_reason == "done" and ep.total_reward == 1.0
        turns = store.load_turns(eid)
        assert [turns[i][1]["capture"]["sampled_ids"] for i in (1, 2, 3)] == [[50], [51], [52]]
        assert turns[1][1]["capture"]["prompt_ids"] == [1, 2, 3] and turns[1][1]["capture"]["logprobs"] == [-0.5]
