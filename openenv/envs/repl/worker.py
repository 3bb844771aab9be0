"""REPL worker: one session's Python namespace, in its own confined process.

Stdlib only, because it runs under a world-readable system interpreter as
``python3 -I -S -B -c "<put this directory on sys.path; import worker; worker.main()>" <json
config>``, from a root-owned read-only copy of this file and ``worker_support.py``. It confines itself before
reading any cell (network namespace, rlimits, umask, cwd, then drops to the
session's uid), then speaks newline-delimited JSON: commands on fd 0, replies
on fd 1; both are moved to private close-on-exec fds and fds 0/1/2 are pointed
at /dev/null and two anonymous capture files so child processes cannot talk
the protocol by accident. ``SIGINT`` interrupts a running cell and keeps the
namespace; it is ignored between cells.
"""

from __future__ import annotations

import ast
import builtins
import gc
import io
import json
import linecache
import os
import random
import signal
import sys
import time
import types

from worker_support import (
    Capture,
    FinalLiterals,
    Variables,
    capture_file,
    confine,
    describe,
    exit_helper,
    user_traceback,
)

HELPERS = ("FINAL", "FINAL_VAR", "llm_query", "llm_query_batched", "llm_batch")


class Worker:
    """Holds the namespace and runs cells on request."""

    def __init__(self, cfg: dict, cmd_fd: int, out_fd: int) -> None:
        self.cfg, self.out_fd, self.pid = cfg, out_fd, os.getpid()
        self.reader = os.fdopen(cmd_fd, "rb", buffering=1 << 16)
        self.cap_out, self.cap_repr = int(cfg["output_chars"]), int(cfg["repr_chars"])
        self.ns: dict = {}
        self.final: str | None = None
        self.armed = False
        self.cell_no = 0
        self.llm_no = 0
        self.reserve = bytearray(1 << 21)
        self.files = (capture_file(1), capture_file(2))
        self.vars = Variables(self.cap_repr)
        signal.signal(signal.SIGINT, self._on_sigint)

    # -- plumbing ---------------------------------------------------------
    def _on_sigint(self, signum, frame):
        if self.armed:
            raise KeyboardInterrupt

    def send(self, msg: dict) -> None:
        data = (json.dumps(msg, ensure_ascii=True) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self.out_fd, view) :]

    def receive(self) -> dict | None:
        line = self.reader.readline()
        if not line:
            return None
        return json.loads(line)

    # -- namespace ----------------------------------------------------------
    def init(self, msg: dict) -> dict:
        if msg.get("seed") is not None:
            random.seed(msg["seed"])
        ns = {"__name__": "__main__", "__builtins__": builtins}
        builtins.exit = builtins.quit = exit_helper
        ns["answer"] = {"content": "", "ready": False}
        if msg.get("context") is not None:
            ns["context"] = msg["context"]
        if msg.get("task_prompt") is not None:
            ns["task_prompt"] = msg["task_prompt"]
        ns["FINAL"] = self._final
        ns["FINAL_VAR"] = self._final_var
        ns["llm_query"] = self._llm_query
        ns["llm_query_batched"] = ns["llm_batch"] = self._llm_query_batched
        ns["__final_literal__"] = self._final_literal
        self.ns, self.final = ns, None
        self.vars.reset(self._visible_items())
        return {"op": "ready", "variables": self._variables()}

    def _final(self, value):
        """Record ``value`` as the final answer (ends the episode)."""
        self.final = str(value)
        return f"FINAL({self.final})"

    def _final_var(self, name):
        """Record the variable called ``name`` as the final answer (a non-string is taken as the value)."""
        if not isinstance(name, str):
            self.final = str(name)
            return f"FINAL_VAR({self.final})"
        key = name.strip().strip("'\"")
        if key not in self.ns:
            raise NameError(f"FINAL_VAR: no variable named {key!r}")
        self.final = str(self.ns[key])
        return f"FINAL_VAR({key})"

    def _final_literal(self, text):
        """Record a printed ``FINAL(...)``/``FINAL_VAR(...)`` literal written by the agent."""
        if isinstance(text, str):
            body = text.strip()
            if body.startswith("FINAL_VAR(") and body.endswith(")"):
                self._final_var(body[len("FINAL_VAR(") : -1])
            elif body.startswith("FINAL(") and body.endswith(")"):
                self.final = body[len("FINAL(") : -1].strip()
        return text

    def _llm_query(self, prompt, model=None):
        """Ask the server's language model one question; returns its text."""
        return self._llm([prompt], model)[0]

    def _llm_query_batched(self, prompts, model=None):
        """Ask the server's language model several questions; returns a list of texts."""
        return self._llm(list(prompts), model)

    def _llm(self, prompts, model):
        self.llm_no += 1
        rid = self.llm_no
        self.send({"op": "llm", "id": rid, "prompts": [str(p) for p in prompts], "model": model})
        while True:
            msg = self.receive()
            if msg is None:
                os._exit(0)
            if msg.get("op") == "llm_result" and msg.get("id") == rid:
                if msg.get("error"):
                    raise RuntimeError(msg["error"])
                return msg["results"]

    def _visible(self, name: str, value) -> bool:
        if name.startswith("_") or isinstance(value, types.ModuleType):
            return False
        return not (name in HELPERS and getattr(value, "__self__", None) is self)

    def _visible_items(self) -> dict:
        return {k: v for k, v in list(self.ns.items()) if self._visible(k, v)}

    def _variables(self) -> list:
        return sorted(k for k, v in self.ns.items() if self._visible(k, v))

    # -- cells ----------------------------------------------------------------
    def compile_cell(self, code: str):
        self.cell_no += 1
        name = f"<cell {self.cell_no}>"
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        tree = ast.parse(code, name, "exec")
        # FinalLiterals rewrites only calls of the name ``print``; ASCII source without it has none
        # (a non-ASCII one may spell it in compatibility characters that normalise to ``print``).
        if not code.isascii() or "print" in code:
            tree = ast.fix_missing_locations(FinalLiterals().visit(tree))
        display = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            display = ast.Expression(tree.body.pop().value)
            ast.fix_missing_locations(display)
        body = compile(tree, name, "exec")
        return body, (compile(display, name, "eval") if display is not None else None)

    def run(self, msg: dict) -> dict:
        out, err = Capture(self.cap_out, 1), Capture(self.cap_out, 2)
        for fd in self.files:
            os.ftruncate(fd, 0)
        sys.stdout, sys.stderr, sys.stdin = out, err, io.StringIO("")
        reply = {"op": "result", "id": msg.get("id"), "kind": "ok", "exception": None}
        locals_, visible = {}, None
        start = time.perf_counter()
        self.armed = True
        try:
            try:
                body, display = self.compile_cell(msg["code"])
                exec(body, self.ns)
                if display is not None:
                    value = eval(display, self.ns)
                    if value is not None:
                        out.write(repr(value) + "\n")
            except (KeyboardInterrupt, MemoryError) as exc:
                self._note_limit(reply, exc)
            except BaseException as exc:  # the cell's own failure, reported to the agent
                reply["kind"] = "error"
                reply["exception"] = describe(exc)
                err.write(user_traceback(exc))
            self._check_answer()
            visible = self._visible_items()
            locals_ = self.vars.changed(visible)
        except (KeyboardInterrupt, MemoryError) as exc:  # a limit hit outside the cell's own code
            self._note_limit(reply, exc)
        finally:
            self.armed = False
        if os.getpid() != self.pid:  # a fork()ed child finishing the cell must not answer
            os._exit(0)
        elapsed = time.perf_counter() - start
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        stdout, stdout_chars = self._collect(out, self.files[0])
        stderr, stderr_chars = self._collect(err, self.files[1])
        reply.update(
            stdout=stdout,
            stdout_chars=stdout_chars,
            stderr=stderr,
            stderr_chars=stderr_chars,
            locals=locals_,
            variables=sorted(visible) if visible is not None else self._variables(),
            final=self.final,
            elapsed=elapsed,
        )
        if self.reserve is None:
            try:
                self.reserve = bytearray(1 << 21)
            except MemoryError:
                pass
        return reply

    def _note_limit(self, reply: dict, exc: BaseException) -> None:
        """Describe a time-limit interrupt or a memory error in ``reply``."""
        if isinstance(exc, MemoryError):
            self.reserve = None  # free the emergency reserve so the reply can be built
            gc.collect()
            reply["kind"] = "memory"
            reply["exception"] = "MemoryError: the worker's memory limit was reached"
        else:
            reply["kind"] = "interrupted"
            reply["exception"] = "KeyboardInterrupt: cell interrupted (time limit)"

    def _check_answer(self) -> None:
        answer = self.ns.get("answer")
        if type(answer) is dict and answer.get("ready"):
            self.final = str(answer.get("content", ""))

    def _collect(self, capture: Capture, fd: int):
        try:
            size = os.fstat(fd).st_size
            raw = os.pread(fd, max(0, self.cap_out - capture.kept) * 4, 0) if size else b""
        except OSError:
            size, raw = 0, b""
        extra = raw.decode("utf-8", "replace")[: max(0, self.cap_out - capture.kept)]
        total = capture.total + size
        text = capture.text() + extra
        if total > len(text):
            text += f"\n... [output truncated: {total} chars in total, first {len(text)} shown]"
        return text, total

    def serve(self) -> None:
        while True:
            msg: dict = {}
            try:
                msg = self.receive() or {"op": "eof"}
                op = msg.get("op")
                if op == "eof":
                    return
                if op == "exec":
                    reply = self.run(msg)
                elif op == "init":
                    reply = self.init(msg)
                else:
                    continue
            except KeyboardInterrupt:  # landed just outside run()'s own handlers
                self.armed = False
                if msg.get("op") != "exec":
                    continue
                reply = {"op": "result", "id": msg.get("id"), "kind": "interrupted",
                         "exception": "KeyboardInterrupt: cell interrupted (time limit)"}
            self.send(reply)


def main() -> None:
    """Confine, announce readiness, then serve commands until stdin closes."""
    cfg = json.loads(sys.argv[-1])
    cmd_fd, out_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        report = confine(cfg)
        worker = Worker(cfg, cmd_fd, out_fd)
    except BaseException as exc:
        msg = {"op": "fatal", "error": describe(exc)}
        os.write(out_fd, (json.dumps(msg) + "\n").encode())
        raise SystemExit(1) from None
    worker.send({"op": "hello", "pid": os.getpid(), **report})
    worker.serve()
    os._exit(0)


if __name__ == "__main__":
    main()
