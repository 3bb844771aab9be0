"""0.10's collect tutorial (examples/ttt_collect_demo.py) flow, written for these tests with the
names used the way the tutorial uses them: an in-process scripted client (its default mode) or a
real server (``--base-url``), a scripted teacher, ``CollectRunner`` into ``RolloutSerializer``.

``python tutorial_collect.py <output_dir> [base_url]`` prints the summary line and the first row.
"""

import json
import sys
from pathlib import Path

from openspiel_env.client import OpenSpielEnv
from openspiel_env.harness import OpenSpielSessionFactory
from openspiel_env.models import OpenSpielAction, OpenSpielObservation, OpenSpielState

from openenv.core.client_types import StepResult
from openenv.core.harness import HarnessRunLimits, MCPHarnessAdapter, ModelStepResult
from openenv.core.harness.collect import CollectRunner, RolloutSerializer
from openenv.core.llm_client import LLMResponse, ToolCall


class OneMoveWin:
    """A client whose game is won by the first move (the tutorial's no-server mode)."""

    def __init__(self):
        self.moves = 0

    def reset(self, **kwargs):
        self.moves = 0
        return StepResult(observation=OpenSpielObservation(info_state=[1.0] * 9 + [0.0] * 18,
                                                           legal_actions=list(range(9))), reward=0.0, done=False)

    def step(self, action: OpenSpielAction):
        self.moves += 1
        return StepResult(observation=OpenSpielObservation(legal_actions=[], game_phase="terminal"), reward=1.0,
                          done=True)

    def state(self):
        return OpenSpielState(step_count=self.moves, game_name="tic_tac_toe")

    def close(self):
        return None


def teacher(messages, tools, sampling):
    legal = []
    for m in reversed(messages):
        try:
            payload = json.loads(m.get("content") or "")
        except ValueError:
            payload = None
        if isinstance(payload, dict) and "legal_actions" in payload:
            legal = payload["legal_actions"]
            break
        if "Legal actions: [" in (m.get("content") or ""):
            legal = json.loads(m["content"].split("Legal actions: ", 1)[1].splitlines()[0])
            break
    cell = legal[0] if legal else 0
    return ModelStepResult(response=LLMResponse(content=f"Playing cell {cell} (first legal).",
                                                tool_calls=[ToolCall(id=f"t-{cell}", name="play_move",
                                                                     args={"action_id": cell})]))


def main():
    out = Path(sys.argv[1])
    base_url = sys.argv[2] if len(sys.argv) > 2 else None
    client_factory = (lambda: OpenSpielEnv(base_url=base_url)) if base_url else OneMoveWin
    factory = OpenSpielSessionFactory(client_factory, game_name="tic_tac_toe")
    serializer = RolloutSerializer(out)
    serializer.write_metadata({"env_id": "tic_tac_toe", "teacher_model": "scripted-demo", "num_episodes": 4,
                               "base_url": base_url})
    runner = CollectRunner(session_factory=factory, harness_adapter=MCPHarnessAdapter(), serializer=serializer,
                           limits=HarnessRunLimits(max_turns=9))
    result = runner.run(model_step=teacher, num_episodes=4, episode_id_prefix="ttt")
    with serializer.results_path.open("r", encoding="utf-8") as handle:
        first = json.loads(handle.readline())
    print(json.dumps({"summary": f"Collected: {result.num_collected}  Skipped: {result.num_skipped}  "
                                 f"Dropped: {result.num_dropped}  Avg reward: {result.avg_reward:.3f}  "
                                 f"Success rate: {result.success_rate:.0%}",
                      "first": first, "results": str(serializer.results_path), "metadata": str(serializer.metadata_path)}))


if __name__ == "__main__":
    main()
