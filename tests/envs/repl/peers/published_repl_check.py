"""Drive our REPL server with the PUBLISHED openenv-core client, as a published-REPL agent would.

Usage: python -P published_repl_check.py BASE_URL   (prints a JSON report)
"""

import asyncio
import json
import sys

from openenv.core.generic_client import GenericEnvClient


async def main(url):
    report = {}
    async with GenericEnvClient(base_url=url) as client:
        first = await client.reset(context="alpha beta gamma", task_prompt="count the words", hf_token="unused")
        report["reset"] = first.observation
        step = await client.step({"code": "words = context.split()\nn = len(words)\nprint(n)"})
        report["step"] = {"observation": step.observation, "reward": step.reward, "done": step.done}
        final = await client.step({"code": "print(f'FINAL({n})')"})
        report["final"] = {"observation": final.observation, "reward": final.reward, "done": final.done}
        report["state"] = await client.state()
        await client.reset()
        explicit = await client.step({"code": "", "is_final": True, "final_answer": "42"})
        report["explicit"] = {"observation": explicit.observation, "done": explicit.done}
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
