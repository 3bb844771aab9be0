"""What a test Ray cluster's processes and logs say about its state: is it alive, and if not, why.

Used by :class:`tests.ray_cluster.LocalRayCluster` (``health``, ``diagnosis``, ``keep_logs``) and
the report hooks of ``tests/ray_reports.py``. Every read here is bounded: a tail of each log, a
few kernel lines, one TCP connect with a timeout.
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from openenv.core.containers.runtime.records import process_start_ticks

__all__ = ["CoreProcess", "core_processes", "describe_exit", "exits_seen_by_ray", "gcs_refusal", "keep_logs",
           "log_report"]

# the processes whose loss ends a node (``ray start --block`` tears its node down when one of them exits)
_CORE_NAMES = ("gcs_server", "raylet")
# the session logs that say why a node went down, and how many of their last lines to show (0: only
# the warnings and errors)
_LOGS = {"ray_process_exit.log": 20, "gcs_server.err": 6, "gcs_server.out": 6, "raylet.err": 6, "raylet.out": 6,
         "raylet.1.err": 6, "raylet.1.out": 6, "monitor.log": 0, "dashboard_agent.log": 0,
         "dashboard_agent.1.log": 0, "runtime_env_agent.log": 0}
_NODE_TAIL = 8  # lines of each `ray start` output
# warnings and errors in Ray's C++ (`[date time W pid tid]`) and Python (`\tERROR`) log formats, and signals
_NOTABLE = re.compile(r"\d [WEF] \d+ \d+\]|\t(WARNING|ERROR|ERR|CRITICAL) |received SIG|exited unexpectedly|"
                      r"Check failed|Out of memory")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # `ray start` colours its output
_NOTABLE_LINES = 8
_LINE_CHARS = 400
_KERNEL_LINES = 10


@dataclass(frozen=True)
class CoreProcess:
    """A GCS or raylet of the cluster, remembered with its start time so a reused pid never counts."""

    pid: int
    name: str
    node: int
    start_ticks: int

    def alive(self) -> bool:
        return process_start_ticks(self.pid) == self.start_ticks


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def core_processes(pids: list[int], node_pids: list[int]) -> list[CoreProcess]:
    """The GCS and raylets among ``pids``; ``node_pids[i]`` is node ``i``'s ``ray start`` (their parent)."""
    found = []
    for pid in pids:
        name = Path(_cmdline(pid)[0]).name if _cmdline(pid) else ""
        ticks = process_start_ticks(pid)
        if name in _CORE_NAMES and ticks is not None:
            parent = _ppid(pid)
            node = node_pids.index(parent) if parent in node_pids else -1
            found.append(CoreProcess(pid, name, node, ticks))
    return found


def describe_exit(returncode: int) -> str:
    """``-9`` -> ``killed by SIGKILL``; ``1`` -> ``exit status 1``."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def gcs_refusal(host: str, port: int, inside: Callable[[], AbstractContextManager[None]],
                timeout_s: float = 5.0) -> str | None:
    """None when the GCS at ``host:port`` accepts a TCP connection, else why not. The connect runs
    in a short-lived thread entered into the cluster's network, so the caller's thread never moves."""
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            with inside():
                socket.create_connection((host, port), timeout=timeout_s).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(f"{type(exc).__name__}: {exc.strerror or exc}")

    probe = threading.Thread(target=connect, name="ray-gcs-probe", daemon=True)
    probe.start()
    probe.join(timeout_s + 5)
    return outcome[0] if outcome else f"no answer within {timeout_s + 5:.0f} s"


def _tail(path: Path, lines: int) -> list[str]:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = _ANSI.sub("", f.read().decode(errors="replace"))
            return text.splitlines()[-lines:]
    except OSError:
        return []


def _logs_dir(temp_dir: Path) -> Path:
    return temp_dir / "session_latest" / "logs"


def _log_files(temp_dir: Path) -> Iterator[tuple[Path, int]]:
    for path in sorted(temp_dir.glob("node-*.log")):
        yield path, _NODE_TAIL
    for name, tail in _LOGS.items():
        path = _logs_dir(temp_dir) / name
        if path.is_file():
            yield path, tail


def exits_seen_by_ray(temp_dir: Path) -> list[str]:
    """How the cluster's processes ended, as Ray logged it: what each node's ``ray start --block``
    saw die (``ray_process_exit.log``: ``gcs_server [exit code=-9 (signal 9)]``; a process ended by
    SIGTERM is not listed there) and the signals the GCS and raylets said they received."""
    logs = _logs_dir(temp_dir)
    seen = [f"`ray start` saw {line.strip()}" for line in _tail(logs / "ray_process_exit.log", 200)
            if "[exit code=" in line]
    for name in ("gcs_server.out", "raylet.out", "raylet.1.out"):
        seen += [f"{name}: {line.split('] ', 1)[-1].strip()}" for line in _tail(logs / name, 200)
                 if "received SIG" in line]
    return seen


def _kernel_lines(pids: set[int]) -> list[str]:
    """The kernel's OOM-killer lines (about our pids first), when the kernel log is readable."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    oom = [line for line in out.splitlines() if "Out of memory" in line or "Killed process" in line
           or "oom-kill" in line]
    ours = [line for line in oom if any(re.search(rf"\b{pid}\b", line) for pid in pids)]
    return (ours or oom)[-_KERNEL_LINES:]


def log_report(temp_dir: Path, pids: set[int]) -> str:
    """The warnings and errors and the tail of each of the cluster's logs, and the kernel's OOM kills."""
    parts = []
    for path, count in _log_files(temp_dir):
        lines = _tail(path, 2000)
        tail = lines[-count:] if count else []
        notable = [line for line in lines[:len(lines) - len(tail)] if _NOTABLE.search(line)][-_NOTABLE_LINES:]
        if tail or notable:
            shown = [*notable, "  ..."] if notable and tail else notable
            parts.append(f"--- {path.relative_to(temp_dir)}\n"
                         + "\n".join(line[:_LINE_CHARS] for line in shown + tail))
    kernel = _kernel_lines(pids)
    if kernel:
        parts.append("--- kernel OOM killer\n" + "\n".join(kernel))
    return "\n".join(parts) if parts else f"(no logs in {temp_dir})"


def keep_logs(temp_dir: Path, dest: Path) -> Path | None:
    """Copy the ``ray start`` outputs and the session logs to ``dest``; ``dest``, or None if there were none."""
    files = [*sorted(temp_dir.glob("node-*.log"))]
    logs = _logs_dir(temp_dir)
    if not files and not logs.is_dir():
        return None
    dest.mkdir(parents=True, exist_ok=True)
    for path in files:
        shutil.copy2(path, dest / path.name)
    if logs.is_dir():
        shutil.copytree(logs, dest / "logs", dirs_exist_ok=True, ignore_dangling_symlinks=True,
                        ignore=shutil.ignore_patterns("*.sock", "sockets"))
    return dest
