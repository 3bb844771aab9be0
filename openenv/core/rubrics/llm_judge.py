"""``LLMJudge``: a rubric scored by an LLM (serves ``openenv.core.rubrics.llm_judge``).

The prompt template is formatted with ``{action}`` and ``{observation}``; the first number in
the reply (or ``score_pattern``'s first group) is the score, clamped to ``[0, 1]`` unless
``normalize=False``; ``default_score`` when none is found. ``forward`` is async::

    judge = LLMJudge("Rate:\\n{action}\\nScore 0-1:", OpenAIClient("http://127.0.0.1", 8000, model="m"))
    score = await judge(action, observation)
"""

from __future__ import annotations

import re
from typing import Any

from openenv.core.llm_client import LLMClient
from openenv.core.rubrics.base import Rubric

__all__ = ["LLMJudge"]


class LLMJudge(Rubric):
    """Asks ``client`` to grade a step and parses a number from the reply."""

    def __init__(
        self,
        prompt_template: str,
        client: LLMClient,
        *,
        score_pattern: str | None = None,
        default_score: float = 0.0,
        normalize: bool = True,
    ) -> None:
        super().__init__()
        self.prompt_template = prompt_template
        self._client = client
        self._score_pattern = re.compile(score_pattern or r"(\d+\.?\d*)")
        self.default_score = default_score
        self.normalize = normalize

    async def forward(self, action: Any, observation: Any) -> float:
        reply = await self._client.complete(self._render_prompt(action, observation))
        return self._parse_score(reply)

    def _render_prompt(self, action: Any, observation: Any) -> str:
        return self.prompt_template.format(action=action, observation=observation)

    def _parse_score(self, response: str) -> float:
        match = self._score_pattern.search(response or "")
        if match is None:
            return self.default_score
        try:
            score = float(match.group(1) if match.lastindex else match.group(0))
        except (ValueError, IndexError):
            return self.default_score
        return max(0.0, min(1.0, score)) if self.normalize else score

    def state_dict(self) -> dict[str, Any]:
        return {
            "prompt_template": self.prompt_template,
            "score_pattern": self._score_pattern.pattern,
            "default_score": self.default_score,
            "normalize": self.normalize,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "prompt_template" in state:
            self.prompt_template = state["prompt_template"]
        if "score_pattern" in state:
            self._score_pattern = re.compile(state["score_pattern"])
        if "default_score" in state:
            self.default_score = state["default_score"]
        if "normalize" in state:
            self.normalize = state["normalize"]
