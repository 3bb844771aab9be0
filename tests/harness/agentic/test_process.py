"""HarnessProcess on real subprocesses: its own process group killed whole, SIGTERM escalated,
start-up failures named, EOF and dead pipes reported (each bounded in time)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import time

import pytest

from openenv.core.harness import HarnessNotRunningError, HarnessProcess, HarnessStartupError

from .conftest import pid_alive, wait_gone


def _script(tmp_path, body: str) -> list[str]:
    path = tmp_path / "proc.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def test_group_of_the_harness_is_killed_with_its_children(tmp_path, reap_pids):
    cmd = _script(tmp_path, """
        import os, subprocess, sys
        child = subprocess.Popen(["sleep", "300"])
        print(f"ready {os.getpid()} {os.getpgid(0)} {child.pid}", flush=True)
        sys.stdin.read()
    """)

    async def scenario():
        proc = HarnessProcess(cmd, cwd=str(tmp_path), terminate_grace_s=2.0)
        await proc.start(ready_check=lambda line: line.startswith("ready"))
        assert proc.is_running()
        return proc

    proc = asyncio.run(scenario())
    # The ready line was consumed by start(); ask /proc for the group instead.
    pid = proc.pid
    reap_pids.append(pid)
    assert os.getpgid(pid) == pid  # its own process group (start_new_session)
    assert os.getpgid(pid) != os.getpgid(0)
    children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == pid]
    assert children, "the script's child did not start"
    reap_pids.extend(children)
    asyncio.run(proc.stop())
    assert not proc.is_running()
    assert wait_gone(pid, 5) and all(wait_gone(c, 5) for c in children)
    asyncio.run(proc.stop())  # idempotent


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None


def test_sigterm_ignored_escalates_to_sigkill_after_the_grace(tmp_path, reap_pids):
    cmd = _script(tmp_path, """
        import signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(300)
    """)

    async def scenario():
        proc = HarnessProcess(cmd, cwd=str(tmp_path), terminate_grace_s=0.5)
        await proc.start(ready_check=lambda line: line == "ready")
        reap_pids.append(proc.pid)
        started = time.monotonic()
        await proc.stop()
        return proc, time.monotonic() - started

    proc, took = asyncio.run(scenario())
    assert 0.4 < took < 5.0
    assert not pid_alive(reap_pids[0])


def test_startup_failures_are_named(tmp_path):
    async def start(cmd, timeout_s=5.0):
        proc = HarnessProcess(cmd, cwd=str(tmp_path), startup_timeout_s=timeout_s)
        await proc.start(ready_check=lambda line: line == "ready")

    with pytest.raises(HarnessStartupError, match="failed to spawn"):
        asyncio.run(start(["/nonexistent/harness-binary"]))
    with pytest.raises(HarnessStartupError, match="exited with code 7 during startup"):
        asyncio.run(start(_script(tmp_path, "import sys; sys.stderr.write('bad flag'); sys.exit(7)")))
    never_ready = _script(tmp_path, "import time; print('booting', flush=True); time.sleep(300)")
    started = time.monotonic()
    with pytest.raises(HarnessStartupError, match="did not become ready within 1.0s"):
        asyncio.run(start(never_ready, timeout_s=1.0))
    assert time.monotonic() - started < 10  # and the sleeper was stopped, not awaited


def test_lines_eof_and_dead_pipes(tmp_path):
    cmd = _script(tmp_path, """
        import sys
        for line in sys.stdin:
            print(line.strip().upper(), flush=True)
            if line.strip() == "bye":
                break
    """)

    async def scenario():
        proc = HarnessProcess(cmd, cwd=str(tmp_path))
        await proc.start()
        await proc.write_line("héllo")
        assert await proc.read_line(timeout_s=10) == "HÉLLO"
        assert await proc.read_line(timeout_s=0.2) is None  # nothing more yet: timeout
        await proc.write_line("bye\n")
        assert await proc.read_line(timeout_s=10) == "BYE"
        assert await proc.read_line(timeout_s=10) is None  # EOF ...
        assert await proc.read_line(timeout_s=1) is None  # ... stays EOF
        for _ in range(100):
            if not proc.is_running():
                break
            await asyncio.sleep(0.05)
        with pytest.raises(HarnessNotRunningError):
            await proc.write_line("anyone?")
        await proc.stop()
        with pytest.raises(HarnessNotRunningError):
            await proc.write_line("after stop")

    asyncio.run(scenario())


def test_env_vars_and_cwd_reach_the_process(tmp_path):
    cmd = _script(tmp_path, """
        import json, os
        print(json.dumps({"cwd": os.getcwd(), "v": os.environ.get("HARNESS_TEST_VAR")}), flush=True)
    """)

    async def scenario():
        proc = HarnessProcess(cmd, cwd=str(tmp_path), env_vars={"HARNESS_TEST_VAR": "42"})
        await proc.start()
        line = await proc.read_line(timeout_s=10)
        await proc.stop()
        return json.loads(line)

    assert asyncio.run(scenario()) == {"cwd": str(tmp_path), "v": "42"}
