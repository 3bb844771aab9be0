"""A worker's protocol pipes, usable from any event loop.

The worker process itself belongs to the sandbox loop (``loop.py``: it was spawned there,
is reaped there, its stderr is read there), but its command and reply pipes are plain
non-blocking file descriptors that a caller's own loop watches only for as long as it
waits on them. A cell sent from the server's loop is therefore written and answered on
that loop, with no hand-off to the sandbox thread and back; and since no loop keeps the
pipes registered between calls, a loop that stops or closes leaves nothing behind.
One caller at a time reads (a session's cells are sequential); writes of one line each
may come from two loops (a cell, an ``llm_query`` answer) but never at the same moment.
"""

from __future__ import annotations

import asyncio
import os
import threading

__all__ = ["PipeChannel", "pipes"]

READ_CHUNK = 1 << 16


def pipes() -> tuple[tuple[int, int], tuple[int, int]]:
    """Two pipes for a new worker: ``((child_stdin, our_command_end), (our_reply_end, child_stdout))``."""
    cmd_r, cmd_w = os.pipe()
    rep_r, rep_w = os.pipe()
    os.set_blocking(cmd_w, False)
    os.set_blocking(rep_r, False)
    return (cmd_r, cmd_w), (rep_r, rep_w)


class PipeChannel:
    """Line-delimited messages over a command fd (ours to write) and a reply fd (ours to read)."""

    def __init__(self, command_fd: int, reply_fd: int, *, limit: int) -> None:
        self.command_fd, self.reply_fd, self.limit = command_fd, reply_fd, limit
        self._buffer = bytearray()
        self.eof = False
        self.closed = False
        self._lock = threading.Lock()
        self._waiting: dict[asyncio.Future[None], asyncio.AbstractEventLoop] = {}  # at most a reader and a writer

    async def write(self, data: bytes) -> None:
        """Write ``data`` whole; ``BrokenPipeError`` (an ``OSError``) once the worker is gone."""
        if self.closed:
            raise BrokenPipeError("the worker's pipes are closed")
        view = memoryview(data)
        try:
            view = view[os.write(self.command_fd, view):]
        except BlockingIOError:
            pass
        while view:  # a cell larger than the pipe buffer: wait until the worker reads
            await self._wait(self.command_fd, writable=True)
            if self.closed:
                raise BrokenPipeError("the worker's pipes were closed")
            try:
                view = view[os.write(self.command_fd, view):]
            except BlockingIOError:
                continue

    async def read_line(self) -> bytes:
        """The next line, ``b""`` at end of file; ``ValueError`` for a line over the limit."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > self.limit:
                raise ValueError("a line from the worker exceeded the limit")
            if self.eof or self.closed:
                return b""
            try:
                chunk = os.read(self.reply_fd, READ_CHUNK)
            except BlockingIOError:
                await self._wait(self.reply_fd, writable=False)
                continue
            if not chunk:
                self.eof = True
            self._buffer += chunk

    async def _wait(self, fd: int, *, writable: bool) -> None:
        """Until ``fd`` is ready on the running loop (watched only while waiting), or the channel closes."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        add, remove = (loop.add_writer, loop.remove_writer) if writable else (loop.add_reader, loop.remove_reader)
        with self._lock:
            if self.closed:
                return
            self._waiting[ready] = loop
            add(fd, _wake, ready)
        try:
            await ready
        finally:
            with self._lock:
                del self._waiting[ready]
                if not loop.is_closed():
                    remove(fd)
                if self.closed and not self._waiting:  # closed while we watched: ours to close now
                    self._close_fds()

    def close(self) -> None:
        """Close both ends (idempotent, any thread): the worker sees end of file on its commands.

        A caller waiting on the pipes is woken first, and the fds close once its loop has stopped
        watching them (a loop must never watch a closed fd whose number may be reused).
        """
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if not self._waiting:
                self._close_fds()
                return
            waiting = list(self._waiting.items())
        for ready, loop in waiting:
            try:
                loop.call_soon_threadsafe(_wake, ready)
            except RuntimeError:  # that loop is closed: it watches nothing any more
                with self._lock:
                    self._waiting.pop(ready, None)
                    if not self._waiting:
                        self._close_fds()

    def _close_fds(self) -> None:
        fds, self.command_fd, self.reply_fd = (self.command_fd, self.reply_fd), -1, -1
        for fd in fds:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def __del__(self) -> None:  # a worker dropped without kill(): do not leak its fds
        self.closed = True
        self._close_fds()


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)
