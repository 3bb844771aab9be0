"""Skip a test whose external need is missing, unless OPENENV_REQUIRE_ALL is set (then fail)."""

from __future__ import annotations

import os

import pytest


def require(ok: bool, what: str) -> None:
    """Skip (or, with OPENENV_REQUIRE_ALL=1, fail) when ``ok`` is false."""
    if ok:
        return
    if os.environ.get("OPENENV_REQUIRE_ALL"):
        pytest.fail(f"required for this run but missing: {what}")
    pytest.skip(f"missing: {what}")
