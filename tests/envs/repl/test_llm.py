"""``llm_query`` against a tiny OpenAI-compatible server started on loopback by the test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from openenv.envs.repl.llm import LLMConfig
from tests.envs.repl.conftest import run, test_limits

ROOMY = test_limits(cell_timeout_s=30)  # LLM-layer timeouts must fire first, even on a loaded machine


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        self.server.seen.append((self.path, self.headers.get("Authorization"), body["model"], prompt))
        if prompt.startswith("slow"):
            time.sleep(3)
        if prompt == "broken":
            self.send_response(500)
            self.end_headers()
            return
        reply = {"choices": [{"message": {"role": "assistant", "content": f"echo:{prompt}"}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def llm_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _config(server: ThreadingHTTPServer, **kw: object) -> LLMConfig:
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    return LLMConfig(base_url=base, model="tiny", api_key="sk-server-only", **kw)  # type: ignore[arg-type]


def test_llm_query_and_batch(make_env, llm_server) -> None:
    env = make_env(llm=_config(llm_server), limits=ROOMY)
    obs = run(env, "a = llm_query('hello')\nb = llm_query_batched(['x', 'y', 'z'])\nprint(a, b)")
    assert obs.result.stdout == "echo:hello ['echo:x', 'echo:y', 'echo:z']\n"
    path, auth, model, _ = llm_server.seen[-1]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-server-only" and model == "tiny"
    assert "sk-server-only" not in run(env, "import gc\nstr([o for o in gc.get_objects() if isinstance(o, str)])"
                                      ).result.stdout


def test_llm_budget_per_episode(make_env, llm_server) -> None:
    env = make_env(llm=_config(llm_server, max_calls=3), limits=ROOMY)
    assert run(env, "llm_query_batched(['1', '2'])").result.success
    over = run(env, "llm_query_batched(['3', '4'])")
    assert "budget exhausted" in over.result.exception
    env.reset()
    assert run(env, "llm_query('again')").result.stdout == "'echo:again'\n"


def test_llm_timeout_and_errors_are_cell_errors(make_env, llm_server) -> None:
    env = make_env(llm=_config(llm_server, timeout_s=0.5), limits=ROOMY)
    slow = run(env, "llm_query('slow please')")
    assert slow.outcome == "error" and "timed out" in slow.result.exception
    broken = run(env, "llm_query('broken')")
    assert "HTTP 500" in broken.result.exception
    assert run(env, "try:\n    llm_query('broken')\nexcept RuntimeError as e:\n    print('caught')").result.stdout == (
        "caught\n")


def test_llm_not_configured(make_env) -> None:
    obs = run(make_env(llm=None), "llm_query('anyone?')")
    assert obs.outcome == "error" and "not configured" in obs.result.exception


def test_llm_config_from_env() -> None:
    assert LLMConfig.from_env({}) is None
    cfg = LLMConfig.from_env({"OPENENV_REPL_LLM_BASE_URL": "http://127.0.0.1:9/v1", "OPENENV_REPL_LLM_MAX_CALLS": "5"})
    assert cfg is not None and cfg.max_calls == 5 and cfg.api_key is None
