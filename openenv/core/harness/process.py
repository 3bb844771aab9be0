"""A long-lived CLI harness subprocess with line-based stdio, in its own process group (RFC 005)."""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import IO

from openenv.core.harness.adapter import HarnessNotRunningError, HarnessStartupError

__all__ = ["HarnessProcess"]

_STDERR_LINES_KEPT = 50
_EOF = None


class HarnessProcess:
    """One harness subprocess: write lines to its stdin, read lines from its stdout.

    The process leads its own session (so its own process group): :meth:`stop` signals the whole
    group, SIGTERM then SIGKILL after ``terminate_grace_s``, so children the harness spawned go too.
    Pipes are read by daemon threads and every blocking call runs in ``asyncio.to_thread``, so one
    instance can be used from different event loops (a sync facade's fresh loop, a server's loop).

    Args:
        command: argv of the harness.
        cwd: its working directory.
        env_vars: variables added to this process's environment.
        startup_timeout_s: how long :meth:`start` waits for the ready line.
        terminate_grace_s: SIGTERM-to-SIGKILL grace in :meth:`stop`.

    Example::

        proc = HarnessProcess(["my-harness", "--stdio"], cwd="/workspace")
        await proc.start(ready_check=lambda line: line == "ready")
        await proc.write_line('{"message": "hi"}')
        line = await proc.read_line(timeout_s=10)
        await proc.stop()
    """

    def __init__(
        self,
        command: list[str],
        cwd: str,
        env_vars: dict[str, str] | None = None,
        startup_timeout_s: float = 30.0,
        terminate_grace_s: float = 5.0,
    ):
        self.command = list(command)
        self.cwd = cwd
        self.env_vars = dict(env_vars or {})
        self.startup_timeout_s = startup_timeout_s
        self.terminate_grace_s = terminate_grace_s
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES_KEPT)
        self._readers: list[threading.Thread] = []

    @property
    def pid(self) -> int | None:
        """The process id (also its process-group id), or ``None`` before :meth:`start`."""
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        """Whether the subprocess is alive."""
        return self._proc is not None and self._proc.poll() is None

    def drain_stderr(self) -> str:
        """The last lines the process wrote to stderr (for error messages)."""
        return "".join(self._stderr)

    async def start(self, ready_check: Callable[[str], bool] | None = None) -> None:
        """Spawn the process; with ``ready_check``, wait until a stdout line satisfies it.

        Raises:
            HarnessStartupError: already running, cannot be spawned, exited before it was ready,
                or not ready within ``startup_timeout_s`` (the process is stopped in each case).
        """
        if self.is_running():
            raise HarnessStartupError("harness process is already running")
        await self.stop()  # reap a previous, exited process and its pipes
        try:
            proc = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                env={**os.environ, **self.env_vars},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",  # a stray byte never kills a reader thread
                bufsize=1,
                start_new_session=True,
            )
        except OSError as exc:
            raise HarnessStartupError(f"failed to spawn harness process: {exc}") from exc
        self._proc = proc
        lines: queue.Queue[str | None] = queue.Queue()
        self._lines = lines
        self._stderr = deque(maxlen=_STDERR_LINES_KEPT)
        self._readers = [
            _reader(proc.stdout, lambda text: lines.put(text.rstrip("\n")), lambda: lines.put(_EOF)),
            _reader(proc.stderr, self._stderr.append, None),
        ]
        if ready_check is None:
            return
        try:
            await self._wait_ready(ready_check)
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self, ready_check: Callable[[str], bool]) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise HarnessStartupError(f"harness did not become ready within {self.startup_timeout_s}s")
            line = await self.read_line(timeout_s=min(left, 0.2))
            if line is not None:
                if ready_check(line):
                    return
                continue
            if not self.is_running():
                code = self._proc.poll() if self._proc is not None else None
                tail = self.drain_stderr().strip()
                detail = f": {tail[-500:]}" if tail else ""
                raise HarnessStartupError(f"harness exited with code {code} during startup{detail}")

    async def stop(self) -> None:
        """Terminate the process group (SIGTERM, then SIGKILL after the grace) and reap it.

        Idempotent: nothing happens when no process was started or it was already stopped.
        """
        proc = self._proc
        if proc is None:
            return
        await asyncio.to_thread(self._terminate, proc)
        self._proc = None

    def _terminate(self, proc: subprocess.Popen) -> None:
        # The leader's pid is the group id; the group may outlive the leader.
        _signal_group(proc, signal.SIGTERM)
        give_up = time.monotonic() + self.terminate_grace_s
        while _group_exists(proc.pid):
            proc.poll()
            if time.monotonic() >= give_up:
                _signal_group(proc, signal.SIGKILL)
                break
            time.sleep(0.01)
        proc.wait()
        # Readers close their own pipe at EOF; join them with a bound (a grandchild that escaped
        # the group could still hold a pipe open).
        for thread in self._readers:
            thread.join(timeout=2.0)
        self._readers = []
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass

    async def write_line(self, text: str) -> None:
        """Write ``text`` (a newline is added if missing) to the process's stdin.

        Raises:
            HarnessNotRunningError: the process is not running or its stdin is closed.
        """
        proc = self._proc
        if not self.is_running() or proc is None or proc.stdin is None:
            raise HarnessNotRunningError("cannot write to harness process: it is not running")
        data = text if text.endswith("\n") else text + "\n"

        def write() -> None:
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                raise HarnessNotRunningError(f"harness process stdin is closed: {exc}") from exc

        await asyncio.to_thread(write)

    async def read_line(self, timeout_s: float | None = None) -> str | None:
        """The next stdout line (without its newline); ``None`` at EOF or after ``timeout_s``."""
        lines = self._lines

        def read() -> str | None:
            try:
                item = lines.get(timeout=timeout_s)
            except queue.Empty:
                return None
            if item is _EOF:
                lines.put(_EOF)  # EOF stays visible to every later read
            return item

        return await asyncio.to_thread(read)


def _reader(stream: IO[str] | None, sink: Callable[[str], None], at_eof: Callable[[], None] | None) -> threading.Thread:
    def pump() -> None:
        try:
            if stream is not None:
                for line in stream:
                    sink(line)
        except (ValueError, OSError):
            pass  # the pipe was closed during shutdown
        finally:
            if stream is not None:
                stream.close()
            if at_eof is not None:
                at_eof()

    thread = threading.Thread(target=pump, name="openenv-harness-reader", daemon=True)
    thread.start()
    return thread


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(proc: subprocess.Popen, sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
