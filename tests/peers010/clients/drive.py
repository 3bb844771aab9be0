"""Drive a served 0.10-style env with plain HTTP and WebSocket calls; print one JSON line per call.

``drive.py <base_url> <scenario>``. Payloads are normalised to what both servers agree on: a
non-empty ``metadata`` is inside ``observation`` and beside it on both, an empty one only on 0.10
(``{}``, dropped here), a missing or null top-level ``metadata`` is ``{}`` and numeric rewards
are floats.
"""

import contextlib
import json
import sys
import time

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

BASE, SCENARIO = sys.argv[1], sys.argv[2]
WS = BASE.replace("http://", "ws://") + "/ws"


def norm(payload):
    if not isinstance(payload, dict) or not isinstance(payload.get("observation"), dict):
        return payload
    obs = dict(payload["observation"])
    if not obs.get("metadata"):
        obs.pop("metadata", None)
    reward = payload.get("reward")
    return {
        "observation": obs,
        "reward": float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else reward,
        "done": payload.get("done"),
        "metadata": payload.get("metadata") or {},
    }


def out(label, value):
    print(json.dumps({"call": label, "value": value}, sort_keys=True))


def open_ws():
    stack = contextlib.ExitStack()
    return stack, stack.enter_context(connect(WS, open_timeout=30, max_size=None))


class Session:
    def __init__(self):
        self._stack, self.ws = open_ws()

    def send(self, frame):
        self.ws.send(json.dumps(frame))
        reply = json.loads(self.ws.recv(timeout=30))
        if reply["type"] == "error":
            return {"error": reply["data"].get("code")}
        return {reply["type"]: norm(reply["data"])}

    def close(self):
        self._stack.close()


def http(method, path, **kw):
    resp = httpx.request(method, BASE + path, timeout=30, **kw)
    try:
        body = resp.json()
    except ValueError:
        body = None
    return {"status": resp.status_code, "body": norm(body)}


def schema():
    body = httpx.get(BASE + "/schema", timeout=30).json()
    # "reset" is ours and additive (the reset parameters' schema, for remote reset forms): 0.10 has none
    out("schema", {k: body[k] for k in sorted(body) if k != "reset"})


def rubric():
    schema()
    s = Session()
    out("reset", s.send({"type": "reset", "data": {"seed": 7, "episode_id": "e1"}}))
    for guess, style in [(2, "plain"), (5, "polite"), (9, "plain"), (7, "polite")]:
        out(f"step {guess}", s.send({"type": "step", "data": {"guess": guess, "style": style}}))
    out("state", s.send({"type": "state"}))
    out("reset again", s.send({"type": "reset", "data": {"seed": 3}}))
    out("step after reset", s.send({"type": "step", "data": {"guess": 3}}))
    out("bad action", s.send({"type": "step", "data": {"guess": "many"}}))
    out("unknown field", s.send({"type": "step", "data": {"guess": 1, "colour": "red"}}))
    s.close()
    out("http reset", http("POST", "/reset", json={"seed": 4, "metadata": None}))
    out("http step", http("POST", "/step", json={"action": {"guess": 4}, "metadata": None}))
    out("http bad step", http("POST", "/step", json={"action": {"guess": []}})["status"])


def generic():
    schema()
    s = Session()
    out("reset", s.send({"type": "reset", "data": {"seed": 11}}))
    out("step ok", s.send({"type": "step", "data": {"code": "print", "messages": [{"role": "user", "content": "!"}]}}))
    out("step fail", s.send({"type": "step", "data": {"code": "raise"}}))
    out("state", s.send({"type": "state"}))
    out("step done", s.send({"type": "step", "data": {"code": "x"}}))
    out("bad message", s.send({"type": "step", "data": {"code": "x", "messages": [{"role": "user"}]}}))
    s.close()
    out("http state", http("GET", "/state"))


def subclass():
    schema()
    out("info", http("GET", "/info"))
    out("preview", http("POST", "/preview", json={"seed": 2, "action": {"add": 3, "metadata": {"k": 1}}}))
    s = Session()
    out("reset", s.send({"type": "reset", "data": {"seed": 5}}))
    for _ in range(3):
        out("step", s.send({"type": "step", "data": {"add": 2}}))
    out("state", s.send({"type": "state"}))
    s.close()
    out("http reset", http("POST", "/reset", json={"seed": 1}))
    out("http step kwargs", http("POST", "/step", json={"action": {"add": 3}, "double": True, "metadata": None}))


def concurrency():
    a, b = Session(), Session()
    out("a reset", a.send({"type": "reset", "data": {}}))
    out("b reset", b.send({"type": "reset", "data": {}}))
    out("a step", a.send({"type": "step", "data": {"n": 2}}))
    out("b step", b.send({"type": "step", "data": {"n": 3}}))
    out("a state", a.send({"type": "state"}))
    out("b state", b.send({"type": "state"}))
    stack, c = open_ws()
    try:  # both servers refuse as the socket opens: read that, never send into a socket being closed
        refusal = json.loads(c.recv(timeout=5))
    except TimeoutError:  # a server that waits for the first frame before refusing
        with contextlib.suppress(ConnectionClosed):
            c.send(json.dumps({"type": "reset", "data": {}}))
        refusal = json.loads(c.recv(timeout=30))
    out("third", {"type": refusal["type"], "code": refusal["data"].get("code"), "max": refusal["data"].get("max_sessions")})
    stack.close()
    a.close()
    got = None
    for _ in range(50):  # the server frees the slot once it sees the close
        try:
            d = Session()
            got = d.send({"type": "reset", "data": {}})
            d.close()
        except ConnectionClosed:  # refused while the slot was still held
            got = {"error": "closed"}
        if "observation" in got:
            break
        time.sleep(0.1)
    out("after close", got)
    b.close()


def production():
    out("reset", http("POST", "/reset", json={})["status"])
    out("step", http("POST", "/step", json={"action": {"n": 1}})["status"])
    out("state", http("GET", "/state")["status"])
    out("health", http("GET", "/health")["status"])
    out("schema", http("GET", "/schema")["status"])
    s = Session()
    out("ws reset", s.send({"type": "reset", "data": {}}))
    out("ws step", s.send({"type": "step", "data": {"n": 4}}))
    s.close()


def task_call(method, path, **kw):
    """Status and body of one Task API call; an error body is reduced to its ``detail``.

    By design ours adds ``code``/``message`` beside ``detail`` (our coded errors), so only
    ``detail`` is compared; a validation error's items keep type/loc/msg/input (FastAPI's ``url``
    and ``ctx`` are 0.10-only). A 500 is compared by status alone: 0.10 answers plain-text
    "Internal Server Error", ours a coded EXECUTION_ERROR JSON without traceback.
    """
    resp = httpx.request(method, BASE + path, timeout=30, **kw)
    if resp.status_code < 400:
        return {"status": resp.status_code, "body": resp.json()}
    if resp.status_code >= 500 and resp.status_code != 501:
        return {"status": resp.status_code}
    detail = resp.json().get("detail")
    if isinstance(detail, list):
        detail = [{k: item.get(k) for k in ("type", "loc", "msg", "input")} for item in detail]
    return {"status": resp.status_code, "detail": detail}


def tasks():
    out("list_environments", task_call("GET", "/list_environments"))
    out("splits", task_call("GET", "/quiz/splits"))
    out("splits any case", task_call("GET", "/QuIz/splits"))
    out("splits unknown env", task_call("GET", "/other/splits"))
    for split in ("train", "test", "huge", "nope"):
        out(f"tasks {split}", task_call("POST", "/quiz/tasks", json={"split": split}))
    out("tasks no split", task_call("POST", "/quiz/tasks", json={}))
    out("tasks int split", task_call("POST", "/quiz/tasks", json={"split": 3}))
    out("tasks extra field", task_call("POST", "/quiz/tasks", json={"split": "train", "limit": 1}))
    out("tasks unknown env", task_call("POST", "/other/tasks", json={"split": "train"}))
    out("tasks by GET", task_call("GET", "/quiz/tasks"))
    out("num_tasks", task_call("POST", "/quiz/num_tasks", json={"split": "test"}))
    out("num_tasks null split", task_call("POST", "/quiz/num_tasks", json={"split": None}))
    for label, index in [("2", 2), ("-1", -1), ("str 3", "3"), ("99", 99), ("word", "two"), ("1.5", 1.5)]:
        out(f"task {label}", task_call("POST", "/quiz/task", json={"split": "train", "index": index}))
    out("task no index", task_call("POST", "/quiz/task", json={"split": "test"}))
    out("task test 1", task_call("POST", "/Quiz/task", json={"split": "test", "index": 1}))
    out("range 1-3", task_call("POST", "/quiz/task_range", json={"split": "train", "start": 1, "stop": 3}))
    out("range open", task_call("POST", "/quiz/task_range", json={"split": "test"}))
    out("range past end", task_call("POST", "/quiz/task_range", json={"split": "train", "start": 2, "stop": 99}))
    out("range bad start", task_call("POST", "/quiz/task_range", json={"split": "train", "start": "a"}))
    out("range unknown split", task_call("POST", "/quiz/task_range", json={"split": "nope"}))
    out("health after", http("GET", "/health")["status"])


def tasks_plain():
    name = "PlainEnvironment"
    out("list_environments", task_call("GET", "/list_environments"))
    out("splits", task_call("GET", f"/{name}/splits"))
    out("splits lower case", task_call("GET", f"/{name.lower()}/splits"))
    out("tasks", task_call("POST", f"/{name}/tasks", json={"split": "train"}))
    out("num_tasks", task_call("POST", f"/{name}/num_tasks", json={"split": "train"}))
    out("task", task_call("POST", f"/{name}/task", json={"split": "train", "index": 0}))
    out("task_range", task_call("POST", f"/{name}/task_range", json={"split": "train"}))
    out("task bad index", task_call("POST", f"/{name}/task", json={"split": "train", "index": "x"}))
    out("unknown env", task_call("GET", "/quiz/splits"))


{"rubric": rubric, "generic": generic, "subclass": subclass, "concurrency": concurrency, "production": production,
 "tasks": tasks, "tasks_plain": tasks_plain}[SCENARIO]()
