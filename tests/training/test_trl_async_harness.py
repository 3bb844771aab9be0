"""Real TRL (PyPI trl 1.16): the AsyncGRPO ``HarnessRolloutWorker`` driving our echo server through
``StepEnvSessionAdapter`` with ``MCPHarnessAdapter`` (TRL samples each turn), recorded with one
added line. The worker runs as ``AsyncGRPOTrainer`` runs it (its rollout process, a policy version
bump, ``stop()``); the full trainer is not run: it needs vLLM and NCCL weight sync, which this CPU
machine has not (``scripts/async_harness.py`` says what stands in). Every rollout is in the store
once with its policy version, TRL's group and its index, the reward, components and advantage TRL
queued for training, and TRL's own token ids, logprobs and loss mask."""

from __future__ import annotations

import json
from array import array
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.training import require_trl
from tests.training.conftest import HERE, run_training

G = 2


def _sequences(turn: dict[str, Any]) -> list[tuple[list[int], list[int], list[float]]]:
    cap = turn["capture"]
    rows = [(cap["prompt_ids"] + cap["sampled_ids"], [0] * len(cap["prompt_ids"]) + cap["loss_mask"],
             [0.0] * len(cap["prompt_ids"]) + cap["logprobs"])]  # fmt: skip
    return rows + [(f["input_ids"], f["loss_mask"], f["logprobs"]) for f in cap.get("forks", [])]


def test_asyncgrpo_harness_worker_records_every_rollout_with_trl_reward_and_tokens(tmp_path: Path) -> None:
    require_trl()
    from openenv.recording import EpisodeFilter, EpisodeStore
    from openenv.recording.run_export import iter_run_rows

    out = tmp_path / "out"
    out.mkdir()
    (out / "log_history.json").write_text("[]")  # run_training's contract; this script logs samples instead
    run_training(HERE / "scripts" / "async_harness.py", out=out)
    samples = json.loads((out / "samples.json").read_text())
    assert {s["model_version"] for s in samples} == {0, 1}

    with EpisodeStore(out / "runs.db") as store:
        (run,), _ = store.list_training_runs()
        assert (run.name, run.trainer, run.status, run.env_name) == ("async-echo", "trl-async-grpo", "finished",
                                                                     "EchoSessionFactory")  # fmt: skip
        assert run.unfinished == 0
        episodes = list(store.iter_episodes(EpisodeFilter(training_run_id=run.id)))
        assert len({e.id for e in episodes}) == len(episodes)
        assert len({(e.group_id, e.group_index) for e in episodes}) == len(episodes)  # each rollout once
        scored = [e for e in episodes if e.finish_reason is not None]
        groups: dict[str, list[Any]] = defaultdict(list)
        for e in scored:
            groups[e.group_id].append(e)  # type: ignore[index]
        assert len(groups) >= 3
        for members in groups.values():  # TRL scores whole groups: G rollouts, indexes 0..G-1, one version
            assert sorted(e.group_index for e in members) == list(range(G))
            assert len({e.train_step for e in members}) == 1
            if all(e.advantage is not None for e in members):  # a rollout a stop cut short trains no row: None
                assert abs(sum(e.advantage for e in members)) < 1e-3  # type: ignore[misc]
        for e in scored:
            if e.finish_reason == "env_error":  # a stop closed its session under it: no harness reward, no row
                assert e.reward_components["harness_reward"] is None and e.advantage is None  # type: ignore[index]
                continue
            assert (e.finish_reason, e.end_reason, e.step_count) == ("stop", "rollout_end", 1)
            assert e.reward_components["harness_reward"] == e.total_reward  # type: ignore[index]
        scored = [e for e in scored if e.finish_reason == "stop"]
        turns = {e.id: next(d for actor, d in store.load_turns(e.id).values() if actor == "model") for e in scored}

        # every sample TRL queued for training is a training row of exactly one recorded rollout
        rows = {e.id: _sequences(turns[e.id]) for e in scored}
        matched: dict[str, int] = defaultdict(int)
        by_group = {g: {e.id: e for e in members} for g, members in groups.items()}
        for s in samples:
            here = by_group[str(s["group_id"])]
            (eid,) = [i for i in here if s["input_ids"] in [r[0] for r in rows[i]]]
            e, seq = here[eid], next(r for r in rows[eid] if r[0] == s["input_ids"])
            matched[eid] += 1
            assert e.train_step == s["model_version"]
            assert e.trainer_reward == s["metrics"]["reward"]
            assert e.reward_components == {k.removeprefix("rewards/"): v for k, v in s["metrics"].items()
                                           if k.startswith("rewards/")}  # fmt: skip
            assert e.advantage == s["advantage"]
            assert seq[1] == s["completion_mask"]
            assert array("f", seq[2]).tolist() == s["old_log_probs"]  # TRL's own sampling logprobs, as it queues them
        assert all(n <= len(rows[eid]) for eid, n in matched.items())
        for eid in matched:
            turn = turns[eid]
            assert turn["trainer"] == "trl" and turn["prompt"][0]["content"].startswith("Echo something")
            assert turn["tool_calls"] and turn["tool_calls"][0]["function"]["name"] == "echo"
            assert turn["completion"].endswith("done")
            (step,) = [s for s in store.load_steps(eid) if s.index == 1]
            assert step.action["tool_name"] == "echo" and step.reward == turn_reward(step.action)

        table = {r["episode_id"]: r for r in iter_run_rows(store, "async-echo")}
        assert all(table[e.id]["completion_ids"] and table[e.id]["loss_mask"] for e in scored)


def turn_reward(action: dict[str, Any]) -> float:
    """The echo env's reward for an ``echo`` call: 0.1 per character."""
    return round(0.1 * len(action["arguments"]["message"]), 6)


class _AgentSession:
    """A loop-owning session (0.10's ``TrainableSession``): its agent runs on its own; one tool call."""

    def __init__(self) -> None:
        self.closed = False

    def initial_messages(self) -> list[dict[str, Any]]:
        return [{"role": "user", "content": "go"}]

    def list_tools(self) -> list[Any]:
        from tests.training.harness_echo import ECHO_TOOL

        return [ECHO_TOOL]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        from openenv.core.harness import ToolResult

        return ToolResult(data={"echoed": arguments["message"]}, metadata={"reward": 0.5})

    def wait_for_completion(self, timeout_s: float | None = None) -> int:
        raise TimeoutError("agent still running")

    def fetch_training_trace(self) -> Any:
        from openenv.core.harness import TrainingTrace

        return TrainingTrace.from_entries([{"request": {"messages": self.initial_messages()}, "response": {},
                                            "prompt_token_ids": [1, 2, 3], "completion_token_ids": [7, 8],
                                            "per_token_logps": [-0.5, -0.25], "loss_mask": [0, 0, 0, 1, 1],
                                            "metadata": {"node_id": "t0"}}])  # fmt: skip

    def verify(self, transcript: Any, final_state: Any = None) -> Any:
        from openenv.core.harness import VerifyResult

        return VerifyResult(env_reward=1.0, done=False)

    def close(self) -> None:
        self.closed = True


class _AgentFactory:
    def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> _AgentSession:
        return _AgentSession()


def test_recorded_loop_owning_session_keeps_its_kind_and_notes_a_timeout(tmp_path: Path) -> None:
    """What the worker's rollout process does to a loop-owning session, without TRL: the session is
    still a ``TrainableSession``, its tool call is a step, a timeout and the first prompt are noted."""
    from openenv.core.harness import TrainableSession
    from openenv.recording import EpisodeStore
    from openenv.training.harness_record import ChildRecorder, RecordingFactory, RecordSpec, training_capture

    with EpisodeStore(tmp_path / "runs.db") as store:
        run_id = store.open_training_run("loop-owning", trainer="trl-async-grpo")
    rec = ChildRecorder(RecordSpec(target=str(tmp_path / "runs.db"), run_id=run_id, name="loop-owning"), "AgentFactory")
    rollout = rec.begin(group=5, step=3)
    session = RecordingFactory(_AgentFactory(), rec).create([{"role": "user", "content": "go"}], seed=5, episode_id="r1")
    assert isinstance(session, TrainableSession)
    session.call_tool("echo", {"message": "hey"})
    try:
        session.wait_for_completion()
    except TimeoutError:
        pass
    trace = session.fetch_training_trace()
    session.verify([])
    session.close()
    seq = type("Seq", (), {"input_ids": [1, 2, 3, 7, 8], "completion_mask": [0, 0, 0, 1, 1],
                           "old_log_probs": [0.0, 0.0, 0.0, -0.5, -0.25]})()  # fmt: skip
    rec.finish(rollout, [{"role": "user", "content": "go"}], ([{"role": "assistant", "content": "ok"}], [7, 8], [seq]),
               scorable=True, stopping=False, eos={8})  # fmt: skip
    rec.outcomes([(rollout, 3, {"trainer_reward": 1.0, "advantage": 0.0})])
    rec.close()
    assert trace.turns[0].prompt_token_ids == [1, 2, 3] and rollout.first_prompt == [1, 2, 3]
    assert training_capture([seq], [7, 8], None)["prompt_ids"] == [1, 2, 3]  # without it: before the first trained id
    with EpisodeStore(tmp_path / "runs.db") as store:
        (e,) = store.iter_episodes()
        assert (e.train_step, e.group_id, e.group_index, e.finish_reason, e.trainer_reward) == (3, "5", 0, "timeout", 1.0)
        assert (e.step_count, e.total_reward, e.end_reason) == (1, 0.5, "rollout_end")
        (turn,) = [d for actor, d in store.load_turns(e.id).values() if actor == "model"]
        assert turn["capture"]["prompt_ids"] == [1, 2, 3] and turn["capture"]["sampled_ids"] == [7, 8]
        assert turn["capture"]["loss_mask"] == [1, 1] and turn["capture"]["logprobs"] == [-0.5, -0.25]
