"""A step on a session never reset steps the fresh environment on ours as on the published 0.10, on
WebSocket and HTTP, for our client and 0.10's (TRL's echo quick start never resets)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
from websockets.sync.client import connect

from tests.peer010 import peer010_python, run_with, serving_ours, serving_published

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "training" / "echo_server.py"
PROBE = ROOT / "peers010" / "clients" / "step_before_reset_probe.py"


def _wire(url: str) -> list:
    out = []
    with connect(url.replace("http://", "ws://") + "/ws", open_timeout=30) as ws:
        for message in ("ws early", "ws again"):
            ws.send(json.dumps({"type": "step", "data": {"message": message}}))
            reply = json.loads(ws.recv(timeout=30))
            data = reply["data"]
            out.append((reply["type"], data["observation"]["echoed_message"], data["reward"], data["done"]))
        ws.send(json.dumps({"type": "state"}))
        out.append(json.loads(ws.recv(timeout=30))["data"]["step_count"])
    body = httpx.post(f"{url}/step", json={"action": {"message": "http"}}, timeout=30).json()
    out.append((body["observation"]["echoed_message"], body["reward"], body["done"]))
    return out


def _clients(url: str) -> dict[str, list[str]]:
    seen = {}
    for side, python in (("ours", sys.executable), ("0.10", peer010_python())):
        proc = run_with(python, PROBE, url)
        assert proc.returncode == 0, proc.stderr[-2000:]
        seen[side] = proc.stdout.splitlines()
    return seen


def test_a_never_reset_session_steps_the_fresh_env_as_on_010() -> None:
    seen = {}
    for side, serving in (("ours", serving_ours), ("0.10", serving_published)):
        with serving(SERVER) as url:
            seen[side] = (_wire(url), _clients(url))
    assert seen["ours"] == seen["0.10"]
    wire, clients = seen["ours"]
    assert wire[0] == ("observation", "ws early", 0.8, False) and wire[2] == 2 and wire[3] == ("http", 0.4, False)
    assert clients["ours"] == clients["0.10"] and json.loads(clients["ours"][-1]) == {"step_count": 2}
