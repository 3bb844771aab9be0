"""LLMJudge and the OpenAI-compatible client against a loopback chat-completions server (never a remote model)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from openenv.core.errors import LLMClientError
from openenv.core.llm_client import OpenAIClient, create_llm_client
from openenv.core.rubrics import LLMJudge, Sequential
from tests.server_utils import free_port, running_server


def _chat_server(seen: list[dict[str, Any]]) -> FastAPI:
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        seen.append({"body": body, "auth": request.headers.get("authorization")})
        prompt = body["messages"][-1]["content"]
        if "explode" in prompt:
            return JSONResponse({"error": {"message": "model overloaded"}}, status_code=503)
        if body.get("tools"):
            call = {"id": "c1", "type": "function",
                    "function": {"name": body["tools"][0]["function"]["name"], "arguments": '{"q": "x"}'}}
            return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
        score = "0.8" if "good" in prompt else ("7" if "loud" in prompt else "no idea")
        return {"choices": [{"message": {"role": "assistant", "content": f"Score: {score}"}}]}

    return app


@pytest.fixture(scope="module")
def chat_url() -> Any:
    seen: list[dict[str, Any]] = []
    with running_server(_chat_server(seen)) as url:
        yield url, seen


def test_llm_judge_scores_from_a_loopback_model(chat_url: Any) -> None:
    url, seen = chat_url
    client = OpenAIClient(url, None, model="judge-1", api_key="k", system_prompt="be fair", max_tokens=16)
    judge = LLMJudge("Rate {action} -> {observation}", client)

    async def run() -> list[float]:
        return [await judge("good", "ok"), await judge("loud", "ok"), await judge("meh", "ok")]

    assert asyncio.run(run()) == [0.8, 1.0, 0.0]
    assert judge.last_score == 0.0
    body = seen[0]["body"]
    assert body["model"] == "judge-1" and body["max_tokens"] == 16 and body["temperature"] == 0.0
    assert body["messages"] == [{"role": "system", "content": "be fair"},
                                {"role": "user", "content": "Rate good -> ok"}]
    assert seen[0]["auth"] == "Bearer k"
    raw = LLMJudge("{action}", client, normalize=False, default_score=-1.0)
    assert asyncio.run(raw("loud", None)) == 7.0
    assert asyncio.run(raw("meh", None)) == -1.0


def test_llm_judge_inside_a_container(chat_url: Any) -> None:
    url, _ = chat_url
    judge = LLMJudge("{action}", OpenAIClient(url + "/v1", None, model="m"))
    result = Sequential(judge)("good", None)
    assert asyncio.iscoroutine(result)
    assert asyncio.run(result) == 0.8


def test_tool_calls_round_trip(chat_url: Any) -> None:
    url, seen = chat_url
    client = OpenAIClient(url, None, model="m")
    tools = [{"name": "search", "description": "find", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]
    reply = asyncio.run(client.complete_with_tools([{"role": "user", "content": "go"}], tools))
    assert [(c.name, c.args) for c in reply.tool_calls] == [("search", {"q": "x"})]
    assert seen[-1]["body"]["tools"][0]["function"]["parameters"]["properties"] == {"q": {"type": "string"}}
    assert reply.to_message_dict()["tool_calls"][0]["function"]["arguments"] == '{"q": "x"}'


def test_endpoint_errors_are_clear(chat_url: Any) -> None:
    url, _ = chat_url
    with pytest.raises(LLMClientError, match="503.*overloaded"):
        asyncio.run(OpenAIClient(url, None, model="m").complete("explode"))
    dead = OpenAIClient("http://127.0.0.1", free_port(), model="m", timeout_s=5)
    with pytest.raises(LLMClientError, match="unreachable"):
        asyncio.run(dead.complete("hi"))
    with pytest.raises(ValueError, match="credentials"):
        OpenAIClient("http://u:p@127.0.0.1:1", None, model="m")
    with pytest.raises(ValueError, match="conflicts"):
        OpenAIClient("http://127.0.0.1:80", 81, model="m")
    with pytest.raises(ValueError, match="Unsupported provider"):
        create_llm_client("nope", "m", "k")


def test_hosted_factory_defaults() -> None:
    client = create_llm_client("openai", "o3-mini", "sk-x")
    assert isinstance(client, OpenAIClient)
    assert client.api_url == "https://api.openai.com:443/v1"
    assert "max_completion_tokens" in client._body([]) and "temperature" not in client._body([])
