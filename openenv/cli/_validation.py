"""0.10's module path for the runtime probe: ``validate_running_environment(url)`` returns its
JSON report (``passed``, ``summary``, ``criteria``, ...), computed by our
``openenv.core.testing_runtime010.runtime_criteria``."""

from __future__ import annotations

from typing import Any

__all__ = ["validate_running_environment"]


def validate_running_environment(base_url: str, timeout_s: float = 5.0) -> dict[str, Any]:
    """0.10's six runtime criteria against the server at ``base_url`` (``http://`` added if missing)."""
    from openenv.core.testing_runtime010 import runtime_criteria

    url = base_url.strip()
    if not url:
        raise ValueError("Runtime URL cannot be empty")
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    return dict(runtime_criteria(url.rstrip("/"), timeout_s=timeout_s))
