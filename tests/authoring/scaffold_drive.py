"""Play one episode of a scaffolded env through its own typed client, under whichever ``openenv``
this interpreter has (ours or the published 0.10): ``scaffold_drive.py <env dir> <url>``; prints JSON."""

import importlib
import json
import sys
from pathlib import Path

env_dir, url = Path(sys.argv[1]), sys.argv[2]
sys.path.insert(0, str(env_dir.parent))
package = importlib.import_module(env_dir.name)
prefix = next(n[: -len("Env")] for n in package.__all__ if n.endswith("Env"))
client_cls, action_cls = getattr(package, f"{prefix}Env"), getattr(package, f"{prefix}Action")
low, high, hints = 1, 100, []
with client_cls(base_url=url).sync() as env:
    first = env.reset(seed=3)
    for _ in range(7):
        guess = (low + high) // 2
        result = env.step(action_cls(guess=guess))
        hints.append(result.observation.hint)
        if result.observation.hint == "correct":
            break
        low, high = (guess + 1, high) if result.observation.hint == "higher" else (low, guess - 1)
    state = env.state()
print(json.dumps({"left": first.observation.guesses_left, "hints": hints, "reward": result.reward,
                  "done": result.done, "steps": state.step_count, "client_module": client_cls.__module__}))
