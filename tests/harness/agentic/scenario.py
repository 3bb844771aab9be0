"""Run one HarnessEnvironment scenario in process and print one JSON line per call (ours or 0.10).

``scenario.py <model_url>``. Timestamps are dropped from events; everything else is printed as
the environment returned it, so the two packages' outputs can be compared line by line.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

os.environ["FAKE_MODEL_URL"] = sys.argv[1]

from harness_app import make_env  # noqa: E402

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction  # noqa: E402
from openenv.core.harness import HarnessAction  # noqa: E402


def clean(value):
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items() if k not in ("timestamp", "episode_id")}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


def out(label, obs=None, error=None):
    if error is not None:
        print(json.dumps({"call": label, "error": type(error).__name__, "message": str(error)}, sort_keys=True))
        return
    record = {"done": obs.done, "reward": obs.reward, "metadata": clean(obs.metadata)}
    if hasattr(obs, "tools"):
        record["tools"] = sorted(t.name for t in obs.tools)
    if hasattr(obs, "result") and obs.result is not None:
        record["result"] = getattr(obs.result, "data", obs.result)
    print(json.dumps({"call": label, **record}, sort_keys=True, default=str))


def call(label, fn):
    try:
        out(label, fn())
    except Exception as exc:
        out(label, error=exc)


env = make_env()
call("step-before-reset", lambda: env.step(HarnessAction(message="hi")))
call("reset", lambda: env.reset(episode_id="ep-1"))
print(json.dumps({"call": "ready-tools", "tools": env.adapter.ready["tools"]}))
call("echo", lambda: env.step(HarnessAction(message="hello")))
call("tool-add", lambda: env.step(HarnessAction(message='tool add {"a": 2, "b": 40}')))
call("tool-renamed", lambda: env.step(HarnessAction(message='tool env_read_file {"path": "notes.txt"}')))
call("tool-error", lambda: env.step(HarnessAction(message='tool env_read_file {"path": "nope"}')))
call("ask", lambda: env.step(HarnessAction(message="ask what is 2+2")))
call("list-tools", lambda: env.step(ListToolsAction()))
call("call-tool", lambda: env.step(CallToolAction(tool_name="read_file", arguments={"path": "notes.txt"})))
print(json.dumps({"call": "state", "step_count": env.state.step_count, "episode_id": env.state.episode_id}))
print(json.dumps({"call": "trajectory", "types": [e.type.value for e in env.trajectory]}))
call("noend", lambda: env.step(HarnessAction(message="noend")))
call("after-noend", lambda: env.step(HarnessAction(message="hello")))
call("reset-2", lambda: env.reset(episode_id="ep-2"))
call("crash", lambda: env.step(HarnessAction(message="crash")))
call("after-crash", lambda: env.step(HarnessAction(message="hello")))
call("reset-3", lambda: env.reset(episode_id="ep-3"))
call("hang", lambda: env.step(HarnessAction(message="hang"), timeout_s=1.5))
call("reset-4", lambda: env.reset(episode_id="ep-4"))
call("done", lambda: env.step(HarnessAction(message="done")))
print(json.dumps({"call": "alive-before-close", "alive": env.adapter.process.is_running()}))
env.close()
print(json.dumps({"call": "alive-after-close", "alive": env.adapter.process.is_running()}))
