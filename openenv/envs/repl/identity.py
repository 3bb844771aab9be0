"""Who a worker runs as, where it works, and how all of its processes are killed.

As root, every live session gets its own uid from a machine-wide pool (an
``flock`` per uid, so several servers on one host never share one). A unique
uid is what makes the boundaries real: ``RLIMIT_NPROC`` counts that session
only, its files (mode 0700) and ``/proc`` entries are closed to other sessions,
it cannot signal or ptrace them, and ``kill(-1)`` issued as that uid reaches
every process it ever started, including ones that left the process group.
A uid is handed back only after the files it left in the shared temp dirs are
deleted (so the next session with that uid cannot read them); a lock file still
saying ``busy`` marks a uid whose holder crashed, whose leftover processes and
files are removed before the uid is handed out again.
Without root, workers keep the server's uid but get their own user, PID, mount and network
namespaces from bubblewrap (``launch.py``, ``isolation.py``; see docs/repl-security.md).
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")
UID_BASE = int(os.environ.get("OPENENV_REPL_UID_BASE", "420000"))
UID_COUNT = int(os.environ.get("OPENENV_REPL_UID_COUNT", "4096"))
KILL = shutil.which("kill", path="/bin:/usr/bin") or "/bin/kill"
ROOT_PREFIX = "openenv-repl-"


def is_root() -> bool:
    """Whether this process can give workers their own uid."""
    return os.geteuid() == 0


def _lock_dir() -> str:
    path = "/run/openenv-repl" if os.path.isdir("/run") and is_root() else None
    if path is None:
        path = os.path.join(tempfile.gettempdir(), f"openenv-repl-{os.geteuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if info.st_uid != os.geteuid() or not os.path.isdir(path) or os.path.islink(path):
        raise PermissionError(f"refusing lock directory {path}: not owned by this user")
    return path


@dataclass
class Identity:
    """The uid/gid a worker drops to (``None`` when not root) and the lock that reserves it."""

    uid: int | None
    gid: int | None
    _lock_fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        """Delete what the uid left in shared temp dirs, then give it back to the pool.

        Call only once every process of the uid is dead. Blocking (a walk of /tmp): run it in a thread.
        """
        release_all([self])


def release_all(idents: list[Identity]) -> None:
    """:meth:`Identity.release` for many uids with one walk of the shared temp dirs.

    If the walk fails, the locks are dropped with their ``busy`` mark kept, so whoever takes one
    of these uids next kills and scrubs it first (the crashed-holder path); none is lost for good.
    """
    held = [ident for ident in idents if ident._lock_fd is not None]
    try:
        scrub_uid_files(*(ident.uid for ident in held if ident.uid is not None))
    except BaseException:
        for ident in held:
            _unlock(ident, clean=False)
        raise
    for ident in held:
        _unlock(ident, clean=True)


def _unlock(ident: Identity, *, clean: bool) -> None:
    fd, ident._lock_fd = ident._lock_fd, None
    if fd is None:
        return
    try:
        if clean:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def acquire_identity(wait_s: float = 10.0) -> Identity:
    """Reserve a fresh uid for one worker (root), or reuse ours (non-root).

    Blocking: when every uid is taken, waits up to ``wait_s`` for one being released.
    """
    if not is_root():
        return Identity(None, None)
    lock_dir = _lock_dir()
    deadline = time.monotonic() + wait_s
    while True:
        ident = _try_acquire(lock_dir)
        if ident is not None:
            return ident
        if time.monotonic() > deadline:
            raise RuntimeError("no free worker uid left in the pool")
        time.sleep(0.05)


def _try_acquire(lock_dir: str) -> Identity | None:
    start = random.randrange(UID_COUNT)
    for i in range(UID_COUNT):
        uid = UID_BASE + (start + i) % UID_COUNT
        fd = os.open(os.path.join(lock_dir, f"{uid}.lock"), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        if os.pread(fd, 4, 0) == b"busy":  # its last holder died without releasing it
            kill_uid(uid)
            scrub_uid_files(uid)
        os.pwrite(fd, b"busy", 0)
        return Identity(uid, uid, fd)
    return None


def kill_uid(uid: int) -> None:
    """SIGKILL every process of ``uid`` in one atomic ``kill(-1)`` issued as that uid."""
    subprocess.run(
        [KILL, "-9", "-1"],
        user=uid,
        group=uid,
        extra_groups=[],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin"},
        timeout=10,
        check=False,
    )


def scrub_uid_files(*uids: int) -> None:
    """Delete files and directories owned by any of ``uids`` in the shared temp dirs (none of their processes run)."""
    dirs = [d for d in SHARED_TMP if os.path.isdir(d)]
    if not dirs or not uids:
        return
    owners: list[str] = []
    for uid in uids:
        owners += ["-o", "-user", str(uid)] if owners else ["-user", str(uid)]
    try:
        subprocess.run(["find", *dirs, "-xdev", "(", *owners, ")", "-delete"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"could not delete the files of worker uids {list(uids)}: {exc}") from exc


def kill_group(pid: int) -> None:
    """SIGKILL the worker's process group (it leads a new session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Workdirs:
    """A private parent directory holding one 0700 working directory per session.

    It records the server's pid in ``owner``; parents left by servers that died (no chance to
    clean up) are removed when the next one starts.
    """

    def __init__(self) -> None:
        _remove_orphaned_roots()
        self.root = tempfile.mkdtemp(prefix=ROOT_PREFIX)
        os.chmod(self.root, 0o711)
        with open(os.path.join(self.root, "owner"), "w", encoding="ascii") as f:
            f.write(str(os.getpid()))

    def create(self, ident: Identity) -> str:
        """Make a fresh working directory owned by the worker's uid."""
        path = tempfile.mkdtemp(dir=self.root, prefix="s-")
        if ident.uid is not None:
            os.chown(path, ident.uid, ident.gid)
        os.chmod(path, 0o700)
        return path

    def remove(self, path: str) -> None:
        """Delete a session directory and everything in it."""
        shutil.rmtree(path, ignore_errors=True)


def _remove_orphaned_roots() -> None:
    """Delete our users' parent directories whose server process is gone."""
    base = tempfile.gettempdir()
    for entry in os.scandir(base):
        if not entry.name.startswith(ROOT_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
            with open(os.path.join(entry.path, "owner"), encoding="ascii") as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue  # not one of ours, or not finished being created
        if pid != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(entry.path, ignore_errors=True)
