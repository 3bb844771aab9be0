"""``validate_llm`` (0.10's live probe of what an endpoint returns) against loopback endpoints:
a vLLM-like engine (tokens), hosted APIs that refuse the capture parameters (negotiated down to
logprobs or text), raw vs processed logprobs, prose instead of a tool call, an unserved model and
a dead port — and the same cases through the published 0.10, compared report by report."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openenv.core.harness.capture import LLMReport, require_llm, validate_llm
from tests.peer010 import _clean_env, peer010_python
from tests.server_utils import free_port, running_server

from .conftest import ENGINE_KEY
from .probe_engine import make_probe_engine

SCRIPT = Path(__file__).with_name("probe_script.py")


@pytest.fixture(scope="module")
def probe_url() -> Iterator[str]:
    with running_server(make_probe_engine()) as url:
        yield url


def _cases(engine_url: str, probe_url: str) -> list[list]:
    return [
        [engine_url, "vllm", {"api_key": ENGINE_KEY}],
        [probe_url, "hosted-logprobs", {}],
        [probe_url, "hosted-text", {}],
        [probe_url, "processed", {}],
        [probe_url, "raw", {}],
        [probe_url, "raw", {"check_logprobs_mode": False}],
        [probe_url, "prose", {"check_logprobs_mode": False}],
        [probe_url, "nonexistent", {}],
        [f"http://127.0.0.1:{free_port()}", "m", {"check_tools": False}],
    ]


def test_levels_fixes_and_modes(engine_url: str, probe_url: str) -> None:
    vllm = validate_llm(engine_url, "vllm", api_key=ENGINE_KEY, timeout=20)
    assert vllm.ok and vllm.trainable and vllm.capture_level == "tokens" and vllm.tool_support == "ok"
    assert vllm.n_prompt_ids > 0 and vllm.n_completion_ids > 0 and vllm.summary().startswith("engine OK")
    hosted = validate_llm(probe_url, "hosted-logprobs", timeout=20)
    assert hosted.reachable and not hosted.ok and hosted.capture_level == "logprobs"
    assert hosted.param_fixes == ["dropped return_token_ids"] and "EVAL ONLY" in hosted.summary()
    text = validate_llm(probe_url, "hosted-text", timeout=20)
    assert text.capture_level == "text" and text.param_fixes == ["dropped return_token_ids", "dropped logprobs"]
    assert validate_llm(probe_url, "processed", timeout=20).logprobs_mode == "processed"
    raw = validate_llm(probe_url, "raw", timeout=20)
    assert raw.logprobs_mode == "raw" and raw.capture_level == "logprobs" and any("raw_logprobs" in f for f in raw.findings)
    prose = validate_llm(probe_url, "prose", timeout=20, check_logprobs_mode=False)
    assert prose.ok and prose.tool_support == "no-tool-call"
    unserved = validate_llm(probe_url, "nonexistent", timeout=20)
    assert not unserved.reachable and "not served" in unserved.findings[0]
    dead = validate_llm(f"http://127.0.0.1:{free_port()}", "m", timeout=5, check_tools=False)
    assert isinstance(dead, LLMReport) and not dead.reachable and "probe failed" in dead.findings[0]


def test_require_llm(engine_url: str, probe_url: str) -> None:
    assert require_llm(engine_url, "vllm", api_key=ENGINE_KEY, timeout=20, require_tokens=True).trainable
    assert require_llm(probe_url, "hosted-text", timeout=20).capture_level == "text"  # an eval backend is fine
    with pytest.raises(RuntimeError, match="needs trainable rollouts"):
        require_llm(probe_url, "hosted-text", timeout=20, require_tokens=True)
    with pytest.raises(RuntimeError, match="NOT reachable"):
        require_llm(f"http://127.0.0.1:{free_port()}", "m", timeout=5)


def test_same_reports_as_published(engine_url: str, probe_url: str) -> None:
    cases = _cases(engine_url, probe_url)

    def run(python: str, env: dict | None) -> list[dict]:
        done = subprocess.run([python, "-P", str(SCRIPT)], input=json.dumps(cases), capture_output=True, text=True,
                              timeout=300, cwd="/", env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    published = run(peer010_python(), _clean_env())
    ours = run(sys.executable, None)
    for case, got, want in zip(cases, ours, published, strict=True):
        assert got == want, case[1:]
