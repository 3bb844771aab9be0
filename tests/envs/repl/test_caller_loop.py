"""Cells are written and answered on the caller's loop (``channel.py``); lifecycle stays on the sandbox loop."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from openenv.core.env_server.http_server import create_app
from openenv.envs.repl import loop as sandbox_loop_module
from openenv.envs.repl.channel import PipeChannel, pipes
from openenv.envs.repl.client import REPLEnv
from openenv.envs.repl.environment import REPLEnvironment
from openenv.envs.repl.models import REPLAction, REPLObservation
from tests.envs.repl.conftest import test_limits
from tests.server_utils import running_server


def _open_fds() -> set[int]:
    fds = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.readlink(f"/proc/self/fd/{name}")  # the listing's own fd is gone by now
            fds.add(int(name))
        except OSError:
            pass
    return fds


def test_a_cell_runs_on_the_callers_loop_and_leaves_it_watching_nothing() -> None:
    env = REPLEnvironment(limits=test_limits(warm_workers=0), llm=None)
    try:
        env.reset()  # the worker is started on the sandbox loop
        seen: list[asyncio.AbstractEventLoop] = []

        channel = env._sandbox._worker.channel
        threads: set[int] = set()
        read_line = channel.read_line

        async def spied_read_line() -> bytes:
            threads.add(threading.get_ident())
            return await read_line()

        channel.read_line = spied_read_line

        async def cells() -> list[str]:
            loop = asyncio.get_running_loop()
            seen.append(loop)
            outs = []
            for code in ("x = 40", "x += 2", "print(x)"):
                obs = await env.step_async(REPLAction(code=code))
                outs.append(obs.result.stdout)
            # nothing of the worker's is watched by this loop between cells
            assert not getattr(loop, "_selector", None) or all(
                key.fd not in (env._sandbox._worker.channel.reply_fd, env._sandbox._worker.channel.command_fd)
                for key in loop._selector.get_map().values()
            )
            return outs

        assert asyncio.run(cells())[-1] == "42\n"  # a loop of its own, closed afterwards
        assert threads == {threading.get_ident()}, "the reply was read on another thread than the caller's"
        assert seen[0] is not sandbox_loop_module.sandbox_loop()
        # the closed loop left the worker usable from another loop, and from sync code
        assert asyncio.run(env.step_async(REPLAction(code="print(x + 1)"))).result.stdout == "43\n"
        assert env.step(REPLAction(code="print(x + 2)")).result.stdout == "44\n"
    finally:
        env.close()


def test_servers_one_after_another_in_one_process() -> None:
    """A server's loop that stops leaves nothing behind for the next (the earlier lent loop did),
    and its sessions' workers keep no pipes open."""
    limits = test_limits(warm_workers=1)

    def make() -> REPLEnvironment:
        return REPLEnvironment(limits=limits, llm=None)

    def pipes_open() -> int:
        return sum(_is_pipe(fd) for fd in _open_fds())

    baseline = None
    for round_ in range(3):
        app = create_app(make, REPLAction, REPLObservation, env_name="repl", web=False)
        with running_server(app) as url:
            with REPLEnv(base_url=url).sync() as env:
                env.reset()
                env.execute(f"r = {round_}")
                assert env.execute("print(r * 10)").observation.result.stdout == f"{round_ * 10}\n"
        if baseline is None:  # after one server: the warm worker and the event loop library's own pipes
            time.sleep(0.5)
            baseline = pipes_open()
    env = REPLEnvironment(limits=limits, llm=None)  # outside any server
    try:
        env.reset()
        assert env.step(REPLAction(code="print('after')")).result.stdout == "after\n"
    finally:
        env.close()
    deadline = time.monotonic() + 10  # retired workers are reaped in the background
    while pipes_open() > baseline and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pipes_open() <= baseline, "a finished session's worker kept its pipes open"


def _is_pipe(fd: int) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:")
    except OSError:
        return False


def _channel() -> tuple[PipeChannel, int, int]:
    (child_in, command_fd), (reply_fd, child_out) = pipes()
    return PipeChannel(command_fd, reply_fd, limit=1 << 20), child_in, child_out


def test_channel_lines_big_writes_and_limits() -> None:
    channel, child_in, child_out = _channel()
    try:
        big = b"y" * (1 << 20) + b"\n"  # larger than the pipe buffer: written as the reader drains it
        received = bytearray()

        def drain() -> None:
            while len(received) < len(big):
                received.extend(os.read(child_in, 1 << 16))

        reader = threading.Thread(target=drain)
        reader.start()

        async def go() -> tuple[bytes, bytes, bytes]:
            await channel.write(big)
            os.write(child_out, b'{"a": 1}\n{"b"')
            first = await channel.read_line()
            os.write(child_out, b": 2}\n")
            second = await channel.read_line()
            os.close(child_out)
            return first, second, await channel.read_line()

        first, second, end = asyncio.run(go())
        reader.join(10)
        assert bytes(received) == big
        assert (first, second, end) == (b'{"a": 1}\n', b'{"b": 2}\n', b"")
    finally:
        channel.close()
        os.close(child_in)

    channel, child_in, child_out = _channel()
    try:
        os.write(child_out, b"z" * 60000)
        channel.limit = 1000
        with pytest.raises(ValueError):
            asyncio.run(channel.read_line())
    finally:
        channel.close()
        os.close(child_in)
        os.close(child_out)


def test_closing_from_another_thread_wakes_a_waiting_reader_and_then_closes_the_fds() -> None:
    channel, child_in, child_out = _channel()
    fds = (channel.command_fd, channel.reply_fd)
    try:
        async def wait_then_close() -> bytes:
            loop = asyncio.get_running_loop()
            loop.call_later(0.1, lambda: threading.Thread(target=channel.close).start())
            return await asyncio.wait_for(channel.read_line(), 10)

        assert asyncio.run(wait_then_close()) == b""  # woken as at end of file, not left hanging
        assert channel.closed
        for fd in fds:
            with pytest.raises(OSError):
                os.fstat(fd)
        with pytest.raises(BrokenPipeError):
            asyncio.run(channel.write(b"late\n"))
    finally:
        os.close(child_in)
        os.close(child_out)
