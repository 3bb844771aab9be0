"""The engine client under concurrent calls: small HTTP clients, opened as calls pile up."""

from __future__ import annotations

import asyncio

from openenv.capture.engine import _SHARD_CALLS, EngineClient


def test_concurrent_calls_spread_over_small_clients_and_all_close(engine_url: str) -> None:
    async def run() -> tuple[list, int, int]:
        client = EngineClient(engine_url)
        body = {"model": "wait-200", "messages": [{"role": "user", "content": "hi"}], "logprobs": True,
                "return_token_ids": True, "top_logprobs": 0}
        replies = await asyncio.gather(*(client.chat(dict(body)) for _ in range(3 * _SHARD_CALLS)))
        opened = len(client._clients)
        again = await client.chat(dict(body))  # a lone call reuses what is open
        await client.aclose()
        return [*replies, again], opened, len(client._clients)

    replies, opened, after = asyncio.run(run())
    assert all(r.sampled_ids and r.logprobs for r in replies)
    assert opened == 3  # 8 in flight per client, no more clients than needed
    assert after == 0
