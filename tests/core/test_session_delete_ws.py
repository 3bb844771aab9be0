"""DELETE /sessions/{id} really closes a WebSocket's session: its client is told, and its next
step is the typed loss (never a step on the closed environment)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from openenv.core import GenericEnvClient
from openenv.core.errors import EpisodeLostError, SessionNotFoundError
from tests.webui.servers import echo_app, serve


def test_delete_ends_the_websocket_session() -> None:
    async def play(url: str) -> None:
        client = GenericEnvClient(base_url=url)
        await client.connect()
        try:
            await client.reset()
            await client.step({"message": "before"})
            (sid,) = [s["session_id"] for s in httpx.get(url + "/sessions", trust_env=False).json()["sessions"]]
            assert httpx.delete(f"{url}/sessions/{sid}", trust_env=False).status_code == 200
            await asyncio.sleep(0.2)
            with pytest.raises((EpisodeLostError, SessionNotFoundError)):
                await client.step({"message": "after"})
        finally:
            await client.close()

    with serve(echo_app()) as url:
        asyncio.run(play(url))
