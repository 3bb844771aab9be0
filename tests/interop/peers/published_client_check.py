"""Drive a server with the PUBLISHED openenv-core client; print a JSON report.

Usage: python -P published_client_check.py BASE_URL
"""

import asyncio
import json
import sys

from openenv.core.generic_client import GenericEnvClient


async def main(url):
    report = {}
    async with GenericEnvClient(base_url=url) as client:
        first = await client.reset(seed=1, episode_id="pub-1")
        report["reset"] = first.observation
        step = await client.step({"message": "interop"})
        report["step"] = {"observation": step.observation, "reward": step.reward, "done": step.done}
        report["state"] = await client.state()
        try:
            await client.step({"wrong_field": 1})
            report["invalid"] = "no error"
        except RuntimeError as exc:
            report["invalid"] = str(exc)
        after = await client.step({"message": "after error"})
        report["after_invalid"] = after.observation
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
