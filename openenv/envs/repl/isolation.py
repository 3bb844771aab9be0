"""Which isolation the REPL's workers get, checked once per server before the first worker.

- ``root-uids``: the server is root; every worker gets its own uid, network and IPC namespace
  (``identity.py``, ``launch.py``).
- ``user-namespaces``: the server is an ordinary user; every worker starts under bubblewrap
  (``bwrap``) in its own user, PID, mount, IPC, UTS and (unless enabled) network namespaces.
- ``weak``: neither is possible and ``OPENENV_REPL_ALLOW_WEAK_ISOLATION=1`` accepted that
  workers run as the server's user in its namespaces (only the process boundary holds).

Without root and without working user namespaces, :func:`require_isolation` raises
:class:`IsolationUnavailable` naming the kernel setting that refuses them.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading

from openenv.core.errors import EnvExecutionError
from openenv.envs.repl.identity import is_root

__all__ = ["ROOT_UIDS", "USER_NAMESPACES", "WEAK", "IsolationUnavailable", "current_isolation",
           "make_undumpable", "require_isolation"]

ROOT_UIDS, USER_NAMESPACES, WEAK = "root-uids", "user-namespaces", "weak"
ALLOW_WEAK_VAR = "OPENENV_REPL_ALLOW_WEAK_ISOLATION"
BWRAP_VAR = "OPENENV_REPL_BWRAP"
PR_SET_DUMPABLE = 4
KERNEL_SETTINGS = (  # (sysctl, file, value that refuses unprivileged user namespaces)
    ("kernel.unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone", "0"),
    ("kernel.apparmor_restrict_unprivileged_userns", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
    ("user.max_user_namespaces", "/proc/sys/user/max_user_namespaces", "0"),
)
log = logging.getLogger("openenv.repl")
_lock = threading.Lock()
_probed: dict[str, str | None] = {}  # bwrap path -> None (works) or why not


class IsolationUnavailable(EnvExecutionError):
    """Workers cannot be isolated from the server (no root, no user namespaces) and weak isolation was not allowed."""


def bwrap_path() -> str | None:
    """The bubblewrap binary workers start under (``OPENENV_REPL_BWRAP`` overrides the lookup)."""
    return os.environ.get(BWRAP_VAR) or shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")


def _weak_allowed() -> bool:
    return os.environ.get(ALLOW_WEAK_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def _probe(bwrap: str | None) -> str | None:
    """None when ``bwrap`` can start a process in fresh namespaces as this user, else the reason."""
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian package bubblewrap; scripts/system/40-repl.sh)"
    from openenv.envs.repl.launch import bwrap_args  # the very arguments workers get

    args = bwrap_args(bwrap, lib=None, workdir=None, network=False, extra_ro=()) + ["/bin/true"]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{bwrap} could not run: {exc}"
    if out.returncode == 0:
        return None
    return f"{bwrap} failed (status {out.returncode}): {out.stderr.strip()[-300:]}"


def _kernel_hint() -> str:
    found = []
    for name, path, refusing in KERNEL_SETTINGS:
        try:
            with open(path, encoding="ascii") as f:
                value = f.read().strip()
        except OSError:
            continue
        if value == refusing:
            found.append(f"{name} = {value}")
    if found:
        return "the kernel refuses unprivileged user namespaces: " + ", ".join(found)
    names = ", ".join(name for name, _, _ in KERNEL_SETTINGS)
    return f"check the kernel settings {names} (and any seccomp/AppArmor policy of this container)"


def current_isolation() -> str:
    """The isolation workers get now (probing bubblewrap once); see the module docstring."""
    if is_root():
        return ROOT_UIDS
    bwrap = bwrap_path()
    key = bwrap or ""
    with _lock:
        if key not in _probed:
            _probed[key] = _probe(bwrap)
        why = _probed[key]
    return USER_NAMESPACES if why is None else WEAK


def require_isolation() -> str:
    """The isolation in force; raises IsolationUnavailable when only ``weak`` is possible and not allowed.

    Also makes this process non-dumpable, so no process of the same uid can read its memory
    or ``/proc/<pid>/environ``.
    """
    make_undumpable()
    mode = current_isolation()
    if mode != WEAK:
        return mode
    why = _probed.get(bwrap_path() or "") or "user namespaces are unavailable"
    if _weak_allowed():
        log.warning("REPL workers run with weak isolation (%s=1): %s", ALLOW_WEAK_VAR, why)
        return WEAK
    raise IsolationUnavailable(
        "the REPL server is not root and cannot give workers their own user namespace: "
        f"{why}; {_kernel_hint()}. Enable unprivileged user namespaces (for example "
        "sysctl kernel.unprivileged_userns_clone=1, kernel.apparmor_restrict_unprivileged_userns=0 "
        f"or a non-zero user.max_user_namespaces), run the server as root or in a container, or set "
        f"{ALLOW_WEAK_VAR}=1 to accept workers that can read the server's environment and kill "
        "its processes (docs/repl-security.md)."
    )


def make_undumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: same-uid processes can no longer ptrace us or read /proc/<pid>/environ, mem."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        log.warning("could not make the REPL server non-dumpable")
