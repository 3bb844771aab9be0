"""The 0.10 client idioms, written as 0.10 code writes them (compat-0.10.md §4).

Run by either interpreter (ours, or the published 0.10's) against either server:
``python idioms010.py <base_url>`` prints ``OK`` or fails an assert.
"""

import asyncio
import sys

from openenv.core import GenericEnvClient

url = sys.argv[1]


def check_step(result, message, n):
    assert result.observation["echoed_message"] == message, result
    assert abs(result.reward - 0.1 * len(message)) < 1e-9 and result.done is False, result
    assert (result.metadata or {}).get("step") == n, result


# sync, no .sync(): plain calls return StepResults
with GenericEnvClient(base_url=url, headers={"X-Trace": "idioms"}, websocket_ping_interval_s=5,
                      websocket_ping_timeout_s=5) as env:
    first = env.reset()
    assert first.observation["echoed_message"] == "Echo environment ready!", first
    check_step(env.step({"message": "hello"}), "hello", 1)
    assert env.state()["step_count"] == 1

# .sync() and new_session(): two sessions, independent episodes
with GenericEnvClient(base_url=url).sync() as env:
    env.reset()
    child = env.new_session()
    child.reset()
    check_step(env.step({"message": "ab"}), "ab", 1)
    check_step(child.step({"message": "xyz"}), "xyz", 1)
    check_step(child.step({"message": "q"}), "q", 2)
    assert env.state()["step_count"] == 1 and child.state()["step_count"] == 2


async def main():
    async with GenericEnvClient(base_url=url, headers={"X-Trace": "idioms"}) as env:
        await env.reset()
        check_step(await env.step({"message": "abc"}), "abc", 1)
        child = await env.new_session()
        await child.reset()
        check_step(await child.step({"message": "zz"}), "zz", 1)
        assert (await env.state())["step_count"] == 1


asyncio.run(main())
print("OK")
