"""TRL training tests: real TRL (the ``train`` extra) on CPU with a tiny local model (``tiny_model``)."""

from __future__ import annotations

import importlib.util

from tests._require import require


def require_trl() -> None:
    """Skip (fail under ``OPENENV_REQUIRE_ALL``) when TRL and its stack are not installed."""
    have = all(importlib.util.find_spec(m) is not None for m in ("trl", "transformers", "torch", "tokenizers"))
    require(have, "TRL with transformers, torch and tokenizers (pip install '.[train]')")
