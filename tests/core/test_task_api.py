"""The 0.10 Task API on our server: routes, coded errors, sync/async methods, deadline, instances."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, ValidationError

from openenv.core.env_server import (
    GetEndpointConfig,
    GetTaskRangeRequest,
    GetTaskRequest,
    ListTasksRequest,
    NumTasksRequest,
    create_app,
)
from openenv.core.env_server.route_config import register_get_endpoints
from tests.core.envs import SleepAction, SleepObservation, SleepyEnvironment
from tests.server_utils import running_server


class Spec(BaseModel):
    id: str


class Thing:  # a plain object: served by its attributes, as 0.10 does
    def __init__(self, n: int) -> None:
        self.n = n


class SyncTasks(SleepyEnvironment):
    """Sync task methods; ``slow`` sleeps (blocking) past the deadline, ``boom`` raises."""

    closes: list[str] = []
    data = {"train": [Spec(id="a"), {"id": "b"}, Thing(3)]}

    def close(self) -> None:
        SyncTasks.closes.append("closed")

    def list_splits(self) -> list[Any]:
        return ["train", "eval", {"name": "x", "type": "test"}, Spec(id="model-split")]

    def list_tasks(self, split: str) -> list[Any]:
        if split == "slow":
            time.sleep(1.0)
        if split == "boom":
            raise ValueError("broken at /srv/data/secret/tasks.py")
        return self.data[split]

    def num_tasks(self, split: str) -> int:
        return len(self.data[split])

    def get_task(self, split: str, index: int) -> Any:
        return self.data[split][index]

    def get_task_range(self, split: str, start: int | None, stop: int | None) -> list[Any]:
        if start is not None and start < 0:
            raise NotImplementedError("no negative ranges")
        return self.data[split][start:stop]


class AsyncTasks(SleepyEnvironment):
    """The same API, async; ``slow`` overruns the deadline on the event loop."""

    async def list_splits(self) -> list[str]:
        await asyncio.sleep(0)
        return ["test"]

    async def list_tasks(self, split: str) -> list[dict]:
        if split == "slow":
            await asyncio.sleep(5)
        return [{"id": f"{split}-{i}"} for i in range(2)]

    async def num_tasks(self, split: str) -> int:
        return 2

    async def get_task(self, split: str, index: int) -> dict:
        if index >= 2:
            raise IndexError(index)
        return {"id": f"{split}-{index}"}

    async def get_task_range(self, split: str, start: int | None, stop: int | None) -> list[dict]:
        return [{"id": f"{split}-{i}"} for i in range(2)][start:stop]


def _app(env: Any, **kw: Any) -> FastAPI:
    return create_app(env, SleepAction, SleepObservation, web=False, **kw)


@pytest.fixture(scope="module")
def sync_url():
    with running_server(_app(SyncTasks, env_name="Catalog", max_concurrent_envs=4, step_timeout_s=0.3)) as url:
        yield url


@pytest.fixture(scope="module")
def async_url():
    with running_server(_app(AsyncTasks, step_timeout_s=0.3)) as url:
        yield url


def _error(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["code"] == code and body["message"] and "Traceback" not in resp.text
    return body


def test_every_route_with_sync_methods(sync_url):
    SyncTasks.closes.clear()
    assert httpx.get(sync_url + "/list_environments").json() == ["Catalog"]
    assert httpx.get(sync_url + "/catalog/splits").json() == [
        {"name": "train", "type": "train"},
        {"name": "eval", "type": "validation"},
        {"name": "x", "type": "test"},
        {"id": "model-split"},
    ]
    tasks = httpx.post(sync_url + "/Catalog/tasks", json={"split": "train"}).json()
    assert tasks == {"tasks": [{"id": "a"}, {"id": "b"}, {"n": 3}], "env_name": "Catalog"}
    assert httpx.post(sync_url + "/CATALOG/num_tasks", json={"split": "train"}).json() == {"num_tasks": 3}
    assert httpx.post(sync_url + "/catalog/task", json={"split": "train", "index": 1}).json() == {"task": {"id": "b"}}
    got = httpx.post(sync_url + "/catalog/task_range", json={"split": "train", "start": 1})
    assert got.json() == {"tasks": [{"id": "b"}, {"n": 3}]}
    assert len(SyncTasks.closes) == 5  # one short-lived env per call, closed after it


def test_every_route_with_async_methods(async_url):
    assert httpx.get(async_url + "/list_environments").json() == ["AsyncTasks"]  # the class name by default
    assert httpx.get(async_url + "/asynctasks/splits").json() == [{"name": "test", "type": "test"}]
    assert httpx.post(async_url + "/AsyncTasks/tasks", json={"split": "s"}).json()["tasks"] == [
        {"id": "s-0"}, {"id": "s-1"}]
    assert httpx.post(async_url + "/AsyncTasks/num_tasks", json={"split": "s"}).json() == {"num_tasks": 2}
    assert httpx.post(async_url + "/AsyncTasks/task", json={"split": "s", "index": 0}).json() == {"task": {"id": "s-0"}}
    body = _error(httpx.post(async_url + "/AsyncTasks/task", json={"split": "s", "index": 5}), 400, "INVALID_TASK_INDEX")
    assert body["detail"] == "Invalid task index"
    got = httpx.post(async_url + "/AsyncTasks/task_range", json={"split": "s", "start": None, "stop": 1})
    assert got.json() == {"tasks": [{"id": "s-0"}]}


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [
        ("tasks", {}, ["body", "split"]),
        ("tasks", {"split": 7}, ["body", "split"]),
        ("num_tasks", {"split": None}, ["body", "split"]),
        ("tasks", {"split": "train", "extra": 1}, ["body", "extra"]),
        ("task", {"split": "train"}, ["body", "index"]),
        ("task", {"split": "train", "index": "first"}, ["body", "index"]),
        ("task", {"split": "train", "index": 0.5}, ["body", "index"]),
        ("task_range", {"split": "train", "stop": "end"}, ["body", "stop"]),
    ],
)
def test_bad_bodies_are_422_validation_errors(sync_url, path, body, loc):
    reply = _error(httpx.post(f"{sync_url}/catalog/{path}", json=body), 422, "VALIDATION_ERROR")
    assert [item["loc"] for item in reply["detail"]] == [loc]


def test_other_bad_requests(sync_url):
    _error(httpx.post(sync_url + "/catalog/tasks", content=b"{not json"), 400, "INVALID_JSON")
    _error(httpx.post(sync_url + "/catalog/tasks", content=b"[1]"), 400, "INVALID_JSON")
    body = _error(httpx.get(sync_url + "/other/splits"), 404, "UNKNOWN_ENV")
    assert body["detail"] == "unknown environment 'other'"
    _error(httpx.post(sync_url + "/other/task", json={"split": "train", "index": 0}), 404, "UNKNOWN_ENV")
    _error(httpx.post(sync_url + "/catalog/task", json={"split": "train", "index": 9}), 400, "INVALID_TASK_INDEX")
    body = _error(httpx.post(sync_url + "/catalog/task_range", json={"split": "train", "start": -1}), 501,
                  "NOT_IMPLEMENTED")
    assert body["detail"] == "get_task_range is not supported for this environment"


def test_an_env_error_is_a_coded_500_without_paths(sync_url):
    body = _error(httpx.post(sync_url + "/catalog/tasks", json={"split": "boom"}), 500, "EXECUTION_ERROR")
    assert body["message"] == "ValueError: broken at <path>"
    _error(httpx.post(sync_url + "/catalog/num_tasks", json={"split": "missing"}), 500, "EXECUTION_ERROR")
    assert httpx.get(sync_url + "/health").status_code == 200


def test_a_slow_sync_method_is_held_to_the_deadline_and_blocks_nothing(sync_url):
    SyncTasks.closes.clear()
    health: list[float] = []

    def probe() -> None:
        time.sleep(0.1)
        start = time.monotonic()
        httpx.get(sync_url + "/health")
        health.append(time.monotonic() - start)

    thread = threading.Thread(target=probe)
    thread.start()
    start = time.monotonic()
    body = _error(httpx.post(sync_url + "/catalog/tasks", json={"split": "slow"}), 504, "TIMEOUT")
    assert time.monotonic() - start < 0.9 and body["timeout_s"] == 0.3
    thread.join()
    assert health and health[0] < 0.5  # the event loop stayed free while the method slept
    assert SyncTasks.closes == []  # not closed under the still-running call...
    time.sleep(1.0)
    assert SyncTasks.closes == ["closed"]  # ...but once it returned


def test_a_slow_async_method_is_held_to_the_deadline(async_url):
    start = time.monotonic()
    _error(httpx.post(async_url + "/AsyncTasks/tasks", json={"split": "slow"}), 504, "TIMEOUT")
    assert time.monotonic() - start < 2


def test_an_env_without_task_methods_answers_501_naming_the_method():
    with running_server(_app(SleepyEnvironment, env_name="plain")) as url:
        assert httpx.get(url + "/list_environments").json() == ["plain"]
        calls = [
            ("list_splits", httpx.get(url + "/plain/splits")),
            ("list_tasks", httpx.post(url + "/plain/tasks", json={"split": "a"})),
            ("num_tasks", httpx.post(url + "/plain/num_tasks", json={"split": "a"})),
            ("get_task", httpx.post(url + "/plain/task", json={"split": "a", "index": 0})),
            ("get_task_range", httpx.post(url + "/plain/task_range", json={"split": "a"})),
        ]
        for name, resp in calls:
            assert _error(resp, 501, "NOT_IMPLEMENTED")["detail"] == f"{name} is not supported for this environment"


def test_an_instance_and_production_mode_serve_it_too():
    env = SyncTasks()
    SyncTasks.closes.clear()
    with running_server(_app(env, mode="production")) as url:
        assert httpx.get(url + "/list_environments").json() == ["SyncTasks"]
        assert httpx.post(url + "/synctasks/num_tasks", json={"split": "train"}).json() == {"num_tasks": 3}
        assert httpx.post(url + "/reset", json={}).status_code == 404  # production: no /reset, Task API stays
        assert SyncTasks.closes == []  # the instance is kept


def test_a_factory_function_is_named_after_itself():
    def make_catalog() -> SyncTasks:
        return SyncTasks()

    with running_server(_app(make_catalog)) as url:
        assert httpx.get(url + "/list_environments").json() == ["make_catalog"]
        assert httpx.get(url + "/make_catalog/splits").status_code == 200


def test_request_models_forbid_extra_fields():
    assert GetTaskRequest(split="a", index="2").index == 2
    assert GetTaskRangeRequest(split="a").start is None and NumTasksRequest(split="a").split == "a"
    with pytest.raises(ValidationError):
        ListTasksRequest(split="a", limit=3)


def test_get_endpoint_config_registers_routes():
    app = FastAPI()
    register_get_endpoints(app, [
        GetEndpointConfig("/health", lambda: {"status": "healthy"}, dict, "Info", "Health", "Liveness"),
        GetEndpointConfig("/spec", lambda: Spec(id="s"), Spec, "Info", "Spec", "A model"),
    ])
    with running_server(app) as url:
        assert httpx.get(url + "/spec").json() == {"id": "s"}
        op = httpx.get(url + "/openapi.json").json()["paths"]["/health"]["get"]
    assert op["tags"] == ["Info"] and op["summary"] == "Health" and op["description"] == "Liveness"
