"""0.10's production-mode ``/harness`` WebSocket: the same frames against the published 0.10 and
ours (``OPENENV_MODE=production``, a real fake harness process), replies compared frame by frame."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.peer010 import serving_ours, serving_published

APP = Path(__file__).with_name("harness_app.py")


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("timestamp", "session_id")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _session(url: str, frames: list[str]) -> list:
    """Connect, send each raw frame, read replies until a terminal/turn_complete/protocol frame."""
    replies = []
    with connect(url.replace("http://", "ws://") + "/harness", open_timeout=30, max_size=None) as ws:
        replies.append(_strip(json.loads(ws.recv(timeout=60))))
        for raw in frames:
            ws.send(raw)
            while True:
                try:
                    reply = _strip(json.loads(ws.recv(timeout=60)))
                except ConnectionClosed:
                    replies.append("closed")
                    return replies
                replies.append(reply)
                if reply["type"] in ("turn_complete", "protocol_error", "error"):
                    break
        try:
            ws.recv(timeout=5)
            replies.append("still open")
        except ConnectionClosed:
            replies.append("closed")
        except TimeoutError:
            replies.append("open")
    return replies


def _scenario(url: str) -> dict:
    good = [json.dumps({"type": "message", "content": "hello"}), "{not json",
            json.dumps({"type": "step", "content": "x"}), json.dumps({"type": "message", "content": "tool add {\"a\": 4, \"b\": 5}"}),
            json.dumps({"type": "message", "content": "crash"})]
    return {"main": _session(url, good),
            "hang": _session(url, [json.dumps({"type": "message", "content": "hang"})]),
            "noend": _session(url, [json.dumps({"type": "message", "content": "noend"})])}


@pytest.mark.timeout(300)
def test_harness_websocket_matches_010(fake_model):
    env = {"OPENENV_MODE": "production", "FAKE_MODEL_URL": fake_model.url, "FAKE_TURN_TIMEOUT": "6"}
    with serving_published(APP, extra_env=env) as url:
        peer = _scenario(url)
    with serving_ours(APP, extra_env=env) as url:
        started = time.monotonic()
        ours = _scenario(url)
        assert time.monotonic() - started < 90
    for key in peer:
        assert ours[key] == peer[key], key
    main = peer["main"]
    assert main[0] == {"type": "session_started", "data": {"harness": "fake-harness"}}
    assert main[2]["data"]["response"] == "echo: hello (turn 1)"
    assert main[3]["type"] == "protocol_error" and main[3]["data"]["code"] == "INVALID_JSON"
    assert main[4]["type"] == "protocol_error" and main[4]["data"]["code"] == "VALIDATION_ERROR"
    assert main[-2]["type"] == "error" and main[-1] == "closed"
    assert peer["hang"][-2]["data"]["message"] == "harness turn exceeded 6.0 seconds"
