"""``llm_query`` backend: an OpenAI-compatible chat endpoint, called by the server for a worker.

The worker never talks to the network: its ``llm_query(prompt)`` sends the prompt
to the server over the protocol pipe, and this module makes the HTTP call with the
server's credentials, a hard timeout, a per-episode call budget and a cap on
prompt size. Configure with ``OPENENV_REPL_LLM_*`` variables (see ``LLMConfig``).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

import httpx

ENV_PREFIX = "OPENENV_REPL_LLM_"


class LLMQueryError(RuntimeError):
    """An ``llm_query`` call that failed; its message is shown to the cell."""


@dataclass(frozen=True)
class LLMConfig:
    """Where and how ``llm_query`` calls go."""

    base_url: str
    """Base URL of the OpenAI-compatible API, e.g. ``http://127.0.0.1:8001/v1``."""
    model: str = "default"
    """Model name sent with each request (a cell may pass ``model=`` to override)."""
    api_key: str | None = None
    """Bearer token; stays in the server, never reaches the worker."""
    timeout_s: float = 60.0
    """Hard limit for one call, connection included."""
    max_calls: int = 100
    """Prompts an episode may send in total (a batch of n counts n)."""
    max_prompt_chars: int = 200_000
    """Largest prompt accepted."""
    max_tokens: int | None = None
    """``max_tokens`` sent with each request (omitted when unset)."""
    concurrency: int = 8
    """Requests of one batch in flight at once."""

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> LLMConfig | None:
        """The configuration from ``OPENENV_REPL_LLM_*``; ``None`` when no base URL is set."""
        env = os.environ if environ is None else environ
        base = env.get(ENV_PREFIX + "BASE_URL")
        if not base:
            return None
        tokens = env.get(ENV_PREFIX + "MAX_TOKENS")
        return cls(
            base_url=base,
            model=env.get(ENV_PREFIX + "MODEL", "default"),
            api_key=env.get(ENV_PREFIX + "API_KEY") or None,
            timeout_s=float(env.get(ENV_PREFIX + "TIMEOUT_S", "60")),
            max_calls=int(env.get(ENV_PREFIX + "MAX_CALLS", "100")),
            max_prompt_chars=int(env.get(ENV_PREFIX + "MAX_PROMPT_CHARS", "200000")),
            max_tokens=int(tokens) if tokens else None,
            concurrency=int(env.get(ENV_PREFIX + "CONCURRENCY", "8")),
        )


class LLMClient:
    """One episode's ``llm_query`` budget and HTTP client (use on one event loop)."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.calls = 0
        self._http: httpx.AsyncClient | None = None

    def new_episode(self) -> None:
        """Restore the full call budget."""
        self.calls = 0

    async def __call__(self, prompts: list[str], model: str | None = None) -> list[str]:
        """Answer ``prompts`` in order; raises :class:`LLMQueryError` with a readable reason."""
        cfg = self.config
        if self.calls + len(prompts) > cfg.max_calls:
            raise LLMQueryError(
                f"llm_query budget exhausted: {cfg.max_calls} calls per episode, {self.calls} used"
            )
        for prompt in prompts:
            if len(prompt) > cfg.max_prompt_chars:
                raise LLMQueryError(
                    f"llm_query prompt too long: {len(prompt)} characters (limit {cfg.max_prompt_chars})"
                )
        self.calls += len(prompts)
        gate = asyncio.Semaphore(max(1, cfg.concurrency))

        async def one(prompt: str) -> str:
            async with gate:
                return await self._complete(prompt, model or cfg.model)

        return list(await asyncio.gather(*(one(p) for p in prompts)))

    async def _complete(self, prompt: str, model: str) -> str:
        cfg = self.config
        if self._http is None:
            headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
            self._http = httpx.AsyncClient(base_url=cfg.base_url.rstrip("/") + "/", headers=headers,
                                           timeout=cfg.timeout_s, trust_env=False)
        body: dict = {"model": model, "messages": [{"role": "user", "content": prompt}]}
        if cfg.max_tokens is not None:
            body["max_tokens"] = cfg.max_tokens
        try:
            resp = await asyncio.wait_for(self._http.post("chat/completions", json=body), cfg.timeout_s)
        except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
            raise LLMQueryError(f"llm_query timed out after {cfg.timeout_s:g}s") from exc
        except httpx.HTTPError as exc:
            raise LLMQueryError(f"llm_query could not reach the model server: {type(exc).__name__}") from exc
        if resp.status_code != 200:
            raise LLMQueryError(f"llm_query: the model server answered HTTP {resp.status_code}")
        try:
            content = resp.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMQueryError("llm_query: the model server's reply had no choices[0].message.content") from exc
        return content if isinstance(content, str) else str(content)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

