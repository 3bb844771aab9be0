"""Drive the rubric env with whichever ``GenericEnvClient`` this interpreter has (ours or 0.10's).

``generic_client_drive.py <base_url>``: one JSON line per call; ``metadata`` is dropped from the
observation dict (0.10 servers nest it there too) and read from the result.
"""

import asyncio
import json
import sys

from openenv.core.generic_client import GenericAction, GenericEnvClient


def show(label, result):
    obs = dict(result.observation)
    obs.pop("metadata", None)
    print(json.dumps({"call": label, "observation": obs, "reward": result.reward, "done": result.done}, sort_keys=True))


async def main(url):
    async with GenericEnvClient(base_url=url) as env:
        show("reset", await env.reset(seed=7))
        for guess in (3, 6, 7):
            show(f"step {guess}", await env.step(GenericAction(guess=guess, style="polite")))
        state = await env.state()
        print(json.dumps({"call": "state", "state": state if isinstance(state, dict) else state.model_dump()}, sort_keys=True))


asyncio.run(main(sys.argv[1]))
