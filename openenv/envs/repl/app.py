"""ASGI app for the REPL environment: ``openenv serve repl`` or ``uvicorn openenv.envs.repl.app:app``.

Each session gets its own :class:`REPLEnvironment` (and worker process); limits and the
``llm_query`` endpoint come from ``OPENENV_REPL_*`` variables, read once here. Importing
this module checks the isolation workers will get and exits with a message when the server
is not root and the kernel refuses user namespaces (unless
``OPENENV_REPL_ALLOW_WEAK_ISOLATION=1``); see docs/repl-security.md.
"""

from __future__ import annotations

import os

from openenv.core.env_server.http_server import create_app
from openenv.envs.repl.config import Limits
from openenv.envs.repl.environment import REPLEnvironment
from openenv.envs.repl.isolation import IsolationUnavailable, require_isolation
from openenv.envs.repl.llm import LLMConfig
from openenv.envs.repl.models import REPLAction, REPLObservation

try:
    ISOLATION = require_isolation()
except IsolationUnavailable as exc:
    raise SystemExit(f"openenv serve repl: refusing to start: {exc.message}") from None
LIMITS = Limits.from_env()
LLM = LLMConfig.from_env()
MAX_ITERATIONS = int(os.environ.get("OPENENV_REPL_MAX_ITERATIONS", "30"))


def make_env() -> REPLEnvironment:
    """One session's environment, sharing the server-wide settings."""
    return REPLEnvironment(limits=LIMITS, llm=LLM, max_iterations=MAX_ITERATIONS)


app = create_app(make_env, REPLAction, REPLObservation, env_name="repl")
