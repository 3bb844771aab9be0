"""The REPL env served over HTTP/WebSocket: client surface, concurrency, hogs, disconnects."""

from __future__ import annotations

import asyncio
import json
import os
import time

import httpx
import websockets

from openenv.envs.repl.client import REPLEnv
from tests.envs.repl.conftest import GRACE_S, MARGIN_S, SERVER_CELL_LIMIT_S, pid_gone


def test_client_round_trip_with_final_answer(repl_url: str) -> None:
    with REPLEnv(base_url=repl_url).sync() as env:
        first = env.reset(context="one two three", task_prompt="count words", expected_answer="3")
        assert first.observation.context_length == 13 and not first.done
        step = env.execute("n = len(context.split())\nprint(n)")
        assert step.observation.result.stdout == "3\n" and step.observation.result.locals_snapshot == {"n": "3"}
        done = env.execute("FINAL(n)")
        assert done.done and done.reward == 1.0 and done.observation.final_answer == "3"
        state = env.state()
        assert state.final_answer == "3" and state.iteration == 2
    schema = httpx.get(f"{repl_url}/schema").json()
    assert {"code", "is_final", "final_answer"} <= set(schema["action"]["properties"])


async def _quick_cells(env: REPLEnv, tag: int, stuck_done: asyncio.Event) -> bool:
    for i in range(5):
        result = await env.execute(f"v = {i} * {tag}\nprint(context, v)")
        assert result.observation.result.stdout == f"session {tag} {i * tag}\n"
    return not stuck_done.is_set()


def test_eight_sessions_one_stuck(repl_url: str) -> None:
    async def main() -> None:
        clients = [REPLEnv(base_url=repl_url) for _ in range(8)]
        try:
            await asyncio.gather(*(c.reset(context=f"session {tag}") for tag, c in enumerate(clients)))
            stuck_done = asyncio.Event()

            async def stuck() -> str:
                result = await clients[0].execute("while True:\n    pass")
                stuck_done.set()
                return result.observation.outcome

            stuck_task = asyncio.create_task(stuck())
            await asyncio.sleep(0.2)
            quick = await asyncio.gather(*(_quick_cells(clients[t], t, stuck_done) for t in range(1, 8)))
            assert all(quick), "a quick session had to wait for the stuck one"
            assert await stuck_task == "timeout"
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    asyncio.run(main())


def test_gil_holding_cell_freezes_nothing_else(repl_url: str) -> None:
    async def main() -> None:
        async with REPLEnv(base_url=repl_url) as hog, REPLEnv(base_url=repl_url) as other:
            await hog.reset()
            await other.reset()
            began = time.monotonic()
            hogging = asyncio.create_task(hog.execute("sum(range(10**12))"))
            await asyncio.sleep(0.3)
            async with httpx.AsyncClient() as http:
                health = await http.get(f"{repl_url}/health", timeout=10)
            assert health.status_code == 200
            assert (await other.execute("6 * 7")).observation.result.stdout == "42\n"
            assert not hogging.done()
            result = await hogging
            assert result.observation.outcome == "timeout" and result.observation.namespace_lost
            assert time.monotonic() - began < SERVER_CELL_LIMIT_S + GRACE_S + MARGIN_S

    asyncio.run(main())


def test_disconnect_mid_cell_kills_the_worker(repl_url: str) -> None:
    async def main() -> int:
        ws_url = repl_url.replace("http://", "ws://") + "/ws"
        async with websockets.connect(ws_url) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {}}))
            await ws.recv()
            await ws.send(json.dumps({"type": "step", "data": {"code": "import os\nos.getpid()"}}))
            pid = int(json.loads(await ws.recv())["data"]["observation"]["result"]["stdout"])
            await ws.send(json.dumps({"type": "step", "data": {"code": "while True:\n    pass"}}))
            await asyncio.sleep(0.3)
        return pid

    pid = asyncio.run(main())
    assert pid != os.getpid()
    assert pid_gone(pid, within_s=GRACE_S + MARGIN_S)


def test_idle_reaping_kills_the_worker() -> None:
    from openenv.core.env_server.http_server import create_app
    from openenv.envs.repl.environment import REPLEnvironment
    from openenv.envs.repl.models import REPLAction, REPLObservation
    from tests.envs.repl.conftest import test_limits
    from tests.server_utils import running_server

    def make() -> REPLEnvironment:
        return REPLEnvironment(limits=test_limits(), llm=None)

    app = create_app(make, REPLAction, REPLObservation, env_name="repl", web=False, session_timeout_s=0.5)

    async def main(url: str) -> int:
        async with REPLEnv(base_url=url) as env:
            await env.reset()
            pid = int((await env.execute("import os\nos.getpid()")).observation.result.stdout)
            assert pid_gone(pid, within_s=0.5 + MARGIN_S)
            return pid

    with running_server(app) as url:
        asyncio.run(main(url))


def test_request_deadline_shortens_the_cell_limit(repl_url: str) -> None:
    with REPLEnv(base_url=repl_url).sync() as env:
        env.reset()
        began = time.monotonic()
        result = env.execute("while True:\n    pass", timeout_s=1.5)
        assert result.observation.outcome == "timeout" and not result.observation.namespace_lost
        assert time.monotonic() - began < 1.5 + MARGIN_S


def test_bundled_app_module() -> None:
    from openenv.envs.repl.app import app
    from tests.server_utils import running_server

    with running_server(app) as url, REPLEnv(base_url=url).sync() as env:
        assert env.reset(context="abc").observation.context_length == 3
        assert env.execute("print(len(context))").observation.result.stdout == "3\n"
        assert env.submit_final_answer("3").observation.final_answer == "3"


def test_memory_hog_leaves_server_and_other_sessions_alone(repl_url: str) -> None:
    async def main() -> None:
        async with REPLEnv(base_url=repl_url) as hog, REPLEnv(base_url=repl_url) as other:
            await hog.reset()
            await other.reset()
            await other.execute("kept = list(range(1000))")
            growing = asyncio.create_task(hog.execute("grow = []\nwhile True:\n    grow.append(' ' * 5 * 10**7)"))
            huge = (await other.execute("len(kept)")).observation.result.stdout
            result = await growing
            assert result.observation.outcome in ("memory", "worker_died")
            assert huge == "1000\n"
            assert (await other.execute("sum(kept)")).observation.result.stdout == "499500\n"
            assert (await hog.execute("grow = None\n'ok'")).observation.result.success
            async with httpx.AsyncClient() as http:
                assert (await http.get(f"{repl_url}/health", timeout=10)).status_code == 200

    asyncio.run(main())


def test_0_10_style_sync_and_async_without_sync(repl_url):
    """``with REPLEnv(base_url=url) as env:`` with no ``.sync()``; ``execute`` returns results."""
    with REPLEnv(base_url=repl_url) as env:
        env.reset()
        assert env.execute("x = 6 * 7\nprint(x)").observation.result.stdout.strip() == "42"

    async def main():
        async with REPLEnv(base_url=repl_url) as env:
            await env.reset()
            return (await env.execute("print('a')")).observation.result.stdout

    assert asyncio.run(main()).strip() == "a"


def test_health_and_metadata_report_the_isolation_in_force(repl_url: str) -> None:
    from openenv.envs.repl.identity import is_root

    expected = "root-uids" if is_root() else "user-namespaces"
    assert httpx.get(f"{repl_url}/health", timeout=10).json()["isolation"] == expected
    meta = httpx.get(f"{repl_url}/metadata", timeout=10).json()
    assert meta["isolation"] == expected and meta["warm_workers"] == 2


def test_reset_ends_a_running_cell_within_the_callers_deadline(repl_url: str) -> None:
    """A model's endless cell must not lock its user out: reset ends it and starts over at once."""
    from openenv.core.errors import StepTimeoutError

    with REPLEnv(base_url=repl_url, message_timeout_s=1.0).sync() as env:
        env.reset()
        pid = int(env.execute("import os\nos.getpid()").observation.result.stdout)
        env.execute("x = 1")
        try:
            env.execute("import time\ntime.sleep(3)")
        except StepTimeoutError:
            pass
        else:
            raise AssertionError("the 3 s cell answered within the 1 s deadline")
        env.reset()  # within the same 1 s deadline: the cell is ended, a fresh worker takes over
        assert env.execute("'x' in dir()").observation.result.stdout.strip() == "False"
    assert pid_gone(pid, within_s=GRACE_S + MARGIN_S)


def test_reset_over_http_ends_a_running_cell(repl_url: str) -> None:
    import threading

    h = "X-OpenEnv-Session"
    sid = httpx.post(repl_url + "/reset", json={}, headers={h: "new"}, timeout=30).headers[h]
    replies: list[httpx.Response] = []
    cell = {"action": {"code": "while True:\n    pass"}}
    stepping = threading.Thread(target=lambda: replies.append(
        httpx.post(repl_url + "/step", json=cell, headers={h: sid}, timeout=30)))
    stepping.start()
    time.sleep(0.5)
    reset = httpx.post(repl_url + "/reset", json={"context": "again"}, headers={h: sid}, timeout=1.0 + MARGIN_S)
    assert reset.status_code == 200 and reset.json()["observation"]["context_length"] == 5
    stepping.join(timeout=10)
    assert replies[0].status_code == 409 and replies[0].json()["code"] == "STEP_INTERRUPTED"
    httpx.delete(f"{repl_url}/sessions/{sid}")
