"""Stdlib-only pieces of the REPL worker: self-confinement, output capture, variable reprs.

Loaded by ``worker.py`` from the same (root-owned, read-only) directory; never imported by
the server.
"""

from __future__ import annotations

import ast
import io
import os
import reprlib
import resource
import traceback

CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
IMMUTABLE = (str, bytes, int, float, complex, bool, type(None), frozenset, range)
HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def confine(cfg: dict) -> dict:
    """Apply network, resource and identity limits to this process; report what held.

    The server usually did the privileged parts already (``unshare --net`` and ``setpriv``
    before this interpreter started: no ctypes import, a faster start); ``cfg`` says which.
    """
    if not cfg.get("network", False) and not cfg.get("netns_done") and os.getuid() == 0:
        try:
            _libc().unshare(CLONE_NEWNET)
        except OSError:
            pass
    for name, value in (cfg.get("rlimits") or {}).items():
        which = getattr(resource, name)
        hard = resource.getrlimit(which)[1]
        limit = value if hard == resource.RLIM_INFINITY else min(value, hard)
        # CPU: SIGXCPU at the soft limit (reported as such), SIGKILL a second later.
        roomy = hard == resource.RLIM_INFINITY or limit + 1 <= hard
        top = limit + 1 if which == resource.RLIMIT_CPU and roomy else limit
        resource.setrlimit(which, (limit, top))
    os.umask(0o077)
    os.chdir(cfg["cwd"])
    uid, gid = cfg.get("uid"), cfg.get("gid")
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    if not cfg.get("nnp_done"):
        try:
            _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        except OSError:
            pass
    return {"network": network_state(), "uid": os.getuid()}


def network_state() -> str:
    """'off' when this process sees no network interface but loopback."""
    try:
        with open("/proc/self/net/dev") as f:
            names = {line.split(":", 1)[0].strip() for line in f.read().splitlines()[2:]}
    except OSError:
        return "unknown"
    return "off" if names <= {"lo"} else "on"


class Capture(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters and counts all of them."""

    def __init__(self, cap: int, fd: int) -> None:
        self.cap, self.fd, self.total, self.parts, self.kept = cap, fd, 0, [], 0

    def write(self, s):  # noqa: D102
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self.total += len(s)
        room = self.cap - self.kept
        if room > 0 and s:
            piece = s[:room]
            self.parts.append(piece)
            self.kept += len(piece)
        return len(s)

    def writable(self):  # noqa: D102
        return True

    def fileno(self):  # noqa: D102
        return self.fd

    @property
    def encoding(self):  # noqa: D102
        return "utf-8"

    @property
    def buffer(self):  # noqa: D102
        return _BytesSink(self)

    def text(self) -> str:  # noqa: D102
        return "".join(self.parts)


class _BytesSink:
    def __init__(self, capture: Capture) -> None:
        self._capture = capture

    def write(self, data) -> int:
        self._capture.write(bytes(data).decode("utf-8", "replace"))
        return len(data)

    def flush(self) -> None:
        pass


def capture_file(target: int) -> int:
    """Point fd ``target`` at a new anonymous file in the working directory; returns ``target``."""
    try:
        fd = os.open(".", os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):
        path = f".capture-{target}"
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o600)
        os.unlink(path)
    os.dup2(fd, target)
    os.close(fd)
    return target


class Variables:
    """Short reprs of namespace values, and which ones changed since the last look."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.seen: dict = {}
        self.repr = reprlib.Repr()
        self.repr.maxstring = self.repr.maxother = cap
        self.repr.maxlist = self.repr.maxtuple = self.repr.maxdict = self.repr.maxset = 50

    def reset(self, visible: dict) -> None:
        """Take ``visible`` (name -> value) as the unchanged baseline."""
        self.seen = {k: self._fingerprint(v) for k, v in visible.items()}

    def short(self, value) -> str:
        """A capped repr that never raises (except KeyboardInterrupt)."""
        try:
            if isinstance(value, (str, bytes)) and len(value) > self.cap:
                return repr(value[: self.cap]) + f"... [{len(value)} chars]"
            elif isinstance(value, (list, tuple, dict, set, frozenset)) and len(value) > 50:
                text = self.repr.repr(value) + f" [len {len(value)}]"
            else:
                text = repr(value)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a hostile or broken __repr__
            return f"<repr failed: {type(exc).__name__}>"
        if len(text) > self.cap:
            text = text[: self.cap] + f"... [repr truncated, {len(text)} chars]"
        return text

    def _fingerprint(self, value):
        if isinstance(value, IMMUTABLE):
            return (value, None)
        return (value, self.short(value))

    def changed(self, visible: dict) -> dict:
        """Short reprs of the new or changed entries of ``visible`` (at most 100)."""
        out, seen = {}, {}
        for name, value in visible.items():
            old = self.seen.get(name)
            if old is not None and old[0] is value and old[1] is None:
                seen[name] = old
                continue
            fp = self._fingerprint(value)
            seen[name] = fp
            if old is None or old[0] is not value or old[1] != fp[1]:
                if len(out) < 100:
                    out[name] = fp[1] if fp[1] is not None else self.short(value)
        self.seen = seen
        return out




class FinalLiterals(ast.NodeTransformer):
    """Route ``print("FINAL(...)")``/``print(f"FINAL(...)")`` written in the cell through the recorder."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "print" and node.args:
            first = node.args[0]
            head = None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                head = first.value
            elif isinstance(first, ast.JoinedStr) and first.values:
                lead = first.values[0]
                head = lead.value if isinstance(lead, ast.Constant) else None
            if isinstance(head, str) and head.lstrip().startswith(("FINAL(", "FINAL_VAR(")):
                call = ast.Call(ast.Name("__final_literal__", ast.Load()), [first], [])
                node.args[0] = ast.copy_location(call, first)
        return node


def exit_helper(code=None):
    """Raise SystemExit, as the interactive ``exit()`` does."""
    raise SystemExit(code)


def describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def user_traceback(exc: BaseException) -> str:
    tb = exc.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell"):
        tb = tb.tb_next
    if isinstance(exc, SyntaxError):
        tb = None
    report = traceback.TracebackException(type(exc), exc, tb)
    frames = [f for f in report.stack if not f.filename.startswith(HERE)]
    report.stack = traceback.StackSummary.from_list(frames)
    return "".join(report.format())
