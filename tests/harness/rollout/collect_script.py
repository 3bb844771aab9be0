"""One collect script, run under either interpreter (ours or the published 0.10's), printing JSON.

``python collect_script.py runner <env_url> <out_dir>``: CollectRunner over the tic-tac-toe test
env with a scripted teacher (first legal move): a first run, a resumed run, a failing task, a
dropped record; prints both CollectResults and the results.jsonl rows.
``python collect_script.py rollout_func <env_url>``: build_harness_rollout_func's returned dict.
``python collect_script.py files - <dir>``: RolloutSerializer on odd files, and the dataset card.
``python collect_script.py bridge <env_url>``: SessionMCPBridge replies (good and bad requests) and verify().
Uses only 0.10's public names, the way its collect tutorial (examples/ttt_collect_demo.py) does.
"""

import dataclasses
import json
import re
import sys
from pathlib import Path

from openspiel_env.client import OpenSpielEnv
from openspiel_env.harness import OpenSpielSessionFactory

from openenv.core.harness import (
    HarnessRunLimits,
    MCPHarnessAdapter,
    ModelStepResult,
    SessionMCPBridge,
    build_harness_rollout_func,
)
from openenv.core.harness.collect import CollectRunner, RolloutSerializer
from openenv.core.llm_client import LLMResponse, ToolCall


def legal_actions(messages):
    for m in reversed(messages):
        content = m.get("content") or ""
        try:
            payload = json.loads(content)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and "legal_actions" in payload:
            return payload["legal_actions"]
        found = re.search(r"Legal actions:\s*\[([^\]]*)\]", content)
        if found:
            return [int(x) for x in found.group(1).split(",") if x.strip()]
    return []


def teacher(messages, tools, sampling):
    legal = legal_actions(messages)
    action = legal[0] if legal else 0
    return ModelStepResult(
        response=LLMResponse(content=f"cell {action}", tool_calls=[ToolCall(id=f"t-{action}", name=tools[0].name,
                                                                            args={"action_id": action})]),
        prompt_ids=[len(messages), 7], completion_ids=[100 + action], logprobs=[-0.25],
    )


class Flaky:
    """Fails for the task "boom" (a failed episode is counted, not raised)."""

    def __init__(self, inner):
        self.inner = inner

    def create(self, task=None, seed=None, episode_id=None):
        if task == "boom":
            raise RuntimeError("no session for boom")
        return self.inner.create(task=task, seed=seed, episode_id=episode_id)


def files_case(out):
    """RolloutSerializer on hand-made results.jsonl files, and the dataset card."""
    from openenv.core.harness.collect import EpisodeRecord, build_dataset_readme

    record = EpisodeRecord(episode_id="x-1", messages=[{"role": "user", "content": "é"}], reward=0.5, done=True,
                           tool_trace=[], metrics={"t": (1, 2)}, verify_metrics={}, artifacts={"p": Path("/a")})
    report = {}
    cases = {"no_newline": b'{"episode_id": "a"}', "blank_lines": b'\n\n{"episode_id": "b"}\n\n',
             "bad_tail": b'{"episode_id": "a"}\n{"episode_', "not_object": b"[1]\n", "no_id": b'{"id": 1}\n',
             "bad_utf8": b'\xff\n', "empty": b""}
    for name, content in cases.items():
        ser = RolloutSerializer(out / name)
        (out / name).mkdir(parents=True)
        ser.results_path.write_bytes(content)
        entry = {}
        for op in ("ids", "write"):
            try:
                if op == "ids":
                    entry[op] = sorted(ser.collected_episode_ids())
                else:
                    ser.write_episode(record)
                    entry[op] = ser.results_path.read_bytes().decode("utf-8", "replace")
            except ValueError as exc:
                entry[op] = "ValueError: " + str(exc).replace(str(out), "<out>")
        report[name] = entry
    ser = RolloutSerializer(out / "card")
    ser.write_metadata({"env": "e", "n": 2})
    ser.write_episode(record)
    report["readme"] = build_dataset_readme(out / "card")
    report["metadata"] = ser.metadata_path.read_text()
    return report


def main():
    mode, url = sys.argv[1], sys.argv[2]
    factory = OpenSpielSessionFactory(lambda: OpenSpielEnv(base_url=url), game_name="tic_tac_toe")
    if mode == "rollout_func":
        func = build_harness_rollout_func(session_factory=factory, harness_adapter=MCPHarnessAdapter(),
                                          model_step_builder=lambda trainer, session: teacher,
                                          limits=HarnessRunLimits(max_turns=9), reward_key="env_reward")
        print(json.dumps(func(["a", "b"], None), sort_keys=True))
        return
    if mode == "files":
        print(json.dumps(files_case(Path(sys.argv[3])), sort_keys=True))
        return
    if mode == "bridge":
        session = factory.create(task="t", seed=3, episode_id="b-1")
        bridge = SessionMCPBridge(session)
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "play_move", "arguments": {"action_id": 4}}},
            {"jsonrpc": "1.0", "id": 3, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {}},
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "close"}},
            {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "nope"}},
            {"jsonrpc": "2.0", "id": "seven", "method": "resources/list"},
            {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "play_move", "arguments": {}}},
            {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "play_move", "arguments": {"action_id": 4}}},
        ]
        replies = [bridge.handle_request(r) for r in requests]
        verify = session.verify(transcript=[{"role": "user", "content": "x"}])
        session.close()
        print(json.dumps({"replies": replies, "verify": dataclasses.asdict(verify),
                          "initial": session.initial_messages()}, sort_keys=True, default=str))
        return
    out = Path(sys.argv[3])
    serializer = RolloutSerializer(out)
    serializer.write_metadata({"env_id": "tic_tac_toe", "teacher_model": "scripted", "num_episodes": 3})
    tasks = ["t0", "boom", "t2", "t3"]
    runner = CollectRunner(session_factory=Flaky(factory), harness_adapter=MCPHarnessAdapter(), serializer=serializer,
                           tasks=tasks, limits=HarnessRunLimits(max_turns=9))
    first = runner.run(model_step=teacher, num_episodes=3, episode_id_prefix="ttt",
                       should_keep=lambda record: record.task != "t2")
    again = CollectRunner(session_factory=Flaky(factory), harness_adapter=MCPHarnessAdapter(), serializer=serializer,
                          tasks=tasks, limits=HarnessRunLimits(max_turns=2))
    second = again.run(model_step=teacher, num_episodes=4, episode_id_prefix="ttt")
    rows = [json.loads(line) for line in serializer.results_path.read_text().splitlines() if line.strip()]
    print(json.dumps({"first": dataclasses.asdict(first), "second": dataclasses.asdict(second), "rows": rows,
                      "metadata": json.loads(serializer.metadata_path.read_text())}, sort_keys=True))


if __name__ == "__main__":
    main()
