"""PyExecutor over the real smolagents LocalPythonExecutor (the ``tools`` extra), and the package
without it: GitServerClient still imports, PyExecutor is None, smolagents is loaded only on use."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.core.env_server.types import CodeExecResult
from tests._require import require

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def executor_cls():
    require(importlib.util.find_spec("smolagents") is not None, "smolagents (pip install 'openenv[tools]')")
    from openenv.core.tools import PyExecutor

    return PyExecutor


def test_prints_then_the_last_value(executor_cls) -> None:
    result = executor_cls().run('x = 2\nprint("hi")\nx * 3')
    assert isinstance(result, CodeExecResult)
    assert (result.stdout, result.stderr, result.exit_code) == ("hi\n\n6", "", 0)
    assert executor_cls().run('{"a": [1, 2]}').stdout == '{"a": [1, 2]}'
    assert executor_cls().run("None").stdout == ""


def test_errors_are_returned_with_their_traceback(executor_cls) -> None:
    failed = executor_cls().run("1 / 0")
    assert failed.exit_code == 1 and failed.stdout == "" and "ZeroDivisionError" in failed.stderr
    refused = executor_cls().run("import os")
    assert refused.exit_code == 1 and "Import of os is not allowed" in refused.stderr


def test_additional_imports_and_the_helpers(executor_cls) -> None:
    ex = executor_cls(additional_imports=["json"])
    assert ex.run('import json\njson.dumps({"k": 1})').stdout == '"{\\"k\\": 1}"'
    dumped = ex.run('safe_json_dumps({"s": {1, 2}})')  # a set goes through repr; the value is JSON again
    assert dumped.exit_code == 0 and json.loads(dumped.stdout) == '{"s": "{1, 2}"}'
    out = ex.run("try:\n    1 / 0\nexcept ZeroDivisionError:\n    text = format_exc()\ntext")
    assert out.exit_code == 0 and "ZeroDivisionError" in out.stdout
    state = executor_cls()
    state.run("y = 41")
    assert state.run("y + 1").stdout == "42"  # one executor keeps its variables


def test_without_smolagents_git_tools_still_import() -> None:
    code = ("import sys; sys.modules['smolagents'] = None\n"
            "from openenv.core.tools import GitServerClient, PyExecutor, RepoInfo\n"
            "assert PyExecutor is None and GitServerClient.__name__ == 'GitServerClient'\n"
            "from openenv.core.tools.local_python_executor import PyExecutor as P\n"
            "try:\n    P()\nexcept ImportError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "PyExecutor needs smolagents: pip install 'openenv[tools]'"
    lazy = subprocess.run([sys.executable, "-c", "import sys, openenv.core.tools, openenv.core.evals; "
                           "print(sorted(m for m in ('smolagents', 'inspect_ai') if m in sys.modules))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert lazy.stdout.strip() == "[]", lazy.stderr
