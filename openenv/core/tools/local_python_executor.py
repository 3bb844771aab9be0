"""``PyExecutor``: Python code run by smolagents' ``LocalPythonExecutor``, as a ``CodeExecResult``.

smolagents is the ``tools`` extra (``pip install 'openenv[tools]'``), imported when an executor is
made. The executed code can call two helpers: ``format_exc()`` (the current traceback as text) and
``safe_json_dumps(obj)`` (JSON, with ``repr`` for what JSON cannot hold).
"""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

from openenv.core.env_server.types import CodeExecResult

__all__ = ["PyExecutor"]

logger = logging.getLogger(__name__)
logger.addHandler(logging.NullHandler())


def _safe_json_dumps(obj: Any) -> str:
    return json.dumps(obj, default=repr)


def _as_text(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _exit_code(result: Any, stderr: list[str]) -> int:
    """``exit_code`` if the result has one, else from ``success``, else 1 when anything went to stderr."""
    try:
        if hasattr(result, "exit_code"):
            return 0 if result.exit_code is None else int(result.exit_code)
        if hasattr(result, "success"):
            return 0 if result.success else 1
    except (TypeError, ValueError):
        logger.debug("unreadable exit code on %r", type(result), exc_info=True)
    return 1 if stderr else 0


class PyExecutor:
    """Runs Python snippets in smolagents' ``LocalPythonExecutor`` (its authorised-imports sandbox).

    Args:
        additional_imports: modules the code may import besides smolagents' defaults.
    """

    def __init__(self, additional_imports: list[str] | None = None) -> None:
        try:
            from smolagents import LocalPythonExecutor
        except ImportError:
            raise ImportError("PyExecutor needs smolagents: pip install 'openenv[tools]'") from None
        self._executor = LocalPythonExecutor(additional_authorized_imports=list(additional_imports or []))
        try:
            self._executor.send_tools({"format_exc": traceback.format_exc, "safe_json_dumps": _safe_json_dumps})
        except Exception:  # an executor without send_tools still runs code
            logger.debug("LocalPythonExecutor.send_tools failed; running without the helpers", exc_info=True)

    def run(self, code: str) -> CodeExecResult:
        """Run ``code``: stdout is what it printed, then its last value (JSON, else ``repr``); an
        error gives exit code 1 and its traceback on stderr (never raised)."""
        try:
            result = self._executor(code)
        except Exception:
            logger.exception("LocalPythonExecutor raised while running code")
            return CodeExecResult(stdout="", stderr=traceback.format_exc(), exit_code=1)
        stdout: list[str] = []
        stderr: list[str] = []
        logs = getattr(result, "logs", None)
        if logs:
            stdout.append(str(logs))
        output = getattr(result, "output", None)
        if output is not None:
            stdout.append(_as_text(output))
        for attr in ("error", "exception"):
            problem = getattr(result, attr, None)
            if problem:
                stderr.append(str(problem))
        return CodeExecResult(stdout="\n".join(stdout), stderr="\n".join(stderr), exit_code=_exit_code(result, stderr))
