"""The wire contract, checked against a running server with a real episode over WS and HTTP.

    report = run_wire_checks("http://127.0.0.1:8000", actions=[{"message": "hi"}])

Each check opens its own session and closes it before the next, so a server capped at one
session can be checked too. The capacity check is skipped when the cap is above
``CAPACITY_PROBE_LIMIT`` (it would need that many sockets).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from openenv.core.testing_report import (
    CheckFailed,
    CheckReport,
    CheckSkipped,
    CheckWarning,
    episode_id_warning,
    first_difference,
)
from openenv.core.testing_schema import sample_value, schema_errors
from openenv.core.testing_wire import Wire, WsSession, expect_error, expect_observation, expect_state

__all__ = ["CAPACITY_PROBE_LIMIT", "WIRE_CHECKS", "run_wire_checks"]

CAPACITY_PROBE_LIMIT = 16
DETERMINISM_STEPS = 5
SESSION_HEADER = "X-OpenEnv-Session"
EPISODE_ID = "openenv-validate-episode"


class WireRun:
    """What the wire checks share: the connection, the schemas and the actions to send."""

    def __init__(self, wire: Wire, *, actions: Sequence[dict[str, Any]] | None, seed: int, max_steps: int,
                 deterministic_steps: bool = True) -> None:
        self.wire = wire
        self.deterministic_steps = deterministic_steps
        self.seed = seed
        self.max_steps = max_steps
        self.schemas: dict[str, Any] | None = None
        self._actions = list(actions or [])

    def actions(self) -> list[dict[str, Any]]:
        if not self._actions:
            schema = (self.schemas or {}).get("action")
            if not schema:
                raise CheckFailed("no actions given and no action schema to sample one from")
            self._actions = [sample_value(schema)]
        return self._actions

    def action_cycle(self) -> Iterator[dict[str, Any]]:
        return itertools.cycle(self.actions())

    @contextmanager
    def session(self) -> Iterator[WsSession]:
        """A WebSocket session, closed (and released by the server) afterwards."""
        before = self.wire.health_sessions()
        try:
            with self.wire.ws() as ws:
                yield ws
        finally:
            if before is not None:
                self.wire.wait_active_at_most(before[0])

    def reset(self, ws: WsSession, what: str, **data: Any) -> dict[str, Any]:
        return expect_observation(ws.request({"type": "reset", "data": data}), self.schemas, what, reset=True)

    def step(self, ws: WsSession, action: dict[str, Any], what: str) -> dict[str, Any]:
        return expect_observation(ws.request({"type": "step", "data": action}), self.schemas, what)


def check_health(run: WireRun) -> str:
    resp = run.wire.get("/health")
    body = run.wire.json(resp, "GET /health")
    if resp.status_code != 200 or not isinstance(body, dict) or body.get("status") != "healthy":
        raise CheckFailed(f"GET /health answered {resp.status_code} {str(body)[:120]}, expected status 'healthy'")
    counts = run.wire.health_sessions()
    return f"sessions {counts[0]}/{counts[1]}" if counts else "no session counts reported"


def check_schema(run: WireRun) -> str:
    resp = run.wire.get("/schema")
    if resp.status_code != 200:
        hint = " (a token is required: pass --token)" if resp.status_code == 401 else ""
        raise CheckFailed(f"GET /schema answered {resp.status_code}{hint}")
    body = run.wire.json(resp, "GET /schema")
    if not isinstance(body, dict):
        raise CheckFailed("GET /schema is not an object")
    for key in ("action", "observation", "state"):
        schema = body.get(key)
        if not isinstance(schema, dict) or not (schema.get("type") or schema.get("properties") or schema.get("$ref")):
            raise CheckFailed(f"GET /schema: {key!r} is not a JSON schema")
    run.schemas = body
    meta = run.wire.json(run.wire.get("/metadata"), "GET /metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise CheckFailed("GET /metadata lacks a 'name'")
    for action in run.actions():
        errors = schema_errors(action, body["action"])
        if errors:
            raise CheckFailed(f"action {json.dumps(action)[:80]} does not match the action schema: {errors[0]}")
    return f"env {meta['name']!r}"


def check_reset_step_state(run: WireRun) -> str:
    with run.session() as ws:
        run.reset(ws, "reset", seed=run.seed, episode_id=EPISODE_ID)
        state = expect_state(ws.request({"type": "state"}), run.schemas, "state after reset")
        if state["step_count"] != 0:
            raise CheckFailed(f"step_count is {state['step_count']} after reset, expected 0")
        warning = episode_id_warning(state["episode_id"], EPISODE_ID)
        steps = 0
        for action in run.actions()[: run.max_steps]:
            data = run.step(ws, action, f"step {steps + 1}")
            steps += 1
            state = expect_state(ws.request({"type": "state"}), run.schemas, f"state after step {steps}")
            if state["step_count"] != steps:
                raise CheckFailed(f"state did not follow the episode: step_count {state['step_count']} after {steps} step(s)")
            if data["done"]:
                break
    if warning:
        raise CheckWarning(f"{steps} step(s); {warning}")
    return f"{steps} step(s)"


def check_seed_determinism(run: WireRun) -> str:
    firsts = []
    for attempt in range(2):
        with run.session() as ws:
            data = run.reset(ws, f"reset #{attempt + 1} with seed {run.seed}", seed=run.seed)
            firsts.append({k: data[k] for k in ("observation", "reward", "done")})
    if firsts[0] != firsts[1]:
        raise CheckFailed(
            f"reset(seed={run.seed}) gave different first observations: {first_difference(firsts[0], firsts[1])}"
        )
    return f"seed {run.seed}"


def _comparable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: data[k] for k in ("observation", "reward", "done")}


def check_step_determinism(run: WireRun) -> str:
    if not run.deterministic_steps:
        raise CheckSkipped("steps declared non-deterministic")
    runs = []
    for attempt in range(2):
        with run.session() as ws:
            seen = [_comparable(run.reset(ws, f"reset #{attempt + 1}", seed=run.seed))]
            actions = run.action_cycle()
            for n in range(1, min(run.max_steps, DETERMINISM_STEPS) + 1):
                seen.append(_comparable(run.step(ws, next(actions), f"step {n} of episode {attempt + 1}")))
                if seen[-1]["done"]:
                    break
            runs.append(seen)
    for n, (one, two) in enumerate(zip(runs[0], runs[1], strict=False)):
        if one != two:
            raise CheckFailed(f"same seed and actions, different observation at step {n}: {first_difference(one, two)}")
    return f"{len(runs[0]) - 1} step(s) replayed"


def check_step_before_reset(run: WireRun) -> str:
    """A step on a session never reset goes to the fresh environment, as on 0.10 (TRL's echo example
    never resets): an observation or the env's own error, never a refusal; a reset works after it."""
    if isinstance(run.actions()[0], dict) and run.actions()[0].get("type") in ("list_tools", "call_tool"):
        raise CheckSkipped("MCP actions (list_tools, call_tool) need no reset")
    with run.session() as ws:
        reply = ws.request({"type": "step", "data": run.actions()[0]})
        if reply.get("type") == "error" and _code(reply) == "STEP_BEFORE_RESET":
            raise CheckFailed("refused a step before reset (STEP_BEFORE_RESET); 0.10 steps the fresh environment")
        answer = "an observation" if reply.get("type") != "error" else f"the env's error ({_code(reply)})"
        run.reset(ws, "reset after the early step")
    return f"answered with {answer}"


def _code(reply: dict[str, Any]) -> str:
    data = reply.get("data")
    return str(data.get("code")) if isinstance(data, dict) else "no code"


def check_error_shapes(run: WireRun) -> None:
    bad = [
        ("{not json", "INVALID_JSON"),
        (json.dumps({"type": "no-such-type"}), "UNKNOWN_TYPE"),
        (json.dumps({"type": "step", "data": "not an object"}), "VALIDATION_ERROR"),
    ]
    with run.session() as ws:
        studio = ws.studio_server
        if studio:  # the published server hands WebSocket reset kwargs to the env unchecked
            bad.append((json.dumps({"type": "reset", "data": {"seed": -1}}), "VALIDATION_ERROR"))
        run.reset(ws, "reset")
        for frame, code in bad:
            data = expect_error(ws.request(frame), code, f"frame {frame[:40]!r}")
            if code == "VALIDATION_ERROR" and not isinstance(data.get("errors"), list):
                raise CheckFailed(f"VALIDATION_ERROR for {frame[:40]!r} lacks an 'errors' list")
            expect_state(ws.request({"type": "state"}), run.schemas, f"state after bad frame {frame[:30]!r}")
    resp = run.wire.post("/step", {"not_action": 1})
    body = run.wire.json(resp, "POST /step without an action")
    if resp.status_code != 422 or not isinstance(body, dict) or not isinstance(body.get("detail"), list):
        raise CheckFailed(f"POST /step without an action answered {resp.status_code} {str(body)[:100]}, expected 422 with a detail list")
    resp = run.wire.post("/reset", raw="{not json")
    body = run.wire.json(resp, "POST /reset with bad JSON")
    if not studio and resp.status_code == 422 and isinstance(body, dict) and isinstance(body.get("detail"), list):
        return  # the published server's answer (FastAPI's): a clear 4xx all the same
    if resp.status_code != 400 or not isinstance(body, dict) or body.get("code") != "INVALID_JSON":
        raise CheckFailed(f"POST /reset with bad JSON answered {resp.status_code} {str(body)[:100]}, expected 400 INVALID_JSON")


def check_http_episode(run: WireRun) -> str:
    resp = run.wire.post("/reset", {"seed": run.seed}, headers={SESSION_HEADER: "new"})
    body = run.wire.json(resp, "POST /reset")
    if resp.status_code != 200:
        raise CheckFailed(f"POST /reset answered {resp.status_code}: {str(body)[:120]}")
    expect_observation(body, run.schemas, "POST /reset", reset=True)
    sid = resp.headers.get(SESSION_HEADER)
    if not sid:
        return "stateless HTTP (no sessions): checked /reset only"
    headers = {SESSION_HEADER: sid}
    try:
        resp = run.wire.post("/step", {"action": run.actions()[0]}, headers=headers)
        body = run.wire.json(resp, "POST /step")
        if resp.status_code != 200:
            raise CheckFailed(f"POST /step answered {resp.status_code}: {str(body)[:120]}")
        expect_observation(body, run.schemas, "POST /step")
        state = expect_state(run.wire.json(run.wire.get("/state", headers=headers), "GET /state"), run.schemas, "GET /state")
        if state["step_count"] != 1:
            raise CheckFailed(f"GET /state: step_count {state['step_count']} after one HTTP step")
    finally:
        run.wire.delete(f"/sessions/{sid}")
    resp = run.wire.get("/state", headers=headers)
    body = run.wire.json(resp, "GET /state on a closed session")
    if resp.status_code != 404 or not isinstance(body, dict) or body.get("code") != "SESSION_ERROR":
        raise CheckFailed(f"a closed HTTP session answered {resp.status_code} {str(body)[:100]}, expected 404 SESSION_ERROR")
    return "HTTP session: reset, step, state, close"


def check_step_after_done(run: WireRun) -> str:
    with run.session() as ws:
        run.reset(ws, "reset", seed=run.seed)
        actions = run.action_cycle()
        for n in range(1, run.max_steps + 1):
            if run.step(ws, next(actions), f"step {n}")["done"]:
                break
        else:
            raise CheckSkipped(f"the episode did not end within {run.max_steps} steps")
        reply = ws.request({"type": "step", "data": next(actions)})
        if reply.get("type") == "error":
            data = reply.get("data") if isinstance(reply.get("data"), dict) else {}
            if not isinstance(data.get("code"), str) or not isinstance(data.get("message"), str):
                raise CheckFailed("step after done: the error reply lacks a code and message")
            outcome = f"coded error {data['code']}"
        else:
            expect_observation(reply, run.schemas, "step after done")
            outcome = "an observation"
        run.reset(ws, "reset after the episode ended")
    return f"done after {n} step(s); step after done gave {outcome}"


def check_capacity(run: WireRun) -> str:
    counts = run.wire.health_sessions()
    if counts is None:
        raise CheckSkipped("/health does not report sessions {active, max}")
    active, cap = counts
    if cap > CAPACITY_PROBE_LIMIT:
        raise CheckSkipped(f"session cap {cap} is above {CAPACITY_PROBE_LIMIT}; not opening that many sockets")
    with ExitStack() as stack:
        for n in range(1, cap - active + 1):
            run.reset(stack.enter_context(run.wire.ws()), f"reset on session {n} of {cap}")
        extra = stack.enter_context(run.wire.ws())
        expect_error(extra.request({"type": "reset", "data": {}}), "CAPACITY_REACHED", f"session {cap + 1} of {cap}")
        if not extra.closed_by_peer():
            raise CheckFailed("the refused session's socket stayed open")
    if not run.wire.wait_active_at_most(active):
        raise CheckFailed("closed sessions were not released (active count stayed up)")
    with run.session() as ws:
        run.reset(ws, "reset once capacity was released")
    return f"refused session {cap + 1} of {cap}, then released"


def check_close(run: WireRun) -> str:
    before = run.wire.health_sessions()
    with run.wire.ws() as ws:
        run.reset(ws, "reset")
        ws.send({"type": "close"})
        if not ws.closed_by_peer():
            raise CheckFailed("the server kept the socket open after a 'close' message")
    if before is not None and not run.wire.wait_active_at_most(before[0]):
        raise CheckFailed("the session was not released after 'close'")
    return "socket closed and session released" if before else "socket closed"


def check_mcp(run: WireRun) -> str:
    """Where the server has ``/mcp`` (0.10): JSON-RPC ``tools/list`` answers 200 with ``"jsonrpc": "2.0"``."""
    resp = run.wire.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    if resp.status_code in (404, 405):  # optional: a 0.3-style server has none
        return "no /mcp route (optional: only checked where a server has one)"
    if resp.status_code != 200:
        raise CheckFailed(f"POST /mcp tools/list answered {resp.status_code}, expected 200")
    body = run.wire.json(resp, "POST /mcp")
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise CheckFailed(f"POST /mcp did not answer JSON-RPC 2.0: {str(body)[:120]}")
    if body.get("id") != 1:
        raise CheckFailed(f"POST /mcp answered id {body.get('id')!r}, expected 1")
    result, error = body.get("result"), body.get("error")
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        return f"{len(result['tools'])} tool(s)"
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        return f"JSON-RPC error {error['code']}: {str(error.get('message'))[:60]}"
    raise CheckFailed(f"POST /mcp tools/list has neither result.tools nor an error: {str(body)[:120]}")


WIRE_CHECKS: list[tuple[str, Callable[[WireRun], Any]]] = [
    ("http.health", check_health),
    ("http.schema", check_schema),
    ("http.mcp", check_mcp),
    ("ws.reset_step_state", check_reset_step_state),
    ("ws.seed_determinism", check_seed_determinism),
    ("ws.step_determinism", check_step_determinism),
    ("ws.step_before_reset", check_step_before_reset),
    ("ws.error_shapes", check_error_shapes),
    ("http.episode", check_http_episode),
    ("ws.step_after_done", check_step_after_done),
    ("ws.capacity", check_capacity),
    ("ws.close", check_close),
]


def run_wire_checks(
    base_url: str,
    *,
    actions: Sequence[dict[str, Any]] | None = None,
    seed: int = 0,
    max_steps: int = 50,
    token: str | None = None,
    timeout_s: float = 30.0,
    deterministic_steps: bool = True,
    report: CheckReport | None = None,
) -> CheckReport:
    """Run every wire check against ``base_url``; the report says what failed and why.

    Args:
        actions: wire dicts to step with (default: one sampled from the server's action schema).
        seed: the seed used for the episode and the determinism check.
        max_steps: bound on the episode played to reach ``done``.
        deterministic_steps: the same seed and actions must give the same observations
            (pass False for envs whose steps carry timings or other noise).
    """
    report = report or CheckReport(base_url)
    wire = Wire(base_url, token=token, timeout_s=timeout_s)
    run = WireRun(wire, actions=actions, seed=seed, max_steps=max_steps, deterministic_steps=deterministic_steps)
    try:
        health = report.run("http.health", lambda: check_health(run))
        if health.status == "fail":
            report.add("wire", "skip", "server not healthy: other wire checks skipped")
            return report
        schema = report.run("http.schema", lambda: check_schema(run))
        for name, check in WIRE_CHECKS[2:]:
            if schema.status == "fail" and not run._actions:
                report.add(name, "skip", "no action to send (the schema check failed)")
                continue
            report.run(name, lambda check=check: check(run))
    finally:
        wire.close()
    return report
