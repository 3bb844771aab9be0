"""0.10's ``openenv.core.harness.capture.validate_llm``: what an endpoint can return, probed live."""

from openenv.capture.probe import (
    ENGINE_HINT,
    LLMReport,
    list_models,
    probe_logprobs_mode,
    probe_tool_support,
    require_llm,
    validate_llm,
)

__all__ = ["ENGINE_HINT", "LLMReport", "list_models", "probe_logprobs_mode", "probe_tool_support", "require_llm",
           "validate_llm"]
