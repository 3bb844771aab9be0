"""``CaptureServer``: the capture proxy in a background thread (OpenEnv 0.10's in-process runner).

    with CaptureServer(llm_url="http://127.0.0.1:8000/v1", model="qwen", port=0) as cap:
        sid = cap.registry.create().session_id        # the harness's API key
        ...                                           # harness -> cap.base_url + "/v1"
        doc = cap.rollout(sid)                        # the training document

Binds 127.0.0.1 unless told otherwise (0.10 binds every interface); a non-loopback bind needs an
``admin_key`` for the session routes. Sessions may name (``llm_url``) only ``llm_url`` itself or an
engine in ``allowed_llm_urls`` (``"*"``: any).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from openenv.core.env_server.auth import is_loopback

from .app import create_capture_app
from .document import rollout_document

__all__ = ["CaptureServer"]


class CaptureServer:
    """The proxy served by uvicorn in a daemon thread; ``registry`` is the live session map."""

    def __init__(self, *, llm_url: str, model: str | None = None, port: int = 8100, host: str = "127.0.0.1",
                 max_output_tokens: int | None = 8192, api_key: str | None = None, auth_header: str = "Authorization",
                 capture_level: str = "tokens", admin_key: str | None = None, max_model_calls: int = 0,
                 store: Any = None, label: str | None = None, provider: str = "openai",
                 allowed_llm_urls: tuple[str, ...] = ()) -> None:
        if not is_loopback(host) and not admin_key:
            raise ValueError(f"refusing to bind {host} without an admin_key for the session routes")
        self.capture_level = "text" if provider == "anthropic" else capture_level
        self.app = create_capture_app(llm_url=llm_url, model=model, level=self.capture_level, api_key=api_key,
                                      auth_header=auth_header, admin_key=admin_key, max_output_tokens=max_output_tokens,
                                      max_model_calls=max_model_calls, store=store, label=label,
                                      allowed_llm_urls=allowed_llm_urls)
        self.host, self.port, self.admin_key = host, port, admin_key
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def registry(self) -> Any:
        return self.app.state.registry

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 30.0) -> CaptureServer:
        """Bind (``port=0``: any free port) and wait until this server answers."""
        import uvicorn

        config = uvicorn.Config(self.app, host=self.host, port=self.port, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="capture-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the capture server did not start on {self.host}:{self.port}")
            time.sleep(0.02)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def rollout(self, session_id: str, **options: Any) -> dict[str, Any]:
        """The training document of a session (``include_discarded``, ``include_messages``)."""
        s = self.registry.get(session_id)
        if s is None:
            raise KeyError(f"unknown capture session {session_id!r}")
        return rollout_document(s.graph, session_id=s.session_id, metadata=s.metadata, findings=s.findings,
                                capture_level=s.engine.level if s.engine is not None else self.capture_level,
                                purpose=s.purpose,
                                budget_stop_count=s.budget_stop_count, **options)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> CaptureServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
