"""0.10's ``openenv.core.harness.capture.server``: the capture proxy as an ASGI app."""

from __future__ import annotations

from typing import Any

from openenv.capture.app import create_capture_app
from openenv.capture.estimate import approximate_token_count

__all__ = ["approximate_token_count", "create_app"]


def create_app(*, llm_url: str = "", model: str | None = None, engine: str = "", require_registered: bool = True,
               max_output_tokens: int | None = 8192, api_key: str | None = None, auth_header: str = "Authorization",
               provider: str = "openai", capture_level: str = "tokens", admin_key: str | None = None,
               max_model_calls: int = 0, store: Any = None, label: str | None = None,
               allowed_llm_urls: tuple[str, ...] = ()) -> Any:
    """0.10's ``create_app`` arguments onto ``openenv.capture.create_capture_app`` (``engine`` names
    the upstream for ``/health`` in 0.10 and is accepted; ``store`` records sessions as episodes)."""
    if provider not in ("openai", "vllm", "hf"):
        raise ValueError(f"upstream provider {provider!r} is not supported here: the capture proxy forwards to an "
                         "OpenAI-compatible engine (vLLM, SGLang); Anthropic-speaking harnesses are translated")
    if not llm_url:
        raise ValueError("llm_url is required: the OpenAI-compatible engine to forward to")
    return create_capture_app(llm_url=llm_url, model=model, level=capture_level, api_key=api_key,
                              auth_header=auth_header, admin_key=admin_key, require_registered=require_registered,
                              max_output_tokens=max_output_tokens, max_model_calls=max_model_calls, store=store,
                              label=label, allowed_llm_urls=allowed_llm_urls)
