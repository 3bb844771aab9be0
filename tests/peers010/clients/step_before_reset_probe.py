"""``step_before_reset_probe.py <base_url>``: a 0.10-style script that steps a client it never reset
(TRL's echo quick start does), with whichever ``openenv`` this interpreter has; prints one JSON line
per call: the two steps' observation/reward/done and the state's step count."""

import json
import sys

from openenv.core.generic_client import GenericEnvClient

client = GenericEnvClient(base_url=sys.argv[1])
try:
    for message in ("early", "again"):
        result = client.step({"message": message})
        obs = dict(result.observation)
        obs.pop("metadata", None)
        print(json.dumps({"observation": obs, "reward": result.reward, "done": result.done}, sort_keys=True))
    state = client.state()
    print(json.dumps({"step_count": state.get("step_count") if isinstance(state, dict) else state.step_count}))
finally:
    client.close()
