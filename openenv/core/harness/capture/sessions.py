"""0.10's ``openenv.core.harness.capture.sessions``: capture sessions and how requests name them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from openenv.capture.sessions import CaptureSession, SessionRegistry, clean_session_id
from openenv.capture.sessions import api_key_of as extract_api_key
from openenv.capture.sessions import harness_session_of as extract_harness_session

Session = CaptureSession

__all__ = ["Session", "SessionRegistry", "Upstream", "clean_session_id", "extract_api_key",
           "extract_harness_session"]


@dataclass(frozen=True)
class Upstream:
    """Which engine a rollout's calls go to (0.10's value type; our proxy has one engine per server,
    so this only describes it: ``cache_key`` never contains the key itself)."""

    llm_url: str
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    auth_header: str = "Authorization"
    provider: str = "openai"

    @property
    def cache_key(self) -> tuple[str, str, str, str, str]:
        credential = hashlib.sha256((self.api_key or "").encode()).hexdigest()
        return (self.llm_url.rstrip("/"), self.model, self.auth_header.lower(), credential, self.provider)
